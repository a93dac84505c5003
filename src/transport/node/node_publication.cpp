#include "transport/node/node_publication.hpp"

#include <fmt/core.h>

#include <cstring>
#include <type_traits>

#include "halox/common/error.hpp"

namespace halox {

namespace {

// What every rank of a node tells the others once: its layout.
struct rank_layout {
  int interior[3] = {0, 0, 0};
  int halo_lo[3] = {0, 0, 0};
  int halo_hi[3] = {0, 0, 0};
};

template <class T>
std::vector<T> allgatherv(const std::vector<T>& mine, MPI_Comm comm) {
  static_assert(std::is_trivially_copyable_v<T>, "records travel as bytes");
  int size = 1;
  MPI_Comm_size(comm, &size);
  int bytes = static_cast<int>(mine.size() * sizeof(T));
  std::vector<int> counts(static_cast<size_t>(size)), displs(static_cast<size_t>(size));
  MPI_Allgather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    displs[static_cast<size_t>(r)] = total;
    total += counts[static_cast<size_t>(r)];
  }
  std::vector<T> all(static_cast<size_t>(total) / sizeof(T));
  MPI_Allgatherv(mine.data(), bytes, MPI_BYTE, all.data(), counts.data(), displs.data(), MPI_BYTE,
                 comm);
  return all;
}

}  // namespace

void require_on_node(const transport_context& ctx, std::string_view transport) {
  int me = 0;
  MPI_Comm_rank(ctx.comm, &me);
  std::string problem;
  for (const auto& s : ctx.plan.stages)
    for (const auto* list : {&s.sends, &s.recvs})
      for (const auto& m : *list)
        if (!ctx.node.on_node(m.peer))
          problem = fmt::format(
              "transport {} reaches only ranks of the same node, but rank {} "
              "is not on rank {}'s node",
              transport, m.peer, me);
  require_all(ctx.comm, problem);
}

std::vector<node_layout> gather_layouts(const local_grid& mine, const std::vector<uint64_t>& words,
                                        MPI_Comm node_comm) {
  std::vector<std::byte> my_record(sizeof(rank_layout) + words.size() * sizeof(uint64_t));
  rank_layout l;
  for (int d = 0; d < 3; ++d) {
    l.interior[d] = mine.interior[d];
    l.halo_lo[d] = mine.halo.lo[d];
    l.halo_hi[d] = mine.halo.hi[d];
  }
  std::memcpy(my_record.data(), &l, sizeof l);
  if (!words.empty())
    std::memcpy(my_record.data() + sizeof l, words.data(), words.size() * sizeof(uint64_t));
  auto records = allgatherv(my_record, node_comm);
  std::vector<node_layout> out(records.size() / my_record.size());
  for (size_t r = 0; r < out.size(); ++r) {
    const std::byte* record = records.data() + r * my_record.size();
    std::memcpy(&l, record, sizeof l);
    out[r].grid = local_grid(ivec3{l.interior[0], l.interior[1], l.interior[2]},
                             halo_widths{{l.halo_lo[0], l.halo_lo[1], l.halo_lo[2]},
                                         {l.halo_hi[0], l.halo_hi[1], l.halo_hi[2]}});
    out[r].words.resize(words.size());
    if (!words.empty())
      std::memcpy(out[r].words.data(), record + sizeof l, words.size() * sizeof(uint64_t));
  }
  return out;
}

node_publication::node_publication(const std::vector<published_box>& mine, MPI_Comm node_comm,
                                   int me)
    : me_(me) {
  for (const auto& p : allgatherv(mine, node_comm))
    if (p.receiver == me) to_me_.push_back(p);
  for (const auto& p : to_me_) by_message_[{p.stage, p.sender, p.tag}].push_back(&p);
}

std::vector<const published_box*> node_publication::boxes_of(size_t stage, const message& m,
                                                             std::string& problem) const {
  auto entry = by_message_.find({static_cast<int>(stage), m.peer, m.tag});
  if (entry == by_message_.end() || entry->second.size() != m.boxes.size()) {
    problem = fmt::format(
        "rank {}: rank {} publishes no matching boxes for direction "
        "({},{},{}) in stage {}",
        me_, m.peer, m.direction[0], m.direction[1], m.direction[2], stage);
    return {};
  }
  const auto& found = entry->second;
  for (size_t i = 0; i < found.size(); ++i) {
    const auto& to = m.boxes[i];
    if (found[i]->index != static_cast<int>(i) || found[i]->field != to.field ||
        found[i]->region().volume() != to.region.volume()) {
      problem = fmt::format(
          "rank {}: the boxes of rank {} do not match mine for direction "
          "({},{},{}); do the ranks agree on the sub-domain sizes?",
          me_, m.peer, m.direction[0], m.direction[1], m.direction[2]);
      return {};
    }
  }
  return found;
}

}  // namespace halox
