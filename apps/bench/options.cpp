// halox-bench's options and the matrix of configurations they ask for.
#include "bench_program.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "halox_programs/cli.hpp"
#include "halox_programs/help_json.hpp"
#include "halox/common/error.hpp"

namespace halox::bench {

grouping_choice parse_grouping_choice(const std::string& text) {
  if (text == "whole") return {field_grouping::compact, 0, text, true};
  // "auto" is measured when the exchange is built.
  if (text == "auto") return {field_grouping::cache, 0, text};
  if (!text.empty() && std::all_of(text.begin(), text.end(), ::isdigit)) {
    int n = text.size() > 6 ? 0 : std::stoi(text);
    if (n < 1)
      throw usage_error(fmt::format(
          "--grouping {}: a number of fields per message must be 1 to 1000", text));
    return {field_grouping::compact, n, text};
  }
  return {parse_field_grouping(text), 0, text};
}

std::vector<std::string> choice_names(const std::vector<transport_choice>& choices) {
  std::vector<std::string> out;
  for (const auto& c : choices) out.push_back(c.name());
  return out;
}

// The fields a stage moves at a time for a configuration.
int fields_per_block(const bench_options& o, const grouping_choice& g, int nfields) {
  return g.whole ? nfields : o.fields_per_block;
}

ivec3 to_ivec3(const std::vector<int>& v) { return {v[0], v[1], v[2]}; }

namespace {

// The words --algorithm and --grouping take besides the library's names, and
// what "all" stands for (--help-json lists them for halox sweep).
std::vector<std::string> algorithm_words() {
  std::vector<std::string> words;
  for (const auto a : all_algorithms) words.push_back(to_string(a));
  return words;
}
const std::vector<std::string> all_groupings_run{"compact", "sequence"};
std::vector<std::string> grouping_words() {
  std::vector<std::string> words;
  for (const auto m : all_field_groupings) words.push_back(to_string(m));
  words.push_back("whole");
  return words;
}
std::vector<std::string> with_auto_and_all(std::vector<std::string> words) {
  words.insert(words.end(), {"auto", "all"});
  return words;
}

// The shapes: domain, halos, fields, types.
void add_shape_options(CLI::App& app, bench_options& o) {
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
  app.add_option("--type", o.types, "Element type(s): float, double")
      ->delimiter(',')
      ->check(declared_values({to_string(element_type::f32), to_string(element_type::f64)}))
      ->capture_default_str();
}

// The variants: algorithms, field groupings, transports.
void add_variant_options(CLI::App& app, bench_options& o) {
  app.add_option("--algorithm", o.algorithms, "standard (26 messages), staged (3 steps, 6 messages), "
                 "faces (6 messages, no edges/corners), auto (the faster of standard and staged, measured), "
                 "or all")
      ->delimiter(',')
      ->check(declared_values(with_auto_and_all(algorithm_words()), false, algorithm_words()))
      ->capture_default_str();
  app.add_option("--grouping", o.groupings, "How the fields are grouped into messages: cache "
                 "(blocks of fields whose halo traffic fits the L2 cache, one message each), "
                 "compact (all fields of a neighbour in one message, moved in cache-sized "
                 "blocks), whole (compact, messages not cut into blocks), sequence (field by "
                 "field), N (N fields per message), auto (the fastest of compact, sequence and "
                 "whole, measured), or all (compact,sequence)")
      ->delimiter(',')
      ->check(declared_values(with_auto_and_all(grouping_words()), true, all_groupings_run))
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
  app.add_option("--variants", o.variants,
                 "Variants named whole, TRANSPORT/ALGORITHM/GROUPING "
                 "(e.g. auto/auto/auto,shm/staged/cache), run beside the product of --transport, "
                 "--algorithm and --grouping; alone (without --transport) they are the only ones")
      ->delimiter(',');
}

int parse_rounds(const std::string& text) {
  size_t used = 0;
  int n = 0;
  try {
    n = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty())
    throw usage_error(fmt::format("--rounds takes a positive number or auto, got '{}'", text));
  return n;
}

// How long and how to time.
void add_timing_options(CLI::App& app, bench_options& o) {
  app.add_option("--nrep", o.nrep, "Timed exchanges per configuration")->capture_default_str();
  app.add_option("--time", o.time_budget, "Seconds of timed exchanges per configuration (replaces --nrep)");
  app.add_option("--warmup", o.warmup, "Untimed exchanges before timing")->capture_default_str();
  app.add_option("--rounds", o.rounds_text, "Run the variants of each shape (type, halo, "
                 "fields) this many times, interleaved, on the same memory; the floor and the "
                 "machine probe are measured in every round; auto: at least 3 rounds, more until "
                 "every cell's per-round ratio settles within 5 % or --rounds-budget runs out")
      ->capture_default_str();
  app.add_option("--rounds-budget", o.rounds_budget, "With --rounds auto: seconds each shape may "
                 "spend on its rounds (default: three times what its first 3 rounds took)");
  app.add_option("--timing", o.timing, "throughput: back-to-back exchanges; latency: a barrier "
                 "before each; compute: before each (untimed), every halo cell of every field "
                 "read and every interior cell rewritten, then a barrier, so that each exchange "
                 "meets the caches as a time step leaves them")
      ->capture_default_str();
}

// Output, checks, memory and the library's own options.
void add_run_options(CLI::App& app, bench_options& o) {
  app.add_option("--baseline", o.baseline,
                 "Variant transport/algorithm/grouping that ratios refer to")
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
                 "10; the timed ones stay untouched), timed: the timed exchanges themselves "
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
  app.add_option("--field-pages", o.field_pages,
                 "Pages of the private fields and of the floor's buffers: system (no advice, the "
                 "pages a program's heap gets, as the cartex programs' fields; huge only where "
                 "transparent huge pages are 'always') or huge (advised MADV_HUGEPAGE, as a tuned "
                 "allocator's). A shared window has the system's shared-memory pages either way")
      ->check(CLI::IsMember({"system", "huge"}))
      ->capture_default_str();
}

}  // namespace

void add_options(CLI::App& app, bench_options& o) {
  add_shape_options(app, o);
  add_variant_options(app, o);
  add_timing_options(app, o);
  add_run_options(app, o);
}

// Collective: the transports that move device memory, available on every rank
// ("all" with --memory device).
std::vector<std::string> device_transport_choices(MPI_Comm comm) {
  std::vector<int> available;
  const auto registry = transport_registry();
  for (const transport_entry* e : registry)
    available.push_back(e->moves_device_memory() && e->available() ? 1 : 0);
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

namespace {

// "all" stands for every value; other values given beside it are kept, once each.
std::vector<std::string> expand_all(std::vector<std::string> values,
                                    const std::vector<std::string>& every) {
  std::vector<std::string> out;
  for (const auto& v : split_list(values))
    for (const auto& item : v == "all" ? every : std::vector<std::string>{v})
      if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
  return out;
}

}  // namespace

namespace {

// Checks of the options' values alone (the same on every rank).
void check_values(const bench_options& o) {
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
  if (o.rounds_budget < 0) throw usage_error("--rounds-budget must not be negative");
  if (o.timing != "throughput" && o.timing != "latency" && o.timing != "compute")
    throw usage_error(
        fmt::format("unknown timing '{}' (expected throughput, latency or compute)", o.timing));
  for (int f : o.nfields)
    if (f > 1000) throw usage_error(fmt::format("--nfields {} is more than the 1000 supported", f));
}

// A variant as named: TRANSPORT/ALGORITHM/GROUPING, each possibly "auto".
struct variant_names {
  std::string transport, alg, grouping;
};

// The product of --transport, --algorithm and --grouping, then --variants.
std::vector<variant_names> variants_of(const bench_options& o,
                                       const std::vector<std::string>& transports_here) {
  const std::vector<std::string> transport_names =
      o.variants.empty() || o.transport_given ? expand_all(o.transports, transports_here)
                                              : std::vector<std::string>{};
  std::vector<variant_names> variants;
  for (const auto& t : transport_names)
    for (const auto& a : expand_all(o.algorithms, algorithm_words()))
      for (const auto& m : expand_all(o.groupings, all_groupings_run))
        variants.push_back({t, a, m});
  for (const auto& v : split_list(o.variants)) {
    const auto first = v.find('/'), last = v.rfind('/');
    if (first == std::string::npos || first == last)
      throw usage_error(fmt::format("--variants: '{}' is not TRANSPORT/ALGORITHM/GROUPING", v));
    variants.push_back({v.substr(0, first), v.substr(first + 1, last - first - 1), v.substr(last + 1)});
  }
  return variants;
}

}  // namespace

std::vector<config> build_matrix(bench_options& o, const std::vector<std::string>& transports_here) {
  o.rounds_auto = o.rounds_text == "auto";
  if (!o.rounds_auto) o.rounds = parse_rounds(o.rounds_text);
  check_values(o);
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
  if (o.timeout < 0) throw usage_error("--timeout must not be negative");
  const auto variants = variants_of(o, transports_here);
  // Shapes outer, variants inner: the variants of a shape run side by side,
  // on the same memory, with the floor measured between them. "auto"
  // (measured when the exchange is built) stands beside the named choices.
  std::vector<config> matrix;
  for (const auto& ty : split_list(o.types))
    for (size_t h = 0; h < halos.size(); ++h)
      for (int nf : o.nfields)
        for (const auto& v : variants) {
          config c;
          c.auto_transport = v.transport == "auto";
          c.transport = c.auto_transport ? transport_choice{} : parse_transport_choice(v.transport);
          c.auto_algorithm = v.alg == "auto";
          c.alg = c.auto_algorithm ? algorithm::standard : parse_algorithm(v.alg);
          c.grouping = parse_grouping_choice(v.grouping);
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

std::string field_memory_of(const bench_options& o, const config& cfg) {
  if (o.memory != "auto") return o.memory;
  if (!o.shared_memory_fallback.empty()) return "private";
  if (cfg.auto_transport) return "shared";  // lets shm compete at its best
  return cfg.transport.local().prefers_shared_fields ? "shared" : "private";
}

}  // namespace halox::bench
