#include "exchange/reverse.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "common/enum_names.hpp"
#include "halox/common/error.hpp"
#include "transport/common/node_signals.hpp"

namespace halox {

namespace {
// Outbox slots of the node path: a step's pack waits only for the readers of
// the step two before it.
constexpr size_t outbox_slots = 2;
constexpr auto reduction_names = make_enum_names<reduction>("reduction", "sum", "min", "max");
static_assert(reduction_names.names.size() == std::size(all_reductions));
}  // namespace

reduction parse_reduction(const std::string& name) { return reduction_names.parse(name); }

std::string to_string(reduction op) { return reduction_names.to_string(op); }

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
    case k::one_round:  // not axis steps
    case k::one_round_every_holder:
      return;
  }
}

void count_bytes(reverse_step& step, const std::vector<field_layout>& layouts) {
  exchange_plan laid_out;  // the pack layer's byte count takes the layouts as a plan
  laid_out.layouts = layouts;
  for (auto& side : step.sides) {
    side.send_bytes = packed_bytes(side.send, laid_out);
    side.recv_bytes = packed_bytes(side.recv, laid_out);
  }
}

void add_box(std::vector<field_box>& to, int field, const std::array<span1, 3>& s,
             const ivec3& direction) {
  const box b = make_box(s);
  if (!b.empty()) to.push_back({field, b, direction});
}

reverse_step make_step(const decomposition& d, const std::vector<field_layout>& layouts,
                       const std::vector<int>& moved, int depth, int axis, int order_position,
                       reverse_step::kind what) {
  const neighbour_sides sides = sides_of(d);
  reverse_step step;
  step.axis = axis;
  step.what = what;
  step.sides.resize(2);
  reverse_step::side& lo = step.sides[0];
  reverse_step::side& hi = step.sides[1];
  ivec3 down{0, 0, 0}, up{0, 0, 0};
  down[axis] = -1;
  up[axis] = +1;
  if (sides.lo[axis]) lo.peer = *d.neighbor(down);
  if (sides.hi[axis]) hi.peer = *d.neighbor(up);
  // Toward -axis: tag 2 axis; toward +axis: 2 axis + 1.
  lo.send_tag = 2 * axis, lo.recv_tag = 2 * axis + 1;
  hi.send_tag = 2 * axis + 1, hi.recv_tag = 2 * axis;
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
    if (lo.peer >= 0) {
      add_box(lo.send, f, send_lo, down);
      add_box(lo.recv, f, recv_lo, down);
    }
    if (hi.peer >= 0) {
      add_box(hi.send, f, send_hi, up);
      add_box(hi.recv, f, recv_hi, up);
    }
  }
  count_bytes(step, layouts);
  return step;
}

size_t side_index(const ivec3& direction) {
  return static_cast<size_t>(direction_index(direction));
}

// Tags of the one-round step, past the axis steps' 0..5: by the direction the
// message travels.
constexpr int one_round_tag = 8;

// Along one axis, the points a rank and its neighbour toward `toward` (-1, 0,
// +1) both hold, for every-holder calls, in this rank's points.
span1 held_by_both(int toward, int n, int w_lo, int w_hi, bool below, bool above) {
  if (toward < 0) return {-w_lo, w_hi};
  if (toward > 0) return {n - w_lo, n + w_hi};
  return {below ? -w_lo : 0, above ? n + w_hi : n};
}

// Every holder's copies at once: into the owners (toward each neighbour the
// halo slab it owns, from each the copies of my points it holds), or to every
// holder (toward each neighbour the points both hold, both ways). A copy this
// rank holds of its own points across a periodic dimension of one rank is
// read in place (every holder then combines the owned one and copies its
// total into the halo one).
reverse_step make_one_round_step(const decomposition& d, const std::vector<field_layout>& layouts,
                                 const std::vector<int>& moved, int depth, bool every_holder) {
  const neighbour_sides sides = sides_of(d);
  reverse_step step;
  step.what = every_holder ? reverse_step::kind::one_round_every_holder
                           : reverse_step::kind::one_round;
  step.sides.resize(static_cast<size_t>(direction_count));
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        const ivec3 toward{dx, dy, dz};
        if (toward == ivec3{0, 0, 0}) continue;
        bool there = true;
        for (int k = 0; k < 3; ++k)
          there = there && (toward[k] == 0 || (toward[k] < 0 ? sides.lo[k] : sides.hi[k]));
        if (!there) continue;
        const size_t i = side_index(toward);
        reverse_step::side& side = step.sides[i];
        side.peer = *d.neighbor(toward);
        side.in_place = side.peer == d.rank();
        side.send_tag = one_round_tag + static_cast<int>(i);
        side.recv_tag = one_round_tag + direction_index(opposite(toward));
        for (int f : moved) {
          const field_layout& l = layouts[static_cast<size_t>(f)];
          const halo_widths w = filled_widths(l, depth);
          const ivec3& n = l.grid.interior;
          std::array<span1, 3> send, recv;
          for (int k = 0; k < 3; ++k) {
            if (every_holder)
              send[k] = recv[k] = held_by_both(toward[k], n[k], w.lo[k], w.hi[k],
                                               sides.lo[static_cast<size_t>(k)],
                                               sides.hi[static_cast<size_t>(k)]);
            else if (toward[k] < 0)
              send[k] = {-w.lo[k], 0}, recv[k] = {0, w.hi[k]};
            else if (toward[k] > 0)
              send[k] = {n[k], n[k] + w.hi[k]}, recv[k] = {n[k] - w.lo[k], n[k]};
            else
              send[k] = recv[k] = {0, n[k]};
          }
          add_box(side.send, f, send, toward);
          add_box(side.recv, f, recv, toward);
        }
      }
  count_bytes(step, layouts);
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

// Whether source i (a bit per axis: the holder beside the owner along it) of a
// region whose holders lie along the axes of `along` holds a copy (0: the
// owner's own, always).
constexpr bool holds_copy(size_t i, int along) { return (static_cast<int>(i) & ~along) == 0; }

// A one-round step's copies of `c.region` combined into the field in the
// documented order: at each (x, y) holder the z copies, then along y, then
// along x. `from[i]`: source i's first point (i > 0, a bit of c.along each).
// Count: the rows' length when known at compile time (an x face: rows of a
// point or two, each on a cache line of its own), 0 for any.
template <reduction Op, int Along, int Count, class T>
void combine_gathered(T* field, const local_grid& g, const gathered_copies& c,
                      std::array<const T*, 8> from) {
  const size_t field_row = static_cast<size_t>(g.allocated()[0]);
  const size_t field_plane = field_row * static_cast<size_t>(g.allocated()[1]);
  const box& r = c.region;
  const size_t count = Count ? static_cast<size_t>(Count) : static_cast<size_t>(r.extent(0));
  const bool fetch = count * sizeof(T) < 64;  // ask for a later short row's line now
  const size_t ahead = 8 * field_row;
  T* f_plane = field + g.index(r.lo[0], r.lo[1], r.lo[2]);
  for (int z = 0; z < r.extent(2); ++z) {
    T* f = f_plane;
    std::array<const T*, 8> p = from;
    for (int y = 0; y < r.extent(1); ++y) {
      if (fetch) __builtin_prefetch(f + ahead, 1);
      for (size_t x = 0; x < count; ++x) {
        auto copy = [&](size_t i) { return p[i][x]; };
        auto along_z = [&](size_t ab) {
          T t = copy(ab);
          if constexpr ((Along & 4) != 0) t = combine<Op>(t, copy(ab | 4));
          return t;
        };
        auto along_y = [&](size_t a) {
          T t = along_z(a);
          if constexpr ((Along & 2) != 0) t = combine<Op>(t, along_z(a | 2));
          return t;
        };
        T t = along_y(0);
        if constexpr ((Along & 1) != 0) t = combine<Op>(t, along_y(1));
        f[x] = t;
      }
      f += field_row;
      for (size_t i = 0; i < 8; ++i)
        if (holds_copy(i, Along)) p[i] += c.row[i];
    }
    f_plane += field_plane;
    for (size_t i = 0; i < 8; ++i)
      if (holds_copy(i, Along)) from[i] += c.plane[i];
  }
}

template <reduction Op, int Along, class T>
void combine_gathered(T* field, const local_grid& g, const gathered_copies& c,
                      const std::array<const T*, 8>& from) {
  switch (c.region.extent(0)) {
    case 1: return combine_gathered<Op, Along, 1>(field, g, c, from);
    case 2: return combine_gathered<Op, Along, 2>(field, g, c, from);
    default: return combine_gathered<Op, Along, 0>(field, g, c, from);
  }
}

template <reduction Op, class T>
void combine_gathered(T* field, const local_grid& g, const gathered_copies& c,
                      const std::array<const T*, 8>& from) {
  switch (c.along) {
    case 1: return combine_gathered<Op, 1>(field, g, c, from);
    case 2: return combine_gathered<Op, 2>(field, g, c, from);
    case 3: return combine_gathered<Op, 3>(field, g, c, from);
    case 4: return combine_gathered<Op, 4>(field, g, c, from);
    case 5: return combine_gathered<Op, 5>(field, g, c, from);
    case 6: return combine_gathered<Op, 6>(field, g, c, from);
    case 7: return combine_gathered<Op, 7>(field, g, c, from);
    default: return;
  }
}

// `received(side)`: the start of what that side's peer sent.
template <class T, class Received>
void combine_gathered(T* field, const local_grid& g, const gathered_copies& c, reduction op,
                      Received&& received) {
  std::array<const T*, 8> from{};
  for (size_t i = 0; i < 8; ++i)
    if (holds_copy(i, c.along))
      from[i] = i == c.me ? field + g.index(c.region.lo[0], c.region.lo[1], c.region.lo[2])
                          : reinterpret_cast<const T*>(received(c.side[i]) + c.first[i]);
  switch (op) {
    case reduction::sum: return combine_gathered<reduction::sum>(field, g, c, from);
    case reduction::min: return combine_gathered<reduction::min>(field, g, c, from);
    case reduction::max: return combine_gathered<reduction::max>(field, g, c, from);
  }
}

// Along one axis, a span of a one-round step's points and where, relative
// to this rank, the point's owner and the holder beside it sit (both 0: held
// by this rank alone).
struct band {
  span1 span;
  int owner_at = 0, beside_at = 0;
};

// The spans along an axis of n points with the widths a call fills: held
// below (the first w_hi, the owner's; and for every holder the w_lo of the
// low halo, the owner below), held by none, held above (likewise).
std::vector<band> bands_of(int n, int w_lo, int w_hi, bool below, bool above, bool every_holder) {
  const int lo = below ? w_hi : 0, hi = above ? n - w_lo : n;
  std::vector<band> out;
  if (below && every_holder) out.push_back({{-w_lo, 0}, -1, 0});
  if (below) out.push_back({{0, lo}, 0, -1});
  out.push_back({{lo, hi}, 0, 0});
  if (above) out.push_back({{hi, n}, 0, +1});
  if (above && every_holder) out.push_back({{n, n + w_hi}, +1, 0});
  return out;
}

// Where each copy of `c.region` is read: this rank's own in the field, each
// other in the buffer of the side facing its holder (`held(side)`: the box
// that buffer holds and its byte offset there).
template <class Held>
void locate_copies(gathered_copies& c, const std::array<const band*, 3>& b, const field_layout& l,
                   Held&& held) {
  for (size_t i = 0; i < 8; ++i) {
    if (!holds_copy(i, c.along)) continue;
    if (i == c.me) {
      c.row[i] = static_cast<size_t>(l.grid.allocated()[0]);
      c.plane[i] = c.row[i] * static_cast<size_t>(l.grid.allocated()[1]);
      continue;
    }
    ivec3 from{0, 0, 0};
    for (size_t k = 0; k < 3; ++k) from[k] = ((i >> k) & 1) ? b[k]->beside_at : b[k]->owner_at;
    c.side[i] = side_index(from);
    const auto [r, at] = held(c.side[i]);
    const auto ex = static_cast<size_t>(r.extent(0)), ey = static_cast<size_t>(r.extent(1));
    const size_t first = static_cast<size_t>(c.region.lo[0] - r.lo[0]) +
                         ex * (static_cast<size_t>(c.region.lo[1] - r.lo[1]) +
                               ey * static_cast<size_t>(c.region.lo[2] - r.lo[2]));
    c.first[i] = at + first * l.element_bytes;
    c.row[i] = ex;
    c.plane[i] = ex * ey;
  }
}

// The regions of a one-round step's combine, field by field: along each axis
// the bands of bands_of (every holder's halo copies too); a region per
// combination that some neighbour holds. The halo copies of a rank's own
// points come last: they take the totals of the points they copy.
std::vector<gathered_copies> gather_plan(const reverse_step& step,
                                         const std::vector<field_layout>& layouts,
                                         const std::vector<int>& moved, int depth) {
  // Where field `f`'s box of a side's buffer starts, in bytes, and the box, in
  // this rank's points. Copies this rank holds of its own points (across a
  // periodic dimension of one rank) are read from the field, whose points lie
  // one sub-domain on in that direction.
  auto held = [&](size_t side, int f) -> std::pair<box, size_t> {
    const field_layout& l = layouts[static_cast<size_t>(f)];
    if (step.sides[side].in_place) {
      const ivec3 toward = direction_of(static_cast<int>(side));
      box shifted = l.grid.allocated_box();
      for (int k = 0; k < 3; ++k) {
        shifted.lo[k] += toward[k] * l.grid.interior[k];
        shifted.hi[k] += toward[k] * l.grid.interior[k];
      }
      return {shifted, 0};
    }
    size_t at = 0;
    for (const auto& b : step.sides[side].recv) {
      if (b.field == f) return {b.region, at};
      at += static_cast<size_t>(b.region.volume()) * layouts[static_cast<size_t>(b.field)].element_bytes;
    }
    throw std::logic_error("reverse: a one-round copy has no box in its holder's message");
  };
  std::array<bool, 3> below{}, above{};
  for (int k = 0; k < 3; ++k) {
    ivec3 e{0, 0, 0};
    e[k] = -1;
    below[static_cast<size_t>(k)] = step.sides[side_index(e)].peer >= 0;
    e[k] = +1;
    above[static_cast<size_t>(k)] = step.sides[side_index(e)].peer >= 0;
  }
  const bool every_holder = step.what == reverse_step::kind::one_round_every_holder;
  auto in_place_along = [&](size_t k, int toward) {
    ivec3 e{0, 0, 0};
    e[k] = toward;
    return step.sides[side_index(e)].in_place;
  };
  std::vector<gathered_copies> out, copied;
  for (int f : moved) {
    const field_layout& l = layouts[static_cast<size_t>(f)];
    const halo_widths w = filled_widths(l, depth);
    std::array<std::vector<band>, 3> bands;
    for (size_t k = 0; k < 3; ++k)
      bands[k] = bands_of(l.grid.interior[k], w.lo[k], w.hi[k], below[k], above[k], every_holder);
    for (const band& bz : bands[2])
      for (const band& by : bands[1])
        for (const band& bx : bands[0]) {
          const std::array<const band*, 3> b{&bx, &by, &bz};
          gathered_copies c;
          c.field = f;
          c.region = make_box({bx.span, by.span, bz.span});
          for (size_t k = 0; k < 3; ++k) {
            if (b[k]->owner_at != b[k]->beside_at) c.along |= 1 << k;
            if (b[k]->owner_at != 0) c.me |= size_t{1} << k;
          }
          if (c.along == 0 || c.region.empty()) continue;
          for (size_t k = 0; k < 3; ++k)
            if (b[k]->owner_at != 0 && in_place_along(k, b[k]->owner_at))
              c.twin[k] = -b[k]->owner_at * l.grid.interior[k];
          if (c.twin != ivec3{0, 0, 0}) {  // after the owned copies' totals
            c.copied = true;
            copied.push_back(c);
            continue;
          }
          locate_copies(c, b, l, [&](size_t side) { return held(side, f); });
          out.push_back(c);
        }
  }
  out.insert(out.end(), copied.begin(), copied.end());
  return out;
}

// A halo copy of this rank's own points takes their total (every holder).
void copy_twin(std::byte* field, const field_layout& l, const gathered_copies& c) {
  const box& r = c.region;
  const size_t e = l.element_bytes;
  const size_t bytes = static_cast<size_t>(r.extent(0)) * e;
  for (int z = r.lo[2]; z < r.hi[2]; ++z)
    for (int y = r.lo[1]; y < r.hi[1]; ++y)
      std::memcpy(field + l.grid.index(r.lo[0], y, z) * e,
                  field + l.grid.index(r.lo[0] + c.twin[0], y + c.twin[1], z + c.twin[2]) * e,
                  bytes);
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
                                        bool every_holder, const std::array<bool, 3>& one_round,
                                        bool all_at_once) {
  using k = reverse_step::kind;
  std::vector<reverse_step> steps;
  if (all_at_once && std::ranges::all_of(one_round, [](bool b) { return b; })) {
    reverse_step step = make_one_round_step(d, layouts, moved, depth, every_holder);
    if (std::ranges::none_of(step.sides, [](const auto& s) { return s.peer >= 0; })) return steps;
    steps.push_back(std::move(step));
    return steps;
  }
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
      if (step.sides[0].peer >= 0 || step.sides[1].peer >= 0) steps.push_back(std::move(step));
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

namespace {
// Outbox parts: one per side index of any step (two for an axis step, 27 for one round).
constexpr auto outbox_parts = static_cast<size_t>(direction_count);
}  // namespace

reverse_schedule::reverse_schedule(std::vector<reverse_step> steps,
                                   const std::vector<field_layout>& layouts,
                                   const std::vector<int>& moved, int depth, bool keep_halos,
                                   const node_membership* node, const wait_policy& waits)
    : steps_(std::move(steps)), layouts_(&layouts) {
  for (const auto& s : steps_)
    if (s.what == reverse_step::kind::one_round ||
        s.what == reverse_step::kind::one_round_every_holder)
      gathered_ = gather_plan(s, layouts, moved, depth);
  size_t sides = 0;
  for (const auto& s : steps_) sides = std::max(sides, s.sides.size());
  on_node_.resize(steps_.size());
  std::vector<unsigned long long> part_bytes(outbox_parts, 0);
  send_.resize(sides);
  recv_.resize(sides);
  std::vector<int> peers;
  for (size_t i = 0; i < steps_.size(); ++i) {
    const reverse_step& s = steps_[i];
    on_node_[i].assign(s.sides.size(), -1);
    for (size_t j = 0; j < s.sides.size(); ++j) {
      const reverse_step::side& side = s.sides[j];
      if (side.in_place) continue;
      if (node && side.peer >= 0 && node->on_node(side.peer)) {
        const int r = node->node_rank_of[static_cast<size_t>(side.peer)];
        on_node_[i][j] = r;
        if (std::ranges::find(peers, r) == peers.end()) peers.push_back(r);
        part_bytes[j] = std::max<unsigned long long>(part_bytes[j], side.send_bytes);
      } else {
        send_[j].resize(std::max(send_[j].size(), side.send_bytes));
        recv_[j].resize(std::max(recv_[j].size(), side.recv_bytes));
      }
    }
  }
  if (node) {
    // Each part starts at the same offset in every outbox of the node.
    MPI_Allreduce(MPI_IN_PLACE, part_bytes.data(), static_cast<int>(outbox_parts),
                  MPI_UNSIGNED_LONG_LONG, MPI_MAX, node->comm);
    part_offset_.resize(outbox_parts);
    for (size_t j = 0; j < outbox_parts; ++j) {
      part_offset_[j] = slot_bytes_;
      slot_bytes_ += (static_cast<size_t>(part_bytes[j]) + 63) / 64 * 64;
    }
    signals_ = std::make_unique<node_signals>(*node, waits, "reverse",
                                              outbox_slots * slot_bytes_, peers);
  }
  if (keep_halos) {
    for (const auto& s : steps_)
      for (const auto& side : s.sides)
        for (const auto& b : side.recv)
          add_halo_runs(layouts[static_cast<size_t>(b.field)], b.field, b.region, kept_);
    size_t bytes = 0;
    for (const auto& r : kept_) bytes += r.bytes;
    kept_values_.resize(bytes);
  }
}

size_t reverse_schedule::message_count() const {
  size_t count = 0;
  for (const auto& s : steps_)
    for (const auto& side : s.sides) count += side.send_bytes > 0 && !side.in_place;
  return count;
}

size_t reverse_schedule::bytes_sent() const {
  size_t bytes = 0;
  for (const auto& s : steps_)
    for (const auto& side : s.sides) bytes += side.in_place ? 0 : side.send_bytes;
  return bytes;
}

const std::byte* reverse_schedule::received(size_t step, size_t i, size_t slot) const {
  const int peer = on_node_[step][i];
  if (peer < 0) return recv_[i].data();
  const size_t facing = steps_[step].sides.size() - 1 - i;
  return signals_->payload(peer) + slot * slot_bytes_ + part_offset_[facing];
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
      packs[i].resize(s.sides.size());
      unpacks[i].resize(s.sides.size());
      for (size_t j = 0; j < s.sides.size(); ++j) {
        const reverse_step::side& side = s.sides[j];
        if (side.in_place) continue;
        std::byte* to = on_node_[i][j] >= 0 ? outbox + part_offset_[j] : send_[j].data();
        if (side.send_bytes > 0) add_pack(packs[i][j], to, side.send, pointers, layout_plan_);
        // A step back from the owner is a forward step: what lands is copied, by the pack kernels.
        if (s.what == reverse_step::kind::from_owner && side.recv_bytes > 0)
          add_unpack(unpacks[i][j], received(i, j, slot), side.recv, pointers, layout_plan_);
        // Slabs across x are rows of a point or two, each on a cache line of its own.
        packs[i][j].fetch_ahead(packs[i][j].can_fetch_ahead());
        unpacks[i][j].fetch_ahead(unpacks[i][j].can_fetch_ahead());
      }
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
  const std::vector<int>& node = on_node_[step];
  const size_t slot = ++seq_ % outbox_slots;
  const std::vector<copy_list>& packs = packs_[slot][step];
  requests_.clear();
  if (signals_) {
    // The slot is this step's once the readers of the step that last used it are done.
    std::vector<int>& readers = slot_readers_[slot];
    for (int r : readers) signals_->wait_done(r, slot_seq_[slot]);
    readers.clear();
    for (size_t j = 0; j < s.sides.size(); ++j)
      if (node[j] >= 0) {
        packs[j].run();
        if (std::ranges::find(readers, node[j]) == readers.end()) readers.push_back(node[j]);
      }
    slot_seq_[slot] = seq_;
    signals_->raise_ready(seq_);
  }
  // Receives first, then the packed sends: both sides post before they wait.
  for (size_t j = 0; j < s.sides.size(); ++j) {
    const reverse_step::side& side = s.sides[j];
    if (side.recv_bytes == 0 || node[j] >= 0 || side.in_place) continue;
    requests_.emplace_back();
    MPI_Irecv(recv_[j].data(), static_cast<int>(side.recv_bytes), MPI_BYTE, side.peer,
              side.recv_tag, comm_, &requests_.back());
  }
  for (size_t j = 0; j < s.sides.size(); ++j) {
    const reverse_step::side& side = s.sides[j];
    if (side.send_bytes == 0 || node[j] >= 0 || side.in_place) continue;
    packs[j].run();
    requests_.emplace_back();
    MPI_Isend(send_[j].data(), static_cast<int>(side.send_bytes), MPI_BYTE, side.peer,
              side.send_tag, comm_, &requests_.back());
  }
}

void reverse_schedule::combine(size_t step, size_t slot) {
  const reverse_step& s = steps_[step];
  switch (s.what) {
    case reverse_step::kind::from_owner:
      for (const auto& list : unpacks_[slot][step]) list.run();
      return;
    case reverse_step::kind::one_round:
    case reverse_step::kind::one_round_every_holder:
      for (const auto& c : gathered_) {
        const field_layout& l = (*layouts_)[static_cast<size_t>(c.field)];
        std::byte* field = fields_->pointers[static_cast<size_t>(c.field)];
        if (c.copied) {
          copy_twin(field, l, c);
          continue;
        }
        auto from = [&](size_t side) -> const std::byte* {
          return s.sides[side].in_place ? field : received(step, side, slot);
        };
        if (l.element_bytes == sizeof(float))
          combine_gathered(reinterpret_cast<float*>(field), l.grid, c, op_, from);
        else
          combine_gathered(reinterpret_cast<double*>(field), l.grid, c, op_, from);
      }
      return;
    default:
      // Below first, then above: the documented order of the copies.
      for (size_t j = 0; j < s.sides.size(); ++j)
        if (s.sides[j].recv_bytes > 0)
          combine_boxes(s.sides[j].recv, *layouts_, *fields_, received(step, j, slot), s.axis, op_);
      return;
  }
}

void reverse_schedule::complete(size_t step) {
  const reverse_step& s = steps_[step];
  waits_->wait_all(requests_, {}, [&](size_t) {
    std::vector<int> peers;
    for (const auto& side : s.sides)
      if (side.peer >= 0) peers.push_back(side.peer);
    return fmt::format("a reverse-exchange message of the {} step (peers {})",
                       s.sides.size() > 2 ? "one-round" : std::string(1, "xyz"[s.axis]),
                       fmt::join(peers, ", "));
  });
  for (int r : on_node_[step])
    if (r >= 0) signals_->wait_ready(r, seq_);
  combine(step, seq_ % outbox_slots);  // the step's slot, counted by post()
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
