// What the single-copy transports (shm, cma) share: which of an owner's send
// boxes go through its outbox, where, their publication to the readers, and
// the order of a stage.
//
// A box whose runs are short (a halo a few cells wide across x) costs a
// reader a cache line, or a kernel iovec, per run; its owner packs it into an
// outbox instead and the reader takes contiguous bytes. Which run lengths go
// which way is a rule, "runs shorter than N bytes go through the outbox"; the candidate
// rules are all-direct and one per distinct run length of the plan, and the
// transports measure them when they are built (trial.hpp).
//
// The outbox is a ring of a few stage-sized slots, taken in turn by the
// outbox stages, those that pack something into it (a stage moves one block
// of fields, plan.hpp). A slot is reused only outbox_ring outbox stages later,
// so that the owner's stores are less likely to find its lines still in the
// reader's cache. A rotating owner (shm) keeps counting across exchanges: the k-th of its S
// outbox stages in exchange e takes slot (e*S + k) mod outbox_ring, so that
// an owner with one outbox stage per exchange (a 2x1x1 grid, one block)
// does not pack into the slot its reader has just read (the owner's stores
// would take every line back from the reader's cache; docs/results/2026-11-25-amd-epyc-2core.md).
// The schedule of exchange e is then phase e mod outbox_ring of the rule, each phase with its own
// slots; others (cma) use slot k mod outbox_ring in every exchange.
//
// Reference algorithm of stage j of an exchange; seq(j) = stages of earlier
// exchanges + j + 1, freed(j) = the stage that last used slot(j) (in this
// exchange or in one of the last few; if those ran another rule, every stage
// of the previous exchange):
//   start(j): if freed(j) exists: wait until done[r] >= seq(freed(j))
//             for every reader r; pack my outbox boxes into slot(j)
//             ready[me] = seq(j)           (and my cells for stage j are final)
//   wait(j):  wait until ready[p] >= seq(j) for every peer p of the stage
//             take p's direct boxes and its slot(j); do my self copies
//             done[me] = seq(j)
//   after the last stage: wait until done[r] >= seq(the last stage r reads
//                         my cells in place) for every such reader r
//                         (nobody still reads my cells when the caller may
//                         change them; readers of my outbox only are waited
//                         for when a slot is packed again)
// Stages only read cells that earlier stages finished and only write halos
// that no peer reads in the same stage, so these two counters are the only sync.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "halox/extend/pack.hpp"
#include "halox/extend/transport.hpp"
#include "transport/common/fetch_ahead.hpp"
#include "transport/common/node_publication.hpp"
#include "transport/common/node_signals.hpp"

namespace halox {

inline constexpr size_t outbox_ring = 3;
inline constexpr size_t outbox_every_box = std::numeric_limits<size_t>::max();

// The bytes an outbox slot needs: the most any rule packs into the outbox in one stage.
size_t outbox_slot_bytes(const exchange_plan& plan);

// Collective over node_comm: the candidate rules, agreed by the node: 0
// (every box direct) and r + 1 for every distinct run length r up to 4 KiB
// of the send boxes (runs merged across whole rows and planes).
std::vector<size_t> outbox_rules(const exchange_plan& plan, const field_set& fields,
                                 MPI_Comm node_comm);

// My send boxes under one rule, published to the readers.
struct owner_side {
  std::vector<copy_list> packs;  // by stage: my outbox boxes -> their outbox slot
  // By stage: freed(j) above, `freed_back` exchanges before this one (0: this
  // one; -1: the slot was never used before), stage `freed_stage` of it.
  std::vector<int> freed_back, freed_stage;
  std::vector<int> readers;  // node ranks that read my boxes
  // Readers of my cells in place (direct boxes, pulled), each with the last
  // stage it reads them in.
  std::vector<std::pair<int, size_t>> direct_reads;
  uint64_t rule = 0;                              // the rule's phases share it (unique per process)
  std::unique_ptr<node_publication> publication;  // the boxes the node sends me
};

// Which slots an owner's outbox stages take (above): rotating or not, the
// phase (exchange mod outbox_ring) when rotating, and the rule the phases
// belong to (0: a new one).
struct slot_rotation {
  bool rotating = false;
  size_t phase = 0;
  uint64_t rule = 0;
};

// An owner's outbox under one rule: boxes with runs shorter than `below`
// bytes (outbox_every_box: all) are packed into slot(stage) of the outbox at
// `base` (in this process), `slot_bytes` per slot.
struct outbox_place {
  size_t below = 0;
  std::byte* base = nullptr;
  size_t slot_bytes = 0;
};

// Collective over node.comm: my send boxes under the rule, published.
owner_side publish_send_boxes(const exchange_plan& plan, const field_set& fields,
                              const node_membership& node, const std::vector<int>& neighbours,
                              int me, const outbox_place& outbox, const slot_rotation& rotation = {});

// "runs under N B through the outbox, the rest direct (how)", for settings().
std::string describe_rule(std::string_view transport, size_t outbox_below, const std::string& how);

// The order of a stage (above) over node_signals.
class single_copy_order {
 public:
  single_copy_order(node_signals& signals, size_t stages) : signals_(signals), stages_(stages) {}
  // Before packing stage s: its outbox slot has been read by every reader
  // (freed(s) above, of this exchange or the previous one).
  void before_pack(size_t stage, const owner_side& owner) const;
  void ready(size_t stage) const { signals_.raise_ready(seq(stage)); }
  // Push mode: I wrote stage s into my targets' halos (each has raised ready for s).
  void pushed(size_t stage) const { signals_.raise_pushed(seq(stage)); }
  void await_pushed(size_t stage, const std::vector<int>& pushers) const {
    for (int p : pushers) signals_.wait_pushed(p, seq(stage));
  }
  // Returns when every peer (or the one peer) made stage s ready.
  void await(size_t stage, const std::vector<int>& peers) const;
  void await(size_t stage, int peer) const { signals_.wait_ready(peer, seq(stage)); }
  // After reading stage s; after the last stage, waits for the readers of my
  // cells in place.
  void done(size_t stage, const owner_side& owner);
  // Before the outbox or the fields go away: every reader is through.
  void drain(const owner_side& owner) const;
  // Exchanges completed (the same count on every rank: they are collective).
  uint64_t exchanges() const { return stages_ ? completed_ / stages_ : 0; }

 private:
  uint64_t seq(size_t stage) const { return completed_ + stage + 1; }
  node_signals& signals_;
  size_t stages_ = 0;
  uint64_t completed_ = 0;  // stages of completed exchanges
  uint64_t rule_ = 0;       // owner_side::rule of the last exchanges
  uint64_t rule_runs_ = 0;  // how many exchanges in a row ran it
};

// What the single-copy transports (shm, cma) share: the plan and the node
// they serve, their outbox slots, the ready/done signals that order their
// stages, and what they chose when built (the outbox rule, fetching ahead).
class single_copy_transport : public transport {
 protected:
  // Collective over ctx.comm: every peer of ctx.plan must be on this node.
  single_copy_transport(const transport_context& ctx, std::string_view transport);
  // Collective over the node: the signals, with payload_bytes of node-shared
  // memory beside them (shm's outbox), and the order of the stages over them.
  void start_signals(size_t payload_bytes = 0);
  // "NAME: <the outbox rule> (how_)<extra>; <fetching ahead>", for settings().
  std::string describe_choices(size_t outbox_below, std::string_view extra = {}) const;

  const exchange_plan& plan_;
  const field_set& fields_;
  const wait_policy& waits_;
  const node_membership& node_;
  const std::string transport_;
  const std::vector<int> neighbours_;    // node ranks of my peers (node_neighbours)
  int me_ = 0;                           // rank in the exchange's communicator
  size_t slot_bytes_ = 0;                // of each outbox slot
  std::optional<node_signals> signals_;  // ready/done counters (and shm's outbox)
  std::optional<single_copy_order> order_;
  std::string how_;  // how the outbox rule was chosen
  fetch_ahead_choice fetch_ahead_;
};

}  // namespace halox
