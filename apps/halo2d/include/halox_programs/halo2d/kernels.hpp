// The exchange kernels of halox-halo2d (Gropp's 2-D halo tests and three more).
//
// Reference algorithm of one exchange: k neighbours, every message n contiguous
// bytes, tag = the direction in which the sender sends.
//
//   all:          for each expected message m: MPI_Irecv(recv[m], n, MPI_BYTE, m.sender, m.tag)
//                 for each direction d:        MPI_Isend(send[d], n, MPI_BYTE, neighbour(d), d)
//                 MPI_Waitall
//   single:       the same, but only the process at (1,1) sends; its neighbours receive
//   phased:       for phase p = 0 .. P-1:
//                   MPI_Irecv the messages whose sender has colour p
//                   if my colour is p: MPI_Isend all my messages
//                   MPI_Waitall
//   persistent:   once MPI_Recv_init / MPI_Send_init as in `all`;
//                 per exchange MPI_Startall, MPI_Waitall
//   irecv-first:  MPI_Irecv all; MPI_Barrier; MPI_Isend all; MPI_Waitall
//   sendrecv:     for each direction d: MPI_Sendrecv(send[d] to neighbour(d), tag d,
//                                                   recv from neighbour(-d), tag d)
//
// Who sends what in which phase comes from plan_messages (mesh.hpp).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "halox_programs/halo2d/mesh.hpp"

namespace halox::halo2d {

struct peer_transfer {
  int direction = 0;  // tag
  int peer = 0;       // rank in the kernel's communicator
  int phase = 0;
};

struct exchange_messages {
  std::vector<peer_transfer> sends, receives;
  int phases = 1;
  int neighbor_count = 2;
};

// Runs one test's exchange on fixed buffers: one per send and one per receive,
// in the order of the messages, each at least `bytes` long.
class exchange_kernel {
 public:
  exchange_kernel(MPI_Comm comm, test_kind test, exchange_messages messages,
                  std::vector<std::byte*> send_buffers, std::vector<std::byte*> receive_buffers,
                  std::size_t bytes);
  exchange_kernel(const exchange_kernel&) = delete;
  exchange_kernel& operator=(const exchange_kernel&) = delete;
  ~exchange_kernel();

  void run(int repetitions);
  // One exchange; the status of every receive, in the order of the messages.
  std::vector<MPI_Status> run_once_with_statuses();

 private:
  void exchange(std::vector<MPI_Status>* receive_statuses);
  void exchange_immediate(std::vector<MPI_Status>* receive_statuses);
  void exchange_persistent(std::vector<MPI_Status>* receive_statuses);
  void exchange_sendrecv(std::vector<MPI_Status>* receive_statuses);

  MPI_Comm comm_;
  test_kind test_;
  exchange_messages messages_;
  std::vector<std::byte*> send_buffers_, receive_buffers_;
  int count_;                                                   // bytes, as MPI counts them
  std::vector<std::vector<int>> phase_receives_, phase_sends_;  // indices per phase
  std::vector<int> send_of_direction_, receive_of_direction_;   // -1: none (sendrecv)
  std::vector<MPI_Request> requests_;
  std::vector<MPI_Status> statuses_;
};

}  // namespace halox::halo2d
