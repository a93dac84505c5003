// One round of one configuration: build, verify, time, record the stages, verify again.
#include "bench_program.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <numeric>

#include "floors.hpp"
#include "halox/common/error.hpp"
#include "halox/device.hpp"
#include "halox/extend/plan.hpp"
#include "halox_programs/self_copy_reference.hpp"
#include "halox_programs/verify.hpp"
#include "halox_programs/device_memory.hpp"
#include "touched_lines.hpp"

namespace halox::bench {

namespace {

// Collective: throws run_error on every rank when any rank found a mismatch.
template <class T>
void verify_or_fail(MPI_Comm comm, const std::vector<T*>& fields, const verify_context& ctx,
                    int epoch, const config& cfg, const char* when) {
  size_t total = 0;
  auto bad = check_fields(fields, ctx, epoch, 3, &total);
  std::string local;
  if (total > 0) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    local = fmt::format("verification failed after the {} exchange ({}, {}): rank {} has {} wrong "
                        "cells, first: {}",
                        when, cfg.variant(), cfg.shape(), rank, total, describe(bad.front()));
  }
  if (auto message = agree_on_error(comm, local); !message.empty()) throw run_error(message);
}

// Collective: the plan's message bytes per exchange, summed over ranks, to
// peers on this rank's host and on other hosts (by host name, as the rank map).
void count_plan_by_host(MPI_Comm comm, const exchange_plan& plan,
                        const std::vector<std::string>& hosts, result& r) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  unsigned long long bytes[2] = {0, 0};  // same host, other hosts
  for (const auto& s : plan.stages)
    for (const auto& m : s.sends)
      bytes[hosts[static_cast<size_t>(m.peer)] == hosts[static_cast<size_t>(rank)] ? 0 : 1] += m.bytes;
  MPI_Allreduce(MPI_IN_PLACE, bytes, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
  r.plan_to_same_host = bytes[0];
  r.plan_to_other_hosts = bytes[1];
}

// Collective: what the transports sent per exchange, summed over ranks.
std::vector<transport_stats> sent_per_exchange(MPI_Comm comm, std::vector<transport_stats> sent,
                                               long long exchanges) {
  for (auto& t : sent) {
    unsigned long long bytes[2] = {t.bytes_to_same_node / static_cast<unsigned long long>(exchanges),
                                   t.bytes_to_other_nodes / static_cast<unsigned long long>(exchanges)};
    MPI_Allreduce(MPI_IN_PLACE, bytes, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
    t.bytes_to_same_node = bytes[0];
    t.bytes_to_other_nodes = bytes[1];
  }
  return sent;
}

// The fields of one configuration on the shape's memory: `host` is filled and
// verified, `exchanged` is what the exchange moves (the same pointers, or
// their copies on the GPU with --memory device).
template <class T>
struct config_fields {
  std::vector<T*> host, exchanged;
  bool on_device = false;
  size_t bytes_each = 0;
  void to_device() const {
    if (on_device)
      for (size_t f = 0; f < host.size(); ++f) cuda::copy_to_device(exchanged[f], host[f], bytes_each);
  }
  void from_device() const {
    if (on_device)
      for (size_t f = 0; f < host.size(); ++f) cuda::copy_to_host(host[f], exchanged[f], bytes_each);
  }
};

// Collective where the shape's node-shared fields are allocated (first use).
template <class T>
config_fields<T> place_fields(const decomposition& decomp, const bench_options& o, const config& cfg,
                              const local_grid& grid, size_t field_bytes, shape_memory& mem) {
  config_fields<T> f;
  f.on_device = field_memory_of(o, cfg) == "device";
  f.bytes_each = grid.points() * sizeof(T);
  if (field_memory_of(o, cfg) == "shared") {
    if (!mem.shared) mem.shared.emplace(decomp, field_bytes, cfg.nfields, o.decomp.ranks_per_node);
    for (int i = 0; i < cfg.nfields; ++i) f.host.push_back(static_cast<T*>(mem.shared->field(i)));
  } else {
    if (mem.fields.empty())
      for (int i = 0; i < cfg.nfields; ++i) mem.fields.emplace_back(field_bytes, mem.pages);
    for (auto& m : mem.fields) f.host.push_back(reinterpret_cast<T*>(m.data()));
  }
  f.exchanged = f.host;
  if (f.on_device) {
    if (mem.device_fields.empty())
      for (int i = 0; i < cfg.nfields; ++i) mem.device_fields.push_back(device_buffer(field_bytes));
    for (size_t i = 0; i < f.exchanged.size(); ++i)
      f.exchanged[i] = static_cast<T*>(mem.device_fields[i].get());
  }
  return f;
}

exchange_options options_for(const bench_options& o, const config& cfg, bool on_device,
                             const std::optional<exchange_options>& decided) {
  // What the first round measured (an automatic choice, the transports'
  // tuning) is kept by the others, as a program keeps the exchange it built.
  if (decided) return *decided;
  exchange_options options{.alg = cfg.alg,
                           .grouping = cfg.grouping.kind,
                           .transport = cfg.transport,
                           .fields_per_message = cfg.grouping.per_message,
                           .fields_per_block = fields_per_block(o, cfg.grouping, cfg.nfields),
                           .ranks_per_node = o.decomp.ranks_per_node,
                           .timeout_seconds = o.timeout,
                           .auto_transport = cfg.auto_transport,
                           .auto_algorithm = cfg.auto_algorithm,
                           .auto_grouping = cfg.grouping.label == "auto",
                           .wisdom_file = o.wisdom};
  options.memory = on_device ? halox::memory_kind::device : halox::memory_kind::host;
  return options;
}

// Collective: what the exchange was built as, and what its plan moves.
void describe_exchange(MPI_Comm comm, const halo_exchange& ex,
                       const std::vector<std::string>& hosts, result& r) {
  r.path = ex.transport_path();
  r.settings = ex.transport_settings();
  r.chosen = ex.choice_report();
  // Later rounds build the exchange as decided here, automatic choice and
  // measured tuning alike: a program keeps the exchange it built, and the
  // transports' trials are not repeated in every round.
  r.decided = ex.options();
  r.decided->tuning = ex.tuning_as_built();
  r.setup = gather_setup(comm, ex.profile(), ex.plan());
  const auto& plan = ex.plan();
  r.bytes_sent = plan.bytes_sent();
  r.bytes_copied = plan.bytes_copied();
  r.bytes_received = plan.bytes_received();
  r.messages = plan.message_count();
  r.fields_per_message = plan.fields_per_message;
  r.fields_per_block = plan.fields_per_block;
  unsigned long long mine = r.bytes_sent, most = 0;
  MPI_Allreduce(&mine, &most, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm);
  r.max_bytes_sent = most;
  r.lines = lines_touched(plan);
  count_plan_by_host(comm, plan, hosts, r);
}

// How --timing sets up each exchange: a compute step and/or a barrier first.
struct pacing {
  bool latency = false, compute = false;
};

// Collective: --nrep, or with --time the count a short calibration agrees on.
template <class T>
long long repetitions(MPI_Comm comm, const bench_options& o, pacing pace, halo_exchange& ex,
                      const std::vector<T*>& fields, const local_grid& grid, long long& run) {
  if (o.time_budget <= 0) return o.nrep;
  const double t0 = MPI_Wtime();
  constexpr int probe = 5;
  for (int i = 0; i < probe; ++i, ++run) {
    if (pace.compute) compute_timestep(fields, grid);
    ex.exchange();
  }
  double per = (MPI_Wtime() - t0) / probe, slowest = 0;
  MPI_Allreduce(&per, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
  return std::clamp<long long>(static_cast<long long>(o.time_budget / std::max(slowest, 1e-9)), 10,
                               10'000'000);
}

// The timed exchanges: each one's time, the loop's, and the compute steps' (untimed).
struct timed_exchanges {
  std::vector<double> samples;
  double loop = 0, computing = 0;
};

template <class T>
timed_exchanges time_exchanges(MPI_Comm comm, long long nrep, pacing pace, halo_exchange& ex,
                               const std::vector<T*>& fields, const local_grid& grid) {
  timed_exchanges t;
  t.samples.resize(static_cast<size_t>(nrep));
  MPI_Barrier(comm);
  const double loop_start = MPI_Wtime();
  for (long long i = 0; i < nrep; ++i) {
    if (pace.compute) {
      const double c0 = MPI_Wtime();
      compute_timestep(fields, grid);
      t.computing += MPI_Wtime() - c0;
    }
    // After a compute step too: a rank whose step ran longer would count
    // as the others' exchange time.
    if (pace.latency || pace.compute) MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    ex.exchange();
    t.samples[static_cast<size_t>(i)] = MPI_Wtime() - t0;
  }
  // The exchanges' own time: the compute steps are not the exchange's.
  t.loop = pace.compute ? std::accumulate(t.samples.begin(), t.samples.end(), 0.0)
                        : MPI_Wtime() - loop_start;
  return t;
}

// Collective: --stage-times pass records the stage splits in exchanges of
// their own after the timed ones (reading the clock around every copy and
// wait costs 20-60 ns a time); returns how many it ran.
template <class T>
long long record_stage_pass(MPI_Comm comm, long long nrep, pacing pace, halo_exchange& ex,
                            const std::vector<T*>& fields, const local_grid& grid, result& r) {
  const long long recorded = breakdown_exchanges(nrep);
  ex.record_stages(true);
  MPI_Barrier(comm);
  for (long long i = 0; i < recorded; ++i) {
    if (pace.compute) compute_timestep(fields, grid);
    if (pace.latency || pace.compute) MPI_Barrier(comm);
    ex.exchange();
  }
  r.breakdown = gather_stage_breakdown(comm, ex.profile());
  ex.record_stages(false);
  return recorded;
}

// The yardsticks of one turn, each the slowest rank's median.
struct yardstick_times {
  double floor = 0, line_floor = 0, crossing = 0, reference = 0;
};

// The floor of the halo's bytes, the floor of the lines the plan touches and
// the self-copy reference (it runs host copies: none for device memory).
// `reference_by_rank` gets each rank's reference on rank 0.
template <class T>
yardstick_times yardsticks(MPI_Comm comm, const result& r, const copy_list& reference,
                           const config_fields<T>& f, const local_grid& grid, shape_memory& mem,
                           size_t all_fields, bool compute, std::vector<double>& reference_by_rank) {
  const size_t halo_bytes = r.bytes_received + r.bytes_copied;
  reference_by_rank.clear();
  if (f.on_device)
    return {device_copy_floor(comm, halo_bytes, mem, all_fields),
            device_copy_floor(comm, r.lines.copy_bytes(), mem, all_fields), 0.0, 0.0};
  yardstick_times t;
  t.floor = single_copy_floor(comm, halo_bytes, mem, all_fields, compute);
  t.line_floor = single_copy_floor(comm, r.lines.copy_bytes(), mem, all_fields, compute);
  t.crossing = crossing_time(comm, r.bytes_sent, r.bytes_received, mem.crossing);
  t.reference = self_copy_reference_time(comm, reference, f.host, grid, compute, &reference_by_rank);
  return t;
}

// New values everywhere, so the last exchange must move them all again.
template <class T>
void verify_last_exchange(MPI_Comm comm, halo_exchange& ex, const config_fields<T>& f,
                          const verify_context& ctx, const config& cfg) {
  fill_fields(f.host, ctx, 1);
  f.to_device();
  ex.exchange();
  f.from_device();
  verify_or_fail(comm, f.host, ctx, 1, cfg, "last");
}

// Element by element, the lower of two samples of the same thing.
std::vector<double> lower_of(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> out(std::min(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = std::min(a[i], b[i]);
  return out;
}

// A slow moment of the machine during one of the two samples would flatter
// the efficiency: the lower of each is kept.
void keep_lower(result& r, const yardstick_times& before, const yardstick_times& after) {
  r.round_floors.push_back(std::min(before.floor, after.floor));
  r.round_line_floors.push_back(std::min(before.line_floor, after.line_floor));
  r.round_crossings.push_back(std::min(before.crossing, after.crossing));
  r.round_references.push_back(std::min(before.reference, after.reference));
}

// One round of one configuration on the shape's memory: build the exchange
// (after the first round: as the first measured it), verify (the first
// round), time, verify again; the floor is sampled before and after the timing.
template <class T>
result run_config(const decomposition& decomp, const bench_options& o, const config& cfg,
                  const std::optional<exchange_options>& decided,
                  const std::vector<std::string>& hosts, shape_memory& mem, bool verify) {
  MPI_Comm comm = decomp.comm();
  const subdomain sub = o.global_domain.empty()
                            ? subdomain_per_rank(decomp, to_ivec3(o.domain))
                            : subdomain_of_global(decomp, to_ivec3(o.global_domain));
  const local_grid grid(sub.extent, cfg.halo);
  const size_t field_bytes = (grid.points() * sizeof(T) + 63) / 64 * 64;
  const size_t all_fields = field_bytes * static_cast<size_t>(cfg.nfields);
  const config_fields<T> f = place_fields<T>(decomp, o, cfg, grid, field_bytes, mem);
  verify_context ctx{grid, sub, decomp.periodic(), cfg.alg};
  // The fields keep their values from round to round: filled when first built.
  if (!decided) {
    fill_fields(f.host, ctx, 0);
    f.to_device();
  }

  result r;
  r.cfg = cfg;
  r.memory = field_memory_of(o, cfg);
  {
    const exchange_options options = options_for(o, cfg, f.on_device, decided);
    // Fields in node-shared memory are found there.
    halo_exchange ex(decomp, grid, std::span<T* const>(f.exchanged), options);
    describe_exchange(comm, ex, hosts, r);
    if (!r.chosen.empty() && decomp.rank() == 0 && !o.quiet)
      fmt::print("{} [{}]: {}\n", cfg.variant(), cfg.shape(), r.chosen);
    long long run = 1;  // every exchange, for the bytes per exchange
    ex.exchange();
    if (verify) {
      f.from_device();
      verify_or_fail(comm, f.host, ctx, 0, cfg, "first");
    }
    for (int i = 0; i < o.warmup; ++i, ++run) ex.exchange();
    const pacing pace{o.timing == "latency", o.timing == "compute"};
    const long long nrep = repetitions(comm, o, pace, ex, f.host, grid, run);
    std::vector<std::byte*> field_bytes_of;
    for (T* field : f.host) field_bytes_of.push_back(reinterpret_cast<std::byte*>(field));
    const copy_list reference = self_copy_reference(ex.plan(), field_bytes_of.data());
    std::vector<double> reference_before, reference_after;
    const auto before =
        yardsticks(comm, r, reference, f, grid, mem, all_fields, pace.compute, reference_before);
    if (o.stage_times == "timed") ex.record_stages(true);
    const timed_exchanges timed = time_exchanges(comm, nrep, pace, ex, f.host, grid);
    run += nrep;
    if (o.stage_times == "timed") {
      r.breakdown = gather_stage_breakdown(comm, ex.profile());
      ex.record_stages(false);
    } else if (o.stage_times == "pass") {
      run += record_stage_pass(comm, nrep, pace, ex, f.host, grid, r);
    }
    const auto after =
        yardsticks(comm, r, reference, f, grid, mem, all_fields, pace.compute, reference_after);
    MPI_Allreduce(&timed.loop, &r.loop_seconds, 1, MPI_DOUBLE, MPI_MAX, comm);
    MPI_Allreduce(&timed.computing, &r.compute_seconds, 1, MPI_DOUBLE, MPI_MAX, comm);
    r.samples.resize(timed.samples.size());
    MPI_Reduce(timed.samples.data(), r.samples.data(), static_cast<int>(timed.samples.size()),
               MPI_DOUBLE, MPI_MAX, 0, comm);
    r.exchanges = nrep;
    r.computed = pace.compute;
    keep_lower(r, before, after);
    r.reference_by_rank = lower_of(reference_before, reference_after);
    r.round_medians.push_back(decomp.rank() == 0 ? summarize(r.samples).median : 0.0);
    if (verify) {
      verify_last_exchange(comm, ex, f, ctx, cfg);
      ++run;
      r.verified = true;
    }
    r.sent = sent_per_exchange(comm, ex.stats(), run);
  }
  r.memcpy_seconds = r.round_floors.back();
  r.line_floor_seconds = r.round_line_floors.back();
  r.crossing_seconds = r.round_crossings.back();
  r.reference_seconds = r.round_references.back();
  return r;
}

}  // namespace

result run_any(const decomposition& decomp, const bench_options& o, const config& cfg,
               const std::optional<exchange_options>& decided,
               const std::vector<std::string>& hosts, shape_memory& mem, bool verify) {
  return cfg.type == element_type::f32
             ? run_config<float>(decomp, o, cfg, decided, hosts, mem, verify)
             : run_config<double>(decomp, o, cfg, decided, hosts, mem, verify);
}

void merge(result& into, const result& more) {
  into.samples.insert(into.samples.end(), more.samples.begin(), more.samples.end());
  into.loop_seconds += more.loop_seconds;
  into.compute_seconds += more.compute_seconds;
  into.exchanges += more.exchanges;
  into.round_floors.insert(into.round_floors.end(), more.round_floors.begin(), more.round_floors.end());
  into.round_medians.insert(into.round_medians.end(), more.round_medians.begin(),
                            more.round_medians.end());
  into.memcpy_seconds = summarize(into.round_floors).median;
  into.round_line_floors.insert(into.round_line_floors.end(), more.round_line_floors.begin(),
                                more.round_line_floors.end());
  into.line_floor_seconds = summarize(into.round_line_floors).median;
  into.round_crossings.insert(into.round_crossings.end(), more.round_crossings.begin(),
                              more.round_crossings.end());
  into.crossing_seconds = summarize(into.round_crossings).median;
  into.round_references.insert(into.round_references.end(), more.round_references.begin(),
                               more.round_references.end());
  into.reference_seconds = summarize(into.round_references).median;
  // A failed verification ends the run: verified in one round is verified.
  into.verified = into.verified || more.verified;
  into.round_probes.insert(into.round_probes.end(), more.round_probes.begin(), more.round_probes.end());
  merge(into.breakdown, more.breakdown);
}

}  // namespace halox::bench
