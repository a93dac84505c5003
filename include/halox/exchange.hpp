// The object a stencil code keeps: exchange the halos of its fields.
//
// The way in: one halox::field descriptor per array (halox/field.hpp: a
// location on the cell grid, halo widths and an element type each):
//
//   std::vector<halox::field> fields{
//       {rho, halox::element_type::f64, halox::location::cell, halo_widths::uniform(2), "rho"},
//       {u, halox::element_type::f64, halox::location::vertex, {{2, 2, 2}, {3, 3, 3}}, "u"}};
//   halox::halo_exchange ex(decomp, cells, fields, {.alg = halox::algorithm::staged});
//   ex.start();                    // first step in flight
//   compute_interior();            // overlap
//   ex.wait();                     // remaining steps; halos complete
//   ex.exchange({"rho"}, 1);       // a subset, at depth 1
//
// A code whose fields are all cells of one grid may hand over pointers
// instead; the constructor builds the descriptors (cell_fields):
//
//   halox::halo_exchange ex(decomp, grid, {u.data(), v.data()});
//
// Each such field is one array of grid.points() elements (float or double)
// covering the allocated box, halo included: x runs fastest, then y, then z;
// element (x, y, z) of the interior, x in [0, grid.interior[0]) etc., is at
// grid.index(x, y, z), and the pointer handed over is the first allocated
// cell (-halo.lo[0], -halo.lo[1], -halo.lo[2]).
//
// Fields may live anywhere; those allocated in halox::shared_fields
// (node-shared memory) are found there, and single-copy transports (`shm`)
// read them in place instead of packing them into an outbox.
//
// Errors (halox/common/error.hpp):
//  - halox::usage_error: an impossible configuration (no fields, a halo wider
//    than the sub-domain, an unknown or unavailable transport) or an exchange
//    the ranks do not agree on. Thrown on every rank, before any halo moves.
//  - halox::timeout_error: a peer did not arrive within the timeout; thrown on
//    the waiting rank only (programs end the job: its peers may be stuck).
//  - std::logic_error: start() twice without wait(), or wait() without start().
//  A subset call (start(fields, depth)) checks its arguments on the calling
//  rank before anything moves (usage_error for an unknown field or a depth
//  deeper than a field's halo); every rank must make the same calls, in the
//  same order, as for any collective operation.
//  - std::bad_alloc: buffers could not be allocated.
//  MPI errors follow the communicator's error handler (MPI_ERRORS_ARE_FATAL
//  unless the application changed it).
#pragma once

#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "halox/common/environment.hpp"
#include "halox/decomposition.hpp"
#include "halox/device.hpp"
#include "halox/exchange_profile.hpp"
#include "halox/field.hpp"
#include "halox/field_memory.hpp"
#include "halox/grid.hpp"
#include "halox/transport/choice.hpp"
#include "halox/transport/tuning.hpp"

namespace halox {

struct exchange_plan;  // halox/extend/plan.hpp: what the exchange sends, stage by stage
struct plan_request;

inline constexpr int fields_per_message_auto = -1;

struct exchange_options {
  algorithm alg = algorithm::standard;
  // How many fields a message carries: compact (all), sequence (one), or
  // cache (blocks whose halo traffic fits the L2 cache hwloc reports).
  field_grouping grouping = field_grouping::cache;
  // Which transport carries the messages: parse_transport_choice("shm")
  // (= shm+mpi-p2p), "shm+mpi-neighbor", ... (see halox/transport/choice.hpp).
  // Default: mpi-p2p for every neighbour.
  transport_choice transport = {};
  // Fields per message: 0 = as `grouping` says, N = blocks of N fields,
  // fields_per_message_auto = as grouping cache. Whatever a message carries, a
  // stage moves its data in blocks of fields sized to the L2 cache.
  int fields_per_message = 0;
  // Fields a stage moves at a time (blocks inside a message, see halox/extend/plan.hpp):
  // 0 = sized to the smallest L2 cache of the ranks.
  int fields_per_block = 0;
  // Groups of this many consecutive ranks count as nodes (0: shared-memory
  // nodes, or HALOX_RANKS_PER_NODE when set; rank 0's value decides).
  int ranks_per_node = 0;
  // Seconds a wait may last before timeout_error (0: HALOX_TIMEOUT or 600).
  double timeout_seconds = 0;

  // Measured choices: the candidates are timed on the caller's fields when
  // the exchange is built (a few exchanges each, the slowest rank's time,
  // agreed by all ranks) and the fastest is kept. Transport candidates:
  // every available transport and LOCAL+REMOTE routing; algorithms: standard
  // and staged; groupings: compact, sequence and L2-sized blocks.
  bool auto_transport = false;
  bool auto_algorithm = false;
  bool auto_grouping = false;
  // A file of earlier choices (JSON lines keyed by machine, MPI library, rank
  // grid, sub-domain, halo widths, fields and type); read before measuring,
  // appended after. Empty: HALOX_WISDOM, or none.
  std::string wisdom_file = {};

  // The transports' tuning (transport/tuning.hpp); unset ones are measured.
  transport_tuning tuning = {};

  // Where the fields live (halox/device.hpp): detected by default; device
  // fields are packed by CUDA kernels on cuda_stream (a cudaStream_t; null:
  // the default stream).
  memory_kind memory = memory_kind::detect;
  void* cuda_stream = nullptr;
};

// The options with the environment's overrides applied (the HALOX_*
// variables of environment_variables()): each variable that is set fills the
// option it stands for where the options leave it unset (timeout 0, ranks per
// node 0, no wisdom file, a knob without a value). The exchange applies this
// once, when it is built. Throws usage_error for a malformed value.
exchange_options with_environment(exchange_options options);

// Every HALOX_* variable halox reads, with the option it overrides and what
// it means (the table of docs/library.md).
std::span<const environment_variable> environment_variables();

// What an automatic choice decides (transport, algorithm, field grouping) as
// one JSON object, the format of the wisdom file and of the programs' records:
//   {"transport": "shm", "algorithm": "staged", "grouping": "compact",
//    "fields_per_message": 0, "fields_per_block": 8}
std::string choice_json(const exchange_options& options);
// Sets those members of `options` from such an object. Throws usage_error for
// malformed JSON, a missing or mistyped member, or an unknown or unavailable
// transport, algorithm or field grouping. An older object without "grouping"
// whose "fields" is a string (wisdom files and records written before the
// grouping had its own word) takes that as the grouping; only "grouping" is
// written.
void apply_choice_json(std::string_view json, exchange_options& options);

// How a reverse call combines the copies of a point (start_reverse below).
enum class reduction { sum, min, max };
inline constexpr reduction all_reductions[] = {reduction::sum, reduction::min, reduction::max};
reduction parse_reduction(const std::string& name);  // "sum" | "min" | "max"; throws usage_error
std::string to_string(reduction op);

// Where a reverse call leaves the combined value: in the owner only (every
// other copy keeps its contribution), or in every rank that holds the point.
enum class reverse_to { owner, every_holder };

class reverse_schedule;  // the library's own (src/exchange/reverse.hpp)

template <class T>
concept field_element = std::is_same_v<T, float> || std::is_same_v<T, double>;

template <field_element T>
constexpr element_type element_type_of() {
  return std::is_same_v<T, float> ? element_type::f32 : element_type::f64;
}

class halo_exchange {
 public:
  // The way in: fields of their own locations, halos and types
  // (halox/field.hpp) on a rank that owns `cells` cells. All fields bound
  // for a neighbour travel in the same messages (or the same single-copy
  // stage). Collective over decomp.comm(): every rank constructs it with the
  // same options. Fields allocated in node-shared memory (shared_fields,
  // halox/field_memory.hpp) are found there: single-copy transports then read
  // them in place.
  halo_exchange(const decomposition& decomp, const ivec3& cells, const std::vector<field>& fields,
                const exchange_options& options = {});
  // The same for a code that brings its own decomposition: `mine` is this
  // rank's sub-domain as the code computed it. Before anything moves, every
  // rank checks with its neighbours that the sub-domains tile the global grid
  // as decomp places the ranks (a code that numbers its ranks in another
  // order than decomp gets an error naming both layouts, not swapped halos).
  halo_exchange(const decomposition& decomp, const subdomain& mine,
                const std::vector<field>& fields, const exchange_options& options = {});

  // Adapters for fields of cells alike on one grid (cell_fields below):
  // ex(decomp, grid, fields) or ex(decomp, grid, {u, v, w}).
  halo_exchange(const decomposition& decomp, const local_grid& grid, element_type type,
                const std::vector<void*>& fields, const exchange_options& options = {})
      : halo_exchange(decomp, grid.interior, cell_fields(grid, type, fields), options) {}

  template <field_element T>
  halo_exchange(const decomposition& decomp, const local_grid& grid, std::span<T* const> fields,
                const exchange_options& options = {})
      : halo_exchange(decomp, grid, element_type_of<T>(),
                      std::vector<void*>(fields.begin(), fields.end()), options) {}

  template <field_element T>
  halo_exchange(const decomposition& decomp, const local_grid& grid, const std::vector<T*>& fields,
                const exchange_options& options = {})
      : halo_exchange(decomp, grid, std::span<T* const>(fields), options) {}

  template <field_element T>
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

  // Subset calls: only `fields` (indices into the fields as given, any order,
  // each once), at `depth` (0: each field's whole halo; see halox/field.hpp
  // for what a depth fills). The first call of a subset and depth builds its
  // schedule, collectively, with the transport, algorithm and tuning the
  // exchange was built with, but for shm's outbox rule where it was left to be
  // measured: that is measured for the subset's own boxes (a few exchanges of
  // the subset; which runs are worth an outbox depends on the runs). Later
  // calls reuse it, so a subset call costs what an exchange built for that
  // subset costs.
  void start(const std::vector<int>& fields, int depth = 0);
  void exchange(const std::vector<int>& fields, int depth = 0) {
    start(fields, depth);
    wait();
  }
  // Braced lists of indices or of names: ex.exchange({0, 2}, 1), ex.exchange({"u", "v"}).
  void start(std::initializer_list<int> fields, int depth = 0) {
    start(std::vector<int>(fields), depth);
  }
  void exchange(std::initializer_list<int> fields, int depth = 0) {
    start(std::vector<int>(fields), depth);
    wait();
  }
  void start(std::initializer_list<std::string_view> names, int depth = 0) {
    start(fields_named(names), depth);
  }
  void exchange(std::initializer_list<std::string_view> names, int depth = 0) {
    start(fields_named(names), depth);
    wait();
  }
  // Reverse calls: every copy of a point in a halo combined into the point's
  // owner with `op` (sum, min, max; halox::reduction), for every field at
  // its whole halo or for a subset at a depth (the points a forward call of
  // the same fields and depth fills send their values back). With
  // reverse_to::every_holder every rank that holds the point, owner or not,
  // ends with the same total, in a round of messages per axis where the
  // halos allow (at most two: with neighbours along three axes, one round
  // into the owners and one back).
  // Copies are combined in one fixed order (docs/library.md#adding-into-halos):
  // along z, then y, then x; along an axis the owner's value, then the copy
  // of the rank below, then that of the rank above. The answer is bitwise the
  // same whatever transport, algorithm or grouping the exchange was built
  // with, and from run to run. Reverse calls move by messages of their own
  // on the exchange's communicator (into the owners one round, a message per
  // neighbour; three axis steps of two messages with a staged exchange or
  // halos deeper than a sub-domain) or, on one node with a single-copy
  // transport, through node-shared outboxes;
  // collective like the forward calls. A reverse call may be in flight beside
  // a forward one of other fields, not of the same ones (usage_error).
  void start_reverse(reduction op, reverse_to to = reverse_to::owner);
  void start_reverse(reduction op, const std::vector<int>& fields, int depth = 0,
                     reverse_to to = reverse_to::owner);
  void start_reverse(reduction op, std::initializer_list<int> fields, int depth = 0,
                     reverse_to to = reverse_to::owner) {
    start_reverse(op, std::vector<int>(fields), depth, to);
  }
  void start_reverse(reduction op, std::initializer_list<std::string_view> names, int depth = 0,
                     reverse_to to = reverse_to::owner) {
    start_reverse(op, fields_named(names), depth, to);
  }
  void wait_reverse();
  void reverse(reduction op, reverse_to to = reverse_to::owner) {
    start_reverse(op, to);
    wait_reverse();
  }
  void reverse(reduction op, const std::vector<int>& fields, int depth = 0,
               reverse_to to = reverse_to::owner) {
    start_reverse(op, fields, depth, to);
    wait_reverse();
  }
  void reverse(reduction op, std::initializer_list<int> fields, int depth = 0,
               reverse_to to = reverse_to::owner) {
    start_reverse(op, std::vector<int>(fields), depth, to);
    wait_reverse();
  }
  void reverse(reduction op, std::initializer_list<std::string_view> names, int depth = 0,
               reverse_to to = reverse_to::owner) {
    start_reverse(op, fields_named(names), depth, to);
    wait_reverse();
  }
  // Messages and bytes this rank sends per reverse call of these fields (built if need be).
  size_t reverse_message_count(const std::vector<int>& fields, int depth = 0,
                               reverse_to to = reverse_to::owner);

  // A call with an algorithm of its own (standard, staged, faces) instead of
  // the exchange's: one exchange serves a code whose calls want different
  // ones (faces for a star stencil's update, standard where corners are
  // read). Its schedule is built at its first call, as a subset's is.
  void start(const std::vector<int>& fields, int depth, algorithm alg);
  void exchange(const std::vector<int>& fields, int depth, algorithm alg) {
    start(fields, depth, alg);
    wait();
  }
  void exchange(std::initializer_list<std::string_view> names, int depth, algorithm alg) {
    start(fields_named(names), depth, alg);
    wait();
  }

  // A field's memory moved (a code that allocates some arrays anew every
  // cycle): the calls after this one use `data`, laid out as before. Every
  // rank gives the same fields new addresses between the same two calls: the
  // next call of each schedule that moves the field rebuilds its transport,
  // collectively (nothing is measured again). Not for node-shared or device
  // fields (usage_error); not while a call is in flight (std::logic_error).
  void set_field_data(int field, void* data);

  // Builds a subset call's schedule now (collective) instead of at its first call.
  void prepare(const std::vector<int>& fields, int depth = 0);
  // The indices of the fields with these names; throws usage_error for a
  // name that is not one of the exchange's fields.
  std::vector<int> fields_named(std::initializer_list<std::string_view> names) const;
  std::vector<int> fields_named(const std::vector<std::string>& names) const;
  // A subset call's arguments checked as start(fields, depth) checks them, on
  // this rank only (nothing collective): the fields in ascending order, or
  // usage_error (an unknown index, a field twice, none, a depth too deep).
  std::vector<int> check_subset(const std::vector<int>& fields, int depth) const;
  // Schedules built so far (the whole exchange and each subset and depth called).
  size_t schedules_built() const;

  // The plan of the whole exchange (every field, its whole halo).
  const exchange_plan& plan() const;
  // The options as built: the measured choice where auto flags were set, the
  // environment's overrides applied.
  const exchange_options& options() const;
  // The transports' tuning as built, measured or given (transport/tuning.hpp):
  // with them in options().tuning, an exchange of the same plan is built
  // without measuring them again, as a program's next run keeps its choice.
  transport_tuning tuning_as_built() const;
  // The transport choice as run, e.g. "shm" (= shm+mpi-p2p), "shm+ucx".
  std::string transport_name() const;
  // How the data moved, e.g. "shm(outbox)+mpi-p2p" when the fields were private.
  std::string transport_path() const;
  // What the transports chose when they were built (e.g. which boxes shm
  // stages, and how that was decided); empty when nothing.
  std::string transport_settings() const;
  // The same for the schedule of a subset and depth built so far (by a call or
  // prepare()): shm measures which runs go through its outbox for the subset's
  // own boxes, so a subset's rule may differ from the whole's. A subset not
  // built yet is a usage_error.
  std::string transport_settings(const std::vector<int>& fields, int depth) const;
  // What the measured choice found (empty without auto choices): e.g.
  // "chose shm/staged/compact of 12 candidates (measured)" or "(from wisdom)".
  const std::string& choice_report() const;
  // Message bytes this rank sent so far, per transport of the choice, to
  // ranks of its node and of other nodes (see transport_stats).
  std::vector<transport_stats> stats() const;

  // How long the exchange took to build and, while recording, where each
  // stage's time goes (halox/exchange_profile.hpp). record_stages(true)
  // starts recording anew (the splits start from zero); off by default. Subset
  // calls with the exchange's algorithm are recorded too; reverse calls and
  // calls naming another algorithm are not.
  void record_stages(bool on);
  exchange_profile profile() const;

 private:
  struct state;
  struct schedule;
  reverse_schedule& reverse_schedule_of(const std::vector<int>& moved, int depth,
                                              reverse_to to);
  halo_exchange(const decomposition& decomp, std::vector<field_layout> layouts,
                std::vector<std::string> names, field_set fields, const exchange_options& options);
  void finish(const decomposition& decomp, field_set fields, state& s);
  // One schedule (the whole exchange, or a subset at a depth): its plan, the
  // ranks' agreement on it (with `problem`, a rank's own objection) and its
  // transport. Collective.
  void build_schedule(schedule& sched, plan_request request, std::string problem);
  schedule& schedule_of(const std::vector<int>& fields, int depth, algorithm alg);
  schedule& checked_schedule_of(const std::vector<int>& fields, int depth, algorithm alg);
  // The schedule built for checked fields (as check_subset returns them), or null.
  schedule* built_schedule(const std::vector<int>& moved, int depth, algorithm alg) const;
  void start_schedule(schedule& sched);
  // The fastest of the candidates the auto flags open, agreed by all ranks.
  static exchange_options measured_choice(const decomposition& decomp,
                                          const std::vector<field_layout>& layouts,
                                          const field_set& fields,
                                          const exchange_options& requested, std::string& report);
  std::unique_ptr<state> state_;
};

}  // namespace halox
