// The library's set-up communication, completed by polling and yielding the
// core between polls. MPICH's blocking calls busy-poll without ever yielding:
// with more ranks than cores on a node (a laptop, a CI machine, a node shared
// with other jobs) each set-up collective then waits for the time slices of
// the ranks it needs. The nonblocking call completed here costs a rank with a
// core of its own nothing it would notice: set-up only, never on the path of
// an exchange or between timed regions.
#pragma once

#include <mpi.h>

namespace halox {

// Completes the request: MPI_Test, then sched_yield between polls.
void complete_yielding(MPI_Request& request, MPI_Status* status = MPI_STATUS_IGNORE);

// MPI_Allreduce, MPI_Bcast, ... with the same arguments, returning MPI_SUCCESS.
int yielding_allreduce(const void* send, void* receive, int count, MPI_Datatype type, MPI_Op op,
                       MPI_Comm comm);
int yielding_bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm);
int yielding_allgather(const void* send, int send_count, MPI_Datatype send_type, void* receive,
                       int receive_count, MPI_Datatype receive_type, MPI_Comm comm);
int yielding_allgatherv(const void* send, int send_count, MPI_Datatype send_type, void* receive,
                        const int receive_counts[], const int offsets[], MPI_Datatype receive_type,
                        MPI_Comm comm);
int yielding_gather(const void* send, int send_count, MPI_Datatype send_type, void* receive,
                    int receive_count, MPI_Datatype receive_type, int root, MPI_Comm comm);
int yielding_barrier(MPI_Comm comm);
// MPI_Probe: MPI_Iprobe until a message matches.
int yielding_probe(int source, int tag, MPI_Comm comm, MPI_Status* status);

}  // namespace halox
