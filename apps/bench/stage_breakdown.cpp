#include "stage_breakdown.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "halox_programs/stats.hpp"

namespace halox {

namespace {

constexpr int values_per_stage = 5;

std::vector<double> flatten(const std::vector<stage_split>& stages) {
  std::vector<double> out;
  for (const auto& s : stages)
    out.insert(out.end(), {s.pack_s, s.copy_s, s.wait_peers_s, s.wait_readers_s, s.other_s});
  return out;
}

rank_split per_exchange(const stage_breakdown& b, size_t rank) {
  rank_split out;
  out.rank = static_cast<int>(rank);
  const double n = static_cast<double>(std::max<uint64_t>(b.exchanges, 1));
  for (const auto& s : b.ranks[rank]) {
    out.stages.push_back(
        {s.pack_s / n, s.copy_s / n, s.wait_peers_s / n, s.wait_readers_s / n, s.other_s / n});
    out.total_s += s.total_s() / n;
    out.work_s += (s.pack_s + s.copy_s + s.other_s) / n;
  }
  return out;
}

double work_of(const std::vector<stage_split>& stages) {
  return std::accumulate(stages.begin(), stages.end(), 0.0, [](double sum, const stage_split& s) {
    return sum + s.pack_s + s.copy_s + s.other_s;
  });
}

std::vector<double> work_by_rank(const stage_breakdown& b) {
  std::vector<double> work;
  for (const auto& stages : b.ranks) work.push_back(work_of(stages));
  return work;
}

// Ranks ordered by their whole recorded time.
std::vector<size_t> by_total(const stage_breakdown& b) {
  std::vector<double> total;
  for (const auto& stages : b.ranks)
    total.push_back(std::accumulate(stages.begin(), stages.end(), 0.0,
                                    [](double sum, const stage_split& s) { return sum + s.total_s(); }));
  return ascending_order(total);
}

nlohmann::json split_json(const rank_split& r) {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : r.stages)
    stages.push_back({{"pack_s", s.pack_s},
                      {"copy_s", s.copy_s},
                      {"wait_peers_s", s.wait_peers_s},
                      {"wait_readers_s", s.wait_readers_s},
                      {"other_s", s.other_s},
                      {"total_s", s.total_s()}});
  return {{"rank", r.rank}, {"total_s", r.total_s}, {"work_s", r.work_s}, {"stages", stages}};
}

}  // namespace

long long breakdown_exchanges(long long timed) {
  return std::max(std::min<long long>(timed, 10), timed / 4);
}

stage_breakdown gather_stage_breakdown(MPI_Comm comm, const exchange_profile& profile) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // Every rank has the same plan length in stages (the plan is agreed).
  // The typical exchange (the middle half's mean), weighted by the exchanges
  // recorded, so that rounds merge by adding.
  std::vector<double> mine = flatten(profile.typical);
  for (double& v : mine) v *= static_cast<double>(profile.exchanges);
  int count = static_cast<int>(mine.size()), most = 0;
  MPI_Allreduce(&count, &most, 1, MPI_INT, MPI_MAX, comm);
  std::vector<double> padded(mine);
  padded.resize(static_cast<size_t>(most), 0.0);
  std::vector<double> all(rank == 0 ? static_cast<size_t>(most) * static_cast<size_t>(size) : 0);
  MPI_Gather(padded.data(), most, MPI_DOUBLE, all.data(), most, MPI_DOUBLE, 0, comm);
  stage_breakdown out;
  out.exchanges = profile.exchanges;
  if (rank != 0 || most == 0) return out;
  const size_t stages = static_cast<size_t>(most / values_per_stage);
  for (int r = 0; r < size; ++r) {
    std::vector<stage_split> splits;
    const double* v = all.data() + static_cast<size_t>(r) * static_cast<size_t>(most);
    for (size_t s = 0; s < stages; ++s, v += values_per_stage)
      splits.push_back({v[0], v[1], v[2], v[3], v[4]});
    out.ranks.push_back(std::move(splits));
  }
  return out;
}

void merge(stage_breakdown& into, const stage_breakdown& more) {
  if (into.empty()) {
    into = more;
    return;
  }
  if (more.empty() || more.ranks.size() != into.ranks.size()) return;
  for (size_t r = 0; r < into.ranks.size(); ++r)
    for (size_t s = 0; s < into.ranks[r].size() && s < more.ranks[r].size(); ++s) {
      auto& a = into.ranks[r][s];
      const auto& b = more.ranks[r][s];
      a.pack_s += b.pack_s;
      a.copy_s += b.copy_s;
      a.wait_peers_s += b.wait_peers_s;
      a.wait_readers_s += b.wait_readers_s;
      a.other_s += b.other_s;
    }
  into.exchanges += more.exchanges;
}

rank_split slowest_rank(const stage_breakdown& b) {
  if (b.empty()) return {};
  return per_exchange(b, by_total(b).back());
}

rank_split median_rank(const stage_breakdown& b) {
  if (b.empty()) return {};
  const auto order = by_total(b);
  return per_exchange(b, order[(order.size() - 1) / 2]);
}

rank_split busiest_rank(const stage_breakdown& b) {
  if (b.empty()) return {};
  const std::vector<double> work = work_by_rank(b);
  // The first of equal maxima: the lowest rank.
  return per_exchange(b, static_cast<size_t>(std::ranges::max_element(work) - work.begin()));
}

double work_imbalance(const stage_breakdown& b) {
  if (b.empty()) return 1;
  std::vector<double> work = work_by_rank(b);
  std::ranges::sort(work);
  const double median = work[(work.size() - 1) / 2];
  return median > 0 ? work.back() / median : 1;
}

nlohmann::json to_json(const stage_breakdown& b) {
  if (b.empty()) return nullptr;
  return {{"exchanges", b.exchanges},
          {"work_imbalance", work_imbalance(b)},
          {"slowest_rank", split_json(slowest_rank(b))},
          {"median_rank", split_json(median_rank(b))},
          {"busiest_rank", split_json(busiest_rank(b))}};
}

setup_record gather_setup(MPI_Comm comm, const exchange_profile& profile, const exchange_plan& plan) {
  std::set<int> peers;
  for (const auto& st : plan.stages) {
    for (const auto& m : st.sends) peers.insert(m.peer);
    for (const auto& m : st.recvs) peers.insert(m.peer);
  }
  double times[4] = {profile.setup.measured_choice_s, profile.setup.plan_s,
                     profile.setup.transports_s, profile.setup.total_s};
  MPI_Allreduce(MPI_IN_PLACE, times, 4, MPI_DOUBLE, MPI_MAX, comm);
  int neighbours = static_cast<int>(peers.size());
  MPI_Allreduce(MPI_IN_PLACE, &neighbours, 1, MPI_INT, MPI_MAX, comm);
  return {{times[0], times[1], times[2], times[3]}, neighbours};
}

nlohmann::json to_json(const setup_record& s) {
  return {{"total_s", s.slowest.total_s},
          {"measured_choice_s", s.slowest.measured_choice_s},
          {"plan_s", s.slowest.plan_s},
          {"transports_s", s.slowest.transports_s},
          {"neighbours", s.neighbours}};
}

std::string describe_split(const rank_split& r) {
  std::string out = fmt::format("rank {} {:.2f} us:", r.rank, r.total_s * 1e6);
  for (size_t s = 0; s < r.stages.size(); ++s) {
    const auto& x = r.stages[s];
    out += fmt::format(" s{} p{:.2f} c{:.2f} wp{:.2f} wr{:.2f} o{:.2f}", s, x.pack_s * 1e6, x.copy_s * 1e6,
                       x.wait_peers_s * 1e6, x.wait_readers_s * 1e6, x.other_s * 1e6);
  }
  return out;
}

std::string describe_busiest(const stage_breakdown& b) {
  const rank_split busiest = busiest_rank(b);
  return fmt::format("rank {} works {:.2f} us per exchange, {:.2f}x the median rank's work",
                     busiest.rank, busiest.work_s * 1e6, work_imbalance(b));
}

}  // namespace halox
