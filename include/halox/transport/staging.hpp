// The packed side of the message transports (mpi-p2p, ucx): the messages of
// a stage packed into one buffer reused by every stage (sized for the
// largest, so it stays in cache), with copy lists built once.
//
// Reference algorithm of a stage (the transports' shape):
//   post the receive of every message
//   for every send: pack it into its part of the buffer, send it
//   do the stage's self copies
//   as each receive lands: unpack it
//   complete every send
#pragma once

#include <cstddef>
#include <vector>

#include "halox/pack.hpp"
#include "halox/transport.hpp"

namespace halox {

struct staged_message {
  const message* m = nullptr;  // of the plan
  std::byte* buffer = nullptr;
  copy_list copies;  // sends: the boxes -> buffer (pack); receives: buffer -> the boxes
};

struct staged_stage {
  std::vector<staged_message> sends, recvs;
  copy_list self_copies;
};

class staging {
 public:
  staging(const exchange_plan& plan, const field_set& fields);
  staging(const staging&) = delete;
  staging& operator=(const staging&) = delete;
  ~staging();

  const std::vector<staged_stage>& stages() const { return stages_; }

 private:
  std::byte* buffer_ = nullptr;
  std::vector<staged_stage> stages_;
};

}  // namespace halox
