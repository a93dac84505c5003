#include "transport/common/message_buffers.hpp"

#include <algorithm>
#include <cstdlib>
#include <new>

#include "common/yielding_mpi.hpp"
#include "transport/common/single_copy.hpp"

namespace halox {

namespace {
constexpr size_t alignment = 64;
size_t round_up(size_t n) {
  return (n + alignment - 1) / alignment * alignment;
}
}  // namespace

message_buffers::message_buffers(const exchange_plan& plan, const field_set& fields) {
  std::byte* const* f = fields.pointers.data();
  // Stages run one after another (a stage's sends complete in its wait), so
  // they share one buffer sized for the largest.
  size_t largest = 0;
  for (const auto& s : plan.stages) {
    size_t total = 0;
    for (const auto* list : {&s.recvs, &s.sends})
      for (const auto& m : *list) total += round_up(m.bytes);
    largest = std::max(largest, total);
  }
  buffer_ = static_cast<std::byte*>(std::aligned_alloc(alignment, round_up(largest) + alignment));
  if (!buffer_) throw std::bad_alloc();

  for (const auto& s : plan.stages) {
    buffered_stage st;
    std::byte* cursor = buffer_;
    for (const auto& m : s.recvs) {
      buffered_message piece{&m, cursor, {}};
      add_unpack(piece.copies, cursor, m.boxes, f, plan);
      cursor += round_up(m.bytes);
      st.recvs.push_back(std::move(piece));
    }
    for (const auto& m : s.sends) {
      buffered_message piece{&m, cursor, {}};
      add_pack(piece.copies, cursor, m.boxes, f, plan);
      cursor += round_up(m.bytes);
      st.sends.push_back(std::move(piece));
    }
    add_local_copies(st.self_copies, s.copies, f, plan);
    stages_.push_back(std::move(st));
  }
}

message_buffers::~message_buffers() {
  std::free(buffer_);
}

std::optional<fetch_ahead_choice> message_buffers::choose_fetch_ahead(transport& t,
                                                                      const exchange_plan& plan,
                                                                      std::optional<bool> forced,
                                                                      std::string_view forced_by,
                                                                      MPI_Comm comm) {
  std::vector<copy_list*> lists;
  for (auto& s : stages_) {
    for (auto& m : s.sends) lists.push_back(&m.copies);
    for (auto& m : s.recvs) lists.push_back(&m.copies);
    lists.push_back(&s.self_copies);
  }
  if (!forced) {
    int large =
        plan.bytes_sent() + plan.bytes_received() + plan.bytes_copied() >= fetch_ahead_min_bytes;
    yielding_allreduce(MPI_IN_PLACE, &large, 1, MPI_INT, MPI_MAX, comm);
    if (!large) return std::nullopt;  // as built: nothing fetched ahead
  }
  return halox::choose_fetch_ahead(t, plan.stages.size(), lists, forced, forced_by, comm);
}

}  // namespace halox
