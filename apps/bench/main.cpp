// halox-bench: the 3-D halo-exchange benchmark (after the ghexbench cartex benchmark). Every choice
// is a run-time option; list-valued options run the whole matrix in one job,
// so that ratios between variants are measured in the same run.
#include <mpi.h>
#include <unistd.h>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "halox/common/cli.hpp"
#include "halox/common/error.hpp"
#include "halox/common/memory.hpp"
#include "halox/common/provenance.hpp"
#include "halox/common/stats.hpp"
#include "halox/decomposition.hpp"
#include "halox/decomposition/options.hpp"
#include "halox/device.hpp"
#include "halox/exchange.hpp"
#include "halox/field_memory.hpp"
#include "halox/options_json.hpp"
#include "halox/self_copy_reference.hpp"
#include "halox/transport/registry.hpp"
#include "halox/verify.hpp"
#include "stage_breakdown.hpp"

namespace {

using namespace halox;
constexpr const char* program = "halox-bench";

struct bench_options {
  std::vector<int> domain{64, 64, 64};
  std::vector<int> global_domain;
  std::vector<int> halos{1};
  std::vector<int> halo_lo, halo_hi;
  std::vector<int> nfields{1};
  std::vector<std::string> types{"double"};
  std::vector<std::string> algorithms{"standard"};
  std::vector<std::string> field_modes{"cache"};
  int fields_per_block = 0;  // 0: sized to the L2 cache
  std::vector<std::string> transports{transport_choice{}.name()};
  std::vector<std::string> variants;  // TRANSPORT/ALGORITHM/FIELDS, beside the product
  bool transport_given = false;
  int nrep = 1000;
  double time_budget = 0;  // seconds per configuration; overrides nrep when > 0
  int warmup = 10;
  int rounds = 1;
  bool no_check = false;
  std::string timing = "throughput";
  std::string json_path;
  std::string baseline = "mpi-types/staged/sequence";
  bool quiet = false;
  std::string memory = "auto";
  std::string shared_memory_fallback;  // why auto took private memory, when it did
  double timeout = 0;  // seconds per wait; 0 = HALOX_TIMEOUT or the library default
  bool list_transports = false;
  std::string wisdom;
  decomposition_options decomp;
  std::string stage_times = "pass";  // where the stage splits are recorded: pass, timed, off
  bool breakdown_table = false; // print the stage splits after the summary
};

// --fields: compact (all fields per message, moved in cache-sized blocks),
// whole (compact, not cut into blocks), sequence (one), cache (blocks sized
// to the L2 cache), auto (measured) or a number N.
struct field_grouping {
  field_mode mode = field_mode::cache;
  int per_message = 0;  // as in exchange_options::fields_per_message
  std::string label = "cache";
  bool whole = false;   // messages not cut into blocks
};

field_grouping parse_field_grouping(const std::string& text) {
  if (text == "whole") return {field_mode::compact, 0, text, true};
  if (text == "auto") return {field_mode::cache, 0, text};  // measured when the exchange is built
  if (!text.empty() && std::all_of(text.begin(), text.end(), ::isdigit)) {
    int n = text.size() > 6 ? 0 : std::stoi(text);
    if (n < 1)
      throw usage_error(fmt::format("--fields {}: a number of fields per message must be 1 to "
                                    "1000",
                                    text));
    return {field_mode::compact, n, text};
  }
  return {parse_field_mode(text), 0, text};
}

std::vector<std::string> choice_names(const std::vector<transport_choice>& choices) {
  std::vector<std::string> out;
  for (const auto& c : choices) out.push_back(c.name());
  return out;
}

// The fields a stage moves at a time for a configuration.
int fields_per_block(const bench_options& o, const field_grouping& g, int nfields) {
  return g.whole ? nfields : o.fields_per_block;
}

struct config {
  transport_choice transport;  // ignored when auto_transport
  algorithm alg = algorithm::standard;  // ignored when auto_algorithm
  field_grouping fields;
  element_type type = element_type::f64;
  halo_widths halo;
  int halo_label = 0;  // the uniform width, or -1 for per-side widths
  int nfields = 1;
  bool auto_transport = false, auto_algorithm = false;

  // Named as asked: "auto" where the choice is measured.
  std::string transport_label() const { return auto_transport ? "auto" : transport.name(); }
  std::string algorithm_label() const { return auto_algorithm ? "auto" : to_string(alg); }
  bool automatic() const { return auto_transport || auto_algorithm || fields.label == "auto"; }
  std::string variant() const {
    return fmt::format("{}/{}/{}", transport_label(), algorithm_label(), fields.label);
  }
  std::string shape() const {
    std::string h = halo_label >= 0 ? fmt::format("h{}", halo_label) : std::string("h*");
    return fmt::format("{} {}f{}", to_string(type), h, nfields);
  }
};

struct result {
  config cfg;
  std::vector<double> samples;  // per exchange, max over ranks (rank 0 only)
  double loop_seconds = 0;      // wall time of all timed exchanges, max over ranks
  long long exchanges = 0;
  double memcpy_seconds = 0;    // the single-copy floor: median over rounds, max over ranks
  bool computed = false;        // --timing compute
  double compute_seconds = 0;   // its steps between exchanges, max over ranks
  // Per round: the median exchange and the floor measured around it (max over
  // ranks); efficiency = median over rounds of floor / exchange.
  std::vector<double> round_medians, round_floors;
  // The self-copy reference around the same exchanges (the lower of before and
  // after, slowest rank): its median over rounds, and per round.
  double reference_seconds = 0;
  std::vector<double> round_references;
  size_t bytes_sent = 0, bytes_copied = 0, bytes_received = 0, messages = 0;
  size_t max_bytes_sent = 0;    // over ranks
  std::string memory;           // "shared" or "private"
  std::string settings;         // what the transports chose when built
  std::string path;             // how the data moved (a fallback shows here)
  std::string chosen;           // what auto choices chose
  std::optional<exchange_options> decided;  // and the options they decided on
  int fields_per_message = 1, fields_per_block = 1;
  bool verified = false;
  // Per exchange, summed over ranks: the plan's message bytes by whether the
  // peer has this rank's host name, and what each transport sent by node.
  unsigned long long plan_to_same_host = 0, plan_to_other_hosts = 0;
  std::vector<transport_stats> sent;
  stage_breakdown breakdown;  // where each stage's time went (rank 0; --stage-times)
  setup_record setup;         // of the first round's exchange
};

ivec3 to_ivec3(const std::vector<int>& v) { return {v[0], v[1], v[2]}; }

void add_options(CLI::App& app, bench_options& o) {
  add_decomposition_options(app, o.decomp);
  // A repeated scalar option overrides the earlier one, as in most launch scripts.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--domain", o.domain, "Interior cells per rank X Y Z")->expected(3)->multi_option_policy(CLI::MultiOptionPolicy::Throw)->capture_default_str();
  app.add_option("--global-domain", o.global_domain,
                 "Global cells X Y Z, split over the rank grid (remainders spread evenly); "
                 "replaces --domain")
      ->expected(3)->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  app.add_option("--halo", o.halos, "Halo width(s), e.g. --halo 1,5")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--halo-lo", o.halo_lo, "Per-side halo widths below X Y Z (with --halo-hi)")->expected(3)->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  app.add_option("--halo-hi", o.halo_hi, "Per-side halo widths above X Y Z (with --halo-lo)")->expected(3)->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  app.add_option("--nfields", o.nfields, "Number(s) of fields, e.g. --nfields 1,8")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--type", o.types, "Element type(s): float, double")->delimiter(',')->capture_default_str();
  app.add_option("--algorithm", o.algorithms, "standard (26 messages), staged (3 steps, 6 messages), "
                 "faces (6 messages, no edges/corners), auto (the faster of standard and staged, measured), "
                 "or all")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--fields", o.field_modes, "cache (blocks of fields whose halo traffic fits the L2 "
                 "cache, one message each), compact (all fields of a neighbour in one message, moved "
                 "in cache-sized blocks), whole (compact, messages not cut into blocks), sequence "
                 "(field by field), N (N fields per message), auto (the fastest of compact, "
                 "sequence and whole, measured), or all (compact,sequence)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--fields-per-block", o.fields_per_block, "Fields a stage moves at a time, "
                 "every message cut into blocks of that many (0: sized to the smallest L2 cache "
                 "of the ranks)")
      ->capture_default_str();
  app.add_option("--transport", o.transports,
                 fmt::format("Transport(s): a name ({}), LOCAL+REMOTE (on-node neighbours by "
                             "LOCAL, the others by REMOTE), auto (the fastest, measured), or all; see "
                             "--list-transports",
                             fmt::join(choice_names(available_transport_choices()), ", ")))
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--variants", o.variants, "Variants named whole, TRANSPORT/ALGORITHM/FIELDS "
                 "(e.g. auto/auto/auto,shm/staged/cache), run beside the product of --transport, "
                 "--algorithm and --fields; alone (without --transport) they are the only ones")
      ->delimiter(',');
  app.add_option("--nrep", o.nrep, "Timed exchanges per configuration")->capture_default_str();
  app.add_option("--time", o.time_budget, "Seconds of timed exchanges per configuration (replaces --nrep)");
  app.add_option("--warmup", o.warmup, "Untimed exchanges before timing")->capture_default_str();
  app.add_option("--rounds", o.rounds, "Run the variants of each shape (type, halo, fields) this "
                 "many times, interleaved, on the same memory; the floor is measured in every round")
      ->capture_default_str();
  app.add_option("--timing", o.timing, "throughput: back-to-back exchanges; latency: a barrier "
                 "before each; compute: before each (untimed), every halo cell of every field "
                 "read and every interior cell rewritten, then a barrier, so that each exchange "
                 "meets the caches as a time step leaves them")
      ->capture_default_str();
  app.add_option("--baseline", o.baseline, "Variant transport/algorithm/fields that ratios refer to")
      ->capture_default_str();
  app.add_flag("--list-transports", o.list_transports,
               "Print every transport: name, whether it is available here (and why not), reach, "
               "description; then exit");
  app.add_option("--timeout", o.timeout, "Seconds a wait may last before the run fails naming "
                 "the peer (default: HALOX_TIMEOUT or 600)");
  app.add_option("--wisdom", o.wisdom, "File of earlier automatic choices: read before measuring, "
                 "appended after (also HALOX_WISDOM)");
  app.add_flag("--no-check", o.no_check, "Skip the cell-exact verification (timing-critical runs)");
  app.add_option("--json", o.json_path, "Append one JSON object per configuration to FILE");
  app.add_flag("--quiet", o.quiet, "Print only the summary table");
  app.add_flag("--breakdown", o.breakdown_table, "After the summary, print where each stage's "
               "time goes (copying, waiting for neighbours, the rest) on the slowest and the "
               "median rank");
  app.add_option("--stage-times", o.stage_times, "Where each stage's time goes is recorded in "
                 "pass: a pass of its own after the timed exchanges (a quarter as many, at least "
                 "100; the timed ones stay untouched), timed: the timed exchanges themselves "
                 "(reading the clock around every copy and wait costs them 20-60 ns a time), or "
                 "off")
      ->check(CLI::IsMember({"pass", "timed", "off"}))
      ->capture_default_str();
  app.add_option("--memory", o.memory, "Field memory: private (aligned heap), shared (node-shared "
                 "window), auto (shared when shm carries the on-node neighbours, which then "
                 "copies in place, and when node-shared memory (/dev/shm) has room; private "
                 "otherwise), or device (CUDA device memory, one GPU per rank round robin: packed "
                 "on the GPU, verified on the host after copying back; the floor is a "
                 "device-to-device copy; transports mpi-p2p and cuda-ipc)")
      ->check(CLI::IsMember({"auto", "private", "shared", "device"}))
      ->capture_default_str();
}

// Collective: the transports that move device memory, available on every rank
// ("all" with --memory device).
std::vector<std::string> device_transport_choices(MPI_Comm comm) {
  std::vector<int> available;
  const auto registry = transport_registry();
  for (const transport_entry* e : registry)
    available.push_back(e->moves_device_memory && e->available() ? 1 : 0);
  MPI_Allreduce(MPI_IN_PLACE, available.data(), static_cast<int>(available.size()), MPI_INT,
                MPI_MIN, comm);
  std::vector<std::string> out;
  for (size_t i = 0; i < available.size(); ++i)
    if (available[i]) out.emplace_back(registry[i]->name);
  return out;
}

// This rank's place among the ranks of its machine (which GPU it takes).
int node_rank(MPI_Comm comm) {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int rank = 0;
  MPI_Comm_rank(node, &rank);
  MPI_Comm_free(&node);
  return rank;
}

// "all" stands for every value; other values given beside it are kept, once each.
std::vector<std::string> expand_all(std::vector<std::string> values,
                                    const std::vector<std::string>& every) {
  std::vector<std::string> out;
  for (const auto& v : split_list(values))
    for (const auto& item : v == "all" ? every : std::vector<std::string>{v})
      if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
  return out;
}

std::vector<config> build_matrix(bench_options& o, const std::vector<std::string>& transports_here) {
  auto need_positive = [](const std::vector<int>& v, const char* what) {
    for (int x : v)
      if (x <= 0) throw usage_error(fmt::format("{} must be positive, got {}", what, x));
  };
  auto need_three = [](const std::vector<int>& v, const char* what) {
    if (!v.empty() && v.size() != 3)
      throw usage_error(fmt::format("{} takes 3 values X Y Z, got {}", what, v.size()));
  };
  need_three(o.domain, "--domain");
  need_three(o.global_domain, "--global-domain");
  need_three(o.halo_lo, "--halo-lo");
  need_three(o.halo_hi, "--halo-hi");
  need_positive(o.domain, "--domain");
  if (!o.global_domain.empty()) need_positive(o.global_domain, "--global-domain");
  need_positive(o.nfields, "--nfields");
  for (int h : o.halos)
    if (h < 0) throw usage_error(fmt::format("--halo must not be negative, got {}", h));
  if (o.halo_lo.empty() != o.halo_hi.empty())
    throw usage_error("--halo-lo and --halo-hi must be given together");
  for (const auto* v : {&o.halo_lo, &o.halo_hi})
    for (int h : *v)
      if (h < 0) throw usage_error(fmt::format("per-side halo widths must not be negative, got {}", h));
  if (o.nrep <= 0) throw usage_error(fmt::format("--nrep must be positive, got {}", o.nrep));
  if (o.fields_per_block < 0)
    throw usage_error(fmt::format("--fields-per-block must not be negative, got {}", o.fields_per_block));
  if (o.time_budget < 0) throw usage_error("--time must not be negative");
  if (o.warmup < 0) throw usage_error("--warmup must not be negative");
  if (o.rounds <= 0) throw usage_error("--rounds must be positive");
  if (o.timing != "throughput" && o.timing != "latency" && o.timing != "compute")
    throw usage_error(
        fmt::format("unknown timing '{}' (expected throughput, latency or compute)", o.timing));
  for (int f : o.nfields)
    if (f > 1000) throw usage_error(fmt::format("--nfields {} is more than the 1000 supported", f));

  std::vector<halo_widths> halos;
  std::vector<int> labels;
  if (!o.halo_lo.empty()) {
    halos.push_back({to_ivec3(o.halo_lo), to_ivec3(o.halo_hi)});
    labels.push_back(-1);
  } else {
    for (int h : o.halos) {
      halos.push_back(halo_widths::uniform(h));
      labels.push_back(h);
    }
  }
  std::vector<config> matrix;
  if (o.timeout < 0) throw usage_error("--timeout must not be negative");
  // "auto" (measured when the exchange is built) stands beside the named choices.
  const transport_choice measured{};
  std::vector<std::string> transport_names =
      o.variants.empty() || o.transport_given ? expand_all(o.transports, transports_here)
                                              : std::vector<std::string>{};
  // The variants: the product of the lists, then the ones named whole.
  struct variant {
    std::string transport, alg, fields;
  };
  std::vector<variant> variants;
  for (const auto& t : transport_names)
    for (const auto& a : expand_all(o.algorithms, {"standard", "staged", "faces"}))
      for (const auto& m : expand_all(o.field_modes, {"compact", "sequence"}))
        variants.push_back({t, a, m});
  for (const auto& v : split_list(o.variants)) {
    const auto first = v.find('/'), last = v.rfind('/');
    if (first == std::string::npos || first == last)
      throw usage_error(fmt::format("--variants: '{}' is not TRANSPORT/ALGORITHM/FIELDS", v));
    variants.push_back({v.substr(0, first), v.substr(first + 1, last - first - 1), v.substr(last + 1)});
  }
  // Shapes outer, variants inner: the variants of a shape run side by side,
  // on the same memory, with the floor measured between them.
  for (const auto& ty : split_list(o.types))
    for (size_t h = 0; h < halos.size(); ++h)
      for (int nf : o.nfields)
        for (const auto& v : variants) {
          config c;
          c.auto_transport = v.transport == "auto";
          c.transport = c.auto_transport ? measured : parse_transport_choice(v.transport);
          c.auto_algorithm = v.alg == "auto";
          c.alg = c.auto_algorithm ? algorithm::standard : parse_algorithm(v.alg);
          c.fields = parse_field_grouping(v.fields);
          c.type = parse_element_type(ty);
          c.halo = halos[h];
          c.halo_label = labels[h];
          c.nfields = nf;
          matrix.push_back(c);
        }
  return matrix;
}

// Smallest sub-domain extent per dimension over all ranks: a halo must fit it.
ivec3 smallest_extent(const bench_options& o, const ivec3& dims) {
  if (o.global_domain.empty()) return to_ivec3(o.domain);
  ivec3 out;
  for (int d = 0; d < 3; ++d) out[d] = o.global_domain[d] / dims[d];
  return out;
}

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

// The memory of one shape (element type, halo widths, fields): node-shared
// and private fields and the floor's buffers, allocated when a variant first
// needs them and kept for every variant and round of the shape, so that all
// of them meet the same pages.
struct shape_memory {
  std::optional<shared_field_memory> shared;
  std::vector<mapped_buffer> fields;         // private (with --memory device: the host's copies)
  mapped_buffer floor_from, floor_to;        // the size of all fields
  std::vector<std::shared_ptr<void>> device_fields;            // --memory device
  std::shared_ptr<void> device_floor_from, device_floor_to;    // the size of all fields
};

std::shared_ptr<void> device_buffer(size_t bytes) {
  return std::shared_ptr<void>(cuda::allocate(bytes), cuda::release);
}

// Collective: the median of samples worth about `floor_sample_seconds` (at
// least 5, at most 101) of `timed`, every sample started by all ranks
// together after an untimed `prepare(i)`, so that a moment of the machine
// shorter than half of them does not move it; slowest rank. Ranks with
// nothing to time (`any` false) take part with 0. The first sample, untimed,
// brings the lines in; its whole time (barrier included: slow where ranks
// outnumber cores) sets how many follow.
constexpr double floor_sample_seconds = 2e-3;
template <class Prepare, class Timed>
double median_of_samples(MPI_Comm comm, bool any, Prepare&& prepare, Timed&& timed) {
  auto sample = [&](int i) {
    prepare(i);
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    if (any) timed(i);
    return MPI_Wtime() - t0;
  };
  const double started = MPI_Wtime();
  sample(0);
  double first = MPI_Wtime() - started, slowest_first = 0;
  MPI_Allreduce(&first, &slowest_first, 1, MPI_DOUBLE, MPI_MAX, comm);
  const int count = static_cast<int>(
      std::clamp(floor_sample_seconds / std::max(slowest_first, 1e-9), 5.0, 101.0));
  std::vector<double> times;
  for (int i = 1; i <= count; ++i) times.push_back(sample(i));
  double median = any ? summarize(times).median : 0, slowest = 0;
  MPI_Allreduce(&median, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
  return slowest;
}

// The single-copy floor: every rank copies its halo bytes once, all ranks at
// the same time, from and to buffers the size of its fields. Collective on
// every rank, also those with nothing to copy (an open side of width 0 leaves
// a rank without halo bytes while its neighbours have some).
double single_copy_floor(MPI_Comm comm, size_t bytes, shape_memory& mem, size_t field_bytes,
                         bool after_compute) {
  if (mem.floor_from.size() < field_bytes) {
    mem.floor_from = mapped_buffer(field_bytes);
    mem.floor_to = mapped_buffer(field_bytes);
    std::memset(mem.floor_from.data(), 1, field_bytes);
    std::memset(mem.floor_to.data(), 0, field_bytes);
  }
  std::byte* from = mem.floor_from.data();
  std::byte* to = mem.floor_to.data();
  bytes = std::min(bytes, field_bytes);
  return median_of_samples(
      comm, bytes > 0,
      [&](int i) {
        // --timing compute: both buffers written whole first, as the fields are.
        if (after_compute)
          for (std::byte* buffer : {from, to}) std::memset(buffer, i & 0xff, field_bytes);
      },
      [&](int i) {
        std::memcpy(to, from, bytes);
        // Keep the copy observable so it is not optimised away.
        from[static_cast<size_t>(i) % bytes] = to[(static_cast<size_t>(i) * 7) % bytes];
      });
}

// The floor of device memory: every rank copies its halo bytes once device to
// device (cudaMemcpy, synchronised), all ranks at the same time. Collective.
double device_copy_floor(MPI_Comm comm, size_t bytes, shape_memory& mem, size_t field_bytes) {
  if (!mem.device_floor_from) {
    mem.device_floor_from = device_buffer(field_bytes);
    mem.device_floor_to = device_buffer(field_bytes);
  }
  bytes = std::min(bytes, field_bytes);
  return median_of_samples(
      comm, bytes > 0, [](int) {},
      [&](int) { cuda::copy_on_device(mem.device_floor_to.get(), mem.device_floor_from.get(), bytes); });
}

// --timing compute: one time step between exchanges, field after field, in
// one pass over each field's rows: every halo cell read (as a stencil reads
// what the exchange delivered: lines an owner wrote into this rank's halo
// come back here) and every interior cell rewritten (the faces the next
// exchange sends are freshly written; the later fields take the caches).
volatile double halo_read_sink;  // keeps compute_step's halo reads

template <class T>
void compute_step(const std::vector<T*>& fields, const local_grid& grid) {
  const ivec3 n = grid.interior;
  const halo_widths& h = grid.halo;
  for (T* field : fields) {
    T read = 0;
    for (int z = -h.lo[2]; z < n[2] + h.hi[2]; ++z)
      for (int y = -h.lo[1]; y < n[1] + h.hi[1]; ++y) {
        T* row = field + grid.index(0, y, z);
        if (y < 0 || y >= n[1] || z < 0 || z >= n[2]) {
          for (int x = -h.lo[0]; x < n[0] + h.hi[0]; ++x) read += row[x];
          continue;
        }
        for (int x = -h.lo[0]; x < 0; ++x) read += row[x];
        for (int x = n[0]; x < n[0] + h.hi[0]; ++x) read += row[x];
        for (int x = 0; x < n[0]; ++x) row[x] = row[x] * T(0.5) + T(1);
      }
    halo_read_sink = static_cast<double>(read);
  }
}

// The self-copy reference (halox/self_copy_reference.hpp): every rank fills
// the halos its exchange fills from its own cells, all ranks at the same
// time, on the exchange's fields; nothing crosses ranks. Collective.
template <class T>
double self_copy_reference_time(MPI_Comm comm, const copy_list& copies, const std::vector<T*>& fields,
                                const local_grid& grid, bool after_compute) {
  return median_of_samples(
      comm, !copies.empty(),
      [&](int) {
        if (after_compute) compute_step(fields, grid);
      },
      [&](int) { copies.run(); });
}

// Collective: the fields of the largest configuration, on every rank of a
// node, must fit the node's memory; found before anything is allocated (and
// before cell counts could overflow).
void require_fits_in_memory(MPI_Comm comm, const bench_options& o, const std::vector<config>& matrix,
                            const ivec3& dims) {
  long double most = 0;
  for (const auto& cfg : matrix) {
    long double cells = 1;
    for (int d = 0; d < 3; ++d) {
      long double extent = o.global_domain.empty()
                               ? o.domain[static_cast<size_t>(d)]
                               : (o.global_domain[static_cast<size_t>(d)] + dims[d] - 1) / dims[d];
      cells *= extent + cfg.halo.lo[d] + cfg.halo.hi[d];
    }
    most = std::max(most, cells * cfg.nfields * static_cast<long double>(element_size(cfg.type)));
  }
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int ranks_on_node = 1;
  MPI_Comm_size(node, &ranks_on_node);
  MPI_Comm_free(&node);
  const long double memory = static_cast<long double>(sysconf(_SC_PHYS_PAGES)) *
                             static_cast<long double>(sysconf(_SC_PAGE_SIZE));
  std::string problem;
  if (most * ranks_on_node > memory)
    problem = fmt::format("the fields need {:.3g} GB per rank, {:.3g} GB for the {} ranks of a "
                          "node, but the node has {:.3g} GB of memory: choose a smaller domain or "
                          "fewer fields",
                          static_cast<double>(most / 1e9),
                          static_cast<double>(most * ranks_on_node / 1e9), ranks_on_node,
                          static_cast<double>(memory / 1e9));
  require_all(comm, problem);
}

std::string memory_kind(const bench_options& o, const config& cfg) {
  if (o.memory != "auto") return o.memory;
  if (!o.shared_memory_fallback.empty()) return "private";
  if (cfg.auto_transport) return "shared";  // lets shm compete at its best
  return cfg.transport.local().prefers_shared_fields ? "shared" : "private";
}

// Collective, before the first exchange: node-shared fields, asked for
// (--memory shared) or chosen (auto), must fit the file system that holds
// them (/dev/shm). An explicit ask that does not fit fails with one line;
// auto falls back to private memory (o.shared_memory_fallback says why).
void check_shared_memory(const decomposition& decomp, bench_options& o,
                         const std::vector<config>& matrix) {
  const subdomain sub = o.global_domain.empty()
                            ? subdomain_per_rank(decomp, to_ivec3(o.domain))
                            : subdomain_of_global(decomp, to_ivec3(o.global_domain));
  size_t most = 0;
  for (const auto& cfg : matrix)
    if (memory_kind(o, cfg) == "shared") {
      const size_t field_bytes =
          (local_grid(sub.extent, cfg.halo).cells() * element_size(cfg.type) + 63) / 64 * 64;
      most = std::max(most, field_bytes * static_cast<size_t>(cfg.nfields) + 64);
    }
  int any = most > 0 ? 1 : 0;  // the same matrix everywhere, but sizes may differ by rank
  MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, decomp.comm());
  if (!any) return;
  MPI_Comm node = node_communicator(decomp.comm(), o.decomp.ranks_per_node);
  const shared_memory_space space = node_shared_memory_space(decomp.comm(), node, most);
  MPI_Comm_free(&node);
  if (space.fits) return;
  if (o.memory == "shared")
    throw usage_error(describe_shortage(space, "the fields (--memory shared)"));
  o.shared_memory_fallback = describe_shortage(space, "node-shared fields");
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

// One round of one configuration on the shape's memory: build the exchange,
// verify, time, verify again; the floor is sampled before and after the timing.
template <class T>
result run_config(const decomposition& decomp, const bench_options& o, const config& cfg,
                  const std::optional<exchange_options>& decided,
                  const std::vector<std::string>& hosts, shape_memory& mem, bool verify) {
  MPI_Comm comm = decomp.comm();
  subdomain sub = o.global_domain.empty() ? subdomain_per_rank(decomp, to_ivec3(o.domain))
                                          : subdomain_of_global(decomp, to_ivec3(o.global_domain));
  local_grid grid(sub.extent, cfg.halo);
  const size_t field_bytes = (grid.cells() * sizeof(T) + 63) / 64 * 64;
  const size_t all_fields = field_bytes * static_cast<size_t>(cfg.nfields);
  const bool shared = memory_kind(o, cfg) == "shared";
  const bool on_device = memory_kind(o, cfg) == "device";
  std::vector<T*> fields;  // filled and verified here (with --memory device: the host's copies)
  if (shared) {
    if (!mem.shared)
      mem.shared.emplace(decomp, field_bytes, cfg.nfields, o.decomp.ranks_per_node);
    for (int f = 0; f < cfg.nfields; ++f) fields.push_back(static_cast<T*>(mem.shared->field(f)));
  } else {
    if (mem.fields.empty())
      for (int f = 0; f < cfg.nfields; ++f) mem.fields.emplace_back(field_bytes);
    for (auto& f : mem.fields) fields.push_back(reinterpret_cast<T*>(f.data()));
  }
  // What the exchange moves: the fields, or their copies on the GPU.
  std::vector<T*> exchanged = fields;
  if (on_device) {
    if (mem.device_fields.empty())
      for (int f = 0; f < cfg.nfields; ++f) mem.device_fields.push_back(device_buffer(field_bytes));
    for (size_t f = 0; f < exchanged.size(); ++f) exchanged[f] = static_cast<T*>(mem.device_fields[f].get());
  }
  auto to_device = [&] {
    if (on_device)
      for (size_t f = 0; f < fields.size(); ++f)
        cuda::copy_to_device(exchanged[f], fields[f], grid.cells() * sizeof(T));
  };
  auto from_device = [&] {
    if (on_device)
      for (size_t f = 0; f < fields.size(); ++f)
        cuda::copy_to_host(fields[f], exchanged[f], grid.cells() * sizeof(T));
  };
  verify_context ctx{grid, sub, decomp.periodic(), cfg.alg};
  fill_fields(fields, ctx, 0);
  to_device();

  result r;
  r.cfg = cfg;
  {
    exchange_options options{.alg = cfg.alg,
                             .mode = cfg.fields.mode,
                             .transport = cfg.transport,
                             .fields_per_message = cfg.fields.per_message,
                             .fields_per_block = fields_per_block(o, cfg.fields, cfg.nfields),
                             .ranks_per_node = o.decomp.ranks_per_node,
                             .timeout_seconds = o.timeout,
                             .auto_transport = cfg.auto_transport,
                             .auto_algorithm = cfg.auto_algorithm,
                             .auto_fields = cfg.fields.label == "auto",
                             .wisdom_file = o.wisdom};
    options.memory = on_device ? halox::memory_kind::device : halox::memory_kind::host;
    // An automatic choice is measured in the first round and kept by the
    // others, as a program keeps the exchange it built.
    if (decided) options = *decided;
    halo_exchange ex = shared ? halo_exchange(decomp, grid, element_type_of<T>(), *mem.shared, options)
                              : halo_exchange(decomp, grid, std::span<T* const>(exchanged), options);
    r.path = ex.transport_path();
    r.settings = ex.transport_settings();
    r.chosen = ex.tuning();
    if (!r.chosen.empty()) r.decided = ex.options();
    r.setup = gather_setup(comm, ex.profile(), ex.plan());
    if (!r.chosen.empty() && decomp.rank() == 0 && !o.quiet)
      fmt::print("{} [{}]: {}\n", cfg.variant(), cfg.shape(), r.chosen);
    r.memory = shared ? "shared" : on_device ? "device" : "private";
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
    count_plan_by_host(comm, plan, hosts, r);
    long long exchanges_run = 0;  // all of them, for the bytes per exchange
    auto exchange = [&] {
      ex.exchange();
      ++exchanges_run;
    };

    exchange();
    if (verify) {
      from_device();
      verify_or_fail(comm, fields, ctx, 0, cfg, "first");
    }

    for (int i = 0; i < o.warmup; ++i) exchange();
    long long nrep = o.nrep;
    const bool latency = o.timing == "latency", compute = o.timing == "compute";
    if (o.time_budget > 0) {
      // Agree on a repetition count from a short calibration.
      double t0 = MPI_Wtime();
      int probe = 5;
      for (int i = 0; i < probe; ++i) {
        if (compute) compute_step(fields, grid);
        exchange();
      }
      double per = (MPI_Wtime() - t0) / probe, slowest = 0;
      MPI_Allreduce(&per, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
      nrep = std::clamp<long long>(static_cast<long long>(o.time_budget / std::max(slowest, 1e-9)),
                                   10, 10'000'000);
    }
    const size_t halo_bytes = r.bytes_received + r.bytes_copied;
    std::vector<std::byte*> field_bytes_of;
    for (T* f : fields) field_bytes_of.push_back(reinterpret_cast<std::byte*>(f));
    const copy_list reference = self_copy_reference(plan, field_bytes_of.data());
    // The self-copy reference runs host copies: none for device memory.
    const double floor_before = on_device ? device_copy_floor(comm, halo_bytes, mem, all_fields)
                                          : single_copy_floor(comm, halo_bytes, mem, all_fields, compute);
    const double reference_before =
        on_device ? 0.0 : self_copy_reference_time(comm, reference, fields, grid, compute);
    std::vector<double> samples(static_cast<size_t>(nrep));
    if (o.stage_times == "timed") ex.record_stages(true);
    MPI_Barrier(comm);
    double loop_start = MPI_Wtime(), computing = 0;
    for (long long i = 0; i < nrep; ++i) {
      if (compute) {
        const double c0 = MPI_Wtime();
        compute_step(fields, grid);
        computing += MPI_Wtime() - c0;
      }
      // After a compute step too: a rank whose step ran longer would count
      // as the others' exchange time.
      if (latency || compute) MPI_Barrier(comm);
      double t0 = MPI_Wtime();
      ex.exchange();
      samples[static_cast<size_t>(i)] = MPI_Wtime() - t0;
    }
    // The exchanges' own time: the compute steps are not the exchange's.
    double loop = MPI_Wtime() - loop_start;
    if (compute) loop = std::accumulate(samples.begin(), samples.end(), 0.0);
    if (o.stage_times == "timed") {
      r.breakdown = gather_stage_breakdown(comm, ex.profile());
      ex.record_stages(false);
    } else if (o.stage_times == "pass") {
      // Reading the clock around every copy and wait costs 20-60 ns a time:
      // the timed exchanges above stay untouched, a pass of their own records.
      const long long recorded = breakdown_exchanges(nrep);
      ex.record_stages(true);
      MPI_Barrier(comm);
      for (long long i = 0; i < recorded; ++i) {
        if (compute) compute_step(fields, grid);
        if (latency || compute) MPI_Barrier(comm);
        ex.exchange();
      }
      r.breakdown = gather_stage_breakdown(comm, ex.profile());
      ex.record_stages(false);
      exchanges_run += recorded;
    }
    const double floor_after = on_device ? device_copy_floor(comm, halo_bytes, mem, all_fields)
                                         : single_copy_floor(comm, halo_bytes, mem, all_fields, compute);
    const double reference_after =
        on_device ? 0.0 : self_copy_reference_time(comm, reference, fields, grid, compute);
    exchanges_run += nrep;
    MPI_Allreduce(&loop, &r.loop_seconds, 1, MPI_DOUBLE, MPI_MAX, comm);
    MPI_Allreduce(&computing, &r.compute_seconds, 1, MPI_DOUBLE, MPI_MAX, comm);
    r.samples.resize(samples.size());
    MPI_Reduce(samples.data(), r.samples.data(), static_cast<int>(samples.size()), MPI_DOUBLE,
               MPI_MAX, 0, comm);
    r.exchanges = nrep;
    r.computed = compute;
    // A slow moment of the machine during one of the two would flatter the
    // efficiency: the lower is kept.
    r.round_floors.push_back(std::min(floor_before, floor_after));
    r.round_references.push_back(std::min(reference_before, reference_after));
    r.round_medians.push_back(decomp.rank() == 0 ? summarize(r.samples).median : 0.0);

    if (verify) {
      // New values everywhere, so the last exchange must move them all again.
      fill_fields(fields, ctx, 1);
      to_device();
      exchange();
      from_device();
      verify_or_fail(comm, fields, ctx, 1, cfg, "last");
      r.verified = true;
    }
    r.sent = sent_per_exchange(comm, ex.stats(), exchanges_run);
  }
  r.memcpy_seconds = r.round_floors.back();
  r.reference_seconds = r.round_references.back();
  return r;
}

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
  into.round_references.insert(into.round_references.end(), more.round_references.begin(),
                               more.round_references.end());
  into.reference_seconds = summarize(into.round_references).median;
  into.verified = into.verified && more.verified;
  merge(into.breakdown, more.breakdown);
}

// A reference over the exchange, round by round (both measured in the same
// minute of the machine), median over rounds.
double share_of(const std::vector<double>& references, const std::vector<double>& exchanges) {
  std::vector<double> ratios;
  for (size_t i = 0; i < exchanges.size() && i < references.size(); ++i)
    if (exchanges[i] > 0) ratios.push_back(references[i] / exchanges[i]);
  return ratios.empty() ? 0.0 : summarize(ratios).median;
}

// The single-copy floor over the exchange.
double efficiency(const result& r) {
  return share_of(r.round_floors, r.round_medians);
}

// The self-copy reference over the exchange: 1 is what the layout allows
// without crossing ranks.
double reference_share(const result& r) {
  return share_of(r.round_references, r.round_medians);
}

std::string us(double seconds) { return fmt::format("{:.2f}", seconds * 1e6); }

void print_result(const result& r, const summary& s) {
  double mean_per = r.loop_seconds / static_cast<double>(r.exchanges);
  double bytes = static_cast<double>(r.bytes_sent + r.bytes_copied);
  fmt::print("\n{}  [{}]  path {}, {} memory\n", r.cfg.variant(), r.cfg.shape(), r.path, r.memory);
  fmt::print("  per exchange: {} messages, {} B to other ranks, {} B local copies (rank 0); "
             "max over ranks {} B\n",
             r.messages, r.bytes_sent, r.bytes_copied, r.max_bytes_sent);
  fmt::print("  time per exchange [us], slowest rank, {} exchanges: median {}  mean {}  sd {}\n",
             r.exchanges, us(s.median), us(s.mean), us(s.stddev));
  fmt::print("    min {}  p5 {}  p25 {}  p75 {}  p95 {}  max {}\n", us(s.min), us(s.p5), us(s.p25),
             us(s.p75), us(s.p95), us(s.max));
  fmt::print("  seconds per 10000 exchanges: {:.4f}   throughput {:.2f} GB/s   single-copy floor "
             "{} us -> efficiency {:.1f} %\n",
             mean_per * 1e4, bytes / s.median / 1e9, us(r.memcpy_seconds), 100.0 * efficiency(r));
  fmt::print("  self-copy reference {} us (each rank fills the same halos from its own cells, "
             "nothing crossing ranks) -> {:.1f} % of it\n",
             us(r.reference_seconds), 100.0 * reference_share(r));
  if (r.computed)
    fmt::print("  compute step between exchanges (untimed): {} us\n",
               us(r.compute_seconds / static_cast<double>(r.exchanges)));
  if (!r.settings.empty()) fmt::print("  transport settings: {}\n", r.settings);
  fmt::print("  setup {:.1f} ms (auto choices {:.1f}, plan {:.1f}, transports {:.1f}; slowest "
             "rank), {} neighbours at most\n",
             r.setup.slowest.total_s * 1e3, r.setup.slowest.measured_choice_s * 1e3,
             r.setup.slowest.plan_s * 1e3, r.setup.slowest.transports_s * 1e3, r.setup.neighbours);
  if (!r.breakdown.empty())
    fmt::print("  per stage [us per exchange, middle half's mean of the recorded exchanges]: p "
               "pack, c other copies, wp wait for peers, wr wait for readers, o other\n"
               "    slowest {}\n    median  {}\n",
               describe_split(slowest_rank(r.breakdown)), describe_split(median_rank(r.breakdown)));
  std::string sent;
  for (const auto& t : r.sent)
    sent += fmt::format("; {} {} B on node, {} B off node", t.transport, t.bytes_to_same_node,
                        t.bytes_to_other_nodes);
  fmt::print("  all ranks per exchange: plan {} B within hosts, {} B across hosts{}\n",
             r.plan_to_same_host, r.plan_to_other_hosts, sent);
  fmt::print("  verification: {}\n", r.verified ? "passed (first and last exchange)" : "skipped");
}

// What the plain-MPI variants follow, so that a ratio over them says which program it stands for.
std::string baseline_text(const std::string& baseline) {
  if (baseline == "mpi-types/staged/sequence")
    return baseline + " (the algorithm of cartex mpi_comm --MPI-datatypes)";
  if (baseline == "mpi-cartex/staged/sequence")
    return baseline + " (the algorithm of cartex mpi_comm, the Betzy results' benchmark_mpi_comm)";
  return baseline;
}

void print_summary(const std::vector<result>& results, const std::vector<summary>& stats,
                   const std::string& baseline) {
  std::vector<std::string> variants, shapes;
  std::map<std::pair<std::string, std::string>, double> median, floor;
  for (size_t i = 0; i < results.size(); ++i) {
    auto v = results[i].cfg.variant(), sh = results[i].cfg.shape();
    if (std::find(variants.begin(), variants.end(), v) == variants.end()) variants.push_back(v);
    if (std::find(shapes.begin(), shapes.end(), sh) == shapes.end()) shapes.push_back(sh);
    median[{v, sh}] = stats[i].median;
    floor[{v, sh}] = efficiency(results[i]);
  }
  bool have_baseline = std::find(variants.begin(), variants.end(), baseline) != variants.end();
  size_t width = 22;
  for (const auto& sh : shapes) width = std::max(width, sh.size() + 2);
  fmt::print("\nSummary: median time per exchange [us] of the slowest rank{}; N% = efficiency "
             "(the single-copy floor over the time)\n",
             have_baseline ? fmt::format("; (xN) = speed-up over {}", baseline_text(baseline)) : "");
  size_t name_width = 34;
  for (const auto& v : variants) name_width = std::max(name_width, v.size() + 2);
  fmt::print("{:<{}}", "transport/algorithm/fields", name_width);
  for (const auto& sh : shapes) fmt::print("{:>{}}", sh, width);
  fmt::print("\n");
  for (const auto& v : variants) {
    fmt::print("{:<{}}", v, name_width);
    for (const auto& sh : shapes) {
      auto it = median.find({v, sh});
      if (it == median.end()) {
        fmt::print("{:>{}}", "-", width);
        continue;
      }
      std::string cell = us(it->second);
      if (have_baseline && median.count({baseline, sh}) && it->second > 0)
        cell += fmt::format(" (x{:.2f})", median[{baseline, sh}] / it->second);
      if (it->second > 0) cell += fmt::format(" {:3.0f}%", 100.0 * floor[{v, sh}]);
      fmt::print("{:>{}}", cell, width);
    }
    fmt::print("\n");
  }
  // Automatic choices against the fastest variant named in the same run on the
  // same field memory (a choice can only take the transports that memory
  // allows at their speed there), and, when faster, the fastest on any memory.
  for (size_t i = 0; i < results.size(); ++i) {
    const config& c = results[i].cfg;
    if (!c.automatic()) continue;
    const std::string shape = c.shape();
    size_t best = results.size(), best_any = results.size();
    for (size_t j = 0; j < results.size(); ++j) {
      const config& o = results[j].cfg;
      if (o.shape() != shape || o.automatic()) continue;
      if (best_any == results.size() || stats[j].median < stats[best_any].median) best_any = j;
      if (results[j].memory != results[i].memory) continue;
      if (best == results.size() || stats[j].median < stats[best].median) best = j;
    }
    if (best_any == results.size()) continue;
    // Time ratio, and the efficiency ratio, which divides out a machine whose
    // speed drifts between the variants' turns.
    auto versus = [&](size_t j) {
      const double e = efficiency(results[i]), ej = efficiency(results[j]);
      return fmt::format("{:.2f} us ({:.0f}%) of {} on {} memory: x{:.2f} in time, x{:.2f} in "
                         "efficiency",
                         stats[j].median * 1e6, 100 * ej, results[j].cfg.variant(),
                         results[j].memory, stats[i].median / stats[j].median,
                         e > 0 ? ej / e : 0.0);
    };
    std::string line = fmt::format("{} [{}]: {}; {:.2f} us ({:.0f}%)", c.variant(), shape,
                                   results[i].chosen, stats[i].median * 1e6,
                                   100 * efficiency(results[i]));
    if (best != results.size()) line += " against the fastest named variant, " + versus(best);
    if (best_any != best)
      line += (best != results.size() ? "; on any memory " : " against ") + versus(best_any);
    fmt::print("{}\n", line);
  }
}

// --breakdown: each configuration's stage splits, slowest and median rank,
// and its self-copy share (what the splits explain).
void print_breakdown(const std::vector<result>& results) {
  fmt::print("\nWhere the time goes [us per exchange, the mean of each rank's middle half of the "
             "recorded exchanges (--stage-times)], per stage: p pack, c other copies, wp wait for "
             "peers, wr wait for readers, o other; self = self-copy reference over the median "
             "time\n");
  for (const auto& r : results) {
    if (r.breakdown.empty()) continue;
    fmt::print("{} [{}] self {:.2f}\n  slowest {}\n  median  {}\n", r.cfg.variant(),
               r.cfg.shape(), reference_share(r), describe_split(slowest_rank(r.breakdown)),
               describe_split(median_rank(r.breakdown)));
  }
}

nlohmann::json to_json_record(const result& r, const summary& s, const bench_options& o,
                              const decomposition& decomp, const nlohmann::json& provenance,
                              const std::string& run_id) {
  nlohmann::json j = provenance;
  j["tool"] = program;
  j["run_id"] = run_id;
  j["config"] = {{"transport", r.cfg.transport_label()},
                 {"transport_path", r.path},
                 {"chosen", r.chosen},
                 // What the automatic choice decided, as the wisdom file stores it.
                 {"choice", r.decided ? choice_to_json(*r.decided) : nlohmann::json(nullptr)},
                 {"algorithm", r.cfg.algorithm_label()},
                 {"fields", r.cfg.fields.label},
                 {"fields_per_message", r.fields_per_message},
                 {"fields_per_block", r.fields_per_block},
                 {"type", to_string(r.cfg.type)},
                 {"halo", r.cfg.halo_label},
                 {"halo_lo", r.cfg.halo.lo},
                 {"halo_hi", r.cfg.halo.hi},
                 {"nfields", r.cfg.nfields},
                 {"domain", o.global_domain.empty() ? o.domain : std::vector<int>{}},
                 {"global_domain", o.global_domain},
                 {"timing", o.timing},
                 {"warmup", o.warmup},
                 {"rounds", o.rounds},
                 {"check", !o.no_check},
                 {"memory", r.memory},
                 {"memory_fallback", o.shared_memory_fallback},
                 {"huge_pages", transparent_huge_pages()},
                 {"transport_settings", r.settings},
                 {"ranks_per_node", o.decomp.ranks_per_node}};
  j["decomposition"] = {{"kind", decomp.kind()},
                        {"dims", decomp.dims()},
                        {"periodic", decomp.periodic()},
                        {"order", decomp.order().name()}};
  j["plan"] = {{"messages", r.messages},
               {"bytes_sent", r.bytes_sent},
               {"bytes_copied", r.bytes_copied},
               {"max_bytes_sent", r.max_bytes_sent}};
  nlohmann::json sent = nlohmann::json::array();
  for (const auto& t : r.sent)
    sent.push_back({{"transport", t.transport},
                    {"bytes_to_same_node", t.bytes_to_same_node},
                    {"bytes_to_other_nodes", t.bytes_to_other_nodes}});
  // Per exchange, summed over ranks: the plan by host name, and what the
  // routing handed each transport by node.
  j["traffic"] = {{"plan_bytes_to_same_host", r.plan_to_same_host},
                  {"plan_bytes_to_other_hosts", r.plan_to_other_hosts},
                  {"sent", sent}};
  double mean_per = r.loop_seconds / static_cast<double>(r.exchanges);
  j["exchanges"] = r.exchanges;
  j["time_per_exchange_s"] = s;
  j["loop_mean_s"] = mean_per;
  j["seconds_per_10000"] = mean_per * 1e4;
  j["memcpy_s"] = r.memcpy_seconds;
  if (r.computed) j["compute_step_s"] = r.compute_seconds / static_cast<double>(r.exchanges);
  j["efficiency"] = efficiency(r);
  j["self_copy_reference_s"] = r.reference_seconds;
  j["self_copy_share"] = reference_share(r);
  j["throughput_GBps"] = s.median > 0 ? (r.bytes_sent + r.bytes_copied) / s.median / 1e9 : 0.0;
  j["verification"] = r.verified ? "passed" : "skipped";
  if (r.memory == "device") {
    j["gpu"] = cuda::device_name();
    j["cuda_version"] = cuda::version();
  }
  j["stage_breakdown"] = to_json(r.breakdown);
  j["setup"] = to_json(r.setup);
  return j;
}

int bench_main(MPI_Comm world, int argc, char** argv) {
  CLI::App app{"halox-bench: 3-D halo-exchange benchmark (standard, staged and faces exchanges, "
               "many fields, several transports, cell-exact verification)",
               program};
  bench_options o;
  add_options(app, o);
  if (auto code = parse_command_line(app, argc, argv, world)) return *code;
  o.transport_given = app.count("--transport") > 0;
  if (o.list_transports) {
    int rank = 0;
    MPI_Comm_rank(world, &rank);
    if (rank == 0) fmt::print("{}", list_transports());
    return exit_ok;
  }
  if (app.count("--domain") > 0 && !o.global_domain.empty())
    throw usage_error("--domain and --global-domain contradict each other: give one");

  // Checks of the options alone; any rank-local finding (a transport missing
  // on one node) is agreed before the first collective that depends on it.
  const bool on_device = o.memory == "device";
  auto transports_here = on_device ? device_transport_choices(world)
                                   : choice_names(available_transport_choices(world));
  std::vector<config> matrix;
  std::string problem;
  try {
    if (on_device && o.timing == "compute")
      throw usage_error("--timing compute steps on the host: it takes host memory, not --memory device");
    if (on_device && !cuda::unavailable().empty())
      throw usage_error("--memory device: " + cuda::unavailable());
    matrix = build_matrix(o, transports_here);
  } catch (const usage_error& e) {
    problem = e.what();
  }
  require_all(world, problem);
  int world_rank = 0;
  MPI_Comm_rank(world, &world_rank);
  if (on_device) cuda::select_device(node_rank(world));

  // Everything that can be wrong is found before the first exchange.
  const auto& first = matrix.front();
  exchange_shape shape{o.global_domain.empty() ? to_ivec3(o.domain) : to_ivec3(o.global_domain),
                       first.halo, first.nfields, element_size(first.type), first.alg};
  decomposition decomp = build_decomposition(world, o.decomp, shape);
  if (o.decomp.print) {
    auto layout = describe_layout(world, o.decomp, shape, decomp);
    if (world_rank == 0) fmt::print("{}", layout);
    return exit_ok;
  }
  ivec3 smallest = smallest_extent(o, decomp.dims());
  for (const auto& cfg : matrix) {
    if (!o.global_domain.empty())
      (void)subdomain_of_global(decomp, to_ivec3(o.global_domain));
    validate_grid(local_grid(smallest, cfg.halo));
  }
  require_fits_in_memory(decomp.comm(), o, matrix, decomp.dims());
  check_shared_memory(decomp, o, matrix);
  if (decomp.rank() == 0 && !o.shared_memory_fallback.empty())
    fmt::print("halox-bench: note: {}; --memory auto takes private memory instead\n",
               o.shared_memory_fallback);
  require_appendable(world, o.json_path);
  auto provenance = collect_provenance(decomp.comm());

  const bool talk = decomp.rank() == 0 && !o.quiet;
  if (talk) {
    fmt::print("halox-bench {}  {}\n", git_revision(), mpi_library_version());
    fmt::print("ranks {}  grid {} ({}, order {}, periodic {})  {} {}  timing {}  {} configurations x {} "
               "round(s)\n",
               decomp.size(), fmt::join(decomp.dims(), "x"), decomp.kind(), decomp.order().name(),
               fmt::format("{:d} {:d} {:d}", decomp.periodic()[0], decomp.periodic()[1],
                           decomp.periodic()[2]),
               o.global_domain.empty() ? "domain per rank" : "global domain",
               fmt::join(o.global_domain.empty() ? o.domain : o.global_domain, "x"), o.timing,
               matrix.size(), o.rounds);
    if (on_device) fmt::print("GPU {} (CUDA {})\n", cuda::device_name(), cuda::version());
    std::fflush(stdout);
  }

  std::string run_id = fmt::format("{}-{}", provenance["timestamp"].get<std::string>(),
                                   static_cast<long>(::getpid()));
  int run_id_length = static_cast<int>(run_id.size());
  MPI_Bcast(&run_id_length, 1, MPI_INT, 0, decomp.comm());
  run_id.resize(static_cast<size_t>(run_id_length));
  MPI_Bcast(run_id.data(), run_id_length, MPI_CHAR, 0, decomp.comm());

  std::vector<std::string> hosts;
  for (const auto& entry : provenance["rank_map"]) hosts.push_back(entry["host"].get<std::string>());

  // Shape by shape (the matrix lists them in blocks): every round runs all
  // variants of the shape on its memory; the first round verifies.
  std::vector<result> results(matrix.size());
  for (size_t first = 0; first < matrix.size();) {
    size_t end = first + 1;
    while (end < matrix.size() && matrix[end].shape() == matrix[first].shape() &&
           matrix[end].halo == matrix[first].halo)
      ++end;
    shape_memory mem;
    for (int round = 0; round < o.rounds; ++round)
      for (size_t i = first; i < end; ++i) {
        result r = run_any(decomp, o, matrix[i], round == 0 ? std::nullopt : results[i].decided,
                           hosts, mem, !o.no_check);
        if (round == 0)
          results[i] = std::move(r);
        else
          merge(results[i], r);
      }
    first = end;
  }

  std::vector<summary> stats;
  for (const auto& r : results) stats.push_back(summarize(r.samples));
  if (decomp.rank() == 0) {
    for (size_t i = 0; i < results.size(); ++i) {
      if (!o.quiet) print_result(results[i], stats[i]);
      if (!o.json_path.empty())
        append_json_line(o.json_path,
                         to_json_record(results[i], stats[i], o, decomp, provenance, run_id));
    }
    print_summary(results, stats, o.baseline);
    if (o.breakdown_table) print_breakdown(results);
  }
  return exit_ok;
}

}  // namespace

int main(int argc, char** argv) {
  return halox::run_mpi_program(program, argc, argv,
                                [&](MPI_Comm world) { return bench_main(world, argc, argv); });
}
