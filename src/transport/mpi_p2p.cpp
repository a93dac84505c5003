#include "halox/transport/mpi_p2p.hpp"

#include <algorithm>
#include <cstdlib>
#include <new>

#include "halox/pack.hpp"

namespace halox {

namespace {
constexpr size_t buffer_alignment = 64;
size_t round_up(size_t n) { return (n + buffer_alignment - 1) / buffer_alignment * buffer_alignment; }
}  // namespace

mpi_p2p_transport::mpi_p2p_transport(const transport_context& ctx)
    : plan_(ctx.plan), fields_(ctx.fields.pointers), waits_(ctx.waits) {
  const exchange_plan& plan = ctx.plan;
  MPI_Comm comm = ctx.comm;
  // Stages run one after another (a stage's sends complete in its wait), so
  // they share one buffer sized for the largest: it stays warm in cache.
  size_t largest = 0;
  for (const auto& s : plan.stages) {
    size_t total = 0;
    for (const auto& m : s.recvs) total += round_up(m.bytes);
    for (const auto& m : s.sends) total += round_up(m.bytes);
    largest = std::max(largest, total);
  }
  buffer_ = static_cast<std::byte*>(std::aligned_alloc(buffer_alignment, round_up(largest) + buffer_alignment));
  if (!buffer_) throw std::bad_alloc();
  for (const auto& s : plan.stages) {
    std::byte* cursor = buffer_;
    stage_requests r;
    for (const auto& m : s.recvs) {
      r.recv_buffers.push_back(cursor);
      r.recvs.emplace_back();
      MPI_Recv_init(cursor, static_cast<int>(m.bytes), MPI_BYTE, m.peer, m.tag, comm, &r.recvs.back());
      cursor += round_up(m.bytes);
    }
    for (const auto& m : s.sends) {
      r.send_buffers.push_back(cursor);
      r.sends.emplace_back();
      MPI_Send_init(cursor, static_cast<int>(m.bytes), MPI_BYTE, m.peer, m.tag, comm, &r.sends.back());
      cursor += round_up(m.bytes);
    }
    stages_.push_back(std::move(r));
  }
}

mpi_p2p_transport::~mpi_p2p_transport() {
  for (auto& s : stages_) {
    for (auto& r : s.recvs) MPI_Request_free(&r);
    for (auto& r : s.sends) MPI_Request_free(&r);
  }
  std::free(buffer_);
}

void mpi_p2p_transport::start(size_t stage_index) {
  const stage& s = plan_.stages[stage_index];
  stage_requests& r = stages_[stage_index];
  if (!r.recvs.empty()) MPI_Startall(static_cast<int>(r.recvs.size()), r.recvs.data());
  for (size_t i = 0; i < s.sends.size(); ++i) {
    pack(r.send_buffers[i], s.sends[i].boxes, fields_.data(), plan_.grid, plan_.element_bytes);
    MPI_Start(&r.sends[i]);
  }
  for (const auto& c : s.copies) copy_boxes(c.from, c.to, fields_.data(), plan_.grid, plan_.element_bytes);
}

void mpi_p2p_transport::wait(size_t stage_index) {
  const stage& s = plan_.stages[stage_index];
  stage_requests& r = stages_[stage_index];
  // Unpack each message as soon as it lands; persistent requests stay
  // allocated (inactive) after completion.
  waits_.wait_all(
      r.recvs,
      [&](size_t i) {
        unpack(r.recv_buffers[i], s.recvs[i].boxes, fields_.data(), plan_.grid, plan_.element_bytes);
      },
      [&](size_t i) { return describe_message(s.recvs[i], "from", "mpi-p2p"); });
  waits_.wait_all(r.sends, {}, [&](size_t i) { return describe_message(s.sends[i], "to", "mpi-p2p"); });
}

}  // namespace halox
