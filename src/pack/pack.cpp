#include "halox/extend/pack.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "common/stage_timer.hpp"
#include "pack/walk_rules.hpp"

namespace halox {

namespace {

// One end of a box copy: where the box starts and how its runs are spaced.
struct copy_end {
  const std::byte* at = nullptr;
  size_t row = 0, plane = 0;  // bytes between rows, planes
  bool whole_rows = false;    // rows follow each other without a gap
  bool whole_planes = false;  // planes too
};

copy_end field_end(const std::byte* field, const local_grid& g, const box& b,
                   size_t element_bytes) {
  const ivec3 alloc = g.allocated();
  copy_end e;
  e.at = field + g.index(b.lo[0], b.lo[1], b.lo[2]) * element_bytes;
  e.row = static_cast<size_t>(alloc[0]) * element_bytes;
  e.plane = e.row * static_cast<size_t>(alloc[1]);
  e.whole_rows = b.extent(0) == alloc[0];
  e.whole_planes = e.whole_rows && b.extent(1) == alloc[1];
  return e;
}

copy_end buffer_end(const std::byte* buffer, const box& b, size_t element_bytes) {
  copy_end e;
  e.at = buffer;
  e.row = static_cast<size_t>(b.extent(0)) * element_bytes;
  e.plane = e.row * static_cast<size_t>(b.extent(1));
  e.whole_rows = e.whole_planes = true;
  return e;
}

// Runs merge across rows (and planes) where both ends are contiguous.
box_copy make_copy(const copy_end& from, const copy_end& to, const box& b, size_t element_bytes) {
  box_copy c;
  c.from = from.at;
  c.to = const_cast<std::byte*>(to.at);
  c.run = b.empty() ? 0 : static_cast<size_t>(b.extent(0)) * element_bytes;
  c.rows = b.empty() ? 0 : b.extent(1);
  c.planes = b.empty() ? 0 : b.extent(2);
  c.from_row = from.row;
  c.from_plane = from.plane;
  c.to_row = to.row;
  c.to_plane = to.plane;
  if (c.run > 0 && from.whole_rows && to.whole_rows) {
    c.run *= static_cast<size_t>(c.rows);
    c.rows = 1;
    if (from.whole_planes && to.whole_planes) {
      c.run *= static_cast<size_t>(c.planes);
      c.planes = 1;
    }
  }
  return c;
}

// Rows ahead (in the walk's order) that fetch_ahead asks for: far enough to
// hide a miss at the speed the walk runs, chosen by measurement
// (docs/results/2026-11-25-amd-epyc-2core.md).
constexpr size_t rows_ahead = 96;

// Whether one end of a copy (runs of `run` bytes, `row` bytes apart) is
// fetched ahead: the rule of walk_rules::fetched_runs.
bool fetched_end(size_t run, size_t row) {
  const auto [shortest, longest] = walk_rules::fetched_runs;
  return run >= shortest && run <= longest && row > run;
}

// Landing runs of up to 16 bytes (an x face 1-4 floats or 1-2 doubles wide)
// into rows a line apart, each store misses its line and the misses follow
// one another; the walk reads the lines of `landed_rows` rows first, so that
// their misses overlap and the stores find the lines in L1. It replaces
// fetching ahead there. Longer runs did not gain from it
// (docs/results/2026-11-26-landing-short-runs.md, 2026-11-27-x-step.md).
constexpr size_t landed_run_max = 16;
constexpr int landed_rows = 8;

// Whether a copy lands short runs from contiguous bytes into strided rows.
template <size_t RunBytes, int K>
bool lands_short_runs(const size_t (&from_row)[K], const size_t (&to_row)[K]) {
  if constexpr (RunBytes == 0 || RunBytes > landed_run_max) {
    return false;
  } else {
    for (int m = 0; m < K; ++m)
      if (from_row[m] != RunBytes || to_row[m] <= RunBytes) return false;
    return true;
  }
}

// The rows of one plane of K copies. The cursors are locals of a loop fully
// unrolled over K, so they stay in registers: kept in arrays indexed by a
// loop counter, they were stored and reloaded around every run (stores through
// std::byte* may alias them), which made the x faces much slower
// (docs/results/2026-11-27-figures-from-comments.md).
template <size_t RunBytes, int K, bool FetchAhead, bool ReadFirst = false, size_t... M>
void walk_plane(const std::byte* (&f)[K], std::byte* (&t)[K], const size_t (&from_row)[K],
                const size_t (&to_row)[K], const size_t (&from_ahead)[K],
                const size_t (&to_ahead)[K], size_t run, int rows, std::index_sequence<M...>) {
  const std::byte* fp[K] = {f[M]...};
  std::byte* tp[K] = {t[M]...};
  int j = 0;
  if constexpr (ReadFirst) {
    for (; j + landed_rows <= rows; j += landed_rows) {
      (
          [&] {
            for (int k = 0; k < landed_rows; ++k)
              (void)*reinterpret_cast<volatile const std::byte*>(tp[M] + k * to_row[M]);
          }(),
          ...);
      for (int k = 0; k < landed_rows; ++k)
        (
            [&] {
              std::memcpy(tp[M], fp[M], RunBytes);
              fp[M] += from_row[M];
              tp[M] += to_row[M];
            }(),
            ...);
    }
  }
  for (; j < rows; ++j) {
    (
        [&] {
          if constexpr (FetchAhead) {
            if (from_ahead[M]) {  // a prefetch never faults, even past the field
              __builtin_prefetch(fp[M] + from_ahead[M], 0, 3);
              __builtin_prefetch(fp[M] + from_ahead[M] + run - 1, 0, 3);
            }
            if (to_ahead[M]) {
              __builtin_prefetch(tp[M] + to_ahead[M], 1, 3);
              __builtin_prefetch(tp[M] + to_ahead[M] + run - 1, 1, 3);
            }
          }
          if constexpr (RunBytes > 0)
            std::memcpy(tp[M], fp[M], RunBytes);
          else
            std::memcpy(tp[M], fp[M], run);
          fp[M] += from_row[M];
          tp[M] += to_row[M];
        }(),
        ...);
  }
}

// K copies of `planes` x `rows` runs of RunBytes (0: the group's run, with
// memcpy), row by row: the k-th row of every copy before the (k+1)-th. The
// strides are read into locals first: stores through std::byte* may alias the
// group.
// With fetch_ahead, the strided ends of runs of walk_rules::fetched_runs have
// their first and last cache lines fetched rows_ahead rows early. Runs of
// next_plane_min_run or more (a y face: 5 rows of a plane in one run) have
// the next plane's source fetched while this plane copies: the hardware
// prefetcher follows a run but not the jump to the next plane.
template <size_t RunBytes, int K, class Group>
void walk(const Group& g, bool fetch_ahead) {
  const size_t run = RunBytes ? RunBytes : g.run;
  const int rows = g.rows, planes = g.planes;
  // rows_ahead rows on in the walk's order: the rows of this plane first,
  // then those of the next (q planes and r rows on; a plane's last r rows
  // fetch from q + 1 planes on). Counted in the field's rows instead, the
  // first rows of a plane fetched halo rows that the walk never copies.
  const size_t q = rows_ahead / static_cast<size_t>(rows),
               r = rows_ahead % static_cast<size_t>(rows);
  const int split = rows - static_cast<int>(r);
  size_t from_row[K], to_row[K], from_ahead[K], to_ahead[K], from_later[K], to_later[K];
  bool fetched_run = false;
  for (int m = 0; m < K; ++m) {
    from_row[m] = g.from_row[m];
    to_row[m] = g.to_row[m];
    const bool from_fetched = fetch_ahead && fetched_end(run, from_row[m]);
    const bool to_fetched = fetch_ahead && fetched_end(run, to_row[m]);
    from_ahead[m] = from_fetched ? q * g.from_plane[m] + r * from_row[m] : 0;
    to_ahead[m] = to_fetched ? q * g.to_plane[m] + r * to_row[m] : 0;
    from_later[m] = from_fetched ? (q + 1) * g.from_plane[m] - (rows - r) * from_row[m] : 0;
    to_later[m] = to_fetched ? (q + 1) * g.to_plane[m] - (rows - r) * to_row[m] : 0;
    fetched_run = fetched_run || from_fetched || to_fetched;
  }
  const bool next_plane = g.next_plane;
  const bool read_first = lands_short_runs<RunBytes, K>(from_row, to_row);
  for (int k = 0; k < planes; ++k) {
    const std::byte* f[K];
    std::byte* t[K];
    for (int m = 0; m < K; ++m) {
      f[m] = g.from[m] + static_cast<size_t>(k) * g.from_plane[m];
      t[m] = g.to[m] + static_cast<size_t>(k) * g.to_plane[m];
    }
    if (next_plane && k + 1 < planes)
      for (int m = 0; m < K; ++m)
        for (int j = 0; j < rows; ++j) {
          const std::byte* next = f[m] + g.from_plane[m] + static_cast<size_t>(j) * from_row[m];
          for (size_t b = 0; b < run; b += 64) __builtin_prefetch(next + b, 0, 3);
        }
    if (read_first) {
      walk_plane<RunBytes, K, false, true>(f, t, from_row, to_row, from_ahead, to_ahead, run, rows,
                                           std::make_index_sequence<K>{});
    } else if (fetched_run) {
      walk_plane<RunBytes, K, true>(f, t, from_row, to_row, from_ahead, to_ahead, run, split,
                                    std::make_index_sequence<K>{});
      if (split < rows) {
        for (int m = 0; m < K; ++m) {
          f[m] += static_cast<size_t>(split) * from_row[m];
          t[m] += static_cast<size_t>(split) * to_row[m];
        }
        walk_plane<RunBytes, K, true>(f, t, from_row, to_row, from_later, to_later, run,
                                      rows - split, std::make_index_sequence<K>{});
      }
    } else {
      walk_plane<RunBytes, K, false>(f, t, from_row, to_row, from_ahead, to_ahead, run, rows,
                                     std::make_index_sequence<K>{});
    }
  }
}

// Runs of 4..64 bytes in steps of 4 get a compile-time size: plain moves.
constexpr size_t fixed_sizes = 16;

template <class Group, int K, size_t... Multiples>
constexpr auto walkers_of(std::index_sequence<Multiples...>) {
  using walker = void (*)(const Group&, bool);
  return std::array<walker, fixed_sizes + 1>{&walk<0, K, Group>,
                                             &walk<(Multiples + 1) * 4, K, Group>...};
}

template <class Group>
void run_group(const Group& g, bool fetch_ahead) {
  using walker = void (*)(const Group&, bool);
  static constexpr std::array<std::array<walker, fixed_sizes + 1>, walk_rules::max_together> table{
      walkers_of<Group, 1>(std::make_index_sequence<fixed_sizes>{}),
      walkers_of<Group, 2>(std::make_index_sequence<fixed_sizes>{}),
      walkers_of<Group, 3>(std::make_index_sequence<fixed_sizes>{}),
      walkers_of<Group, 4>(std::make_index_sequence<fixed_sizes>{})};
  const bool fixed = g.run % 4 == 0 && g.run <= 4 * fixed_sizes;
  table[static_cast<size_t>(g.count - 1)][fixed ? g.run / 4 : 0](g, fetch_ahead);
}

}  // namespace

box_copy pack_copy(const std::byte* field, const local_grid& grid, const box& b,
                   size_t element_bytes, std::byte* buffer) {
  return make_copy(field_end(field, grid, b, element_bytes), buffer_end(buffer, b, element_bytes),
                   b, element_bytes);
}

box_copy unpack_copy(const std::byte* buffer, std::byte* field, const local_grid& grid,
                     const box& b, size_t element_bytes) {
  return make_copy(buffer_end(buffer, b, element_bytes), field_end(field, grid, b, element_bytes),
                   b, element_bytes);
}

box_copy field_copy(const std::byte* from_field, const local_grid& from_grid, const box& from,
                    std::byte* to_field, const local_grid& to_grid, const box& to,
                    size_t element_bytes) {
  return make_copy(field_end(from_field, from_grid, from, element_bytes),
                   field_end(to_field, to_grid, to, element_bytes), from, element_bytes);
}

copy_list::copy_list() = default;
copy_list::~copy_list() = default;
copy_list::copy_list(const copy_list&) = default;
copy_list::copy_list(copy_list&&) noexcept = default;
copy_list& copy_list::operator=(const copy_list&) = default;
copy_list& copy_list::operator=(copy_list&&) noexcept = default;

bool copy_list::empty() const { return groups_.empty(); }
size_t copy_list::walks() const { return groups_.size(); }

void copy_list::add(const box_copy& c) {
  if (c.bytes() == 0) return;
  bytes_ += c.bytes();
  // Short runs of the same shape walk together; long runs go one by one.
  // Packs do not: their stores into one buffer from several rows at a time
  // measured slower than one box after the other.
  const bool packing = c.to_row == c.run && c.from_row != c.run;
  const bool together = !packing && !groups_.empty() && c.run <= 64 &&
                        groups_.back().count < walk_rules::max_together &&
                        groups_.back().run == c.run && groups_.back().rows == c.rows &&
                        groups_.back().planes == c.planes;
  if (!together) {
    groups_.emplace_back();
    groups_.back().next_plane = c.run >= walk_rules::next_plane_min_run && c.planes > 1;
    groups_.back().run = c.run;
    groups_.back().rows = c.rows;
    groups_.back().planes = c.planes;
  }
  group& g = groups_.back();
  const int m = g.count++;
  g.from[m] = c.from;
  g.to[m] = c.to;
  g.from_row[m] = c.from_row;
  g.from_plane[m] = c.from_plane;
  g.to_row[m] = c.to_row;
  g.to_plane[m] = c.to_plane;
}

void copy_list::run() const {
  if (groups_.empty()) return;  // no clock reads for nothing
  const stage_timer::part_span copying(stage_timer::copy);
  for (const auto& g : groups_) run_group(g, fetch_ahead_);
}

bool copy_list::can_fetch_ahead() const {
  return fetched_span() > 0;
}

size_t copy_list::fetched_span() const {
  size_t longest = 0;
  for (const auto& g : groups_) {
    const auto rows = static_cast<size_t>(g.rows), planes = static_cast<size_t>(g.planes);
    auto span = [&](size_t row, size_t plane) {
      return fetched_end(g.run, row) ? (planes - 1) * plane + (rows - 1) * row + g.run : 0;
    };
    for (int m = 0; m < g.count; ++m)
      longest = std::max(
          {longest, span(g.from_row[m], g.from_plane[m]), span(g.to_row[m], g.to_plane[m])});
  }
  return longest;
}

namespace {

// What a box's field looks like: the same for every field, or each field its own (a plan's layouts).
struct uniform_layout {
  const local_grid& grid;
  size_t element_bytes;
  const local_grid& grid_of(int) const { return grid; }
  size_t element_bytes_of(int) const { return element_bytes; }
};

template <class Layouts>
size_t add_packs(copy_list& list, std::byte* buffer, std::span<const field_box> boxes,
                 std::byte* const* fields, const Layouts& l) {
  size_t offset = 0;
  for (const auto& fb : boxes) {
    const size_t bytes = l.element_bytes_of(fb.field);
    list.add(pack_copy(fields[fb.field], l.grid_of(fb.field), fb.region, bytes, buffer + offset));
    offset += static_cast<size_t>(fb.region.volume()) * bytes;
  }
  return offset;
}

template <class Layouts>
size_t add_unpacks(copy_list& list, const std::byte* buffer, std::span<const field_box> boxes,
                   std::byte* const* fields, const Layouts& l) {
  size_t offset = 0;
  for (const auto& fb : boxes) {
    const size_t bytes = l.element_bytes_of(fb.field);
    list.add(unpack_copy(buffer + offset, fields[fb.field], l.grid_of(fb.field), fb.region, bytes));
    offset += static_cast<size_t>(fb.region.volume()) * bytes;
  }
  return offset;
}

template <class Layouts>
box_copy copy_of(const field_box& from, const field_box& to, std::byte* const* fields,
                 const Layouts& l) {
  return field_copy(fields[from.field], l.grid_of(from.field), from.region, fields[to.field],
                    l.grid_of(to.field), to.region, l.element_bytes_of(to.field));
}

template <class Layouts>
void add_copies(copy_list& list, std::span<const local_copy> copies, std::byte* const* fields,
                const Layouts& l) {
  size_t most = 0;
  for (const auto& c : copies) most = std::max(most, c.from.size());
  for (size_t i = 0; i < most; ++i)
    for (const auto& c : copies)
      if (i < c.from.size() && i < c.to.size()) list.add(copy_of(c.from[i], c.to[i], fields, l));
}

template <class Layouts>
void copy_all(std::span<const field_box> from, std::span<const field_box> to,
              std::byte* const* fields, const Layouts& l) {
  copy_list list;
  for (size_t i = 0; i < from.size() && i < to.size(); ++i)
    list.add(copy_of(from[i], to[i], fields, l));
  list.run();
}

}  // namespace

size_t packed_bytes(std::span<const field_box> boxes, size_t element_bytes) {
  size_t total = 0;
  for (const auto& b : boxes) total += static_cast<size_t>(b.region.volume()) * element_bytes;
  return total;
}

size_t packed_bytes(std::span<const field_box> boxes, const exchange_plan& plan) {
  size_t total = 0;
  for (const auto& b : boxes)
    total += static_cast<size_t>(b.region.volume()) * plan.element_bytes_of(b.field);
  return total;
}

size_t add_pack(copy_list& list, std::byte* buffer, std::span<const field_box> boxes,
                std::byte* const* fields, const local_grid& grid, size_t element_bytes) {
  return add_packs(list, buffer, boxes, fields, uniform_layout{grid, element_bytes});
}

size_t add_pack(copy_list& list, std::byte* buffer, std::span<const field_box> boxes,
                std::byte* const* fields, const exchange_plan& plan) {
  return add_packs(list, buffer, boxes, fields, plan);
}

size_t add_unpack(copy_list& list, const std::byte* buffer, std::span<const field_box> boxes,
                  std::byte* const* fields, const local_grid& grid, size_t element_bytes) {
  return add_unpacks(list, buffer, boxes, fields, uniform_layout{grid, element_bytes});
}

size_t add_unpack(copy_list& list, const std::byte* buffer, std::span<const field_box> boxes,
                  std::byte* const* fields, const exchange_plan& plan) {
  return add_unpacks(list, buffer, boxes, fields, plan);
}

void add_local_copies(copy_list& list, std::span<const local_copy> copies, std::byte* const* fields,
                      const local_grid& grid, size_t element_bytes) {
  add_copies(list, copies, fields, uniform_layout{grid, element_bytes});
}

void add_local_copies(copy_list& list, std::span<const local_copy> copies, std::byte* const* fields,
                      const exchange_plan& plan) {
  add_copies(list, copies, fields, plan);
}

size_t pack(std::byte* buffer, std::span<const field_box> boxes, std::byte* const* fields,
            const local_grid& grid, size_t element_bytes) {
  copy_list list;
  const size_t bytes = add_pack(list, buffer, boxes, fields, grid, element_bytes);
  list.run();
  return bytes;
}

size_t pack(std::byte* buffer, std::span<const field_box> boxes, std::byte* const* fields,
            const exchange_plan& plan) {
  copy_list list;
  const size_t bytes = add_pack(list, buffer, boxes, fields, plan);
  list.run();
  return bytes;
}

size_t unpack(const std::byte* buffer, std::span<const field_box> boxes, std::byte* const* fields,
              const local_grid& grid, size_t element_bytes) {
  copy_list list;
  const size_t bytes = add_unpack(list, buffer, boxes, fields, grid, element_bytes);
  list.run();
  return bytes;
}

size_t unpack(const std::byte* buffer, std::span<const field_box> boxes, std::byte* const* fields,
              const exchange_plan& plan) {
  copy_list list;
  const size_t bytes = add_unpack(list, buffer, boxes, fields, plan);
  list.run();
  return bytes;
}

void copy_boxes(std::span<const field_box> from, std::span<const field_box> to,
                std::byte* const* fields, const local_grid& grid, size_t element_bytes) {
  copy_all(from, to, fields, uniform_layout{grid, element_bytes});
}

void copy_boxes(std::span<const field_box> from, std::span<const field_box> to,
                std::byte* const* fields, const exchange_plan& plan) {
  copy_all(from, to, fields, plan);
}

}  // namespace halox
