// MPI_DT: the MPI library's own path for non-contiguous data, for comparison.
//
// Reference algorithm:
//   type = MPI_Type_create_hindexed(count, {block,..}, {i*stride,..}, MPI_BYTE)
//   owner:  for every peer p: MPI_Isend(source, 1, type, p);  MPI_Waitall
//   peer:   MPI_Recv(destination, 1, type, owner)
// Which path the library then takes (copy through its shared memory, CMA,
// its own single copy) depends on the library and its settings (OpenMPI:
// btl_vader_single_copy_mechanism; MPICH/UCX: UCX_TLS); record them.
#pragma once

#include "halox_programs/ipc/mechanism.hpp"

namespace halox::ipc {

class mpi_datatype_copy : public copy_mechanism {
 public:
  explicit mpi_datatype_copy(ipc_context& context) : copy_mechanism(context) {}
  ~mpi_datatype_copy() override;
  mechanism_kind kind() const override { return mechanism_kind::mpi_dt; }

 protected:
  void on_prepare() override;
  void on_copy() override;
  bool owner_works() const override { return true; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

}  // namespace halox::ipc
