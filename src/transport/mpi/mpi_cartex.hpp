// mpi-cartex: the plain-MPI program of the Betzy results, the ghexbench cartex
// benchmark's mpi_comm runtime as run there (benchmark_mpi_comm, without
// --MPI-datatypes; cartex/src/runtime/mpi_comm/runtime.cpp), as a transport:
// a message per direction, packed by element loops into a buffer of its own,
// sent as bytes; a box of whole planes (the z faces of the staged algorithm)
// goes in place, unpacked by nobody. A self-neighbour is a message to itself.
// As in cartex, elements are addressed with 32-bit offsets: fields of up to
// 2^32 cells.
//
// Reference algorithm per stage (a dimension of the staged algorithm; one
// field of it with the sequence grouping, as cartex loops over the fields):
//   pack the sends: the x (y) faces of one field with cartex's pack_x (pack_y),
//     any other box by element loops (z, y, x), a box of whole planes not at all
//   (the buffers were allocated in the order cartex allocates them)
//   for r in recvs (from +d first): MPI_Irecv(r.buffer, r.bytes, MPI_BYTE, r.peer)
//   for s in sends (to -d first):   MPI_Isend(s.buffer, s.bytes, MPI_BYTE, s.peer)
//   MPI_Waitall(recvs and sends)   (under halox's watchdog: a timeout names the peers)
//   unpack the receives likewise (cartex's unpack_x, unpack_y)
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "halox/extend/transport.hpp"
#include "transport/core/names.hpp"

namespace halox {

class mpi_cartex_transport final : public transport {
 public:
  explicit mpi_cartex_transport(const transport_context& ctx);
  void start(size_t stage) override;
  void wait(size_t stage) override;
  std::string name() const override { return std::string(transport_names::mpi_cartex); }

 private:
  struct transfer {
    int peer = -1;
    int tag = 0;
    ivec3 direction{0, 0, 0};
    std::vector<field_box> boxes;
    std::vector<std::byte> buffer;
    std::byte* data = nullptr;  // the buffer, or the field memory of a box sent in place
    size_t bytes = 0;
    bool in_place = false;
  };
  struct stage_transfers {
    std::vector<transfer> recvs, sends;
    std::vector<MPI_Request> requests;  // receives first, then sends
    std::string what;                   // for a timeout: the stage and its peers
    int faces_dim = -1;  // 0 or 1: the x or y faces of one field, in cartex's loops
  };
  void allocate_buffers();
  void pack(const stage_transfers& st) const;
  void unpack(const stage_transfers& st) const;
  template <class T>
  void copy_faces(const stage_transfers& st, bool to_buffers) const;

  std::vector<stage_transfers> stages_;
  const local_grid grid_;
  const size_t element_bytes_;
  const std::vector<std::byte*> fields_;
  MPI_Comm comm_;
  const wait_policy& waits_;
};

}  // namespace halox
