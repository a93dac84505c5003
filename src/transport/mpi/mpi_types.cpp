#include "transport/mpi/mpi_types.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "transport/mpi/mpi_datatypes.hpp"

namespace halox {

namespace {

// The peers a stage receives from, for the timeout's message.
template <class Post>
std::string peers_of(const std::vector<Post>& recvs) {
  std::vector<int> peers;
  for (const auto& p : recvs)
    if (std::find(peers.begin(), peers.end(), p.peer) == peers.end()) peers.push_back(p.peer);
  std::string out;
  for (int p : peers) out += (out.empty() ? "rank " : ", rank ") + std::to_string(p);
  return out;
}

}  // namespace

mpi_types_transport::mpi_types_transport(const transport_context& ctx)
    : comm_(ctx.comm), waits_(ctx.waits) {
  const exchange_plan& plan = ctx.plan;
  const auto& fields = ctx.fields.pointers;
  int self = 0;
  MPI_Comm_rank(comm_, &self);
  auto make = [&](const std::vector<field_box>& boxes, int peer, int tag, const ivec3& direction) {
    post p;
    p.peer = peer;
    p.tag = tag;
    p.direction = direction;
    if (boxes.size() == 1) {
      p.data = fields[static_cast<size_t>(boxes.front().field)];
      const int f = boxes.front().field;
      p.type = make_box_type(boxes.front().region, plan.grid_of(f),
                             mpi_element_type(plan.element_bytes_of(f)));
    } else {
      p.data = MPI_BOTTOM;
      p.type = make_boxes_type(boxes, plan, fields);
    }
    return p;
  };
  for (const auto& s : plan.stages) {
    stage_posts st;
    // A message's tag names its field slot and first direction; each
    // direction's own message names its own.
    for (const auto& m : s.recvs) {
      const int slot = m.tag / direction_count;
      for (const auto& [d, boxes] : by_direction(m)) {
        const ivec3 from = direction_of(d);
        st.recvs.push_back(make(boxes, m.peer, message_tag(slot, opposite(from)), from));
      }
    }
    for (const auto& m : s.sends) {
      const int slot = m.tag / direction_count;
      for (const auto& [d, boxes] : by_direction(m))
        st.sends.push_back(make(boxes, m.peer, message_tag(slot, direction_of(d)), direction_of(d)));
    }
    // A self-neighbour is a message to ourselves, as in a plain MPI code.
    // The halo toward d is received from d and sent toward -d (the tag pairs the two).
    for (const auto& c : s.copies) {
      st.recvs.push_back(make(c.to, self, direction_index(c.direction), c.direction));
      st.sends.push_back(make(c.from, self, direction_index(c.direction), opposite(c.direction)));
    }
    // cartex posts the receive from the right neighbour first and the send to the left first.
    std::stable_sort(st.recvs.begin(), st.recvs.end(), [](const post& a, const post& b) {
      return direction_index(a.direction) > direction_index(b.direction);
    });
    std::stable_sort(st.sends.begin(), st.sends.end(), [](const post& a, const post& b) {
      return direction_index(a.direction) < direction_index(b.direction);
    });
    st.requests.assign(st.recvs.size() + st.sends.size(), MPI_REQUEST_NULL);
    st.what = fmt::format("the messages of stage {} from {} ({})", stages_.size(),
                          peers_of(st.recvs), name());
    stages_.push_back(std::move(st));
  }
}

mpi_types_transport::~mpi_types_transport() {
  for (auto& s : stages_) {
    for (auto& p : s.recvs) MPI_Type_free(&p.type);
    for (auto& p : s.sends) MPI_Type_free(&p.type);
  }
}

void mpi_types_transport::start(size_t stage_index) {
  stage_posts& st = stages_[stage_index];
  size_t i = 0;
  for (auto& p : st.recvs) MPI_Irecv(p.data, 1, p.type, p.peer, p.tag, comm_, &st.requests[i++]);
  for (auto& p : st.sends) MPI_Isend(p.data, 1, p.type, p.peer, p.tag, comm_, &st.requests[i++]);
}

void mpi_types_transport::wait(size_t stage_index) {
  stage_posts& st = stages_[stage_index];
  if (st.requests.empty()) return;
  // More ranks than cores: poll and yield, or the ranks that would send spin-wait for a core.
  if (waits_.oversubscribed) {
    waits_.wait_all(st.requests, {}, [&](size_t) { return st.what; });
    return;
  }
  // cartex's MPI_Waitall; a watchdog ends the run naming the stage's peers after the timeout.
  waits_.blocking(
      [&] {
        MPI_Waitall(static_cast<int>(st.requests.size()), st.requests.data(), MPI_STATUSES_IGNORE);
      },
      [&] { return st.what; });
}

}  // namespace halox
