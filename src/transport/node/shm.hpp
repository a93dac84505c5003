// shm: on-node neighbours by shared memory, without MPI messages (the ghexbench
// "xpmem" path, portably).
//
// When every rank of the node keeps its fields in node-shared memory
// (shared_fields), a reader copies its halo straight out of the neighbour's
// fields: one copy, no packing. A box of short x-runs (a halo of a few cells
// across x) would cost the reader a line from the owner's cache per run; such
// boxes the owner packs into its outbox (node-shared memory) and the
// reader unpacks contiguous bytes. Which run lengths go which way is measured
// when the transport is built: a few exchanges with every candidate rule (all
// direct, runs shorter than each run length of the plan through the outbox), the fastest
// on the slowest rank kept (HALOX_SHM_DIRECT_MIN_RUN=N forces "runs under N
// bytes through the outbox"). Fields in private memory go through the outbox entirely
// (path "shm(outbox)").
//
// Direct boxes are pulled by the reader or pushed by their owner into the
// reader's halo (the reader publishes its receive boxes then); each rule is
// measured both ways (HALOX_SHM_PUSH=0|1 forces one). Push, stage s:
//   start(s): ready[me] = seq(s); wait until ready[t] >= seq(s) for every
//             target t (its halos of stage s are free once it is in s);
//             copy my direct boxes into their halos; pushed[me] = seq(s)
//   wait(s):  also wait until pushed[p] >= seq(s) for every pusher p
//
// The outbox is a ring of stage-sized slots, taken in turn across exchanges
// (a rule has a schedule per phase), and a stage runs as single_copy.hpp
// describes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "halox/extend/pack.hpp"
#include "halox/extend/transport.hpp"
#include "transport/core/names.hpp"
#include "transport/common/node_signals.hpp"
#include "transport/common/single_copy.hpp"

namespace halox {

class shm_transport final : public single_copy_transport {
 public:
  // Collective over ctx.node.comm. Every peer of ctx.plan must be on this node.
  explicit shm_transport(const transport_context& ctx);
  ~shm_transport() override;  // waits until no reader still reads my outbox
  void start(size_t stage) override;
  void wait(size_t stage) override;
  std::string name() const override { return std::string(transport_names::shm); }
  std::string path() const override {
    return std::string(transport_names::shm) + (direct_ ? "" : "(outbox)");
  }
  std::string settings() const override;
  void tuning_as_built(transport_tuning& tuning) const override;

 private:
  struct stage_work {
    std::vector<int> peers;    // node ranks this stage reads from
    copy_list land;            // their direct boxes and outbox bytes, and my self copies
    std::vector<int> targets;  // push: node ranks whose halos I write in this stage
    copy_list push;            // push: my direct boxes into their halos
    std::vector<int> pushers;  // push: node ranks that write my halos in this stage
  };
  struct schedule {
    owner_side owner;
    std::vector<stage_work> stages;
  };
  using phases = std::vector<schedule>;  // of one rule: one, or one per slot of the ring
  // Which boxes go through the outbox, and who copies the others.
  struct rule {
    size_t outbox_below = 0;  // runs shorter than this many bytes through the outbox
    bool push = false;        // the owner writes its direct boxes into the reader's halo
  };

  // The schedules of one rule, a phase each (collective over the node:
  // publishes my send boxes, and my receive boxes when pushing).
  phases build(const rule& choice, std::string& problem);
  schedule build_phase(const rule& choice, size_t phase, uint64_t rule_id, std::string& problem);
  // Push: my direct boxes of `out` go into their readers' halos (collective
  // over the node: publishes my receive boxes).
  void add_pushes(const rule& choice, schedule& out, std::string& problem);
  // Collective over the node: the rule with the fastest trial exchanges.
  rule measured_rule(const std::vector<rule>& candidates);

  bool direct_ = false;                            // fields of the whole node in shared memory
  std::vector<std::vector<local_grid>> peer_grids_;  // by node rank, then field
  std::vector<std::vector<uint64_t>> peer_words_;  // by node rank: field offsets in the window
  phases work_;
  const phases* active_ = &work_;      // work_, or a candidate while they are measured
  const schedule* current_ = nullptr;  // the phase of the exchange under way
  rule rule_;
};

}  // namespace halox
