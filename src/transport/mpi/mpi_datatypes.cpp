#include "transport/mpi/mpi_datatypes.hpp"

namespace halox {

namespace {

MPI_Datatype subarray(const box& region, const local_grid& grid, MPI_Datatype element) {
  const ivec3 alloc = grid.allocated();
  int sizes[3] = {alloc[0], alloc[1], alloc[2]};
  int subsizes[3] = {region.extent(0), region.extent(1), region.extent(2)};
  int starts[3] = {region.lo[0] + grid.halo.lo[0], region.lo[1] + grid.halo.lo[1],
                   region.lo[2] + grid.halo.lo[2]};
  MPI_Datatype type;
  MPI_Type_create_subarray(3, sizes, subsizes, starts, MPI_ORDER_FORTRAN, element, &type);
  return type;
}

}  // namespace

MPI_Datatype mpi_element_type(size_t element_bytes) {
  return element_bytes == 4 ? MPI_FLOAT : MPI_DOUBLE;
}

MPI_Datatype make_box_type(const box& region, const local_grid& grid, MPI_Datatype element) {
  MPI_Datatype type = subarray(region, grid, element);
  MPI_Type_commit(&type);
  return type;
}

MPI_Datatype make_boxes_type(const std::vector<field_box>& boxes, const exchange_plan& plan,
                             const std::vector<std::byte*>& fields) {
  std::vector<MPI_Datatype> parts;
  std::vector<MPI_Aint> displacements;
  std::vector<int> lengths;
  for (const auto& fb : boxes) {
    MPI_Aint address;
    MPI_Get_address(fields[static_cast<size_t>(fb.field)], &address);
    parts.push_back(subarray(fb.region, plan.grid_of(fb.field),
                             mpi_element_type(plan.element_bytes_of(fb.field))));
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

std::map<int, std::vector<field_box>> by_direction(const message& m) {
  std::map<int, std::vector<field_box>> out;
  for (const auto& fb : m.boxes) out[direction_index(fb.direction)].push_back(fb);
  return out;
}

}  // namespace halox
