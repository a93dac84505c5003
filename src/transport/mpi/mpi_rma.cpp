#include "transport/mpi/mpi_rma.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <set>

#include "common/stage_timer.hpp"
#include "common/yielding_mpi.hpp"
#include "halox/common/error.hpp"
#include "halox/extend/pack.hpp"
#include "transport/core/names.hpp"
#include "transport/mpi/mpi_datatypes.hpp"

namespace halox {

namespace {

// Every field's layout (points and allocated halo) on the neighbours this rank
// puts into, from the neighbours themselves: each rank tells those that put
// into it (the peers of its receives) and hears from those it puts into (the
// peers of its sends). A rank's halo on a side without a neighbour may differ.
std::map<int, std::vector<rma_peer_layout>> exchange_layouts(const exchange_plan& plan,
                                                             MPI_Comm comm,
                                                             const wait_policy& waits) {
  std::set<int> origins, targets;
  for (const auto& s : plan.stages) {
    for (const auto& m : s.recvs) origins.insert(m.peer);
    for (const auto& m : s.sends) targets.insert(m.peer);
  }
  const int count = static_cast<int>(9 * plan.layouts.size());
  std::map<int, std::vector<rma_peer_layout>> interiors;
  std::vector<MPI_Request> requests;
  std::vector<int> peers;
  for (int peer : targets) {
    requests.emplace_back();
    peers.push_back(peer);
    auto& theirs = interiors[peer];
    theirs.resize(plan.layouts.size());
    MPI_Irecv(theirs.data(), count, MPI_INT, peer, 0, comm, &requests.back());
  }
  std::vector<rma_peer_layout> mine;
  for (const auto& l : plan.layouts)
    mine.push_back({l.grid.interior, l.grid.halo.lo, l.grid.halo.hi});
  for (int peer : origins) {
    requests.emplace_back();
    peers.push_back(peer);
    MPI_Isend(mine.data(), count, MPI_INT, peer, 0, comm, &requests.back());
  }
  waits.wait_all(requests, {}, [&](size_t i) {
    return fmt::format("the layout of rank {} ({} set-up)", peers[i], transport_names::mpi_rma);
  });
  return interiors;
}

// `region` (in this rank's coordinates) in the coordinates of the neighbour
// toward `direction`: that neighbour starts where this rank ends, or ends
// where this rank starts (also across a periodic wrap).
box in_peer_coordinates(const box& region, const ivec3& direction, const ivec3& mine,
                        const ivec3& peer) {
  box out = region;
  for (int k = 0; k < 3; ++k) {
    const int shift = direction[k] > 0 ? -mine[k] : direction[k] < 0 ? peer[k] : 0;
    out.lo[k] += shift;
    out.hi[k] += shift;
  }
  return out;
}

MPI_Group group_of(MPI_Comm comm, const std::set<int>& ranks) {
  if (ranks.empty()) return MPI_GROUP_NULL;
  MPI_Group all, group;
  MPI_Comm_group(comm, &all);
  std::vector<int> list(ranks.begin(), ranks.end());
  MPI_Group_incl(all, static_cast<int>(list.size()), list.data(), &group);
  MPI_Group_free(&all);
  return group;
}

std::string describe_origins(size_t stage, size_t field, const std::vector<message>& recvs) {
  std::string out = fmt::format("puts into field {} in stage {} ({}) from", field, stage,
                                transport_names::mpi_rma);
  bool first = true;
  for (const auto& m : recvs)
    for (const auto& fb : m.boxes)
      if (static_cast<size_t>(fb.field) == field) {
        out += fmt::format("{} rank {} (direction {},{},{})", first ? "" : ",", m.peer,
                           m.direction[0], m.direction[1], m.direction[2]);
        first = false;
        break;
      }
  return out;
}

std::string describe_packed_origins(size_t stage, const std::vector<message>& recvs,
                                    const std::vector<long long>& offsets) {
  std::string out = fmt::format("packed puts into the landing window in stage {} ({}) from", stage,
                                transport_names::mpi_rma);
  bool first = true;
  for (size_t i = 0; i < recvs.size(); ++i)
    if (offsets[i] >= 0) {
      out += fmt::format("{} rank {} (direction {},{},{})", first ? "" : ",", recvs[i].peer,
                         recvs[i].direction[0], recvs[i].direction[1], recvs[i].direction[2]);
      first = false;
    }
  return out;
}

}  // namespace

// A window per field rather than one dynamic window with every field
// attached: with a dynamic window Open MPI 4.1 (osc/ucx) looks up the target's
// attached regions remotely on every put, and MPICH 4.0 (ch4:ucx) moves such
// puts as active messages; windows over fixed memory are registered once.
mpi_rma_transport::mpi_rma_transport(const transport_context& ctx, rma_sync sync)
    : plan_(ctx.plan), fields_(ctx.fields), waits_(ctx.waits), sync_(sync) {
  MPI_Comm_dup(ctx.comm, &comm_);
  if (ctx.tuning.rma.direct_min_run) {
    min_run_ = *ctx.tuning.rma.direct_min_run;
    rule_ = "tuning.rma.direct_min_run";
  }
  // No windows when no rank has a message (one rank, or the off-node part of
  // a routing on one node): Open MPI's osc/rdma cannot even create a window
  // over a single process, and windows cost registration and a collective.
  int mine = 0, anywhere = 0;
  for (const auto& s : plan_.stages) mine |= !s.sends.empty() || !s.recvs.empty();
  yielding_allreduce(&mine, &anywhere, 1, MPI_INT, MPI_MAX, comm_);
  if (!anywhere) {
    stages_.resize(plan_.stages.size());
    return;
  }
  const auto interiors = exchange_layouts(plan_, comm_, waits_);
  choose_packed_messages();
  const auto uses = window_uses();
  assign_window_slots(uses);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "no_locks", "true");  // active target only
  MPI_Info_set(info, "same_disp_unit", "true");
  // An MPI library may have no one-sided component for these peers (Open MPI
  // 4.1 over its TCP BTL): one clear error on every rank instead of an abort.
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  // Every rank makes the same number of (collective) calls, whatever failed.
  int failed = 0;
  auto create = [&](void* base, MPI_Aint size) {
    for (size_t slot = 0; slot < window_slots_; ++slot) {
      MPI_Win win = MPI_WIN_NULL;
      if (MPI_Win_create(base, size, 1, info, comm_, &win) == MPI_SUCCESS)
        windows_.push_back(win);
      else
        failed = 1;
    }
  };
  for (size_t f = 0; f < fields_.pointers.size(); ++f)
    create(fields_.pointers[f],
           static_cast<MPI_Aint>(plan_.layouts[f].grid.points() * plan_.layouts[f].element_bytes));
  if (landing_anywhere_) create(landing_, static_cast<MPI_Aint>(landing_bytes_));
  MPI_Info_free(&info);
  int failed_anywhere = 0;
  yielding_allreduce(&failed, &failed_anywhere, 1, MPI_INT, MPI_MAX, comm_);
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_ARE_FATAL);
  if (failed_anywhere) {
    for (auto& win : windows_) MPI_Win_free(&win);
    windows_.clear();
    MPI_Free_mem(landing_);
    MPI_Free_mem(send_buffer_);
    MPI_Comm_free(&comm_);
    throw run_error(
        fmt::format("{}: the MPI library could not create a window over the fields of these ranks "
                    "(no one-sided component for their network; with Open MPI over TCP try "
                    "--mca osc sm,pt2pt)",
                    name()));
  }
  build_schedule(interiors, uses);
  if (sync_ == rma_sync::fence) agree_on_fences(comm_);
}

// The receiver decides, from its own layout, which messages come packed and
// where they land; it tells each origin the offset (or -1), stage by stage.
void mpi_rma_transport::choose_packed_messages() {
  const size_t nstages = plan_.stages.size();
  recv_offsets_.assign(nstages, {});
  send_offsets_.assign(nstages, {});
  constexpr size_t align = 64;
  for (size_t s = 0; s < nstages; ++s) {
    const stage& st = plan_.stages[s];
    auto& offers = recv_offsets_[s];
    auto& answers = send_offsets_[s];
    offers.assign(st.recvs.size(), -1);
    answers.assign(st.sends.size(), -1);
    size_t landed = 0, packed = 0;
    std::vector<MPI_Request> requests;
    std::vector<std::string> what;
    for (size_t i = 0; i < st.recvs.size(); ++i) {
      const message& m = st.recvs[i];
      size_t runs = 0;
      for (const auto& fb : m.boxes) {
        // Only the shape of the copy counts here: the field stands in for the buffer.
        std::byte* field = fields_.pointers[static_cast<size_t>(fb.field)];
        const box_copy c = unpack_copy(field, field, plan_.grid_of(fb.field), fb.region,
                                       plan_.element_bytes_of(fb.field));
        runs += static_cast<size_t>(c.rows) * static_cast<size_t>(c.planes);
      }
      const bool short_runs = runs > 0 && m.bytes < min_run_ * runs;
      ++receives_;
      if (short_runs && m.bytes <= static_cast<size_t>(std::numeric_limits<int>::max())) {
        ++packed_receives_;
        offers[i] = static_cast<long long>(landed);
        landed += (m.bytes + align - 1) / align * align;
      }
      requests.emplace_back();
      what.push_back(describe_message(m, "from", name() + " set-up"));
      MPI_Isend(&offers[i], 1, MPI_LONG_LONG, m.peer, m.tag, comm_, &requests.back());
    }
    for (size_t i = 0; i < st.sends.size(); ++i) {
      const message& m = st.sends[i];
      requests.emplace_back();
      what.push_back(describe_message(m, "to", name() + " set-up"));
      MPI_Irecv(&answers[i], 1, MPI_LONG_LONG, m.peer, m.tag, comm_, &requests.back());
    }
    waits_.wait_all(requests, {}, [&](size_t i) { return what[i]; });
    for (size_t i = 0; i < st.sends.size(); ++i)
      if (answers[i] >= 0) packed += (st.sends[i].bytes + align - 1) / align * align;
    landing_bytes_ = std::max(landing_bytes_, landed);
    send_bytes_ = std::max(send_bytes_, packed);
  }
  int mine = landing_bytes_ > 0 ? 1 : 0, anywhere = 0;
  yielding_allreduce(&mine, &anywhere, 1, MPI_INT, MPI_MAX, comm_);
  landing_anywhere_ = anywhere != 0;
  // Never zero bytes: every rank creates the landing windows over some memory.
  MPI_Alloc_mem(static_cast<MPI_Aint>(std::max<size_t>(landing_bytes_, align)), MPI_INFO_NULL,
                &landing_);
  MPI_Alloc_mem(static_cast<MPI_Aint>(std::max<size_t>(send_bytes_, align)), MPI_INFO_NULL,
                &send_buffer_);
}

std::vector<std::vector<mpi_rma_transport::window_use>> mpi_rma_transport::window_uses() const {
  const size_t nfields = fields_.pointers.size();
  std::vector<std::vector<window_use>> uses(plan_.stages.size(),
                                            std::vector<window_use>(nfields + 1));
  // A packed message uses the landing window, a direct one its fields' windows.
  auto note = [&](std::vector<window_use>& of, const std::vector<message>& messages,
                  const std::vector<long long>& offsets, std::set<int> window_use::*peers) {
    for (size_t i = 0; i < messages.size(); ++i) {
      const message& m = messages[i];
      if (offsets[i] >= 0)
        (of[nfields].*peers).insert(m.peer);
      else
        for (const auto& fb : m.boxes) (of[static_cast<size_t>(fb.field)].*peers).insert(m.peer);
    }
  };
  for (size_t s = 0; s < plan_.stages.size(); ++s) {
    note(uses[s], plan_.stages[s].recvs, recv_offsets_[s], &window_use::origins);
    note(uses[s], plan_.stages[s].sends, send_offsets_[s], &window_use::targets);
  }
  return uses;
}

// PSCW epochs of one window must always pair the same ranks: MPICH 4.0 counts
// the posts that reach a window, so a post for a later epoch from a rank
// outside the current access group (a neighbour already in the next stage)
// completes the wrong MPI_Win_start, and the exchange hangs. Each window kind
// gets a window per distinct (origins, targets) pair of its stages; all ranks
// create the largest number any rank needs (MPI_Win_create is collective).
void mpi_rma_transport::assign_window_slots(const std::vector<std::vector<window_use>>& uses) {
  const size_t kinds = fields_.pointers.size() + 1;
  slot_of_.assign(plan_.stages.size(), std::vector<size_t>(kinds, 0));
  size_t most = 1;
  if (sync_ == rma_sync::pscw) {
    std::vector<std::vector<window_use>> seen(kinds);
    for (size_t s = 0; s < plan_.stages.size(); ++s)
      for (size_t k = 0; k < kinds; ++k) {
        const window_use& use = uses[s][k];
        if (use.origins.empty() && use.targets.empty()) continue;
        auto& known = seen[k];
        auto it = std::find(known.begin(), known.end(), use);
        slot_of_[s][k] = static_cast<size_t>(it - known.begin());
        if (it == known.end()) known.push_back(use);
        most = std::max(most, known.size());
      }
  }
  unsigned long mine = most, agreed = 0;
  yielding_allreduce(&mine, &agreed, 1, MPI_UNSIGNED_LONG, MPI_MAX, comm_);
  window_slots_ = agreed;
}

void mpi_rma_transport::build_schedule(const std::map<int, std::vector<rma_peer_layout>>& interiors,
                                       const std::vector<std::vector<window_use>>& uses) {
  const size_t nfields = fields_.pointers.size();
  std::byte* const* fields = fields_.pointers.data();
  for (size_t s = 0; s < plan_.stages.size(); ++s) {
    const stage& st = plan_.stages[s];
    stage_ops ops;
    ops.landing_window = window_of(s, nfields);
    size_t packed = 0;
    for (size_t i = 0; i < st.sends.size(); ++i) {
      const message& m = st.sends[i];
      if (const long long offset = send_offsets_[s][i]; offset >= 0) {
        add_pack(ops.pack, send_buffer_ + packed, m.boxes, fields, plan_);
        ops.packed.push_back({m.peer, packed, m.bytes, static_cast<MPI_Aint>(offset)});
        packed += (m.bytes + 63) / 64 * 64;
        continue;
      }
      for (const auto& fb : m.boxes) {
        const auto field = static_cast<size_t>(fb.field);
        const local_grid& grid = plan_.grid_of(fb.field);
        const MPI_Datatype element = mpi_element_type(plan_.element_bytes_of(fb.field));
        const rma_peer_layout& peer = interiors.at(m.peer)[field];
        const ivec3 peer_interior = peer.interior;
        const local_grid peer_grid(peer_interior, halo_widths{peer.lo, peer.hi});
        const box there =
            in_peer_coordinates(fb.region, fb.direction, grid.interior, peer_interior);
        put_op put{fields_.pointers[field], make_box_type(fb.region, grid, element), m.peer,
                   make_box_type(there, peer_grid, element), window_of(s, field)};
        types_.push_back(put.origin_type);
        types_.push_back(put.target_type);
        ops.puts.push_back(put);
      }
    }
    for (size_t i = 0; i < st.recvs.size(); ++i)
      if (const long long offset = recv_offsets_[s][i]; offset >= 0)
        add_unpack(ops.unpack, landing_ + offset, st.recvs[i].boxes, fields, plan_);
    for (size_t k = 0; k <= nfields; ++k) {
      const window_use& use = uses[s][k];
      if (use.origins.empty() && use.targets.empty()) continue;
      epoch e;
      e.window = window_of(s, k);
      if (sync_ == rma_sync::pscw) {
        e.origins = group_of(comm_, use.origins);
        e.targets = group_of(comm_, use.targets);
      }
      e.what = k < nfields ? describe_origins(s, k, st.recvs)
                           : describe_packed_origins(s, st.recvs, recv_offsets_[s]);
      ops.epochs.push_back(std::move(e));
    }
    stages_.push_back(std::move(ops));
  }
}

std::string mpi_rma_transport::settings() const {
  return fmt::format(
      "{}: messages whose runs average under {} B on the receiver packed into its landing "
      "window, the rest put with datatypes ({}): {} of {} received here packed",
      name(), min_run_, rule_, packed_receives_, receives_);
}

// A fence is collective over all ranks of the window: every rank fences the
// windows that any rank uses in a stage.
void mpi_rma_transport::agree_on_fences(MPI_Comm comm) {
  const size_t nfields = windows_.size();
  std::vector<int> used(stages_.size() * nfields, 0), any(used.size());
  for (size_t s = 0; s < stages_.size(); ++s)
    for (const auto& e : stages_[s].epochs) used[s * nfields + e.window] = 1;
  yielding_allreduce(used.data(), any.data(), static_cast<int>(used.size()), MPI_INT, MPI_MAX,
                     comm);
  for (size_t s = 0; s < stages_.size(); ++s) {
    std::vector<epoch> epochs;
    for (size_t w = 0; w < nfields; ++w)
      if (any[s * nfields + w]) {
        epoch& e = epochs.emplace_back();
        e.window = w;
        // A fence waits for every rank; name the ones this rank gets data from.
        const size_t kind = w / window_slots_;
        e.what = "every rank at MPI_Win_fence, among them the " +
                 (kind < fields_.pointers.size()
                      ? describe_origins(s, kind, plan_.stages[s].recvs)
                      : describe_packed_origins(s, plan_.stages[s].recvs, recv_offsets_[s])) +
                 fmt::format(" ({})", transport_names::mpi_rma_fence);
      }
    stages_[s].epochs = std::move(epochs);
  }
}

mpi_rma_transport::~mpi_rma_transport() {
  for (auto& s : stages_)
    for (auto& e : s.epochs)
      for (auto* g : {&e.origins, &e.targets})
        if (*g != MPI_GROUP_NULL) MPI_Group_free(g);
  for (auto& t : types_) MPI_Type_free(&t);
  for (auto& w : windows_) MPI_Win_free(&w);
  if (landing_) MPI_Free_mem(landing_);
  if (send_buffer_) MPI_Free_mem(send_buffer_);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void mpi_rma_transport::start(size_t stage_index) {
  auto& ops = stages_[stage_index];
  if (sync_ == rma_sync::fence) {
    for (const auto& e : ops.epochs)
      waits_.blocking([&] { MPI_Win_fence(MPI_MODE_NOPRECEDE, windows_[e.window]); },
                      [&] { return e.what; });
  } else {
    // Every exposure before any access: a blocking MPI_Win_start then waits
    // only for posts that its targets issue unconditionally.
    for (const auto& e : ops.epochs)
      if (e.origins != MPI_GROUP_NULL) MPI_Win_post(e.origins, 0, windows_[e.window]);
    for (const auto& e : ops.epochs)
      if (e.targets != MPI_GROUP_NULL)
        waits_.blocking([&] { MPI_Win_start(e.targets, 0, windows_[e.window]); },
                        [&] { return e.what; });
  }
  {
    const stage_timer::part_span packing(stage_timer::pack);
    ops.pack.run();
  }
  for (const auto& p : ops.packed)
    MPI_Put(send_buffer_ + p.from, static_cast<int>(p.bytes), MPI_BYTE, p.target, p.offset,
            static_cast<int>(p.bytes), MPI_BYTE, windows_[ops.landing_window]);
  for (const auto& p : ops.puts)
    MPI_Put(p.origin, 1, p.origin_type, p.target, 0, 1, p.target_type, windows_[p.window]);
  // Self copies fill other halo cells than the puts write, from cells they only read.
  for (const auto& copy : plan_.stages[stage_index].copies)
    copy_boxes(copy.from, copy.to, fields_.pointers.data(), plan_);
}

void mpi_rma_transport::wait(size_t stage_index) {
  auto& ops = stages_[stage_index];
  if (sync_ == rma_sync::fence) {
    for (const auto& e : ops.epochs)
      waits_.blocking([&] { MPI_Win_fence(MPI_MODE_NOSUCCEED, windows_[e.window]); },
                      [&] { return e.what; });
    ops.unpack.run();
    return;
  }
  // Access epochs first: the origins' MPI_Win_complete is what ends our exposure.
  for (const auto& e : ops.epochs)
    if (e.targets != MPI_GROUP_NULL)
      waits_.blocking([&] { MPI_Win_complete(windows_[e.window]); }, [&] { return e.what; });
  for (const auto& e : ops.epochs) {
    if (e.origins == MPI_GROUP_NULL) continue;
    MPI_Win win = windows_[e.window];
    waits_.spin_until(
        [win] {
          int done = 0;
          MPI_Win_test(win, &done);
          return done != 0;
        },
        [&] { return e.what; });
  }
  ops.unpack.run();
}

}  // namespace halox
