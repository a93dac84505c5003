#include "exchange/reverse.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <cstring>

#include "halox/common/error.hpp"
#include "transport/common/node_signals.hpp"

namespace halox {

namespace {
// Outbox slots of the node path: a step's pack waits only for the readers of
// the step two before it.
constexpr size_t outbox_slots = 2;
// By the enumerators' order.
constexpr std::array<std::string_view, 3> reduction_names{"sum", "min", "max"};
}  // namespace

reduction parse_reduction(const std::string& name) {
  const auto at = std::ranges::find(reduction_names, name);
  if (at == reduction_names.end())
    throw usage_error(fmt::format("unknown reduction '{}' (expected sum, min, max)", name));
  return static_cast<reduction>(at - reduction_names.begin());
}

std::string to_string(reduction op) {
  return std::string(reduction_names.at(static_cast<size_t>(op)));
}

namespace {

// The axes in the order a reverse call combines them.
constexpr int axis_order[3] = {2, 1, 0};

struct span1 {
  int lo = 0, hi = 0;
};

box make_box(const std::array<span1, 3>& s) {
  return {{s[0].lo, s[1].lo, s[2].lo}, {s[0].hi, s[1].hi, s[2].hi}};
}

// Along `axis`, the send and receive spans toward each side for a step kind
// (n points owned, w the widths the call fills).
void axis_spans(reverse_step::kind what, int n, int w_lo, int w_hi, span1& send_lo,
                span1& recv_lo, span1& send_hi, span1& recv_hi) {
  using k = reverse_step::kind;
  switch (what) {
    case k::into_owner:  // my halo to its owner; the copies of my points land on them
      send_lo = {-w_lo, 0}, recv_lo = {0, w_hi};
      send_hi = {n, n + w_hi}, recv_hi = {n - w_lo, n};
      return;
    case k::every_holder:  // what both of us hold, both ways
      send_lo = recv_lo = {-w_lo, w_hi};
      send_hi = recv_hi = {n - w_lo, n + w_hi};
      return;
    case k::from_owner:  // a forward step
      send_lo = {0, w_hi}, recv_lo = {-w_lo, 0};
      send_hi = {n - w_lo, n}, recv_hi = {n, n + w_hi};
      return;
  }
}

reverse_step make_step(const decomposition& d, const std::vector<field_layout>& layouts,
                       const std::vector<int>& moved, int depth, int axis, int order_position,
                       reverse_step::kind what) {
  const neighbour_sides sides = sides_of(d);
  reverse_step step;
  step.axis = axis;
  step.what = what;
  ivec3 down{0, 0, 0}, up{0, 0, 0};
  down[axis] = -1;
  up[axis] = +1;
  if (sides.lo[axis]) step.lo.peer = *d.neighbor(down);
  if (sides.hi[axis]) step.hi.peer = *d.neighbor(up);
  // Toward -axis: tag 2 axis; toward +axis: 2 axis + 1.
  step.lo.send_tag = 2 * axis, step.lo.recv_tag = 2 * axis + 1;
  step.hi.send_tag = 2 * axis + 1, step.hi.recv_tag = 2 * axis;
  for (int f : moved) {
    const field_layout& l = layouts[static_cast<size_t>(f)];
    const halo_widths w = filled_widths(l, depth);
    const ivec3& n = l.grid.interior;
    std::array<span1, 3> send_lo, recv_lo, send_hi, recv_hi;
    for (int j = 0; j < 3; ++j) {
      if (j == axis) continue;
      // Other axes: every point held where a neighbour is, except that a step into
      // the owner spans only the owned points of the axes combined before it.
      bool combined_before = false;
      for (int p = 0; p < order_position; ++p) combined_before |= axis_order[p] == j;
      span1 s{0, n[j]};
      if (!(what == reverse_step::kind::into_owner && combined_before)) {
        if (sides.lo[j]) s.lo = -w.lo[j];
        if (sides.hi[j]) s.hi = n[j] + w.hi[j];
      }
      send_lo[j] = recv_lo[j] = send_hi[j] = recv_hi[j] = s;
    }
    axis_spans(what, n[axis], w.lo[axis], w.hi[axis], send_lo[axis], recv_lo[axis],
               send_hi[axis], recv_hi[axis]);
    auto add = [&](std::vector<field_box>& to, const std::array<span1, 3>& s, const ivec3& dir) {
      const box b = make_box(s);
      if (!b.empty()) to.push_back({f, b, dir});
    };
    if (step.lo.peer >= 0) {
      add(step.lo.send, send_lo, down);
      add(step.lo.recv, recv_lo, down);
    }
    if (step.hi.peer >= 0) {
      add(step.hi.send, send_hi, up);
      add(step.hi.recv, recv_hi, up);
    }
  }
  exchange_plan laid_out;  // the pack layer's byte count takes the layouts as a plan
  laid_out.layouts = layouts;
  for (auto* s : {&step.lo, &step.hi}) {
    s->send_bytes = packed_bytes(s->send, laid_out);
    s->recv_bytes = packed_bytes(s->recv, laid_out);
  }
  return step;
}

template <reduction Op, class T>
T combine(T a, T b) {
  if constexpr (Op == reduction::sum) return a + b;
  if constexpr (Op == reduction::min) return b < a ? b : a;
  if constexpr (Op == reduction::max) return a < b ? b : a;
}

// Combines the x-runs of `sub`, a part of `whole` (the box the buffer holds,
// x-fastest), into the field: f = op(r, f) where the owner's copy comes from
// the buffer (owners_first), else f = op(f, r). Count: the run's length when
// known at compile time (an x slab is rows of a point or two, each on a cache
// line of its own), 0 for any. The rows step by their strides.
template <reduction Op, bool OwnersFirst, int Count, class T>
void combine_rows(T* field, const local_grid& g, const T* buffer, const box& whole,
                  const box& sub) {
  const size_t wx = static_cast<size_t>(whole.extent(0));
  const size_t buffer_plane = wx * static_cast<size_t>(whole.extent(1));
  const size_t field_row = static_cast<size_t>(g.allocated()[0]);
  const size_t field_plane = field_row * static_cast<size_t>(g.allocated()[1]);
  const size_t count = Count ? static_cast<size_t>(Count) : static_cast<size_t>(sub.extent(0));
  const size_t ahead = 8 * field_row;  // short rows: ask for a later row's line now
  const bool fetch = count * sizeof(T) < 64;
  const int rows = sub.extent(1);
  T* f_plane = field + g.index(sub.lo[0], sub.lo[1], sub.lo[2]);
  const T* b_plane = buffer + static_cast<size_t>(sub.lo[0] - whole.lo[0]) +
                     wx * static_cast<size_t>(sub.lo[1] - whole.lo[1]) +
                     buffer_plane * static_cast<size_t>(sub.lo[2] - whole.lo[2]);
  for (int z = sub.lo[2]; z < sub.hi[2]; ++z, f_plane += field_plane, b_plane += buffer_plane) {
    T* f = f_plane;
    const T* r = b_plane;
    for (int y = 0; y < rows; ++y, f += field_row, r += wx) {
      if (fetch) __builtin_prefetch(f + ahead, 1);
      for (size_t i = 0; i < count; ++i)
        f[i] = OwnersFirst ? combine<Op>(r[i], f[i]) : combine<Op>(f[i], r[i]);
    }
  }
}

template <reduction Op, bool OwnersFirst, class T>
void combine_part(T* field, const local_grid& g, const T* buffer, const box& whole,
                  const box& sub) {
  if (sub.empty()) return;
  switch (sub.extent(0)) {
    case 1: return combine_rows<Op, OwnersFirst, 1>(field, g, buffer, whole, sub);
    case 2: return combine_rows<Op, OwnersFirst, 2>(field, g, buffer, whole, sub);
    default: return combine_rows<Op, OwnersFirst, 0>(field, g, buffer, whole, sub);
  }
}

// The received copies of `region` combined into the field: into the owner's
// value (mine first) on my points, or the owner's first on my halo points.
template <reduction Op, class T>
void combine_box(T* field, const field_layout& l, const T* buffer, const box& region, int axis) {
  const int n = l.grid.interior[axis];
  box below = region, mine = region, above = region;
  below.hi[axis] = std::clamp(region.hi[axis], region.lo[axis], 0);
  mine.lo[axis] = std::clamp(0, region.lo[axis], region.hi[axis]);
  mine.hi[axis] = std::clamp(n, mine.lo[axis], region.hi[axis]);
  above.lo[axis] = std::clamp(n, region.lo[axis], region.hi[axis]);
  combine_part<Op, true>(field, l.grid, buffer, region, below);
  combine_part<Op, false>(field, l.grid, buffer, region, mine);
  combine_part<Op, true>(field, l.grid, buffer, region, above);
}

// The operation and the element type chosen once per box, not per point.
template <class T>
void combine_box(T* field, const field_layout& l, const T* buffer, const box& region, int axis,
                 reduction op) {
  switch (op) {
    case reduction::sum: return combine_box<reduction::sum>(field, l, buffer, region, axis);
    case reduction::min: return combine_box<reduction::min>(field, l, buffer, region, axis);
    case reduction::max: return combine_box<reduction::max>(field, l, buffer, region, axis);
  }
}

void combine_boxes(const std::vector<field_box>& boxes, const std::vector<field_layout>& layouts,
                   const field_set& fields, const std::byte* in, int axis, reduction op) {
  for (const auto& b : boxes) {
    const field_layout& l = layouts[static_cast<size_t>(b.field)];
    std::byte* field = fields.pointers[static_cast<size_t>(b.field)];
    if (l.element_bytes == sizeof(float))
      combine_box(reinterpret_cast<float*>(field), l, reinterpret_cast<const float*>(in),
                  b.region, axis, op);
    else
      combine_box(reinterpret_cast<double*>(field), l, reinterpret_cast<const double*>(in),
                  b.region, axis, op);
    in += static_cast<size_t>(b.region.volume()) * l.element_bytes;
  }
}

}  // namespace

std::array<bool, 3> one_round_axes(const std::vector<field_layout>& layouts,
                                   const std::vector<int>& moved, int depth) {
  std::array<bool, 3> ok{true, true, true};
  for (int f : moved) {
    const field_layout& l = layouts[static_cast<size_t>(f)];
    const halo_widths w = filled_widths(l, depth);
    for (int k = 0; k < 3; ++k)
      if (w.lo[k] + w.hi[k] > l.grid.interior[k]) ok[static_cast<size_t>(k)] = false;
  }
  return ok;
}

std::vector<reverse_step> reverse_steps(const decomposition& d,
                                        const std::vector<field_layout>& layouts,
                                        const std::vector<int>& moved, int depth,
                                        bool every_holder, const std::array<bool, 3>& one_round) {
  using k = reverse_step::kind;
  std::vector<reverse_step> steps;
  for (int p = 0; p < 3; ++p) {
    const int axis = axis_order[p];
    std::vector<k> kinds;
    if (!every_holder)
      kinds = {k::into_owner};
    else if (one_round[static_cast<size_t>(axis)])
      kinds = {k::every_holder};
    else
      kinds = {k::into_owner, k::from_owner};
    for (k what : kinds) {
      // Every-holder calls combine every point held: the owned-only spans of
      // an into-owner step apply to reverse calls alone.
      reverse_step step = make_step(d, layouts, moved, depth, axis, every_holder ? 0 : p, what);
      if (step.lo.peer >= 0 || step.hi.peer >= 0) steps.push_back(std::move(step));
    }
  }
  return steps;
}

namespace {

// The runs of `region` (x-rows, in bytes from the field's first point) that lie
// outside the field's own points.
void add_halo_runs(const field_layout& l, int field, const box& region,
                   std::vector<halo_run>& out) {
  const ivec3& n = l.grid.interior;
  const size_t e = l.element_bytes;
  for (int z = region.lo[2]; z < region.hi[2]; ++z)
    for (int y = region.lo[1]; y < region.hi[1]; ++y) {
      const bool halo_row = y < 0 || y >= n[1] || z < 0 || z >= n[2];
      auto add = [&](int x0, int x1) {
        if (x1 > x0) out.push_back({field, l.grid.index(x0, y, z) * e, static_cast<size_t>(x1 - x0) * e});
      };
      if (halo_row) {
        add(region.lo[0], region.hi[0]);
      } else {
        add(region.lo[0], std::min(region.hi[0], 0));
        add(std::max(region.lo[0], n[0]), region.hi[0]);
      }
    }
}

}  // namespace

reverse_schedule::~reverse_schedule() = default;

reverse_schedule::reverse_schedule(std::vector<reverse_step> steps,
                                   const std::vector<field_layout>& layouts, bool keep_halos,
                                   const node_membership* node, const wait_policy& waits)
    : steps_(std::move(steps)), layouts_(&layouts) {
  on_node_.resize(steps_.size());
  if (node) {
    size_t lo_bytes = 0, hi_bytes = 0;
    std::vector<int> peers;
    for (size_t i = 0; i < steps_.size(); ++i) {
      const reverse_step& s = steps_[i];
      if (s.lo.peer >= 0 && node->on_node(s.lo.peer))
        on_node_[i].lo = node->node_rank_of[static_cast<size_t>(s.lo.peer)];
      if (s.hi.peer >= 0 && node->on_node(s.hi.peer))
        on_node_[i].hi = node->node_rank_of[static_cast<size_t>(s.hi.peer)];
      for (int r : {on_node_[i].lo, on_node_[i].hi})
        if (r >= 0 && std::ranges::find(peers, r) == peers.end()) peers.push_back(r);
      lo_bytes = std::max(lo_bytes, s.lo.send_bytes);
      hi_bytes = std::max(hi_bytes, s.hi.send_bytes);
    }
    // The part toward +axis starts at the same offset in every outbox of the node.
    unsigned long long agreed = lo_bytes;
    MPI_Allreduce(MPI_IN_PLACE, &agreed, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, node->comm);
    hi_offset_ = (static_cast<size_t>(agreed) + 63) / 64 * 64;
    unsigned long long slot = hi_offset_ + hi_bytes;
    MPI_Allreduce(MPI_IN_PLACE, &slot, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, node->comm);
    slot_bytes_ = (static_cast<size_t>(slot) + 63) / 64 * 64;
    signals_ = std::make_unique<node_signals>(*node, waits, "reverse",
                                              outbox_slots * slot_bytes_, peers);
  }
  if (keep_halos) {
    for (const auto& s : steps_)
      for (const auto* side : {&s.lo, &s.hi})
        for (const auto& b : side->recv)
          add_halo_runs(layouts[static_cast<size_t>(b.field)], b.field, b.region, kept_);
    size_t bytes = 0;
    for (const auto& r : kept_) bytes += r.bytes;
    kept_values_.resize(bytes);
  }
  size_t send_lo = 0, send_hi = 0, recv_lo = 0, recv_hi = 0;
  for (const auto& s : steps_) {
    send_lo = std::max(send_lo, s.lo.send_bytes);
    send_hi = std::max(send_hi, s.hi.send_bytes);
    recv_lo = std::max(recv_lo, s.lo.recv_bytes);
    recv_hi = std::max(recv_hi, s.hi.recv_bytes);
  }
  send_lo_.resize(send_lo);
  send_hi_.resize(send_hi);
  recv_lo_.resize(recv_lo);
  recv_hi_.resize(recv_hi);
}

size_t reverse_schedule::message_count() const {
  size_t count = 0;
  for (const auto& s : steps_) count += (s.lo.send_bytes > 0) + (s.hi.send_bytes > 0);
  return count;
}

size_t reverse_schedule::bytes_sent() const {
  size_t bytes = 0;
  for (const auto& s : steps_) bytes += s.lo.send_bytes + s.hi.send_bytes;
  return bytes;
}

// What the peer below (above) sent toward this rank: a message received, or, for a peer on
// the node, its outbox's part toward +axis (-axis).
const std::byte* reverse_schedule::from_lo(size_t step, size_t slot) const {
  const int peer = on_node_[step].lo;
  return peer >= 0 ? signals_->payload(peer) + slot * slot_bytes_ + hi_offset_ : recv_lo_.data();
}
const std::byte* reverse_schedule::from_hi(size_t step, size_t slot) const {
  const int peer = on_node_[step].hi;
  return peer >= 0 ? signals_->payload(peer) + slot * slot_bytes_ : recv_hi_.data();
}

void reverse_schedule::build_packs(const field_set& fields) {
  layout_plan_.layouts = *layouts_;
  auto* pointers = const_cast<std::byte* const*>(fields.pointers.data());
  for (size_t slot = 0; slot < outbox_slots; ++slot) {
    step_lists& packs = packs_[slot];
    step_lists& unpacks = unpacks_[slot];
    packs.assign(steps_.size(), {});
    unpacks.assign(steps_.size(), {});
    std::byte* outbox = signals_ ? signals_->payload(signals_->me()) + slot * slot_bytes_ : nullptr;
    for (size_t i = 0; i < steps_.size(); ++i) {
      const reverse_step& s = steps_[i];
      std::byte* to_lo = on_node_[i].lo >= 0 ? outbox : send_lo_.data();
      std::byte* to_hi = on_node_[i].hi >= 0 ? outbox + hi_offset_ : send_hi_.data();
      if (s.lo.send_bytes > 0) add_pack(packs[i][0], to_lo, s.lo.send, pointers, layout_plan_);
      if (s.hi.send_bytes > 0) add_pack(packs[i][1], to_hi, s.hi.send, pointers, layout_plan_);
      // A step back from the owner is a forward step: what lands is copied, by the pack kernels.
      if (s.what == reverse_step::kind::from_owner) {
        if (s.lo.recv_bytes > 0)
          add_unpack(unpacks[i][0], from_lo(i, slot), s.lo.recv, pointers, layout_plan_);
        if (s.hi.recv_bytes > 0)
          add_unpack(unpacks[i][1], from_hi(i, slot), s.hi.recv, pointers, layout_plan_);
      }
      // Slabs across x are rows of a point or two, each on a cache line of its own.
      for (auto& list : packs[i]) list.fetch_ahead(list.can_fetch_ahead());
      for (auto& list : unpacks[i]) list.fetch_ahead(list.can_fetch_ahead());
    }
  }
  packed_for_ = fields.pointers;
}

void reverse_schedule::start(const field_set& fields, reduction op, MPI_Comm comm,
                             const wait_policy& waits) {
  if (fields.pointers != packed_for_) build_packs(fields);
  fields_ = &fields;
  op_ = op;
  comm_ = comm;
  waits_ = &waits;
  next_ = 0;
  std::byte* kept = kept_values_.data();
  for (const auto& r : kept_) {
    std::memcpy(kept, fields.pointers[static_cast<size_t>(r.field)] + r.offset, r.bytes);
    kept += r.bytes;
  }
  if (!steps_.empty()) post(0);
}

void reverse_schedule::post(size_t step) {
  const reverse_step& s = steps_[step];
  const node_sides& node = on_node_[step];
  const size_t slot = ++seq_ % outbox_slots;
  const std::array<copy_list, 2>& packs = packs_[slot][step];
  requests_.clear();
  if (signals_) {
    // The slot is this step's once the readers of the step that last used it are done.
    std::vector<int>& readers = slot_readers_[slot];
    for (int r : readers) signals_->wait_done(r, slot_seq_[slot]);
    readers.clear();
    if (node.lo >= 0) {
      packs[0].run();
      readers.push_back(node.lo);
    }
    if (node.hi >= 0) {
      packs[1].run();
      readers.push_back(node.hi);
    }
    slot_seq_[slot] = seq_;
    signals_->raise_ready(seq_);
  }
  // Receives first, then the packed sends: both sides post before they wait.
  if (s.lo.recv_bytes > 0 && node.lo < 0) {
    requests_.emplace_back();
    MPI_Irecv(recv_lo_.data(), static_cast<int>(s.lo.recv_bytes), MPI_BYTE, s.lo.peer,
              s.lo.recv_tag, comm_, &requests_.back());
  }
  if (s.hi.recv_bytes > 0 && node.hi < 0) {
    requests_.emplace_back();
    MPI_Irecv(recv_hi_.data(), static_cast<int>(s.hi.recv_bytes), MPI_BYTE, s.hi.peer,
              s.hi.recv_tag, comm_, &requests_.back());
  }
  if (s.lo.send_bytes > 0 && node.lo < 0) {
    packs[0].run();
    requests_.emplace_back();
    MPI_Isend(send_lo_.data(), static_cast<int>(s.lo.send_bytes), MPI_BYTE, s.lo.peer,
              s.lo.send_tag, comm_, &requests_.back());
  }
  if (s.hi.send_bytes > 0 && node.hi < 0) {
    packs[1].run();
    requests_.emplace_back();
    MPI_Isend(send_hi_.data(), static_cast<int>(s.hi.send_bytes), MPI_BYTE, s.hi.peer,
              s.hi.send_tag, comm_, &requests_.back());
  }
}

void reverse_schedule::complete(size_t step) {
  const reverse_step& s = steps_[step];
  waits_->wait_all(requests_, {}, [&](size_t i) {
    return fmt::format("a reverse-exchange message of the {} step (peers {} below, {} above)",
                       "xyz"[s.axis], s.lo.peer, s.hi.peer);
  });
  const node_sides& node = on_node_[step];
  if (node.lo >= 0) signals_->wait_ready(node.lo, seq_);
  if (node.hi >= 0) signals_->wait_ready(node.hi, seq_);
  const size_t slot = seq_ % outbox_slots;  // the step's, counted by post()
  if (s.what == reverse_step::kind::from_owner) {
    for (const auto& list : unpacks_[slot][step]) list.run();
  } else {
    // Below first, then above: the documented order of the copies.
    if (s.lo.recv_bytes > 0)
      combine_boxes(s.lo.recv, *layouts_, *fields_, from_lo(step, slot), s.axis, op_);
    if (s.hi.recv_bytes > 0)
      combine_boxes(s.hi.recv, *layouts_, *fields_, from_hi(step, slot), s.axis, op_);
  }
  if (signals_) signals_->raise_done(seq_);
}

void reverse_schedule::wait() {
  for (; next_ < steps_.size(); ++next_) {
    complete(next_);
    if (next_ + 1 < steps_.size()) post(next_ + 1);
  }
  const std::byte* kept = kept_values_.data();
  for (const auto& r : kept_) {
    std::memcpy(fields_->pointers[static_cast<size_t>(r.field)] + r.offset, kept, r.bytes);
    kept += r.bytes;
  }
  fields_ = nullptr;
}

}  // namespace halox
