// Routing by locality, as composition: the plan's messages are split by node
// membership; on-node messages and self copies go to one transport, the rest
// to another. Every transport choice runs under a router, also a single
// transport (one part, the whole plan), so that every choice counts the bytes
// it sends to this node and to other nodes alike.
//
// Reference algorithm per stage s:
//   start: remote.start(s); local.start(s)     (off-node messages in flight first)
//   wait:  local.wait(s);   remote.wait(s)
// (a part idle in stage s on this rank, transport::idle, is not called)
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "halox/extend/transport.hpp"

namespace halox {

// The messages of `plan` whose peer is (on_node = true) or is not on this
// rank's node; self copies go with the on-node part.
exchange_plan split_plan(const exchange_plan& plan, const node_membership& node, bool on_node);

// A transport to build: its registry name and constructor.
struct routed_part_maker {
  std::string name;
  const transport_factory& make;
};

class routed_transport final : public transport {
 public:
  // One transport for every message and copy.
  routed_transport(const transport_context& ctx, const routed_part_maker& only);
  routed_transport(const transport_context& ctx, const routed_part_maker& local,
                   const routed_part_maker& remote);
  ~routed_transport() override;
  void start(size_t stage) override;
  void wait(size_t stage) override;
  std::string name() const override;
  std::string path() const override;
  std::string settings() const override;
  void tuning_as_built(transport_tuning& tuning) const override;
  std::vector<transport_stats> stats() const override;

 private:
  struct part;
  std::unique_ptr<part> local_, remote_;  // remote_ is null for a single transport
  // By stage: whether each part has work on this rank (transport::idle), read here so that
  // a part without any is not touched.
  std::vector<char> local_busy_, remote_busy_;
};

}  // namespace halox
