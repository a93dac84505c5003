// ucx: pack each neighbour's boxes (all fields fused) into one buffer, UCP tag
// send/receive, progress driven from wait(), unpack as receives land.
//
// Reference algorithm per stage:
//   for m in recvs: ucp_tag_recv_nbx(buf[m], tag = (channel of m.peer here, m.tag))
//   for m in sends: pack(m.boxes -> buf[m]);
//                   ucp_tag_send_nbx(ep[m.peer], buf[m], tag = (our channel at m.peer, m.tag))
//   for c in copies: copy c.from -> c.to
//   while messages pending: ucp_worker_progress; unpack(buf[m] -> m.boxes) as each lands
//     (oversubscribed: yield, and sleep on the worker's event fd when idle)
//
// Set-up, once per exchange and O(neighbours): each rank sends every distinct
// peer its worker address and the channel id it receives that peer's messages
// on (MPI point-to-point); endpoints are created once per peer worker. The
// UCP context and worker are shared by all exchanges of the process, created
// on first use and released when MPI_Finalize begins. Channel ids are unique
// per process, so exchanges on any communicators never match each other's
// messages, and a peer that is a neighbour in several directions is told apart
// by the message tag (unique per field slot and direction).
//
// UCX picks its own transports (UCX_TLS, unset: all it finds) for this
// context; nothing is set process-wide, so an MPI library running on UCX
// keeps its own configuration.
#pragma once

#include <memory>
#include <string>

#include "halox/extend/transport.hpp"

namespace halox {

// Why the ucx transport cannot run here (built without UCX, or UCX cannot
// open a worker on this machine); empty when it can.
std::string ucx_transport_unavailable();

std::unique_ptr<transport> make_ucx_transport(const transport_context& ctx);

}  // namespace halox
