#include "halox/exchange.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <stdexcept>

#include "halox/programs/topology.hpp"

#include "halox/common/error.hpp"
#include "halox/extend/registry.hpp"
#include "common/stage_timer.hpp"

namespace halox {

namespace {

std::string describe(const exchange_plan& plan, const transport_choice& choice,
                     const exchange_options& o) {
  const auto& h = plan.grid.halo;
  return fmt::format("{} {} {} field(s) of {} bytes ({} per message, {} per block), halo lo "
                     "{},{},{} hi {},{},{}, transport {}, ranks per node {}",
                     to_string(plan.alg), to_string(plan.mode), plan.nfields, plan.element_bytes,
                     plan.fields_per_message, plan.fields_per_block,
                     h.lo[0], h.lo[1], h.lo[2], h.hi[0], h.hi[1], h.hi[2], choice.name(),
                     o.ranks_per_node);
}

// Collective: the block of fields sized to the smallest L2 cache of all
// ranks, so that every rank cuts its stages alike.
int agreed_cache_block(const decomposition& decomp, const local_grid& grid, int nfields,
                       size_t element_bytes, algorithm alg) {
  int block = nfields;
  try {
    block = cache_sized_block(decomp, grid, nfields, element_bytes, alg, this_machine_l2_bytes());
  } catch (const usage_error&) {
    // An impossible grid: reported with the plan below.
  }
  MPI_Allreduce(MPI_IN_PLACE, &block, 1, MPI_INT, MPI_MIN, decomp.comm());
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
  MPI_Bcast(first.data(), static_cast<int>(room), MPI_CHAR, 0, comm);
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
    throw usage_error(fmt::format("{} of {} fields are not in CUDA device memory, but the options "
                                  "say device memory",
                                  fields.pointers.size() - on_device, fields.pointers.size()));
  if (on_device > 0 && on_device < fields.pointers.size())
    throw usage_error(fmt::format("{} of {} fields are in CUDA device memory, the others not: an "
                                  "exchange takes fields of one kind",
                                  on_device, fields.pointers.size()));
  return on_device > 0;
}

// Throws usage_error when a transport of the choice cannot move the fields' memory.
void require_memory_support(const transport_choice& choice, bool device) {
  for (const transport_entry* entry : {&choice.local(), &choice.remote()}) {
    if (device && !entry->moves_device_memory())
      throw usage_error(fmt::format("transport '{}' moves host memory only; fields in device "
                                    "memory move by the transports whose entry declares a device implementation "
                                    "(transport_entry::make_device)",
                                    entry->name));
    if (!device && !entry->moves_host_memory())
      throw usage_error(fmt::format("transport '{}' moves CUDA device memory only, and these "
                                    "fields are in host memory",
                                    entry->name));
  }
}

}  // namespace

struct halo_exchange::state {
  exchange_options options;
  std::string choice_report;
  transport_choice choice;
  exchange_plan plan;
  field_set fields;
  MPI_Comm comm = MPI_COMM_NULL;
  node_membership node;
  wait_policy waits;
  std::unique_ptr<transport> mover;
  bool started = false;
  setup_times setup;
  std::unique_ptr<stage_timer::recorder> recording;  // null: not recording

  ~state() {
    mover.reset();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (node.comm != MPI_COMM_NULL) MPI_Comm_free(&node.comm);
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
};

halo_exchange::halo_exchange(const decomposition& decomp, const local_grid& grid, element_type type,
                             std::vector<void*> fields, const exchange_options& options)
    : halo_exchange(decomp, grid, type, [&] {
        field_set set;
        for (void* f : fields) set.pointers.push_back(static_cast<std::byte*>(f));
        return set;
      }(), options) {}

halo_exchange::halo_exchange(const decomposition& decomp, const local_grid& grid, element_type type,
                             const shared_field_memory& memory, const exchange_options& options)
    : halo_exchange(decomp, grid, type, [&] {
        field_set set;
        for (int f = 0; f < memory.nfields(); ++f)
          set.pointers.push_back(static_cast<std::byte*>(memory.field(f)));
        set.shared = &memory;
        return set;
      }(), options) {}

halo_exchange::halo_exchange(const decomposition& decomp, const local_grid& grid, element_type type,
                             field_set fields, const exchange_options& options)
    : state_(std::make_unique<state>()) {
  state& s = *state_;
  const double begun = MPI_Wtime();
  std::string problem;
  try {
    s.options = with_environment(options);
    fields.device = fields_on_device(options.memory, fields);
    fields.stream = options.cuda_stream;
    if (fields.device && (options.auto_transport || options.auto_algorithm || options.auto_fields))
      throw usage_error("measured choices (auto transport, algorithm or fields) take host fields "
                        "only: name them for fields in device memory");
  } catch (const usage_error& e) {
    problem = e.what();
  }
  require_all(decomp.comm(), problem);
  // Rank 0's node grouping decides, as in node_communicator: ranks whose
  // environments differ must not split the nodes differently.
  MPI_Bcast(&s.options.ranks_per_node, 1, MPI_INT, 0, decomp.comm());
  if (options.auto_transport || options.auto_algorithm || options.auto_fields)
    s.options = measured_choice(decomp, grid, type, fields, s.options, s.choice_report);
  s.setup.measured_choice_s = MPI_Wtime() - begun;
  finish(decomp, grid, type, std::move(fields), s);
  s.setup.total_s = MPI_Wtime() - begun;
}

void halo_exchange::finish(const decomposition& decomp, const local_grid& grid, element_type type,
                           field_set fields, state& s) {
  const exchange_options& options = s.options;
  const double plan_begun = MPI_Wtime();
  // Local checks: they depend only on the arguments, so every rank of a
  // consistent program throws alike; the agreement check below catches the rest.
  std::string problem;
  const int nfields = static_cast<int>(fields.pointers.size());
  // Collective on every rank, whatever the options say (ranks that disagree
  // on them fail below, together).
  const int host_block =
      agreed_cache_block(decomp, grid, std::max(nfields, 1), element_size(type), options.alg);
  // Blocks fit a CPU's cache; on a GPU each block would be one more synchronised
  // round of kernels and signals, so device fields move in one block.
  const int l2_block = fields.device ? std::max(nfields, 1) : host_block;
  const int cache_block = options.fields_per_block > 0 ? options.fields_per_block : l2_block;
  try {
    s.choice = options.transport;
    if (auto why = s.choice.unavailable(); !why.empty()) throw usage_error(why);
    require_memory_support(s.choice, fields.device);
    if (options.fields_per_block < 0)
      throw usage_error(
          fmt::format("fields per block must not be negative, got {}", options.fields_per_block));
    const int per_message = options.fields_per_message == fields_per_message_auto
                                ? cache_block
                                : options.fields_per_message;
    s.plan = make_plan(decomp, grid, nfields, element_size(type), options.alg, options.mode,
                       per_message, cache_block);
    s.waits.timeout_seconds = options.timeout_seconds;
    for (auto* f : fields.pointers)
      if (!f) throw usage_error("a field pointer is null");
  } catch (const usage_error& e) {
    problem = e.what();
  }
  require_agreement(decomp.comm(),
                    describe(s.plan, s.choice, options) + (fields.device ? ", device memory" : ""),
                    problem);

  s.fields = std::move(fields);
  MPI_Comm_dup(decomp.comm(), &s.comm);
  s.node = make_node_membership(s.comm, options.ranks_per_node);
  s.waits.oversubscribed = s.node.oversubscribed;
  s.waits.comm = s.comm;
  // Whether fields are shared is each rank's own business; the check is everybody's.
  std::string grouping;
  if (s.fields.shared) {
    int same = MPI_UNEQUAL;
    MPI_Comm_compare(s.fields.shared->node_comm(), s.node.comm, &same);
    if (same != MPI_IDENT && same != MPI_CONGRUENT)
      grouping = "the shared fields were allocated for another grouping of ranks into nodes than "
                 "the exchange uses";
  }
  require_all(s.comm, grouping);
  const double transports_begun = MPI_Wtime();
  s.setup.plan_s = transports_begun - plan_begun;
  s.mover = make_transport(s.choice, {s.plan, s.comm, s.fields, s.node, s.waits, options.tuning});
  s.setup.transports_s = MPI_Wtime() - transports_begun;
}

halo_exchange::halo_exchange(halo_exchange&&) noexcept = default;
halo_exchange& halo_exchange::operator=(halo_exchange&&) noexcept = default;
halo_exchange::~halo_exchange() = default;

const exchange_plan& halo_exchange::plan() const { return state_->plan; }
const exchange_options& halo_exchange::options() const { return state_->options; }

transport_tuning halo_exchange::tuning_as_built() const {
  transport_tuning knobs = state_->options.tuning;
  state_->mover->tuning_as_built(knobs);
  return knobs;
}
const std::string& halo_exchange::choice_report() const { return state_->choice_report; }
std::string halo_exchange::transport_name() const { return state_->choice.name(); }
std::string halo_exchange::transport_path() const { return state_->mover->path(); }
std::string halo_exchange::transport_settings() const { return state_->mover->settings(); }
std::vector<transport_stats> halo_exchange::stats() const { return state_->mover->stats(); }

void halo_exchange::start() {
  if (state_->started) throw std::logic_error("halo_exchange::start called twice without wait");
  state_->started = true;
  if (state_->plan.stages.empty()) return;
  const stage_timer::stage_scope timed(state_->recording.get(), 0);
  state_->mover->start(0);
}

void halo_exchange::wait() {
  if (!state_->started) throw std::logic_error("halo_exchange::wait called without start");
  state_->started = false;
  auto& mover = *state_->mover;
  stage_timer::recorder* recording = state_->recording.get();
  {
    stage_timer::stage_scope timed(recording, 0);
    for (size_t s = 0; s < state_->plan.stages.size(); ++s) {
      if (s > 0) {
        timed.next(s);
        mover.start(s);
      }
      mover.wait(s);
    }
  }
  if (recording) recording->finish_exchange();
}

void halo_exchange::record_stages(bool on) {
  state_->recording.reset();
  if (!on) return;
  (void)stage_timer::seconds_per_tick();  // calibrated now, not in the first exchange
  state_->recording = std::make_unique<stage_timer::recorder>(state_->plan.stages.size());
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
