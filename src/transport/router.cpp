#include "halox/transport/router.hpp"

#include <algorithm>

namespace halox {

exchange_plan split_plan(const exchange_plan& plan, const node_membership& node, bool on_node) {
  exchange_plan part = plan;
  auto elsewhere = [&](const message& m) { return node.on_node(m.peer) != on_node; };
  for (auto& s : part.stages) {
    std::erase_if(s.sends, elsewhere);
    std::erase_if(s.recvs, elsewhere);
    if (!on_node) s.copies.clear();
  }
  return part;
}

routed_transport::routed_transport(const transport_context& ctx, const transport_entry& local,
                                   const transport_entry& remote)
    : local_plan_(split_plan(ctx.plan, ctx.node, true)),
      remote_plan_(split_plan(ctx.plan, ctx.node, false)) {
  // Every rank builds both parts in the same order: their set-ups may be collective.
  remote_ = remote.make({remote_plan_, ctx.comm, ctx.fields, ctx.node, ctx.waits});
  local_ = local.make({local_plan_, ctx.comm, ctx.fields, ctx.node, ctx.waits});
}

void routed_transport::start(size_t stage) {
  remote_->start(stage);
  local_->start(stage);
}

void routed_transport::wait(size_t stage) {
  local_->wait(stage);
  remote_->wait(stage);
}

}  // namespace halox
