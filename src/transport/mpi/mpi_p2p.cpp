#include "transport/mpi/mpi_p2p.hpp"
#include "transport/core/names.hpp"

#include "common/stage_timer.hpp"

namespace halox {

mpi_p2p_transport::mpi_p2p_transport(const transport_context& ctx)
    : waits_(ctx.waits), buffers_(ctx.plan, ctx.fields) {
  for (const auto& s : buffers_.stages()) {
    stage_requests r;
    for (const auto& m : s.recvs) {
      r.recvs.emplace_back();
      MPI_Recv_init(m.buffer, static_cast<int>(m.m->bytes), MPI_BYTE, m.m->peer, m.m->tag,
                    ctx.comm, &r.recvs.back());
    }
    for (const auto& m : s.sends) {
      r.sends.emplace_back();
      MPI_Send_init(m.buffer, static_cast<int>(m.m->bytes), MPI_BYTE, m.m->peer, m.m->tag,
                    ctx.comm, &r.sends.back());
    }
    stages_.push_back(std::move(r));
  }
  fetch_ahead_ = buffers_.choose_fetch_ahead(*this, ctx.plan, ctx.tuning.p2p.fetch_ahead,
                                            "tuning.p2p.fetch_ahead", ctx.comm);
}

mpi_p2p_transport::~mpi_p2p_transport() {
  for (auto& s : stages_) {
    for (auto& r : s.recvs) MPI_Request_free(&r);
    for (auto& r : s.sends) MPI_Request_free(&r);
  }
}

bool mpi_p2p_transport::idle(size_t stage) const {
  const buffered_stage& s = buffers_.stages()[stage];
  return s.sends.empty() && s.recvs.empty() && s.self_copies.empty();
}

void mpi_p2p_transport::start(size_t stage) {
  const buffered_stage& s = buffers_.stages()[stage];
  auto& r = stages_[stage];
  if (!r.recvs.empty()) MPI_Startall(static_cast<int>(r.recvs.size()), r.recvs.data());
  for (size_t i = 0; i < s.sends.size(); ++i) {
    {
      const stage_timer::part_span packing(stage_timer::pack);
      s.sends[i].copies.run();
    }
    MPI_Start(&r.sends[i]);
  }
  s.self_copies.run();
}

void mpi_p2p_transport::wait(size_t stage) {
  const buffered_stage& s = buffers_.stages()[stage];
  stage_requests& r = stages_[stage];
  // Unpack each message as soon as it lands; persistent requests stay
  // allocated (inactive) after completion.
  waits_.wait_all(
      r.recvs, [&](size_t i) { s.recvs[i].copies.run(); },
      [&](size_t i) { return describe_message(*s.recvs[i].m, "from", transport_names::mpi_p2p); });
  waits_.wait_all(r.sends, {}, [&](size_t i) { return describe_message(*s.sends[i].m, "to", transport_names::mpi_p2p); });
}

}  // namespace halox
