// The object a stencil code keeps: exchange the halos of its fields.
//
//   halox::halo_exchange ex(decomp, grid, fields, {.alg = algorithm::staged});
//   ex.start();              // first step in flight
//   compute_interior();      // overlap
//   ex.wait();               // remaining steps; halos complete
#pragma once

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
