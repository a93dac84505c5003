#include "transport/mpi/mpi_types.hpp"

#include <fmt/core.h>

#include "transport/mpi/mpi_datatypes.hpp"

namespace halox {

mpi_types_transport::mpi_types_transport(const transport_context& ctx) : waits_(ctx.waits) {
  const exchange_plan& plan = ctx.plan;
  const auto& fields = ctx.fields.pointers;
  MPI_Comm comm = ctx.comm;
  int self = 0;
  MPI_Comm_rank(comm, &self);
  const MPI_Datatype element = mpi_element_type(plan.element_bytes);
  auto add = [&](stage_requests& r, const std::vector<field_box>& boxes, int peer, int tag,
                 bool receive, const ivec3& direction) {
    r.what.push_back(fmt::format("a message {} rank {} (direction {},{},{}, {})",
                                 receive ? "from" : "to", peer, direction[0], direction[1],
                                 direction[2], transport_names::mpi_types));
    MPI_Datatype type = make_boxes_type(boxes, plan.grid, element, fields);
    types_.push_back(type);
    r.requests.emplace_back();
    if (receive)
      MPI_Recv_init(MPI_BOTTOM, 1, type, peer, tag, comm, &r.requests.back());
    else
      MPI_Send_init(MPI_BOTTOM, 1, type, peer, tag, comm, &r.requests.back());
  };
  for (const auto& s : plan.stages) {
    stage_requests r;
    // A message's tag names its field slot and first direction; each
    // direction's own message names its own.
    for (const auto& m : s.recvs) {
      const int slot = m.tag / direction_count;
      for (const auto& [d, boxes] : by_direction(m)) {
        const ivec3 from = direction_of(d);
        add(r, boxes, m.peer, message_tag(slot, opposite(from)), true, from);
      }
    }
    // A self-neighbour is a message to ourselves, as in a plain MPI code.
    for (const auto& c : s.copies)
      add(r, c.to, self, direction_index(c.direction), true, c.direction);
    for (const auto& m : s.sends) {
      const int slot = m.tag / direction_count;
      for (const auto& [d, boxes] : by_direction(m))
        add(r, boxes, m.peer, message_tag(slot, direction_of(d)), false, direction_of(d));
    }
    for (const auto& c : s.copies)
      add(r, c.from, self, direction_index(c.direction), false, c.direction);
    stages_.push_back(std::move(r));
  }
}

mpi_types_transport::~mpi_types_transport() {
  for (auto& s : stages_)
    for (auto& r : s.requests) MPI_Request_free(&r);
  for (auto& t : types_) MPI_Type_free(&t);
}

void mpi_types_transport::start(size_t stage_index) {
  auto& r = stages_[stage_index].requests;
  if (!r.empty()) MPI_Startall(static_cast<int>(r.size()), r.data());
}

void mpi_types_transport::wait(size_t stage_index) {
  auto& r = stages_[stage_index];
  waits_.wait_all(r.requests, {}, [&](size_t i) { return r.what[i]; });
}

}  // namespace halox
