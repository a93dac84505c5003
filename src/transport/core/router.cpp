#include "transport/core/router.hpp"

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

// A transport with the plan it runs and the bytes it was handed.
struct routed_transport::part {
  exchange_plan plan;  // outlives mover, which keeps a reference
  std::unique_ptr<transport> mover;
  std::vector<transport_stats> per_stage;  // what one start(stage) sends
  transport_stats sent;

  part(exchange_plan p, const transport_context& ctx, const routed_part_maker& maker)
      : plan(std::move(p)) {
    mover = maker.make({plan, ctx.comm, ctx.fields, ctx.node, ctx.waits, ctx.tuning});
    sent.transport = maker.name;
    for (const auto& s : plan.stages) {
      transport_stats bytes;
      for (const auto& m : s.sends)
        (ctx.node.on_node(m.peer) ? bytes.bytes_to_same_node : bytes.bytes_to_other_nodes) += m.bytes;
      per_stage.push_back(bytes);
    }
  }
  void start(size_t stage) {
    mover->start(stage);
    sent.bytes_to_same_node += per_stage[stage].bytes_to_same_node;
    sent.bytes_to_other_nodes += per_stage[stage].bytes_to_other_nodes;
  }
};

namespace {
std::vector<char> busy_stages(const transport& t, size_t stages) {
  std::vector<char> busy(stages);
  for (size_t s = 0; s < stages; ++s) busy[s] = !t.idle(s);
  return busy;
}
}  // namespace

routed_transport::routed_transport(const transport_context& ctx, const routed_part_maker& only)
    : local_(std::make_unique<part>(ctx.plan, ctx, only)),
      local_busy_(busy_stages(*local_->mover, ctx.plan.stages.size())) {}

routed_transport::routed_transport(const transport_context& ctx, const routed_part_maker& local,
                                   const routed_part_maker& remote) {
  // Every rank builds both parts in the same order: their set-ups may be collective.
  remote_ = std::make_unique<part>(split_plan(ctx.plan, ctx.node, false), ctx, remote);
  local_ = std::make_unique<part>(split_plan(ctx.plan, ctx.node, true), ctx, local);
  local_busy_ = busy_stages(*local_->mover, ctx.plan.stages.size());
  remote_busy_ = busy_stages(*remote_->mover, ctx.plan.stages.size());
}

routed_transport::~routed_transport() = default;

void routed_transport::start(size_t stage) {
  if (remote_ && remote_busy_[stage]) remote_->start(stage);
  if (local_busy_[stage]) local_->start(stage);
}

void routed_transport::wait(size_t stage) {
  if (local_busy_[stage]) local_->mover->wait(stage);
  if (remote_ && remote_busy_[stage]) remote_->mover->wait(stage);
}

std::string routed_transport::name() const {
  return remote_ ? local_->mover->name() + "+" + remote_->mover->name() : local_->mover->name();
}

std::string routed_transport::path() const {
  return remote_ ? local_->mover->path() + "+" + remote_->mover->path() : local_->mover->path();
}

std::string routed_transport::settings() const {
  std::string out = local_->mover->settings();
  if (remote_ && !remote_->mover->settings().empty())
    out += (out.empty() ? "" : "; ") + remote_->mover->settings();
  return out;
}

void routed_transport::tuning_as_built(transport_tuning& tuning) const {
  local_->mover->tuning_as_built(tuning);
  if (remote_) remote_->mover->tuning_as_built(tuning);
}

std::vector<transport_stats> routed_transport::stats() const {
  if (!remote_) return {local_->sent};
  return {local_->sent, remote_->sent};
}

}  // namespace halox
