// halox-ipc's measurement: per block size, the memcpy reference and every column's cell.
#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "halox/common/error.hpp"
#include "halox_programs/stats.hpp"
#include "ipc_program.hpp"

namespace halox::ipc_program {

namespace {

// Contiguous memcpy of the buffer size inside each peer, the same moment for
// all peers (as the copies run); median over copies, max over peers.
double measure_memcpy_us(MPI_Comm world, bool is_peer, std::byte* from, std::byte* to,
                         size_t bytes) {
  constexpr int warm = 2, timed = 11;
  double median = 0;
  MPI_Barrier(world);
  if (is_peer) {
    std::vector<double> samples;
    for (int i = 0; i < warm + timed; ++i) {
      double t0 = now_seconds();
      std::memcpy(to, from, bytes);
      double t1 = now_seconds();
      if (i >= warm) samples.push_back((t1 - t0) * 1e6);
    }
    median = summarize(samples).median;
  }
  double worst = 0;
  MPI_Reduce(&median, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, world);
  return worst;
}

struct free_deleter {
  void operator()(std::byte* p) const { std::free(p); }
};
using page_buffer = std::unique_ptr<std::byte, free_deleter>;

// Page-aligned and touched once, so that no copy pays for first faults.
page_buffer allocate(size_t bytes) {
  size_t rounded = round_up_to_page(std::max<size_t>(bytes, 1));
  auto* p = static_cast<std::byte*>(std::aligned_alloc(page_size(), rounded));
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  return page_buffer(p);
}

// Peers' destinations and the memcpy reference buffers (none on owners).
struct peer_buffers {
  page_buffer destination, memcpy_from, memcpy_to;
};

// The control rank of each rank's owner, -1 for owners.
std::vector<int> owners(int world_size, bool pairs) {
  std::vector<int> owner_of(static_cast<size_t>(world_size));
  for (int r = 0; r < world_size; ++r)
    owner_of[static_cast<size_t>(r)] = pairs ? (r % 2 == 0 ? -1 : r - 1) : (r == 0 ? -1 : 0);
  return owner_of;
}

}  // namespace

measured_rows measure_rows(MPI_Comm world, ipc_context& context, std::vector<column>& columns,
                           const ipc_options& o, const run_plan& plan) {
  int world_rank = 0, world_size = 1;
  MPI_Comm_rank(world, &world_rank);
  MPI_Comm_size(world, &world_size);
  const std::vector<int> owner_of = owners(world_size, o.pairs);
  const bool owner = context.is_owner();
  peer_buffers buffers;
  if (!owner) buffers = {allocate(plan.max_extent), allocate(plan.bufsize), allocate(plan.bufsize)};
  std::byte* source = owner ? context.source() : nullptr;
  measure_options mo;
  mo.warmup = o.warmup;
  mo.repetitions = o.nrep;
  mo.cell_seconds = o.cell_time;
  mo.check = !o.no_check;

  measured_rows out;
  out.fewest_repetitions = o.nrep;
  uint64_t generation = 0;
  for (size_t block : plan.blocks) {
    block_layout layout = block_layout::make(plan.layout, plan.bufsize, block, plan.stride_factor);
    row_result row;
    row.block = layout.block;
    row.count = layout.count;
    row.memcpy_us = measure_memcpy_us(world, !owner, buffers.memcpy_from.get(),
                                      buffers.memcpy_to.get(), plan.bufsize);
    for (auto& c : columns) {
      if (!c.mechanism) continue;
      auto samples = measure_cell(*c.mechanism, layout, source, buffers.destination.get(), world,
                                  generation, mo);
      std::string problem = samples.problem.empty()
                                ? std::string()
                                : fmt::format("{} failed at IOV_size {} ({} layout) on rank {}: {}",
                                              c.mechanism->name(), block, to_string(plan.layout),
                                              world_rank, samples.problem);
      if (auto error = agree_on_error(world, problem); !error.empty()) throw run_error(error);
      row.cells[c.kind] = reduce_cell(samples, world, owner_of);
      out.fewest_repetitions = std::min(out.fewest_repetitions, row.cells[c.kind].repetitions);
      out.most_repetitions = std::max(out.most_repetitions, row.cells[c.kind].repetitions);
    }
    out.rows.push_back(std::move(row));
    if (world_rank == 0) print_progress_row(columns, out.rows);
  }
  return out;
}

}  // namespace halox::ipc_program
