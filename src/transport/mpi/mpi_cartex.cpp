#include "transport/mpi/mpi_cartex.hpp"
#include "transport/mpi/mpi_datatypes.hpp"
#include "common/stage_timer.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <string>

namespace halox {

namespace {

// cartex's element loops: z, then y, then the x run of a row, one element at a
// time, every element addressed through a 32-bit unsigned offset computed
// afresh for each row, as cartex's memory::operator[](unsigned int) is. (cartex
// writes both x faces in one pass over the rows; packing each face on its own
// measured closer to the program at halo 1 and 5, see docs/peers.md.)
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

}  // namespace

mpi_cartex_transport::mpi_cartex_transport(const transport_context& ctx)
    : grid_(ctx.plan.grid),
      element_bytes_(ctx.plan.element_bytes),
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
    } else {
      t.buffer.resize(t.bytes);
      t.data = t.buffer.data();
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
    for (const auto& c : s.copies) {
      st.recvs.push_back(make(self, direction_index(c.direction), c.direction, c.to));
      st.sends.push_back(make(self, direction_index(c.direction), c.direction, c.from));
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
    st.what = fmt::format("the messages of stage {} from {} ({})", stages_.size(), from, name());
    stages_.push_back(std::move(st));
  }
}

void mpi_cartex_transport::pack(const transfer& t) const {
  const stage_timer::part_span packing(stage_timer::pack);
  auto* buffer = const_cast<std::byte*>(t.buffer.data());
  if (element_bytes_ == 4)
    copy_boxes<float>(t.boxes, grid_, fields_, buffer, true);
  else
    copy_boxes<double>(t.boxes, grid_, fields_, buffer, true);
}

void mpi_cartex_transport::unpack(const transfer& t) const {
  const stage_timer::part_span copying(stage_timer::copy);
  auto* buffer = const_cast<std::byte*>(t.buffer.data());
  if (element_bytes_ == 4)
    copy_boxes<float>(t.boxes, grid_, fields_, buffer, false);
  else
    copy_boxes<double>(t.boxes, grid_, fields_, buffer, false);
}

void mpi_cartex_transport::start(size_t stage_index) {
  stage_transfers& st = stages_[stage_index];
  for (const auto& t : st.sends)
    if (!t.in_place) pack(t);
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
  for (const auto& t : st.recvs)
    if (!t.in_place) unpack(t);
}

}  // namespace halox
