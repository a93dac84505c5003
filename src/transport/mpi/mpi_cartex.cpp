#include "transport/mpi/mpi_cartex.hpp"
#include "transport/mpi/mpi_datatypes.hpp"
#include "transport/core/names.hpp"
#include "halox/common/error.hpp"
#include "common/stage_timer.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <string>

namespace halox {

namespace {

// The element loops of cartex's mpi_comm runtime (runtime.cpp, host path),
// kept as written there: pack_x/unpack_x write both x faces in one pass over
// the rows, pack_y/unpack_y both y faces in one pass over z, every element
// addressed through memory::operator[](unsigned int) with int offsets
// recomputed per row. halos = {x lo, x hi, y lo, y hi, z lo, z hi}. Out of
// line and reading their bounds through `this`, as cartex's member functions
// do, so that the compiler makes the same code of them (the flags are the
// same: cartex's Release build is -O3 -DNDEBUG -fPIC, C++17).
template <class T>
struct cartex_memory {
  unsigned int m_size;  // cartex's memory<T> layout: the size, then the host pointer
  T* m_host_memory;
  T& operator[](unsigned int i) { return m_host_memory[i]; }
};

template <class T>
struct cartex_loops {
  using memory_type = cartex_memory<T>;
  struct domain_t {
    std::array<int, 3> domain_ext;
  };
  std::array<int, 6> m_halos;
  domain_t d;
  std::array<int, 3> ext_buffer;

  [[gnu::noinline]] void pack_x(memory_type& field, memory_type& buffer_left, memory_type& buffer_right) {
    for (int z = 0; z < d.domain_ext[2]; ++z) {
      for (int y = 0; y < d.domain_ext[1]; ++y) {
        const auto offset = ext_buffer[0] * (y + m_halos[2] + (z + m_halos[4]) * ext_buffer[1]);
        const auto offset_l = m_halos[0] * (y + d.domain_ext[1] * z);
        const auto offset_r = m_halos[1] * (y + d.domain_ext[1] * z);
        for (int x = 0; x < m_halos[0]; ++x) buffer_left[x + offset_l] = field[x + d.domain_ext[0] + offset];
        for (int x = 0; x < m_halos[1]; ++x) buffer_right[x + offset_r] = field[x + m_halos[0] + offset];
      }
    }
  }

  [[gnu::noinline]] void unpack_x(memory_type& field, memory_type& buffer_left, memory_type& buffer_right) {
    for (int z = 0; z < d.domain_ext[2]; ++z) {
      for (int y = 0; y < d.domain_ext[1]; ++y) {
        const auto offset = ext_buffer[0] * (y + m_halos[2] + (z + m_halos[4]) * ext_buffer[1]);
        const auto offset_l = m_halos[0] * (y + d.domain_ext[1] * z);
        const auto offset_r = m_halos[1] * (y + d.domain_ext[1] * z);
        for (int x = 0; x < m_halos[0]; ++x) field[x + offset] = buffer_left[x + offset_l];
        for (int x = 0; x < m_halos[1]; ++x)
          field[x + m_halos[0] + d.domain_ext[0] + offset] = buffer_right[x + offset_r];
      }
    }
  }

  [[gnu::noinline]] void pack_y(memory_type& field, memory_type& buffer_left, memory_type& buffer_right) {
    for (int z = 0; z < d.domain_ext[2]; ++z) {
      for (int y = 0; y < m_halos[2]; ++y) {
        const auto offset = ext_buffer[0] * (y + d.domain_ext[1] + (z + m_halos[4]) * ext_buffer[1]);
        const auto offset_l = ext_buffer[0] * (y + m_halos[2] * z);
        for (int x = 0; x < ext_buffer[0]; ++x) buffer_left[x + offset_l] = field[x + offset];
      }
      for (int y = 0; y < m_halos[3]; ++y) {
        const auto offset = ext_buffer[0] * (y + m_halos[2] + (z + m_halos[4]) * ext_buffer[1]);
        const auto offset_r = ext_buffer[0] * (y + m_halos[3] * z);
        for (int x = 0; x < ext_buffer[0]; ++x) buffer_right[x + offset_r] = field[x + offset];
      }
    }
  }

  [[gnu::noinline]] void unpack_y(memory_type& field, memory_type& buffer_left, memory_type& buffer_right) {
    for (int z = 0; z < d.domain_ext[2]; ++z) {
      for (int y = 0; y < m_halos[2]; ++y) {
        const auto offset = ext_buffer[0] * (y + (z + m_halos[4]) * ext_buffer[1]);
        const auto offset_l = ext_buffer[0] * (y + m_halos[2] * z);
        for (int x = 0; x < ext_buffer[0]; ++x) field[x + offset] = buffer_left[x + offset_l];
      }
      for (int y = 0; y < m_halos[3]; ++y) {
        const auto offset =
            ext_buffer[0] * (y + m_halos[2] + d.domain_ext[1] + (z + m_halos[4]) * ext_buffer[1]);
        const auto offset_r = ext_buffer[0] * (y + m_halos[3] * z);
        for (int x = 0; x < ext_buffer[0]; ++x) field[x + offset] = buffer_right[x + offset_r];
      }
    }
  }
};

template <class T>
cartex_loops<T> loops_of(const local_grid& grid) {
  const ivec3 alloc = grid.allocated();
  return {{grid.halo.lo[0], grid.halo.hi[0], grid.halo.lo[1], grid.halo.hi[1], grid.halo.lo[2],
           grid.halo.hi[2]},
          {{grid.interior[0], grid.interior[1], grid.interior[2]}},
          {alloc[0], alloc[1], alloc[2]}};
}

// The boxes cartex's loops of dimension `dim` (0: x, 1: y) pack and unpack:
// the interior faces sent toward -d and +d, the halos filled from -d and +d.
struct face_boxes {
  box to_minus, to_plus, from_minus, from_plus;
};

face_boxes cartex_faces(const local_grid& grid, int dim) {
  const ivec3 n = grid.interior;
  const ivec3 lo = grid.halo.lo, hi = grid.halo.hi;
  box slab{{0, 0, 0}, n};
  if (dim == 1) {  // y faces span the x halos (filled by the x stage before)
    slab.lo[0] = -lo[0];
    slab.hi[0] = n[0] + hi[0];
  }
  auto cut = [&](int from, int to) {
    box b = slab;
    b.lo[dim] = from;
    b.hi[dim] = to;
    return b;
  };
  return {cut(0, hi[dim]), cut(n[dim] - lo[dim], n[dim]), cut(-lo[dim], 0),
          cut(n[dim], n[dim] + hi[dim])};
}

// Elements one box at a time, in cartex's z, y, x order and addressing (32-bit
// offsets per row), for the messages cartex's own loops do not cover.
template <class T>
void copy_boxes(const std::vector<field_box>& boxes, const local_grid& grid,
                const std::vector<std::byte*>& fields, std::byte* buffer, bool to_buffer) {
  T* packed = reinterpret_cast<T*>(buffer);
  const auto row = static_cast<unsigned>(grid.index(0, 1, 0) - grid.index(0, 0, 0));
  const auto plane = static_cast<unsigned>(grid.index(0, 0, 1) - grid.index(0, 0, 0));
  for (const auto& fb : boxes) {
    const box& b = fb.region;
    T* field = reinterpret_cast<T*>(fields[static_cast<size_t>(fb.field)]) + grid.index(b.lo[0], b.lo[1], b.lo[2]);
    const int nx = b.extent(0), ny = b.extent(1), nz = b.extent(2);
    for (int z = 0; z < nz; ++z)
      for (int y = 0; y < ny; ++y) {
        const unsigned offset = row * static_cast<unsigned>(y) + plane * static_cast<unsigned>(z);
        const unsigned offset_packed = static_cast<unsigned>(nx * (y + ny * z));
        if (to_buffer)
          for (int x = 0; x < nx; ++x)
            packed[static_cast<unsigned>(x) + offset_packed] = field[static_cast<unsigned>(x) + offset];
        else
          for (int x = 0; x < nx; ++x)
            field[static_cast<unsigned>(x) + offset] = packed[static_cast<unsigned>(x) + offset_packed];
      }
    packed += b.volume();
  }
}


// 0 (1) when a stage is cartex's x (y) step of one field: a send toward -d and
// +d and a receive from +d and -d (in posting order), each the face cartex's
// pack_x (pack_y) loops cover; -1 otherwise.
template <class Transfer>
int cartex_faces_dimension(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs,
                           const local_grid& grid) {
  if (sends.size() != 2 || recvs.size() != 2) return -1;
  const int field = sends[0].boxes.front().field;
  for (const auto* list : {&sends, &recvs})
    for (const auto& t : *list)
      if (t.boxes.size() != 1 || t.in_place || t.boxes.front().field != field) return -1;
  for (int dim = 0; dim < 2; ++dim) {
    ivec3 minus{0, 0, 0}, plus{0, 0, 0};
    minus[dim] = -1;
    plus[dim] = 1;
    const face_boxes f = cartex_faces(grid, dim);
    auto is = [](const Transfer& t, const ivec3& direction, const box& region) {
      return t.direction == direction && t.boxes.front().region == region;
    };
    if (is(sends[0], minus, f.to_minus) && is(sends[1], plus, f.to_plus) &&
        is(recvs[0], plus, f.from_plus) && is(recvs[1], minus, f.from_minus))
      return dim;
  }
  return -1;
}

}  // namespace

namespace {
// cartex exchanges fields of one layout and type; so does its replica.
const exchange_plan& uniform_plan(const exchange_plan& plan) {
  if (!plan.uniform())
    throw usage_error(fmt::format(
        "transport {} runs the cartex benchmark's exchange, whose fields share one location, halo "
        "and type; these fields do not (another transport moves them)",
        transport_names::mpi_cartex));
  return plan;
}
}  // namespace

mpi_cartex_transport::mpi_cartex_transport(const transport_context& ctx)
    : grid_(uniform_plan(ctx.plan).first_layout().grid),
      element_bytes_(ctx.plan.first_layout().element_bytes),
      fields_(ctx.fields.pointers),
      comm_(ctx.comm),
      waits_(ctx.waits) {
  int self = 0;
  MPI_Comm_rank(comm_, &self);
  const ivec3 alloc = grid_.allocated();
  auto make = [&](int peer, int tag, const ivec3& direction, std::vector<field_box> boxes) {
    transfer t;
    t.peer = peer;
    t.tag = tag;
    t.direction = direction;
    t.boxes = std::move(boxes);
    for (const auto& fb : t.boxes) t.bytes += static_cast<size_t>(fb.region.volume()) * element_bytes_;
    // Whole x-y planes of one field are contiguous: cartex sends its z halos in place.
    const box& first = t.boxes.front().region;
    t.in_place = t.boxes.size() == 1 && first.extent(0) == alloc[0] && first.extent(1) == alloc[1];
    if (t.in_place) {
      t.data = fields_[static_cast<size_t>(t.boxes.front().field)] +
               grid_.index(first.lo[0], first.lo[1], first.lo[2]) * element_bytes_;
    }
    return t;
  };
  for (const auto& s : ctx.plan.stages) {
    stage_transfers st;
    for (const auto& m : s.recvs) {
      const int slot = m.tag / direction_count;
      for (auto& [d, boxes] : by_direction(m)) {
        const ivec3 from = direction_of(d);
        st.recvs.push_back(make(m.peer, message_tag(slot, opposite(from)), from, boxes));
      }
    }
    for (const auto& m : s.sends) {
      const int slot = m.tag / direction_count;
      for (auto& [d, boxes] : by_direction(m))
        st.sends.push_back(make(m.peer, message_tag(slot, direction_of(d)), direction_of(d), boxes));
    }
    // A self-neighbour: the halo toward d is received from d, sent toward -d, as
    // cartex's message to itself (the tag pairs the two).
    for (const auto& c : s.copies) {
      st.recvs.push_back(make(self, direction_index(c.direction), c.direction, c.to));
      st.sends.push_back(make(self, direction_index(c.direction), opposite(c.direction), c.from));
    }
    // cartex posts the receive from the right neighbour first and the send to the left first.
    std::stable_sort(st.recvs.begin(), st.recvs.end(), [](const transfer& a, const transfer& b) {
      return direction_index(a.direction) > direction_index(b.direction);
    });
    std::stable_sort(st.sends.begin(), st.sends.end(), [](const transfer& a, const transfer& b) {
      return direction_index(a.direction) < direction_index(b.direction);
    });
    st.requests.resize(st.recvs.size() + st.sends.size(), MPI_REQUEST_NULL);
    std::vector<int> peers;
    for (const auto& t : st.recvs)
      if (std::find(peers.begin(), peers.end(), t.peer) == peers.end()) peers.push_back(t.peer);
    std::string from;
    for (int p : peers) from += (from.empty() ? "rank " : ", rank ") + std::to_string(p);
    st.faces_dim = cartex_faces_dimension(st.sends, st.recvs, grid_);
    st.what = fmt::format("the messages of stage {} from {} ({})", stages_.size(), from, name());
    stages_.push_back(std::move(st));
  }
  allocate_buffers();
}

// The buffers go on the heap in the order cartex's init() allocates them,
// receive and send buffers alternating: the x step's from -x, to +x, from +x,
// to -x, the y step's to +y, from -y, to -y, from +y. Where each lands
// relative to the others and to the field moves the loops' time
// (docs/results/2026-11-28-mpi-cartex-self-neighbours.md).
void mpi_cartex_transport::allocate_buffers() {
  auto allocate = [](transfer& t) {
    if (t.in_place) return;
    t.buffer.resize(t.bytes);
    t.data = t.buffer.data();
  };
  for (auto& st : stages_) {
    // Receives are in +d, -d order, sends in -d, +d order (cartex's posting order).
    if (st.faces_dim == 0) {
      for (transfer* t : {&st.recvs[1], &st.sends[1], &st.recvs[0], &st.sends[0]}) allocate(*t);
    } else if (st.faces_dim == 1) {
      for (transfer* t : {&st.sends[1], &st.recvs[1], &st.sends[0], &st.recvs[0]}) allocate(*t);
    } else {
      for (size_t i = 0; i < std::max(st.recvs.size(), st.sends.size()); ++i)
        for (auto* list : {&st.recvs, &st.sends})
          if (i < list->size()) allocate((*list)[i]);
    }
  }
}

template <class T>
void mpi_cartex_transport::copy_faces(const stage_transfers& st, bool to_buffers) const {
  auto memory = [](const transfer& t) {
    return cartex_memory<T>{static_cast<unsigned>(t.bytes / sizeof(T)),
                            reinterpret_cast<T*>(const_cast<std::byte*>(t.buffer.data()))};
  };
  cartex_memory<T> field{static_cast<unsigned>(grid_.points()),
                         reinterpret_cast<T*>(fields_[static_cast<size_t>(st.sends[0].boxes[0].field)])};
  cartex_loops<T> loops = loops_of<T>(grid_);
  // cartex's names: packing, buffer_left goes toward +d (it fills that neighbour's
  // left halo); unpacking, buffer_left came from -d. Sends are in -d, +d order,
  // receives in +d, -d order.
  if (to_buffers) {
    cartex_memory<T> left = memory(st.sends[1]), right = memory(st.sends[0]);
    if (st.faces_dim == 0)
      loops.pack_x(field, left, right);
    else
      loops.pack_y(field, left, right);
  } else {
    cartex_memory<T> left = memory(st.recvs[1]), right = memory(st.recvs[0]);
    if (st.faces_dim == 0)
      loops.unpack_x(field, left, right);
    else
      loops.unpack_y(field, left, right);
  }
}

void mpi_cartex_transport::pack(const stage_transfers& st) const {
  const stage_timer::part_span packing(stage_timer::pack);
  if (st.faces_dim >= 0) {
    if (element_bytes_ == 4)
      copy_faces<float>(st, true);
    else
      copy_faces<double>(st, true);
    return;
  }
  for (const auto& t : st.sends) {
    if (t.in_place) continue;
    auto* buffer = const_cast<std::byte*>(t.buffer.data());
    if (element_bytes_ == 4)
      copy_boxes<float>(t.boxes, grid_, fields_, buffer, true);
    else
      copy_boxes<double>(t.boxes, grid_, fields_, buffer, true);
  }
}

void mpi_cartex_transport::unpack(const stage_transfers& st) const {
  const stage_timer::part_span copying(stage_timer::copy);
  if (st.faces_dim >= 0) {
    if (element_bytes_ == 4)
      copy_faces<float>(st, false);
    else
      copy_faces<double>(st, false);
    return;
  }
  for (const auto& t : st.recvs) {
    if (t.in_place) continue;
    auto* buffer = const_cast<std::byte*>(t.buffer.data());
    if (element_bytes_ == 4)
      copy_boxes<float>(t.boxes, grid_, fields_, buffer, false);
    else
      copy_boxes<double>(t.boxes, grid_, fields_, buffer, false);
  }
}

void mpi_cartex_transport::start(size_t stage_index) {
  stage_transfers& st = stages_[stage_index];
  pack(st);
  size_t i = 0;
  for (auto& t : st.recvs)
    MPI_Irecv(t.data, static_cast<int>(t.bytes), MPI_BYTE, t.peer, t.tag, comm_, &st.requests[i++]);
  for (auto& t : st.sends)
    MPI_Isend(t.data, static_cast<int>(t.bytes), MPI_BYTE, t.peer, t.tag, comm_, &st.requests[i++]);
}

void mpi_cartex_transport::wait(size_t stage_index) {
  stage_transfers& st = stages_[stage_index];
  // cartex's MPI_Waitall; a watchdog ends the run naming the stage's peers after the timeout.
  waits_.blocking(
      [&] {
        MPI_Waitall(static_cast<int>(st.requests.size()), st.requests.data(), MPI_STATUSES_IGNORE);
      },
      [&] { return st.what; });
  unpack(st);
}

}  // namespace halox
