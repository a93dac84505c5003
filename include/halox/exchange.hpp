// The object a stencil code keeps: exchange the halos of its fields.
//
//   halox::halo_exchange ex(decomp, grid, {u.data(), v.data()}, {.alg = algorithm::staged});
//   ex.start();              // first step in flight
//   compute_interior();      // overlap
//   ex.wait();               // remaining steps; halos complete
//
// Field layout: each field is one array of grid.cells() elements (float or
// double) covering the allocated box, halo included: x runs fastest, then y,
// then z; element (x, y, z) of the interior, x in [0, grid.interior[0]) etc.,
// is at grid.index(x, y, z), and the pointer handed over is the first
// allocated cell (-halo.lo[0], -halo.lo[1], -halo.lo[2]). All fields of one
// exchange share the grid and the element type.
//
// Errors:
//  - halox::usage_error (halox/common/error.hpp): an impossible configuration
//    (no fields, a halo wider than the sub-domain, a transport that cannot run
//    on these fields, e.g. `shm` on memory not from halox::shared_field_memory).
//    Thrown before any communication that could hang. The grid checks are
//    local (a halo too wide for some ranks' sub-domains of an uneven split
//    throws there only: check with halox::require_all first when extents
//    differ); the transport checks are agreed on by all ranks.
//  - std::logic_error: start() twice without wait(), or wait() without start().
//  - std::bad_alloc: buffers could not be allocated.
//  MPI errors follow the communicator's error handler (MPI_ERRORS_ARE_FATAL
//  unless the application changed it).
#pragma once

#include <initializer_list>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

#include "halox/decomposition.hpp"
#include "halox/grid.hpp"
#include "halox/plan.hpp"
#include "halox/transport.hpp"

namespace halox {

struct exchange_options {
  algorithm alg = algorithm::standard;
  field_mode mode = field_mode::compact;
  transport_kind transport = transport_kind::mpi_p2p;
};

class halo_exchange {
 public:
  // fields[f]: the first allocated cell (halo corner) of field f, laid out as
  // grid describes. Collective over decomp.comm() only in that all ranks must
  // construct it before the first exchange.
  halo_exchange(const decomposition& decomp, const local_grid& grid, element_type type,
                std::vector<void*> fields, const exchange_options& options = {});

  template <class T>
    requires std::is_same_v<T, float> || std::is_same_v<T, double>
  halo_exchange(const decomposition& decomp, const local_grid& grid, std::span<T* const> fields,
                const exchange_options& options = {})
      : halo_exchange(decomp, grid, std::is_same_v<T, float> ? element_type::f32 : element_type::f64,
                      std::vector<void*>(fields.begin(), fields.end()), options) {}

  // Fields as a vector or a braced list of pointers: ex(decomp, grid, fields)
  // or ex(decomp, grid, {u, v, w}).
  template <class T>
    requires std::is_same_v<T, float> || std::is_same_v<T, double>
  halo_exchange(const decomposition& decomp, const local_grid& grid, const std::vector<T*>& fields,
                const exchange_options& options = {})
      : halo_exchange(decomp, grid, std::span<T* const>(fields), options) {}

  template <class T>
    requires std::is_same_v<T, float> || std::is_same_v<T, double>
  halo_exchange(const decomposition& decomp, const local_grid& grid,
                std::initializer_list<T*> fields, const exchange_options& options = {})
      : halo_exchange(decomp, grid, std::span<T* const>(fields.begin(), fields.size()), options) {}

  halo_exchange(halo_exchange&&) noexcept;
  halo_exchange& operator=(halo_exchange&&) noexcept;
  ~halo_exchange();

  // Starts the exchange: the first stage is in flight when this returns.
  void start();
  // Completes the exchange (remaining stages run here).
  void wait();
  void exchange() {
    start();
    wait();
  }

  const exchange_plan& plan() const { return *plan_; }
  const exchange_options& options() const { return options_; }

 private:
  exchange_options options_;
  std::unique_ptr<exchange_plan> plan_;  // stable address for the transport
  std::vector<std::byte*> fields_;
  std::unique_ptr<transport> transport_;
  bool started_ = false;
};

}  // namespace halox
