#include "halox_programs/halo2d/kernels.hpp"

#include <algorithm>
#include <utility>

namespace halox::halo2d {

exchange_kernel::exchange_kernel(MPI_Comm comm, test_kind test, exchange_messages messages,
                                 std::vector<std::byte*> send_buffers,
                                 std::vector<std::byte*> receive_buffers, std::size_t bytes)
    : comm_(comm),
      test_(test),
      messages_(std::move(messages)),
      send_buffers_(std::move(send_buffers)),
      receive_buffers_(std::move(receive_buffers)),
      count_(static_cast<int>(bytes)) {
  const auto& sends = messages_.sends;
  const auto& receives = messages_.receives;
  phase_receives_.resize(static_cast<size_t>(messages_.phases));
  phase_sends_.resize(static_cast<size_t>(messages_.phases));
  for (size_t i = 0; i < receives.size(); ++i)
    phase_receives_[static_cast<size_t>(receives[i].phase)].push_back(static_cast<int>(i));
  for (size_t i = 0; i < sends.size(); ++i)
    phase_sends_[static_cast<size_t>(sends[i].phase)].push_back(static_cast<int>(i));

  send_of_direction_.assign(static_cast<size_t>(messages_.neighbor_count), -1);
  receive_of_direction_.assign(static_cast<size_t>(messages_.neighbor_count), -1);
  for (size_t i = 0; i < sends.size(); ++i)
    send_of_direction_[static_cast<size_t>(sends[i].direction)] = static_cast<int>(i);
  for (size_t i = 0; i < receives.size(); ++i)
    receive_of_direction_[static_cast<size_t>(receives[i].direction)] = static_cast<int>(i);

  requests_.assign(sends.size() + receives.size(), MPI_REQUEST_NULL);
  statuses_.resize(requests_.size());
  if (test_ == test_kind::persistent) {
    // Receives first, as in `all`, so that Startall posts them before the sends.
    size_t r = 0;
    for (size_t i = 0; i < receives.size(); ++i)
      MPI_Recv_init(receive_buffers_[i], count_, MPI_BYTE, receives[i].peer, receives[i].direction,
                    comm_, &requests_[r++]);
    for (size_t i = 0; i < sends.size(); ++i)
      MPI_Send_init(send_buffers_[i], count_, MPI_BYTE, sends[i].peer, sends[i].direction, comm_,
                    &requests_[r++]);
  }
}

exchange_kernel::~exchange_kernel() {
  if (test_ != test_kind::persistent) return;
  for (auto& request : requests_)
    if (request != MPI_REQUEST_NULL) MPI_Request_free(&request);
}

void exchange_kernel::run(int repetitions) {
  for (int rep = 0; rep < repetitions; ++rep) exchange(nullptr);
}

std::vector<MPI_Status> exchange_kernel::run_once_with_statuses() {
  std::vector<MPI_Status> receive_statuses(messages_.receives.size());
  exchange(&receive_statuses);
  return receive_statuses;
}

void exchange_kernel::exchange(std::vector<MPI_Status>* receive_statuses) {
  switch (test_) {
    case test_kind::persistent:
      return exchange_persistent(receive_statuses);
    case test_kind::sendrecv:
      return exchange_sendrecv(receive_statuses);
    default:
      return exchange_immediate(receive_statuses);
  }
}

// single, all, phased and irecv-first: they differ only in the messages, the
// number of phases and the barrier.
void exchange_kernel::exchange_immediate(std::vector<MPI_Status>* receive_statuses) {
  const auto& sends = messages_.sends;
  const auto& receives = messages_.receives;
  for (int phase = 0; phase < messages_.phases; ++phase) {
    const auto& phase_receives = phase_receives_[static_cast<size_t>(phase)];
    const auto& phase_sends = phase_sends_[static_cast<size_t>(phase)];
    int posted = 0;
    for (int i : phase_receives)
      MPI_Irecv(receive_buffers_[static_cast<size_t>(i)], count_, MPI_BYTE,
                receives[static_cast<size_t>(i)].peer, receives[static_cast<size_t>(i)].direction,
                comm_, &requests_[static_cast<size_t>(posted++)]);
    if (test_ == test_kind::irecv_first) MPI_Barrier(comm_);
    for (int i : phase_sends)
      MPI_Isend(send_buffers_[static_cast<size_t>(i)], count_, MPI_BYTE,
                sends[static_cast<size_t>(i)].peer, sends[static_cast<size_t>(i)].direction, comm_,
                &requests_[static_cast<size_t>(posted++)]);
    if (!receive_statuses) {
      MPI_Waitall(posted, requests_.data(), MPI_STATUSES_IGNORE);
      continue;
    }
    MPI_Waitall(posted, requests_.data(), statuses_.data());
    for (size_t k = 0; k < phase_receives.size(); ++k)
      (*receive_statuses)[static_cast<size_t>(phase_receives[k])] = statuses_[k];
  }
}

void exchange_kernel::exchange_persistent(std::vector<MPI_Status>* receive_statuses) {
  int count = static_cast<int>(requests_.size());
  MPI_Startall(count, requests_.data());
  if (!receive_statuses) {
    MPI_Waitall(count, requests_.data(), MPI_STATUSES_IGNORE);
    return;
  }
  MPI_Waitall(count, requests_.data(), statuses_.data());
  std::copy_n(statuses_.begin(), receive_statuses->size(), receive_statuses->begin());
}

void exchange_kernel::exchange_sendrecv(std::vector<MPI_Status>* receive_statuses) {
  // Everybody sends towards d and receives from -d: every call is matched.
  static std::byte unused;
  for (int d = 0; d < messages_.neighbor_count; ++d) {
    int s = send_of_direction_[static_cast<size_t>(d)];
    int r = receive_of_direction_[static_cast<size_t>(d)];
    MPI_Status status;
    MPI_Sendrecv(s < 0 ? &unused : send_buffers_[static_cast<size_t>(s)], count_, MPI_BYTE,
                 s < 0 ? MPI_PROC_NULL : messages_.sends[static_cast<size_t>(s)].peer, d,
                 r < 0 ? &unused : receive_buffers_[static_cast<size_t>(r)], count_, MPI_BYTE,
                 r < 0 ? MPI_PROC_NULL : messages_.receives[static_cast<size_t>(r)].peer, d, comm_,
                 receive_statuses && r >= 0 ? &status : MPI_STATUS_IGNORE);
    if (receive_statuses && r >= 0) (*receive_statuses)[static_cast<size_t>(r)] = status;
  }
}

}  // namespace halox::halo2d
