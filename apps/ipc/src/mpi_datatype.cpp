#include "halox_programs/ipc/mpi_datatype.hpp"

#include <vector>

namespace halox::ipc {

namespace {
constexpr int copy_tag = 4004;
}

mpi_datatype_copy::~mpi_datatype_copy() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && type_ != MPI_DATATYPE_NULL) MPI_Type_free(&type_);
}

void mpi_datatype_copy::on_prepare() {
  if (type_ != MPI_DATATYPE_NULL) MPI_Type_free(&type_);
  // The general form (any block offsets), as a halo plan would hand it over.
  std::vector<int> lengths(layout_.count, static_cast<int>(layout_.block));
  std::vector<MPI_Aint> displacements(layout_.count);
  for (size_t i = 0; i < layout_.count; ++i)
    displacements[i] = static_cast<MPI_Aint>(layout_.offset(i));
  MPI_Type_create_hindexed(static_cast<int>(layout_.count), lengths.data(), displacements.data(),
                           MPI_BYTE, &type_);
  MPI_Type_commit(&type_);
}

void mpi_datatype_copy::on_copy() {
  MPI_Comm comm = context_.comm();
  if (context_.is_owner()) {
    std::vector<MPI_Request> requests(static_cast<size_t>(context_.peer_count()));
    for (int p = 1; p < context_.size(); ++p)
      MPI_Isend(source_, 1, type_, p, copy_tag, comm, &requests[static_cast<size_t>(p - 1)]);
    MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  } else {
    MPI_Recv(destination_, 1, type_, 0, copy_tag, comm, MPI_STATUS_IGNORE);
  }
}

}  // namespace halox::ipc
