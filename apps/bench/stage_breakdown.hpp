// halox-bench's view of where an exchange's time goes (halox/exchange_profile.hpp):
// every rank's per-stage split gathered on rank 0, the slowest and the median
// rank picked by their whole exchange time, the busiest rank (the one the
// others wait for) by its work, and the setup time of the exchange.
#pragma once

#include <mpi.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "halox/exchange_profile.hpp"
#include "halox/extend/plan.hpp"

namespace halox {

// Every rank's stage splits of a typical exchange (exchange_profile::typical)
// times the exchanges recorded, so that rounds add up (rank 0 only).
struct stage_breakdown {
  uint64_t exchanges = 0;  // recorded per rank (the same on every rank)
  std::vector<std::vector<stage_split>> ranks;  // by rank, by stage
  bool empty() const { return ranks.empty() || exchanges == 0; }
};

// The exchanges of the recording pass after `timed` timed ones: a quarter
// as many, at least 10 (or all of them when fewer); every round adds its own.
long long breakdown_exchanges(long long timed);

// Collective: every rank's recorded splits to rank 0.
stage_breakdown gather_stage_breakdown(MPI_Comm comm, const exchange_profile& profile);

// Another round of the same configuration.
void merge(stage_breakdown& into, const stage_breakdown& more);

// One rank's splits per exchange (seconds), by stage.
struct rank_split {
  int rank = -1;
  std::vector<stage_split> stages;
  double total_s = 0;
  double work_s = 0;  // pack, copy and other: the total less the waits
};
// The rank with the largest whole time, and the one at the median (the lower
// one of an even count: of two ranks, the other one), per exchange.
rank_split slowest_rank(const stage_breakdown& b);
rank_split median_rank(const stage_breakdown& b);
// The rank with the most work. Ranks that wait for each other end together,
// so the slowest by whole time is anyone; the busiest is who they wait for
// (a slower core, or more to copy).
rank_split busiest_rank(const stage_breakdown& b);
// The busiest rank's work over the median work of the ranks (the lower
// median): 1 when every rank works alike; 1 when no rank works.
double work_imbalance(const stage_breakdown& b);

// {"exchanges", "work_imbalance", "slowest_rank": {"rank", "total_s", "work_s",
// "stages": [{"pack_s", "copy_s", "wait_peers_s", "wait_readers_s", "other_s",
// "total_s"}]}, "median_rank": ..., "busiest_rank": ...}: seconds per exchange,
// the mean over the middle half of each rank's exchanges (rounds weighted by
// their exchanges).
nlohmann::json to_json(const stage_breakdown& b);

// Setup of the exchange, each part the slowest rank's; `neighbours` the most
// peers a rank has (setup should grow with it, not with the rank count).
struct setup_record {
  setup_times slowest;
  int neighbours = 0;
};
setup_record gather_setup(MPI_Comm comm, const exchange_profile& profile, const exchange_plan& plan);
nlohmann::json to_json(const setup_record& s);

// "rank R T us: s0 p1.0 c1.2 wp3.4 wr0.1 o0.5 s1 ..." in microseconds per exchange.
std::string describe_split(const rank_split& r);
// "rank R works W us per exchange, X.XXx the median rank's work".
std::string describe_busiest(const stage_breakdown& b);

}  // namespace halox
