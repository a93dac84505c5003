#include "transport/cuda/peer_reads.hpp"

#include <algorithm>

namespace halox::device {

std::vector<peer_stage> plan_peer_reads(
    const transport_context& ctx, const std::vector<node_layout>& layouts,
    const std::function<const std::byte*(int peer, int field)>& field_of, std::string& problem) {
  const exchange_plan& plan = ctx.plan;
  int me = 0;
  MPI_Comm_rank(ctx.comm, &me);
  std::vector<published_box> published;
  for (size_t s = 0; s < plan.stages.size(); ++s)
    for (const auto& m : plan.stages[s].sends)
      for (size_t i = 0; i < m.boxes.size(); ++i)
        published.push_back(published_box_of(static_cast<int>(s), me, m, i));
  const node_publication publication(published, ctx.node, me, node_neighbours(plan, ctx.node));

  std::vector<peer_stage> out;
  std::byte* const* fields = ctx.fields.pointers.data();
  for (size_t s = 0; s < plan.stages.size() && problem.empty(); ++s) {
    const stage& st = plan.stages[s];
    peer_stage w;
    for (const auto& m : st.recvs) {
      const auto owner_boxes = publication.boxes_of(s, m, problem);
      if (!problem.empty()) break;
      if (std::ranges::find(w.owners, m.peer) == w.owners.end()) w.owners.push_back(m.peer);
      const int owner = ctx.node.node_rank_of[static_cast<size_t>(m.peer)];
      const node_layout& owner_layout = layouts[static_cast<size_t>(owner)];
      for (size_t i = 0; i < m.boxes.size(); ++i) {
        const published_box& p = *owner_boxes[i];
        const int f = m.boxes[i].field;
        w.reads.add(field_copy(field_of(m.peer, p.field), owner_layout.grid_of(p.field),
                               p.region(), fields[f], plan.grid_of(f), m.boxes[i].region,
                               plan.element_bytes_of(f)));
      }
    }
    for (const auto& m : st.sends)
      if (std::ranges::find(w.readers, m.peer) == w.readers.end()) w.readers.push_back(m.peer);
    w.local = local_copy_batch(st, fields, plan);
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace halox::device
