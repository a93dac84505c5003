#include "common/yielding_mpi.hpp"

#include <sched.h>

namespace halox {

namespace {

// Polls before the first yield: a collective among ranks with cores of their
// own usually completes within them.
constexpr int polls_before_yield = 64;

void pause_after(int polls) {
  if (polls >= polls_before_yield) sched_yield();
}

}  // namespace

void complete_yielding(MPI_Request& request, MPI_Status* status) {
  for (int polls = 0;; ++polls) {
    int done = 0;
    MPI_Test(&request, &done, status);
    if (done) return;
    pause_after(polls);
  }
}

int yielding_allreduce(const void* send, void* receive, int count, MPI_Datatype type, MPI_Op op,
                       MPI_Comm comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallreduce(send, receive, count, type, op, comm, &request);
  complete_yielding(request);
  return MPI_SUCCESS;
}

int yielding_bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibcast(buffer, count, type, root, comm, &request);
  complete_yielding(request);
  return MPI_SUCCESS;
}

int yielding_allgather(const void* send, int send_count, MPI_Datatype send_type, void* receive,
                       int receive_count, MPI_Datatype receive_type, MPI_Comm comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallgather(send, send_count, send_type, receive, receive_count, receive_type, comm, &request);
  complete_yielding(request);
  return MPI_SUCCESS;
}

int yielding_allgatherv(const void* send, int send_count, MPI_Datatype send_type, void* receive,
                        const int receive_counts[], const int offsets[], MPI_Datatype receive_type,
                        MPI_Comm comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallgatherv(send, send_count, send_type, receive, receive_counts, offsets, receive_type, comm,
                  &request);
  complete_yielding(request);
  return MPI_SUCCESS;
}

int yielding_gather(const void* send, int send_count, MPI_Datatype send_type, void* receive,
                    int receive_count, MPI_Datatype receive_type, int root, MPI_Comm comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Igather(send, send_count, send_type, receive, receive_count, receive_type, root, comm,
              &request);
  complete_yielding(request);
  return MPI_SUCCESS;
}

int yielding_barrier(MPI_Comm comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibarrier(comm, &request);
  complete_yielding(request);
  return MPI_SUCCESS;
}

int yielding_probe(int source, int tag, MPI_Comm comm, MPI_Status* status) {
  for (int polls = 0;; ++polls) {
    int found = 0;
    MPI_Iprobe(source, tag, comm, &found, status);
    if (found) return MPI_SUCCESS;
    pause_after(polls);
  }
}

}  // namespace halox
