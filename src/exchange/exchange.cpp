#include "halox/exchange.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <tuple>
#include <stdexcept>

#include "common/stage_timer.hpp"
#include "common/yielding_mpi.hpp"
#include "exchange/reverse.hpp"
#include "halox/common/error.hpp"
#include "halox/extend/registry.hpp"
#include "halox/extend/topology.hpp"

namespace halox {

namespace {

// The fields' locations, halos and types, grouped: "2 x cell double halo 1,1,1/1,1,1, ...".
std::string describe_fields(const exchange_plan& plan) {
  std::vector<std::pair<std::string, int>> groups;
  for (int f : plan.moved) {
    const field_layout& l = plan.layouts[static_cast<size_t>(f)];
    const auto& h = l.exchanged;
    std::string text =
        fmt::format("{} {}-byte halo lo {},{},{} hi {},{},{}{}", to_string(l.at), l.element_bytes,
                    h.lo[0], h.lo[1], h.lo[2], h.hi[0], h.hi[1], h.hi[2],
                    l.shared == shared_points::kept ? " shared kept" : "");
    if (!groups.empty() && groups.back().first == text)
      ++groups.back().second;
    else
      groups.emplace_back(std::move(text), 1);
  }
  std::string out;
  for (const auto& [text, count] : groups)
    out += fmt::format("{}{} x {}", out.empty() ? "" : "; ", count, text);
  // Long lists are compared by a hash of the whole (the agreement keeps 511 characters).
  if (out.size() > 200) {
    uint64_t hash = 1469598103934665603ULL;
    for (char c : out) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    out = fmt::format("{} fields hashed {:016x}", plan.moved.size(), hash);
  }
  return out;
}

std::string describe(const exchange_plan& plan, const transport_choice& choice,
                     const exchange_options& o) {
  return fmt::format(
      "{} {} {} field(s) ({} per message, {} per block) at depth {}: {}, transport "
      "{}, ranks per node {}",
      to_string(plan.alg), to_string(plan.grouping), plan.nfields, plan.fields_per_message,
      plan.fields_per_block, plan.depth, describe_fields(plan), choice.name(), o.ranks_per_node);
}

// Collective: the block of fields sized to the smallest L2 cache of all
// ranks, so that every rank cuts its stages alike.
int agreed_cache_block(const decomposition& decomp, const plan_request& request) {
  int block = static_cast<int>(std::max<size_t>(request.layouts.size(), 1));
  try {
    block = cache_sized_block(decomp, request, this_machine_l2_bytes());
  } catch (const usage_error&) {
    // An impossible grid: reported with the plan below.
  }
  yielding_allreduce(MPI_IN_PLACE, &block, 1, MPI_INT, MPI_MIN, decomp.comm());
  return block;
}

// Collective: every rank must build the same exchange, or none does. One
// broadcast of rank 0's description and one agreement on the first problem
// (a rank's own, or its disagreement with rank 0).
void require_agreement(MPI_Comm comm, const std::string& mine, std::string problem) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  constexpr size_t room = 512;
  std::array<char, room> first{};
  if (rank == 0) mine.copy(first.data(), room - 1);
  yielding_bcast(first.data(), static_cast<int>(room), MPI_CHAR, 0, comm);
  if (problem.empty() && mine.compare(0, room - 1, first.data()) != 0)
    problem = fmt::format("ranks disagree on the exchange: rank 0 builds {}; rank {} builds {}",
                          first.data(), rank, mine);
  require_all(comm, problem);
}

// Whether the fields are in CUDA device memory, as `kind` says or as
// cudaPointerGetAttributes finds (all or none of them). Throws usage_error.
bool fields_on_device(memory_kind kind, const field_set& fields) {
  if (fields.shared) {
    if (kind == memory_kind::device)
      throw usage_error("node-shared fields are host memory, not device memory");
    return false;
  }
  if (kind == memory_kind::host) return false;
  if (kind == memory_kind::detect && cuda::device_count() == 0) return false;
  if (kind == memory_kind::device && !cuda::unavailable().empty())
    throw usage_error("fields in device memory need CUDA: " + cuda::unavailable());
  size_t on_device = 0;
  for (std::byte* f : fields.pointers) on_device += cuda::is_device_pointer(f) ? 1 : 0;
  if (kind == memory_kind::device && on_device < fields.pointers.size())
    throw usage_error(
        fmt::format("{} of {} fields are not in CUDA device memory, but the options "
                    "say device memory",
                    fields.pointers.size() - on_device, fields.pointers.size()));
  if (on_device > 0 && on_device < fields.pointers.size())
    throw usage_error(
        fmt::format("{} of {} fields are in CUDA device memory, the others not: an "
                    "exchange takes fields of one kind",
                    on_device, fields.pointers.size()));
  return on_device > 0;
}

// Throws usage_error when a transport of the choice cannot move the fields' memory.
void require_memory_support(const transport_choice& choice, bool device) {
  for (const transport_entry* entry : {&choice.local(), &choice.remote()}) {
    if (device && !entry->moves_device_memory())
      throw usage_error(
          fmt::format("transport '{}' moves host memory only; fields in device "
                      "memory move by the transports whose entry declares a device implementation "
                      "(transport_entry::make_device)",
                      entry->name));
    if (!device && !entry->moves_host_memory())
      throw usage_error(
          fmt::format("transport '{}' moves CUDA device memory only, and these "
                      "fields are in host memory",
                      entry->name));
  }
}

}  // namespace

// The latest calls' arguments as given (the fields in the caller's order, the depth, and
// `Key`: the algorithm or the reverse call's kind) and what they found: a call made before
// finds it here without the checks, the sort and the map's walk, whose structures the
// kernels between calls leave out of the cache.
template <class Key, class Found>
class recent_calls {
 public:
  const Found* find(const std::vector<int>& fields, int depth, Key key) const {
    for (const auto& e : entries_)
      if (e.depth == depth && e.key == key && e.fields == fields) return &e.found;
    return nullptr;
  }
  void remember(const std::vector<int>& fields, int depth, Key key, Found found) {
    entry e{fields, depth, key, std::move(found)};
    if (entries_.size() < capacity) {
      entries_.push_back(std::move(e));
      return;
    }
    entries_[next_] = std::move(e);
    next_ = (next_ + 1) % capacity;
  }

 private:
  struct entry {
    std::vector<int> fields;
    int depth = 0;
    Key key{};
    Found found{};
  };
  static constexpr size_t capacity = 16;
  std::vector<entry> entries_;
  size_t next_ = 0;  // the entry replaced next once full
};

// One schedule: the plan of a call (all fields or a subset, at a depth) and
// the transport built for it.
struct halo_exchange::schedule {
  exchange_plan plan;
  std::unique_ptr<transport> mover;
  bool moved_fields = false;  // a field's address changed since mover was built
  // Its transport's tuning as built (measured where not given), for a rebuild after moved
  // fields: nothing is measured again then.
  transport_tuning tuning;
  // Whether its calls go into the stage breakdown: those of the exchange's
  // algorithm (the whole's stages); a call with another algorithm is not recorded.
  bool recorded = true;
};

struct halo_exchange::state {
  exchange_options options;
  std::string choice_report;
  transport_choice choice;
  std::vector<std::string> names;  // by field
  // shm's outbox rule as the caller or the environment set it (unset: measured): which runs
  // go through the outbox depends on the runs, so a subset's schedule measures it for its own
  // boxes; the rest of a subset's tuning is the whole's as built.
  shm_tuning given_shm;
  // The whole exchange first; then each subset and depth called, by key.
  // By fields, depth and algorithm (the exchange's, or one a call asked for).
  std::map<std::tuple<std::vector<int>, int, algorithm>, std::unique_ptr<schedule>> schedules;
  schedule* whole = nullptr;
  schedule* running = nullptr;  // started, not yet waited for
  recent_calls<algorithm, schedule*> recent;
  field_set fields;
  decomposition decomp;           // the caller's, on the exchange's own communicator
  MPI_Comm comm = MPI_COMM_NULL;  // decomp.comm()
  node_membership node;
  wait_policy waits;
  setup_times setup;
  std::unique_ptr<stage_timer::recorder> recording;  // null: not recording
  // Reverse calls: by fields, depth and whether every holder gets the total.
  std::map<std::tuple<std::vector<int>, int, bool>, std::unique_ptr<reverse_schedule>> reverses;
  reverse_schedule* reverse_running = nullptr;
  std::vector<int> reverse_running_fields;
  struct reverse_found {
    reverse_schedule* sched = nullptr;
    std::vector<int> moved;  // as checked_subset returned them
  };
  recent_calls<reverse_to, reverse_found> recent_reverses;
  MPI_Comm reverse_comm = MPI_COMM_NULL;  // its messages' own, made with its first schedule

  ~state() {
    schedules.clear();
    reverses.clear();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (node.comm != MPI_COMM_NULL) MPI_Comm_free(&node.comm);
    if (reverse_comm != MPI_COMM_NULL) MPI_Comm_free(&reverse_comm);
    // comm is freed with decomp.
  }
};

namespace {

std::vector<std::string> names_of(const std::vector<field>& fields) {
  std::vector<std::string> names;
  for (size_t f = 0; f < fields.size(); ++f)
    names.push_back(fields[f].name.empty() ? fmt::format("field {}", f) : fields[f].name);
  return names;
}

std::vector<field_layout> layouts_of(const decomposition& decomp, const ivec3& cells,
                                     const std::vector<field>& fields) {
  std::vector<field_layout> layouts;
  for (const auto& f : fields) layouts.push_back(layout_of(decomp, cells, f));
  return layouts;
}

// Collective: the halo widths every field exchanges, agreed by the ranks that
// have a neighbour on each side (the others' halo there is never written, and
// may be allocated otherwise). A side on which ranks differ is a problem.
std::string agree_on_exchanged_widths(const decomposition& decomp,
                                      std::vector<field_layout>& layouts,
                                      const std::vector<std::string>& names) {
  const neighbour_sides sides = sides_of(decomp);
  const size_t n = layouts.size() * 6;
  std::vector<int> most(n, -1), least(n, std::numeric_limits<int>::max());
  auto slot = [](size_t f, int k, int side) { return f * 6 + static_cast<size_t>(2 * k + side); };
  for (size_t f = 0; f < layouts.size(); ++f)
    for (int k = 0; k < 3; ++k)
      for (int side = 0; side < 2; ++side) {
        const bool has =
            side == 0 ? sides.lo[static_cast<size_t>(k)] : sides.hi[static_cast<size_t>(k)];
        const int width = side == 0 ? layouts[f].grid.halo.lo[k] : layouts[f].grid.halo.hi[k];
        if (has) most[slot(f, k, side)] = least[slot(f, k, side)] = width;
      }
  yielding_allreduce(MPI_IN_PLACE, most.data(), static_cast<int>(n), MPI_INT, MPI_MAX,
                     decomp.comm());
  yielding_allreduce(MPI_IN_PLACE, least.data(), static_cast<int>(n), MPI_INT, MPI_MIN,
                     decomp.comm());
  std::string problem;
  for (size_t f = 0; f < layouts.size(); ++f)
    for (int k = 0; k < 3; ++k)
      for (int side = 0; side < 2; ++side) {
        const size_t i = slot(f, k, side);
        if (most[i] < 0) continue;  // no rank has a neighbour there
        if (least[i] != most[i] && problem.empty())
          problem = fmt::format(
              "ranks disagree on the halo of field '{}' {} in {}: {} points on some ranks, {} on "
              "others (only a side without a neighbour may differ)",
              names[f], side == 0 ? "below" : "above", "xyz"[k], least[i], most[i]);
        (side == 0 ? layouts[f].exchanged.lo[k] : layouts[f].exchanged.hi[k]) = most[i];
      }
  // A kept shared face is held in the halo above by the rank below it.
  for (size_t f = 0; f < layouts.size() && problem.empty(); ++f)
    for (int k = 0; k < 3 && problem.empty(); ++k)
      if (kept_shared_points(layouts[f])[k] && sides.hi[static_cast<size_t>(k)] &&
          layouts[f].exchanged.hi[k] < 1)
        problem = fmt::format(
            "field '{}' keeps its shared points (shared_points::kept) but has no halo above in {} "
            "to hold the face it shares with the rank above",
            names[f], "xyz"[k]);
  return problem;
}

// Fields allocated in node-shared memory are read there in place.
field_set pointers_of(const std::vector<field>& fields) {
  field_set set;
  for (const auto& f : fields) set.pointers.push_back(static_cast<std::byte*>(f.data));
  set.shared = shared_field_memory::holding(set.pointers);
  return set;
}

// A field's name, halo and the points it holds: what a mismatch must name.
std::string field_problem(const std::vector<field>& fields, const std::vector<std::string>& names) {
  std::vector<std::string> seen;
  for (size_t f = 0; f < fields.size(); ++f) {
    if (std::ranges::find(seen, names[f]) != seen.end())
      return fmt::format("two fields are named '{}': subset calls name fields by name", names[f]);
    seen.push_back(names[f]);
    for (int d = 0; d < 3; ++d)
      if (fields[f].halo.lo[d] < 0 || fields[f].halo.hi[d] < 0)
        return fmt::format("field '{}' has a negative halo width", names[f]);
  }
  return {};
}

}  // namespace

halo_exchange::halo_exchange(const decomposition& decomp, const ivec3& cells,
                             const std::vector<field>& fields, const exchange_options& options)
    : halo_exchange(decomp, layouts_of(decomp, cells, fields), names_of(fields),
                    pointers_of(fields), [&] {
                      // Problems of the descriptors, on every rank alike, before anything else.
                      require_all(decomp.comm(), field_problem(fields, names_of(fields)));
                      return options;
                    }()) {}

halo_exchange::halo_exchange(const decomposition& decomp, const subdomain& mine,
                             const std::vector<field>& fields, const exchange_options& options)
    : halo_exchange(
          decomp,
          [&] {
            require_tiling(decomp, mine);
            return mine.extent;
          }(),
          fields, options) {}

halo_exchange::halo_exchange(const decomposition& decomp, std::vector<field_layout> layouts,
                             std::vector<std::string> names, field_set fields,
                             const exchange_options& options)
    : state_(std::make_unique<state>()) {
  state& s = *state_;
  const double begun = MPI_Wtime();
  s.names = std::move(names);
  for (size_t f = s.names.size(); f < layouts.size(); ++f)
    s.names.push_back(fmt::format("field {}", f));
  require_all(decomp.comm(), agree_on_exchanged_widths(decomp, layouts, s.names));
  std::string problem;
  try {
    s.options = with_environment(options);
    s.given_shm = s.options.tuning.shm;
    fields.device = fields_on_device(options.memory, fields);
    fields.stream = options.cuda_stream;
    if (fields.device &&
        (options.auto_transport || options.auto_algorithm || options.auto_grouping))
      throw usage_error(
          "measured choices (auto transport, algorithm or fields) take host fields "
          "only: name them for fields in device memory");
  } catch (const usage_error& e) {
    problem = e.what();
  }
  require_all(decomp.comm(), problem);
  // Rank 0's node grouping decides, as in node_communicator: ranks whose
  // environments differ must not split the nodes differently.
  yielding_bcast(&s.options.ranks_per_node, 1, MPI_INT, 0, decomp.comm());
  if (options.auto_transport || options.auto_algorithm || options.auto_grouping)
    s.options = measured_choice(decomp, layouts, fields, s.options, s.choice_report);
  s.setup.measured_choice_s = MPI_Wtime() - begun;
  auto whole = std::make_unique<schedule>();
  whole->plan.layouts = std::move(layouts);
  s.whole = whole.get();
  s.schedules[{{}, 0, s.options.alg}] = std::move(whole);
  finish(decomp, std::move(fields), s);
  s.setup.total_s = MPI_Wtime() - begun;
}

void halo_exchange::finish(const decomposition& decomp, field_set fields, state& s) {
  const exchange_options& options = s.options;
  // Local checks: they depend only on the arguments, so every rank of a
  // consistent program throws alike; the agreement on the plan catches the rest.
  std::string problem;
  try {
    s.choice = options.transport;
    if (auto why = s.choice.unavailable(); !why.empty()) throw usage_error(why);
    require_memory_support(s.choice, fields.device);
    if (options.fields_per_block < 0)
      throw usage_error(
          fmt::format("fields per block must not be negative, got {}", options.fields_per_block));
    s.waits.timeout_seconds = options.timeout_seconds;
    for (auto* f : fields.pointers)
      if (!f) throw usage_error("a field pointer is null");
  } catch (const usage_error& e) {
    problem = e.what();
  }
  s.fields = std::move(fields);
  // The exchange's own communicator, in a decomposition of its own: subset
  // schedules are planned later, when the caller's may be gone.
  MPI_Comm own = MPI_COMM_NULL;
  MPI_Comm_dup(decomp.comm(), &own);
  s.decomp = decomposition(own, decomp.dims(), decomp.periodic(), decomp.order(), decomp.kind());
  s.comm = s.decomp.comm();
  s.node = make_node_membership(s.comm, options.ranks_per_node);
  s.waits.oversubscribed = s.node.oversubscribed;
  s.waits.comm = s.comm;
  plan_request request;
  request.layouts = std::move(s.whole->plan.layouts);
  request.alg = options.alg;
  request.grouping = options.grouping;
  build_schedule(*s.whole, std::move(request), problem);
}

void halo_exchange::build_schedule(schedule& sched, plan_request request, std::string problem) {
  state& s = *state_;
  const bool whole = &sched == s.whole;
  const double plan_begun = MPI_Wtime();
  // Blocks fit a CPU's cache; on a GPU each block would be one more
  // synchronised round of kernels and signals, so device fields move in one
  // block. For the whole exchange the cache's block is agreed on every rank,
  // whatever the options say (ranks that disagree on them fail below,
  // together); a subset's options are agreed already.
  int block = std::max(s.options.fields_per_block, 0);  // negative: refused by the caller
  if (whole || (block == 0 && !s.fields.device)) {
    const int cache = agreed_cache_block(s.decomp, request);
    if (block == 0 && !s.fields.device) block = cache;
  }
  if (block == 0) block = static_cast<int>(std::max<size_t>(request.layouts.size(), 1));
  request.fields_per_block = block;
  request.fields_per_message = s.options.fields_per_message == fields_per_message_auto
                                   ? block
                                   : s.options.fields_per_message;
  try {
    sched.plan = make_plan(s.decomp, std::move(request));
  } catch (const usage_error& e) {
    if (problem.empty()) problem = e.what();
  }
  require_agreement(
      s.comm,
      describe(sched.plan, s.choice, s.options) + (s.fields.device ? ", device memory" : ""),
      problem);
  const double transports_begun = MPI_Wtime();
  // The whole takes the options' tuning (a measured choice's included); a subset the whole's
  // as built, but for shm's outbox rule where the caller left it to be measured (a few
  // exchanges of the subset; cma's rule, whose trials cost far more, is kept).
  sched.tuning = whole ? s.options.tuning : s.whole->tuning;
  if (!whole) {
    sched.tuning.shm.direct_min_run = s.given_shm.direct_min_run;
    sched.tuning.shm.push = s.given_shm.push;
  }
  sched.mover =
      make_transport(s.choice, {sched.plan, s.comm, s.fields, s.node, s.waits, sched.tuning});
  sched.mover->tuning_as_built(sched.tuning);
  if (whole) {
    s.setup.plan_s = transports_begun - plan_begun;
    s.setup.transports_s = MPI_Wtime() - transports_begun;
  }
}

halo_exchange::halo_exchange(halo_exchange&&) noexcept = default;
halo_exchange& halo_exchange::operator=(halo_exchange&&) noexcept = default;
halo_exchange::~halo_exchange() = default;

const exchange_plan& halo_exchange::plan() const {
  return state_->whole->plan;
}
const exchange_options& halo_exchange::options() const {
  return state_->options;
}

transport_tuning halo_exchange::tuning_as_built() const {
  transport_tuning tuning = state_->options.tuning;
  state_->whole->mover->tuning_as_built(tuning);
  return tuning;
}
const std::string& halo_exchange::choice_report() const {
  return state_->choice_report;
}
std::string halo_exchange::transport_name() const {
  return state_->choice.name();
}
std::string halo_exchange::transport_path() const {
  return state_->whole->mover->path();
}
std::string halo_exchange::transport_settings() const {
  return state_->whole->mover->settings();
}
std::string halo_exchange::transport_settings(const std::vector<int>& fields, int depth) const {
  const char* function = "halo_exchange::transport_settings";
  const state& s = *state_;
  std::vector<int> moved;
  try {
    moved = check_subset(fields, depth);
  } catch (const usage_error& e) {
    throw usage_error(fmt::format("{}: {}", function, e.what()));
  }
  const schedule* sched = built_schedule(moved, depth, s.options.alg);
  if (!sched)
    throw usage_error(fmt::format(
        "{}: this subset and depth has no schedule yet (call it, or prepare(fields, depth), first)",
        function));
  return sched->mover->settings();
}
std::vector<transport_stats> halo_exchange::stats() const {
  // Bytes of every schedule, the subsets' included, per transport.
  std::vector<transport_stats> total;
  for (const auto& [key, sched] : state_->schedules)
    for (const auto& st : sched->mover->stats()) {
      auto same = std::ranges::find(total, st.transport, &transport_stats::transport);
      if (same == total.end()) {
        total.push_back(st);
        continue;
      }
      same->bytes_to_same_node += st.bytes_to_same_node;
      same->bytes_to_other_nodes += st.bytes_to_other_nodes;
    }
  return total;
}

namespace {

// The first field of `a` that `b` names too, or -1 (both ascending).
int shared_field(const std::vector<int>& a, const std::vector<int>& b) {
  for (int f : a)
    if (std::ranges::binary_search(b, f)) return f;
  return -1;
}

}  // namespace

void halo_exchange::start() { start_schedule(*state_->whole); }

void halo_exchange::start(const std::vector<int>& fields, int depth) {
  start(fields, depth, state_->options.alg);
}

void halo_exchange::start(const std::vector<int>& fields, int depth, algorithm alg) {
  if (state_->running) throw std::logic_error("halo_exchange::start called twice without wait");
  schedule* sched = nullptr;
  try {
    sched = &schedule_of(fields, depth, alg);
  } catch (const usage_error& e) {
    throw usage_error(fmt::format("halo_exchange::start: {}", e.what()));
  }
  start_schedule(*sched);
}

void halo_exchange::start_schedule(schedule& sched) {
  state& s = *state_;
  if (s.running) throw std::logic_error("halo_exchange::start called twice without wait");
  if (s.reverse_running)
    if (int f = shared_field(sched.plan.moved, s.reverse_running_fields); f >= 0)
      throw usage_error(fmt::format(
          "halo_exchange::start: field '{}' is in a reverse call still in flight (wait_reverse "
          "first)",
          s.names[static_cast<size_t>(f)]));
  if (sched.moved_fields) {
    // Collective, as every rank gave the same fields new addresses before this call.
    sched.mover =
        make_transport(s.choice, {sched.plan, s.comm, s.fields, s.node, s.waits, sched.tuning});
    sched.moved_fields = false;
  }
  s.running = &sched;
  if (sched.plan.stages.empty()) return;
  const stage_timer::stage_scope timed(sched.recorded ? s.recording.get() : nullptr, 0);
  sched.mover->start(0);
}

void halo_exchange::set_field_data(int field, void* data) {
  state& s = *state_;
  const char* function = "halo_exchange::set_field_data";
  if (s.running || s.reverse_running)
    throw std::logic_error(fmt::format("{} called while a call is in flight", function));
  const int count = static_cast<int>(s.fields.pointers.size());
  if (field < 0 || field >= count)
    throw usage_error(fmt::format("{}: field index {} is not one of the exchange's {} fields",
                                  function, field, count));
  if (!data) throw usage_error(fmt::format("{}: the new address of '{}' is null", function,
                                           s.names[static_cast<size_t>(field)]));
  if (s.fields.shared || s.fields.device)
    throw usage_error(fmt::format("{}: fields in {} memory keep their addresses", function,
                                  s.fields.shared ? "node-shared" : "device"));
  auto& pointer = s.fields.pointers[static_cast<size_t>(field)];
  if (pointer == static_cast<std::byte*>(data)) return;
  pointer = static_cast<std::byte*>(data);
  for (auto& [key, sched] : s.schedules)
    if (std::ranges::binary_search(sched->plan.moved, field)) sched->moved_fields = true;
}

void halo_exchange::wait() {
  schedule* sched = state_->running;
  if (!sched) throw std::logic_error("halo_exchange::wait called without start");
  state_->running = nullptr;
  auto& mover = *sched->mover;
  stage_timer::recorder* recording = sched->recorded ? state_->recording.get() : nullptr;
  {
    stage_timer::stage_scope timed(recording, 0);
    for (size_t s = 0; s < sched->plan.stages.size(); ++s) {
      if (s > 0) {
        timed.next(s);
        mover.start(s);
      }
      mover.wait(s);
    }
  }
  if (recording) recording->finish_exchange();
}

void halo_exchange::prepare(const std::vector<int>& fields, int depth) {
  if (state_->running)
    throw std::logic_error("halo_exchange::prepare called between start and wait");
  (void)schedule_of(fields, depth, state_->options.alg);
}

std::vector<int> halo_exchange::fields_named(const std::vector<std::string>& names) const {
  std::vector<int> out;
  for (const auto& name : names) {
    auto at = std::ranges::find(state_->names, name);
    if (at == state_->names.end())
      throw usage_error(fmt::format("no field named '{}' in this exchange (its fields: {})", name,
                                    fmt::join(state_->names, ", ")));
    out.push_back(static_cast<int>(at - state_->names.begin()));
  }
  return out;
}

std::vector<int> halo_exchange::fields_named(std::initializer_list<std::string_view> names) const {
  std::vector<std::string> strings;
  for (auto n : names) strings.emplace_back(n);
  return fields_named(strings);
}

size_t halo_exchange::schedules_built() const {
  return state_->schedules.size();
}

namespace {

// Local checks of a subset call: the same arguments fail alike on every rank,
// before anything moves. Returns the fields in ascending order.
std::vector<int> checked_subset(const std::vector<int>& fields, int depth,
                                const exchange_plan& whole, const std::vector<std::string>& names) {
  const int count = static_cast<int>(whole.layouts.size());
  std::vector<int> sorted = fields;
  std::ranges::sort(sorted);
  if (sorted.empty()) throw usage_error("a subset call names no field");
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] < 0 || sorted[i] >= count)
      throw usage_error(
          fmt::format("field index {} is not one of the exchange's {} fields (0 to {})", sorted[i],
                      count, count - 1));
    if (i > 0 && sorted[i] == sorted[i - 1])
      throw usage_error(fmt::format("field '{}' is named twice in a subset call",
                                    names[static_cast<size_t>(sorted[i])]));
  }
  if (depth < 0) throw usage_error(fmt::format("depth must not be negative, got {}", depth));
  for (int f : sorted) {
    const field_layout& l = whole.layouts[static_cast<size_t>(f)];
    const ivec3 staggered = staggered_axes(l.at);
    int deepest = 0;  // in cells: the points a staggered axis shares do not count
    for (int d = 0; d < 3; ++d)
      deepest = std::max({deepest, l.exchanged.lo[d], l.exchanged.hi[d] - staggered[d]});
    if (depth > deepest)
      throw usage_error(fmt::format("depth {} is deeper than the halo of field '{}' ({} cells)",
                                    depth, names[static_cast<size_t>(f)], deepest));
  }
  return sorted;
}

}  // namespace

std::vector<int> halo_exchange::check_subset(const std::vector<int>& fields, int depth) const {
  return checked_subset(fields, depth, state_->whole->plan, state_->names);
}

halo_exchange::schedule& halo_exchange::schedule_of(const std::vector<int>& fields, int depth,
                                                     algorithm alg) {
  state& s = *state_;
  if (schedule* const* found = s.recent.find(fields, depth, alg)) return **found;
  schedule& found = checked_schedule_of(fields, depth, alg);
  s.recent.remember(fields, depth, alg, &found);
  return found;
}

halo_exchange::schedule* halo_exchange::built_schedule(const std::vector<int>& moved, int depth,
                                                       algorithm alg) const {
  const state& s = *state_;
  // Every field at its whole halo is the exchange as built.
  if (depth == 0 && moved.size() == s.whole->plan.layouts.size() && alg == s.options.alg)
    return s.whole;
  const auto at = s.schedules.find({moved, depth, alg});
  return at == s.schedules.end() ? nullptr : at->second.get();
}

halo_exchange::schedule& halo_exchange::checked_schedule_of(const std::vector<int>& fields,
                                                             int depth, algorithm alg) {
  state& s = *state_;
  const std::vector<int> moved = checked_subset(fields, depth, s.whole->plan, s.names);
  if (schedule* built = built_schedule(moved, depth, alg)) return *built;
  const auto at = s.schedules.try_emplace({moved, depth, alg}).first;
  // Built once, collectively, as the whole exchange was: its transport, algorithm and tuning
  // (shm's outbox rule measured anew where it was not given, build_schedule); blocks sized for
  // the subset's own fields, as an exchange of them alone would size them.
  plan_request request;
  request.layouts = s.whole->plan.layouts;
  request.moved = moved;
  request.depth = depth;
  request.alg = alg;
  request.grouping = s.options.grouping;
  auto sched = std::make_unique<schedule>();
  sched->recorded = alg == s.options.alg;
  try {
    build_schedule(*sched, std::move(request), {});
  } catch (...) {
    s.schedules.erase(at);
    throw;
  }
  at->second = std::move(sched);
  return *at->second;
}

reverse_schedule& halo_exchange::reverse_schedule_of(const std::vector<int>& moved, int depth,
                                                     reverse_to to) {
  // `moved` as check_subset returns it.
  state& s = *state_;
  const exchange_plan& whole = s.whole->plan;
  const bool every_holder = to == reverse_to::every_holder;
  auto [at, fresh] = s.reverses.try_emplace({moved, depth, every_holder});
  if (!fresh) return *at->second;
  // Built once, collectively: the ranks agree on the call and on which axes
  // every holder can combine in one round.
  std::string problem;
  if (s.fields.device)
    problem = "reverse calls take fields in host memory; these are in CUDA device memory";
  std::array<int, 3> one_round{};
  const std::array<bool, 3> mine = one_round_axes(whole.layouts, moved, depth);
  for (int k = 0; k < 3; ++k) one_round[static_cast<size_t>(k)] = mine[static_cast<size_t>(k)];
  try {
    yielding_allreduce(MPI_IN_PLACE, one_round.data(), 3, MPI_INT, MPI_MIN, s.comm);
    exchange_plan described;
    described.layouts = whole.layouts;
    described.moved = moved;
    described.nfields = static_cast<int>(moved.size());
    described.depth = depth;
    require_agreement(s.comm,
                      fmt::format("reverse ({}) of {} field(s) at depth {}: {}",
                                  every_holder ? "every holder" : "owner", moved.size(), depth,
                                  describe_fields(described)),
                      problem);
  } catch (...) {
    s.reverses.erase(at);
    throw;
  }
  if (s.reverse_comm == MPI_COMM_NULL) MPI_Comm_dup(s.comm, &s.reverse_comm);
  at->second = std::make_unique<reverse_schedule>(
      reverse_steps(s.decomp, whole.layouts, moved, depth, every_holder,
                    {one_round[0] != 0, one_round[1] != 0, one_round[2] != 0},
                    // A staged exchange's reverse calls take its three steps too.
                    whole.alg != algorithm::staged),
      whole.layouts, moved, depth, !every_holder,
      // With a single-copy transport for the node, so do the reverse calls' node peers.
      s.choice.local().reach == transport_reach::same_node ? &s.node : nullptr, s.waits);
  return *at->second;
}

void halo_exchange::start_reverse(reduction op, reverse_to to) {
  std::vector<int> all(state_->whole->plan.layouts.size());
  for (size_t f = 0; f < all.size(); ++f) all[f] = static_cast<int>(f);
  start_reverse(op, all, 0, to);
}

void halo_exchange::start_reverse(reduction op, const std::vector<int>& fields, int depth,
                                  reverse_to to) {
  state& s = *state_;
  if (s.reverse_running)
    throw std::logic_error("halo_exchange::start_reverse called twice without wait_reverse");
  const state::reverse_found* recent = s.recent_reverses.find(fields, depth, to);
  std::vector<int> moved;
  try {
    moved = recent ? recent->moved : checked_subset(fields, depth, s.whole->plan, s.names);
  } catch (const usage_error& e) {
    throw usage_error(fmt::format("halo_exchange::start_reverse: {}", e.what()));
  }
  if (s.running)
    if (int f = shared_field(s.running->plan.moved, moved); f >= 0)
      throw usage_error(fmt::format(
          "halo_exchange::start_reverse: field '{}' is in a forward exchange still in flight "
          "(wait first)",
          s.names[static_cast<size_t>(f)]));
  reverse_schedule& sched = recent ? *recent->sched : reverse_schedule_of(moved, depth, to);
  if (!recent) s.recent_reverses.remember(fields, depth, to, {&sched, moved});
  s.reverse_running = &sched;
  s.reverse_running_fields = std::move(moved);
  sched.start(s.fields, op, s.reverse_comm, s.waits);
}

void halo_exchange::wait_reverse() {
  state& s = *state_;
  if (!s.reverse_running)
    throw std::logic_error("halo_exchange::wait_reverse called without start_reverse");
  reverse_schedule* sched = s.reverse_running;
  s.reverse_running = nullptr;
  s.reverse_running_fields.clear();
  sched->wait();
}

size_t halo_exchange::reverse_message_count(const std::vector<int>& fields, int depth,
                                            reverse_to to) {
  return reverse_schedule_of(check_subset(fields, depth), depth, to).message_count();
}

void halo_exchange::record_stages(bool on) {
  state_->recording.reset();
  if (!on) return;
  (void)stage_timer::seconds_per_tick();  // calibrated now, not in the first exchange
  state_->recording = std::make_unique<stage_timer::recorder>(state_->whole->plan.stages.size());
}

exchange_profile halo_exchange::profile() const {
  exchange_profile out;
  out.setup = state_->setup;
  const auto* r = state_->recording.get();
  if (!r) return out;
  const double tick = stage_timer::seconds_per_tick();
  auto seconds = [&](const std::array<uint64_t, stage_timer::parts>& t, double scale) {
    return stage_split{.pack_s = static_cast<double>(t[stage_timer::pack]) * scale,
                       .copy_s = static_cast<double>(t[stage_timer::copy]) * scale,
                       .wait_peers_s = static_cast<double>(t[stage_timer::wait_peers]) * scale,
                       .wait_readers_s = static_cast<double>(t[stage_timer::wait_readers]) * scale,
                       .other_s = static_cast<double>(t[stage_timer::other]) * scale};
  };
  out.exchanges = r->exchanges;
  for (const auto& t : r->sums) out.stages.push_back(seconds(t, tick));
  // The middle half of the kept exchanges by their whole time on this rank.
  const size_t stages = r->sums.size();
  const size_t kept = stages ? r->history.size() / stages : 0;
  if (kept == 0) return out;
  std::vector<std::pair<uint64_t, size_t>> totals;  // (ticks, exchange)
  for (size_t e = 0; e < kept; ++e) {
    uint64_t total = 0;
    for (size_t s = 0; s < stages; ++s)
      for (uint64_t t : r->history[e * stages + s]) total += t;
    totals.emplace_back(total, e);
  }
  std::sort(totals.begin(), totals.end());
  const size_t first = kept / 4, last = std::max(first + 1, kept - kept / 4);
  std::vector<std::array<uint64_t, stage_timer::parts>> middle(stages);
  for (size_t i = first; i < last; ++i)
    for (size_t s = 0; s < stages; ++s)
      for (unsigned p = 0; p < stage_timer::parts; ++p)
        middle[s][p] += r->history[totals[i].second * stages + s][p];
  for (const auto& t : middle)
    out.typical.push_back(seconds(t, tick / static_cast<double>(last - first)));
  return out;
}

}  // namespace halox
