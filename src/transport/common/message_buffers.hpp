// The packed side of the message transports (mpi-p2p, ucx): the messages of
// a stage packed into one buffer reused by every stage (sized for the
// largest, so it stays in cache), with copy lists built once. Short strided
// runs (x faces) are fetched ahead where that measures faster: fields in
// memory gain, fields in the cache lose (docs/results/).
//
// Reference algorithm of a stage (the transports' shape):
//   post the receive of every message
//   for every send: pack it into its part of the buffer, send it
//   do the stage's self copies
//   as each receive lands: unpack it
//   complete every send
#pragma once

#include <mpi.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "halox/extend/pack.hpp"
#include "halox/extend/transport.hpp"
#include "transport/common/fetch_ahead.hpp"

namespace halox {

struct buffered_message {
  const message* m = nullptr;  // of the plan
  std::byte* buffer = nullptr;
  copy_list copies;  // sends: the boxes -> buffer (pack); receives: buffer -> the boxes
};

struct buffered_stage {
  std::vector<buffered_message> sends, recvs;
  copy_list self_copies;
};

class message_buffers {
 public:
  message_buffers(const exchange_plan& plan, const field_set& fields);
  message_buffers(const message_buffers&) = delete;
  message_buffers& operator=(const message_buffers&) = delete;
  ~message_buffers();

  const std::vector<buffered_stage>& stages() const { return stages_; }

  // Collective over comm: whether the packs, unpacks and self copies fetch
  // short strided runs ahead (copy_list::fetch_ahead), and how that was
  // decided. As `forced` says when set (=0|1); otherwise measured with the
  // exchanges of `t` (trial.hpp) where some rank moves at least
  // fetch_ahead_min_bytes per exchange, and off where none does: a halo that
  // small stays in the cache, where fetching ahead measured slower.
  static constexpr size_t fetch_ahead_min_bytes = size_t{2} << 20;
  // Empty where no rank moves that much (nothing fetched ahead, nothing measured).
  std::optional<fetch_ahead_choice> choose_fetch_ahead(transport& t, const exchange_plan& plan,
                                                       std::optional<bool> forced,
                                                       std::string_view forced_by, MPI_Comm comm);

 private:
  std::byte* buffer_ = nullptr;
  std::vector<buffered_stage> stages_;
};

}  // namespace halox
