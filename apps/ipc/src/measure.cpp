#include "halox_programs/ipc/measure.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>

namespace halox::ipc {

namespace {

struct iteration_record {
  copy_span span;
  double control = 0;
  double wall = 0;  // the whole iteration, verification included
};

iteration_record one_copy(copy_mechanism& mechanism, const block_layout& layout, std::byte* source,
                          std::byte* destination, MPI_Comm control, uint64_t& generation,
                          bool check, std::string& problem) {
  double begin = now_seconds();
  ++generation;
  if (source) fill_blocks(source, layout, generation);
  MPI_Barrier(control);  // settle: nobody's "ready" time includes the owner's refill
  double t0 = now_seconds();
  MPI_Barrier(control);
  double t1 = now_seconds();
  copy_span span = mechanism.copy();
  double t2 = now_seconds();
  MPI_Barrier(control);
  double t3 = now_seconds();
  if (problem.empty()) {
    if (check && destination)
      problem = mechanism.verify(generation);
    else
      problem = mechanism.copy_error();
  }
  return {span, (t1 - t0) + (t3 - t2), now_seconds() - begin};
}

double max_over(MPI_Comm comm, double value) {
  double out = 0;
  MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, comm);
  return out;
}

}  // namespace

cell_samples measure_cell(copy_mechanism& mechanism, const block_layout& layout, std::byte* source,
                          std::byte* destination, MPI_Comm control, uint64_t& generation,
                          const measure_options& options) {
  cell_samples out;
  mechanism.prepare(layout, source, destination);
  if (source) initialise_extent(source, layout, generation, source_gap_fill);
  if (destination)
    std::memset(destination, static_cast<int>(destination_gap_fill), layout.extent());

  auto first = one_copy(mechanism, layout, source, destination, control, generation, options.check,
                        out.problem);
  out.first = first.span;
  out.first_control = first.control;

  // Slow cells (thousands of system calls per copy) get fewer copies; every
  // rank takes the same decision from the slowest rank's time.
  int warmup = options.warmup, repetitions = options.repetitions;
  if (options.cell_seconds > 0) {
    double slowest = max_over(control, first.wall);
    warmup = std::min(warmup, std::max(1, static_cast<int>(options.cell_seconds / 4 / slowest)));
  }
  double warm_wall = 0;
  for (int i = 0; i < warmup; ++i)
    warm_wall = std::max(warm_wall, one_copy(mechanism, layout, source, destination, control,
                                             generation, options.check, out.problem)
                                        .wall);
  out.warmup_done = warmup;
  if (options.cell_seconds > 0) {
    double per_copy = max_over(control, warmup > 0 ? warm_wall : first.wall);
    int affordable = static_cast<int>(options.cell_seconds / std::max(per_copy, 1e-9));
    repetitions = std::clamp(affordable, std::min(options.min_repetitions, options.repetitions),
                             options.repetitions);
  }
  for (int i = 0; i < repetitions; ++i) {
    auto r = one_copy(mechanism, layout, source, destination, control, generation, options.check,
                      out.problem);
    out.spans.push_back(r.span);
    out.control.push_back(r.control);
  }
  return out;
}

cell_result reduce_cell(const cell_samples& samples, MPI_Comm control,
                        const std::vector<int>& owner_of) {
  int rank = 0, size = 1;
  MPI_Comm_rank(control, &rank);
  MPI_Comm_size(control, &size);
  // Per rank: first start, first end, first control, then (start, end,
  // control) per timed copy. Every rank ran the same number of copies.
  std::vector<double> mine{samples.first.start, samples.first.end, samples.first_control};
  for (size_t i = 0; i < samples.spans.size(); ++i) {
    mine.push_back(samples.spans[i].start);
    mine.push_back(samples.spans[i].end);
    mine.push_back(samples.control[i]);
  }
  std::vector<double> all(rank == 0 ? mine.size() * static_cast<size_t>(size) : 0);
  MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(),
             static_cast<int>(mine.size()), MPI_DOUBLE, 0, control);
  cell_result result;
  result.repetitions = static_cast<int>(samples.spans.size());
  if (rank != 0) return result;

  auto at = [&](int r, size_t i) { return all[static_cast<size_t>(r) * mine.size() + i]; };
  for (int peer = 0; peer < size; ++peer) {
    int owner = owner_of[static_cast<size_t>(peer)];
    if (owner < 0) continue;
    auto elapsed = [&](size_t base) {
      double start = std::min(at(peer, base), at(owner, base));
      return (at(peer, base + 1) - start) * 1e6;
    };
    peer_result p;
    p.rank = peer;
    p.owner = owner;
    p.first_us = elapsed(0);
    std::vector<double> copies, controls;
    for (size_t i = 0; i < samples.spans.size(); ++i) {
      copies.push_back(elapsed(3 + 3 * i));
      controls.push_back(at(peer, 3 + 3 * i + 2) * 1e6);
    }
    p.copy_us = summarize(copies);
    p.control_us = summarize(controls).median;
    result.time_us = std::max(result.time_us, p.copy_us.median);
    result.first_us = std::max(result.first_us, p.first_us);
    result.control_us = std::max(result.control_us, p.control_us);
    result.peers.push_back(p);
  }
  return result;
}

void to_json(nlohmann::json& j, const peer_result& p) {
  j = {{"rank", p.rank},
       {"owner", p.owner},
       {"copy_us", p.copy_us},
       {"first_us", p.first_us},
       {"control_us", p.control_us}};
}

}  // namespace halox::ipc
