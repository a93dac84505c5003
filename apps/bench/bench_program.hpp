// halox-bench's pieces, by concern: the option matrix (options.cpp), the
// checks before anything is allocated (memory_checks.cpp), the floor and the
// self-copy reference (floors.hpp/.cpp), one configuration's measurement
// (measure.cpp), the printed output (output.cpp), the JSON records
// (records.cpp), and the program (main.cpp).
#pragma once

#include <mpi.h>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "halox_programs/memory.hpp"
#include "halox_programs/stats.hpp"
#include "halox/decomposition.hpp"
#include "halox_programs/decomposition/options.hpp"
#include "halox/exchange.hpp"
#include "halox/field_memory.hpp"
#include "halox/extend/registry.hpp"
#include "machine_probe.hpp"
#include "crossing.hpp"
#include "stability.hpp"
#include "stage_breakdown.hpp"
#include "touched_lines.hpp"

namespace halox::bench {

inline constexpr const char* program = "halox-bench";
// The variant (xN) ratios refer to, unless --baseline names another: halox's
// plain-MPI reference (its --help-json default and every record's
// config.baseline carry it to halox report).
inline constexpr const char* default_baseline = "mpi-types/staged/sequence";

struct bench_options {
  std::vector<int> domain{64, 64, 64};
  std::vector<int> global_domain;
  std::vector<int> halos{1};
  std::vector<int> halo_lo, halo_hi;
  std::vector<int> nfields{1};
  std::vector<std::string> types{"double"};
  std::vector<std::string> algorithms{"standard"};
  std::vector<std::string> groupings{"cache"};
  int fields_per_block = 0;  // 0: sized to the L2 cache
  std::vector<std::string> transports{transport_choice{}.name()};
  std::vector<std::string> variants;  // TRANSPORT/ALGORITHM/GROUPING, beside the product
  bool transport_given = false;
  int nrep = 1000;
  double time_budget = 0;  // seconds per configuration; overrides nrep when > 0
  int warmup = 10;
  int rounds = 1;
  std::string rounds_text = "1";  // --rounds as given: a number or auto
  bool rounds_auto = false;    // --rounds auto: rounds until every cell's ratio settles
  double rounds_budget = 0;    // seconds per shape for --rounds auto (0: twice its first rounds)
  bool no_check = false;
  std::string timing = "throughput";
  std::string json_path;
  std::string baseline = default_baseline;
  bool quiet = false;
  std::string memory = "auto";
  std::string field_pages = "system";  // private fields and the floor: system or huge
  std::string shared_memory_fallback;  // why auto took private memory, when it did
  double timeout = 0;  // seconds per wait; 0 = HALOX_TIMEOUT or the library default
  bool list_transports = false;
  std::string wisdom;
  decomposition_options decomp;
  std::string stage_times = "pass";  // where the stage splits are recorded: pass, timed, off
  bool breakdown_table = false; // print the stage splits after the summary
};

// --grouping: compact (all fields per message, moved in cache-sized blocks),
// whole (compact, not cut into blocks), sequence (one), cache (blocks sized
// to the L2 cache), auto (measured) or a number N.
struct grouping_choice {
  field_grouping kind = field_grouping::cache;
  int per_message = 0;  // as in exchange_options::fields_per_message
  std::string label = "cache";
  bool whole = false;   // messages not cut into blocks
};

struct config {
  transport_choice transport;  // ignored when auto_transport
  algorithm alg = algorithm::standard;  // ignored when auto_algorithm
  grouping_choice grouping;
  element_type type = element_type::f64;
  halo_widths halo;
  int halo_label = 0;  // the uniform width, or -1 for per-side widths
  int nfields = 1;
  bool auto_transport = false, auto_algorithm = false;

  // Named as asked: "auto" where the choice is measured.
  std::string transport_label() const { return auto_transport ? "auto" : transport.name(); }
  std::string algorithm_label() const { return auto_algorithm ? "auto" : to_string(alg); }
  bool automatic() const { return auto_transport || auto_algorithm || grouping.label == "auto"; }
  std::string variant() const {
    return fmt::format("{}/{}/{}", transport_label(), algorithm_label(), grouping.label);
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
  // The floor of the lines: every rank copying the bytes of the distinct cache
  // lines its plan reads and writes (touched_lines.hpp), around the same
  // exchanges; efficiency is against it, the memcpy efficiency against the
  // floor of the halo's bytes.
  touched_lines lines;
  double line_floor_seconds = 0;
  std::vector<double> round_line_floors;
  // The crossing around the same exchanges (crossing.hpp): what moving the
  // bytes sent and received between the node's cores costs; median over rounds.
  double crossing_seconds = 0;
  std::vector<double> round_crossings;
  // The self-copy reference around the same exchanges (the lower of before and
  // after, slowest rank): its median over rounds, and per round.
  double reference_seconds = 0;
  std::vector<double> round_references;
  // Each rank's reference of the first round, the lower of before and after
  // (rank 0; empty for device fields).
  std::vector<double> reference_by_rank;
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
  std::vector<turn_probes> round_probes;  // the machine probe around each round's turn
  bool rechecked = false;     // auto's choice measured again (its trials' probes disagreed)
  std::string rechosen;       // what it chose then
  bool settled = true;        // --rounds auto: its per-round ratio settled
  setup_record setup;         // of the first round's exchange
};

// The memory of one shape (element type, halo widths, fields): node-shared
// and private fields and the floor's buffers, allocated when a variant first
// needs them and kept for every variant and round of the shape, so that all
// of them meet the same pages.
struct shape_memory {
  explicit shape_memory(page_size p) : pages(p) {}
  page_size pages = page_size::system;       // of the private fields and the floor's buffers
  std::optional<shared_field_memory> shared;
  std::vector<mapped_buffer> fields;         // private (with --memory device: the host's copies)
  mapped_buffer floor_from, floor_to;        // the size of all fields
  std::unique_ptr<crossing_buffers> crossing;  // node-shared slots of the crossing
  std::vector<std::shared_ptr<void>> device_fields;            // --memory device
  std::shared_ptr<void> device_floor_from, device_floor_to;    // the size of all fields
};

// options.cpp
grouping_choice parse_grouping_choice(const std::string& text);
std::vector<std::string> choice_names(const std::vector<transport_choice>& choices);
int fields_per_block(const bench_options& o, const grouping_choice& g, int nfields);
ivec3 to_ivec3(const std::vector<int>& v);
void add_options(CLI::App& app, bench_options& o);
// Collective: the transports that move device fields, available on every rank.
std::vector<std::string> device_transport_choices(MPI_Comm comm);
int node_rank(MPI_Comm comm);
std::vector<config> build_matrix(bench_options& o, const std::vector<std::string>& transports_here);
ivec3 smallest_extent(const bench_options& o, const ivec3& dims);
// The field memory (--memory) a configuration runs on: private, shared or device;
// its memory_kind (halox/device.hpp) is device for device, host otherwise.
std::string field_memory_of(const bench_options& o, const config& cfg);

// memory_checks.cpp
void require_fits_in_memory(MPI_Comm comm, const bench_options& o, const std::vector<config>& matrix,
                            const ivec3& dims);
void check_shared_memory(const decomposition& decomp, bench_options& o,
                         const std::vector<config>& matrix);
std::shared_ptr<void> device_buffer(size_t bytes);

// measure.cpp
result run_any(const decomposition& decomp, const bench_options& o, const config& cfg,
               const std::optional<exchange_options>& decided,
               const std::vector<std::string>& hosts, shape_memory& mem, bool verify);
void merge(result& into, const result& more);

// output.cpp
// The floor of the lines over the exchange, round by round, median over rounds.
double efficiency(const result& r);
// The floor of the halo's bytes over the exchange, alike.
double memcpy_efficiency(const result& r);
// The floor of the lines and the crossing together over the exchange, alike.
double crossing_efficiency(const result& r);
double reference_share(const result& r);
// The self-copy reference rank by rank (result::reference_by_rank).
struct rank_spread {
  double fastest_s = 0, median_s = 0, slowest_s = 0;  // the median: the lower one of an even count
  int fastest_rank = -1, slowest_rank = -1;
};
std::optional<rank_spread> reference_spread(const result& r);
void print_result(const result& r, const summary& s);
// Per cell: its per-round ratios against the baseline of the same round (when
// the baseline ran) and whether it is stable.
struct cell_verdict {
  std::optional<round_ratios> ratios;
  cell_stability stability;
};
std::vector<cell_verdict> judge_cells(const std::vector<result>& results, const std::string& baseline);
void print_summary(const std::vector<result>& results, const std::vector<summary>& stats,
                   const std::vector<cell_verdict>& verdicts, const std::string& baseline);
// What the launch's verdicts come to, written into each of its records so
// that a report prints them as the run did: the closing summary and its brief
// form (empty when every cell is stable), the causes ranked by the cells they
// marked, and the spread of every probe of the launch.
struct launch_stability {
  std::vector<std::string> summary, brief;
  std::vector<cause> ranked;
  probe_spread probes;
};
struct launch_probes;
launch_stability judge_launch(const std::vector<result>& results, const std::vector<cell_verdict>& verdicts,
                              const launch_probes& launch);
void print_breakdown(const std::vector<result>& results);

// records.cpp
// What every record of a launch carries of the machine probe.
struct launch_probes {
  probe_sample start, end;
  nlohmann::json pairs;
  double cost_s = 0, wall_s = 0;
  int samples = 0;
};
nlohmann::json to_json_record(const result& r, const summary& s, const cell_verdict& verdict,
                              const bench_options& o, const decomposition& decomp,
                              const nlohmann::json& provenance, const std::string& run_id,
                              const launch_probes& launch, const launch_stability& judged);

}  // namespace halox::bench
