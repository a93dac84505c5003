// Routing by locality, as composition: the plan's messages are split by node
// membership; on-node messages and self copies go to one transport, the rest
// to another.
//
// Reference algorithm per stage s:
//   start: remote.start(s); local.start(s)     (off-node messages in flight first)
//   wait:  local.wait(s);   remote.wait(s)
#pragma once

#include <memory>

#include "halox/transport/registry.hpp"

namespace halox {

// The messages of `plan` whose peer is (on_node = true) or is not on this
// rank's node; self copies go with the on-node part.
exchange_plan split_plan(const exchange_plan& plan, const node_membership& node, bool on_node);

class routed_transport final : public transport {
 public:
  routed_transport(const transport_context& ctx, const transport_entry& local,
                   const transport_entry& remote);
  void start(size_t stage) override;
  void wait(size_t stage) override;
  std::string name() const override { return local_->name() + "+" + remote_->name(); }
  std::string path() const override { return local_->path() + "+" + remote_->path(); }

 private:
  exchange_plan local_plan_, remote_plan_;
  std::unique_ptr<transport> local_, remote_;
};

}  // namespace halox
