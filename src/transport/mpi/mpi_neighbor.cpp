#include "transport/mpi/mpi_neighbor.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "common/yielding_mpi.hpp"
#include "halox/extend/pack.hpp"
#include "transport/core/names.hpp"
#include "transport/mpi/mpi_datatypes.hpp"

namespace halox {

namespace {

#ifdef HALOX_HAVE_NEIGHBOR_ALLTOALLW_INIT
constexpr bool persistent = true;
#else
constexpr bool persistent = false;
#endif

// The edges of one stage, in the order the collective pairs them.
//
// A rank may be a neighbour in several directions (a dimension of 2 ranks
// puts the same peer at -x and +x; 2x2x2 makes it the peer of 7 of the 26
// directions). The MPI standard pairs such duplicate edges in order: the i-th
// occurrence of peer P among my destinations sends to the i-th occurrence of
// me among P's sources. So both ends must list the edges between them in the
// same order. The direction a message is sent toward identifies it at both
// ends (tags use the same rule): I list my sends by that direction, and P
// lists its receives by the direction their sender sent toward, the opposite
// of P's receive direction. Restricted to the pair (me, P) both lists are then
// sorted by the same key, and within a stage a direction occurs once.
//
// Every direction with a message either way gets both edges, the missing one
// with nothing in it (a halo of width 0 on one side sends but does not
// receive): the peer then has the matching pair too, and in- and out-degree
// are equal on every rank. MPICH 4.0 moves wrong counts when they differ
// (pmodels/mpich#6233, fixed in 4.1).
struct edge {
  int peer = -1;
  int key = 0;                 // the direction the message is sent toward
  const message* m = nullptr;  // null: an empty edge
};

struct stage_edges {
  std::vector<edge> sends, recvs;
  std::vector<int> destinations, sources;
};

stage_edges edges_of(const stage& s) {
  const message* send_toward[direction_count] = {};
  const message* recv_from[direction_count] = {};
  int peer_at[direction_count];
  std::fill(std::begin(peer_at), std::end(peer_at), -1);
  for (const auto& m : s.sends) {
    send_toward[direction_index(m.direction)] = &m;
    peer_at[direction_index(m.direction)] = m.peer;
  }
  for (const auto& m : s.recvs) {
    recv_from[direction_index(m.direction)] = &m;
    peer_at[direction_index(m.direction)] = m.peer;
  }
  stage_edges e;
  for (int d = 0; d < direction_count; ++d) {
    if (peer_at[d] < 0) continue;
    e.sends.push_back({peer_at[d], d, send_toward[d]});
    e.recvs.push_back({peer_at[d], direction_index(opposite(direction_of(d))), recv_from[d]});
  }
  std::ranges::sort(e.sends, {}, &edge::key);
  std::ranges::sort(e.recvs, {}, &edge::key);
  for (const auto& x : e.sends) e.destinations.push_back(x.peer);
  for (const auto& x : e.recvs) e.sources.push_back(x.peer);
  return e;
}

std::string describe_sources(size_t stage, const stage_edges& e) {
  std::string out = fmt::format("stage {} of {}: data from", stage, transport_names::mpi_neighbor);
  bool first = true;
  for (const auto& x : e.recvs) {
    if (!x.m) continue;
    const auto& d = x.m->direction;
    out +=
        fmt::format("{} rank {} (direction {},{},{})", first ? "" : ",", x.peer, d[0], d[1], d[2]);
    first = false;
  }
  return first ? fmt::format("stage {} of {}: the sends to complete", stage,
                             transport_names::mpi_neighbor)
               : out;
}

// Which stages need a collective and which can share a graph, agreed by all
// ranks (graph creation is collective, so every rank must create the same
// graphs in the same order). shared_with[s] = s creates its own graph,
// r < s reuses stage r's, -1 = no rank has a message in stage s.
std::vector<int> agree_on_graphs(const std::vector<stage_edges>& edges, MPI_Comm comm) {
  const size_t n = edges.size();
  // Per stage: the first stage with the same lists here, its negation, and
  // whether this rank has an edge; maximised over all ranks.
  std::vector<int> local(3 * n), all(3 * n);
  for (size_t s = 0; s < n; ++s) {
    size_t first = s;
    for (size_t r = 0; r < s; ++r)
      if (edges[r].sources == edges[s].sources && edges[r].destinations == edges[s].destinations) {
        first = r;
        break;
      }
    local[s] = static_cast<int>(first);
    local[n + s] = -static_cast<int>(first);
    local[2 * n + s] = edges[s].sources.empty() && edges[s].destinations.empty() ? 0 : 1;
  }
  yielding_allreduce(local.data(), all.data(), static_cast<int>(3 * n), MPI_INT, MPI_MAX, comm);
  std::vector<int> shared_with(n);
  for (size_t s = 0; s < n; ++s) {
    const bool agreed = all[s] == -all[n + s];  // max == min: every rank found the same stage
    shared_with[s] = all[2 * n + s] == 0 ? -1 : agreed ? all[s] : static_cast<int>(s);
  }
  return shared_with;
}

// MPI libraries may check the arrays even for a degree of 0: never pass null.
template <class T>
T* non_null(std::vector<T>& v) {
  static T unused{};
  return v.empty() ? &unused : v.data();
}

}  // namespace

// One graph per distinct neighbour list, not one over all neighbours with zero
// counts: MPI libraries still post a (zero-byte) message per edge, so a staged
// exchange would send three times its messages. Stages repeat their lists
// (the sequence grouping repeats the steps per field), so at most a few graphs exist.
mpi_neighbor_transport::mpi_neighbor_transport(const transport_context& ctx)
    : plan_(ctx.plan), fields_(ctx.fields), waits_(ctx.waits) {
  std::vector<stage_edges> edges;
  for (const auto& s : plan_.stages) edges.push_back(edges_of(s));
  const std::vector<int> shared_with = agree_on_graphs(edges, ctx.comm);

  stages_.resize(plan_.stages.size());
  std::vector<MPI_Comm> graph_of(plan_.stages.size(), MPI_COMM_NULL);
  for (size_t s = 0; s < plan_.stages.size(); ++s) {
    auto& c = stages_[s];
    auto& e = edges[s];
    c.what = describe_sources(s, e);
    if (shared_with[s] < 0) continue;
    if (shared_with[s] == static_cast<int>(s)) {
      MPI_Comm graph;
      MPI_Dist_graph_create_adjacent(
          ctx.comm, static_cast<int>(e.sources.size()), non_null(e.sources), MPI_UNWEIGHTED,
          static_cast<int>(e.destinations.size()), non_null(e.destinations), MPI_UNWEIGHTED,
          MPI_INFO_NULL, 0 /* the datatypes address this rank's fields */, &graph);
      graphs_.push_back(graph);
      graph_of[s] = graph;
    } else {
      graph_of[s] = graph_of[static_cast<size_t>(shared_with[s])];
    }
    c.graph = graph_of[s];
    auto add = [&](const edge& x, std::vector<int>& counts, std::vector<MPI_Datatype>& types) {
      counts.push_back(x.m ? 1 : 0);
      types.push_back(x.m ? make_boxes_type(x.m->boxes, plan_, fields_.pointers) : MPI_BYTE);
      if (x.m) types_.push_back(types.back());
    };
    for (const auto& x : e.sends) add(x, c.send_counts, c.send_types);
    for (const auto& x : e.recvs) add(x, c.recv_counts, c.recv_types);
    c.send_displs.assign(e.sends.size(), 0);
    c.recv_displs.assign(e.recvs.size(), 0);
#ifdef HALOX_HAVE_NEIGHBOR_ALLTOALLW_INIT
    // Collective over the graph: every rank initialises the stages in order.
    MPI_Neighbor_alltoallw_init(MPI_BOTTOM, non_null(c.send_counts), non_null(c.send_displs),
                                non_null(c.send_types), MPI_BOTTOM, non_null(c.recv_counts),
                                non_null(c.recv_displs), non_null(c.recv_types), c.graph,
                                MPI_INFO_NULL, &c.request);
#endif
  }
}

mpi_neighbor_transport::~mpi_neighbor_transport() {
  for (auto& c : stages_) {
    if (persistent && c.request != MPI_REQUEST_NULL) MPI_Request_free(&c.request);
  }
  for (auto& t : types_) MPI_Type_free(&t);
  for (auto& g : graphs_) MPI_Comm_free(&g);
}

std::string mpi_neighbor_transport::path() const {
  return name() + (persistent ? "(persistent)" : "");
}

void mpi_neighbor_transport::start(size_t stage_index) {
  auto& c = stages_[stage_index];
  if (c.graph != MPI_COMM_NULL) {
    if constexpr (persistent)
      MPI_Start(&c.request);
    else
      MPI_Ineighbor_alltoallw(MPI_BOTTOM, non_null(c.send_counts), non_null(c.send_displs),
                              non_null(c.send_types), MPI_BOTTOM, non_null(c.recv_counts),
                              non_null(c.recv_displs), non_null(c.recv_types), c.graph, &c.request);
  }
  // Self copies fill other halo cells than the collective writes, from cells it only reads.
  for (const auto& copy : plan_.stages[stage_index].copies)
    copy_boxes(copy.from, copy.to, fields_.pointers.data(), plan_);
}

void mpi_neighbor_transport::wait(size_t stage_index) {
  auto& c = stages_[stage_index];
  if (c.graph == MPI_COMM_NULL) return;
  waits_.wait_all(std::span(&c.request, 1), {}, [&](size_t) { return c.what; });
}

}  // namespace halox
