#include "halox/transport/mpi_types.hpp"

#include <fmt/core.h>

namespace halox {

namespace {

// One datatype covering a list of field boxes, addressed from MPI_BOTTOM.
MPI_Datatype make_boxes_type(const std::vector<field_box>& boxes, const local_grid& grid,
                             MPI_Datatype element, const std::vector<std::byte*>& fields) {
  const ivec3 alloc = grid.allocated();
  std::vector<MPI_Datatype> parts;
  std::vector<MPI_Aint> displacements;
  std::vector<int> lengths;
  for (const auto& fb : boxes) {
    int sizes[3] = {alloc[0], alloc[1], alloc[2]};
    int subsizes[3] = {fb.region.extent(0), fb.region.extent(1), fb.region.extent(2)};
    int starts[3] = {fb.region.lo[0] + grid.halo.lo[0], fb.region.lo[1] + grid.halo.lo[1],
                     fb.region.lo[2] + grid.halo.lo[2]};
    MPI_Datatype sub;
    MPI_Type_create_subarray(3, sizes, subsizes, starts, MPI_ORDER_FORTRAN, element, &sub);
    MPI_Aint address;
    MPI_Get_address(fields[static_cast<size_t>(fb.field)], &address);
    parts.push_back(sub);
    displacements.push_back(address);
    lengths.push_back(1);
  }
  MPI_Datatype type;
  MPI_Type_create_struct(static_cast<int>(parts.size()), lengths.data(), displacements.data(),
                         parts.data(), &type);
  MPI_Type_commit(&type);
  for (auto& p : parts) MPI_Type_free(&p);
  return type;
}

}  // namespace

mpi_types_transport::mpi_types_transport(const transport_context& ctx) : waits_(ctx.waits) {
  const exchange_plan& plan = ctx.plan;
  const auto& fields = ctx.fields.pointers;
  MPI_Comm comm = ctx.comm;
  int self = 0;
  MPI_Comm_rank(comm, &self);
  MPI_Datatype element = plan.element_bytes == 4 ? MPI_FLOAT : MPI_DOUBLE;
  auto add = [&](stage_requests& r, const std::vector<field_box>& boxes, int peer, int tag,
                 bool receive, const ivec3& direction) {
    auto& requests = r.requests;
    r.what.push_back(fmt::format("a message {} rank {} (direction {},{},{}, mpi-types)",
                                 receive ? "from" : "to", peer, direction[0], direction[1],
                                 direction[2]));
    MPI_Datatype type = make_boxes_type(boxes, plan.grid, element, fields);
    types_.push_back(type);
    requests.emplace_back();
    if (receive)
      MPI_Recv_init(MPI_BOTTOM, 1, type, peer, tag, comm, &requests.back());
    else
      MPI_Send_init(MPI_BOTTOM, 1, type, peer, tag, comm, &requests.back());
  };
  for (const auto& s : plan.stages) {
    stage_requests r;
    for (const auto& m : s.recvs) add(r, m.boxes, m.peer, m.tag, true, m.direction);
    // A self-neighbour is a message to ourselves, as in a plain MPI code.
    for (const auto& c : s.copies)
      add(r, c.to, self, direction_index(c.direction), true, c.direction);
    for (const auto& m : s.sends) add(r, m.boxes, m.peer, m.tag, false, m.direction);
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
