// One halox-halo2d measurement: verified exchanges, warm-up, timed trials.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "halox_programs/halo2d/mesh.hpp"
#include "halox_programs/halo2d/report.hpp"

namespace halox::halo2d {

// Deliberate faults, to show that verification catches them: every sender
// flips a byte of its messages (corrupt) or sends the previous iteration's
// content (stale).
enum class fault_kind { none, corrupt, stale };

struct measure_settings {
  int repetitions = 100;  // exchanges per timed trial
  int warmup = 10;
  int trials = 5;
  bool check = true;
  int check_iterations = 2;  // untimed exchanges with fresh content before the trials
  fault_kind fault = fault_kind::none;
};

class benchmark {
 public:
  // Collective: MPI_Cart_create over world (periods from the mesh).
  benchmark(MPI_Comm world, const mesh2d& mesh, bool reorder, std::size_t max_bytes);
  benchmark(const benchmark&) = delete;
  benchmark& operator=(const benchmark&) = delete;
  ~benchmark();

  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  const coord2& coords() const { return coords_; }
  const mesh2d& mesh() const { return mesh_; }
  int rank_at(const coord2& coords) const;

  // Collective. Verification (when on): before the trials, check_iterations
  // exchanges each with new content, and after every trial the content of
  // that trial; every byte, source, tag and count. Throws run_error on every
  // rank when any rank found a difference. The result is the same on all ranks.
  measurement measure(test_kind test, int neighbor_count, std::size_t bytes,
                      const measure_settings& settings);

 private:
  struct free_deleter {
    void operator()(std::byte* p) const { std::free(p); }
  };
  using buffer = std::unique_ptr<std::byte[], free_deleter>;

  MPI_Comm comm_ = MPI_COMM_NULL;
  mesh2d mesh_;
  int rank_ = 0;
  coord2 coords_{0, 0};
  std::vector<buffer> send_buffers_, receive_buffers_;  // 8 each, max_bytes long
  std::uint64_t next_iteration_ = 0;                    // the same on every rank
};

}  // namespace halox::halo2d
