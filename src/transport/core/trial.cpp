#include "transport/core/trial.hpp"

#include <sched.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "common/yielding_mpi.hpp"
#include "halox/extend/transport.hpp"

namespace halox {

namespace {
constexpr int rounds_at_once = 7, most_rounds = 21, untimed = 1, timed = 2;
}  // namespace

void start_together(MPI_Comm comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibarrier(comm, &request);
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    sched_yield();
  }
}

trial_choice choose_from_rounds(const std::vector<double>& seconds, size_t candidates) {
  const size_t rounds = seconds.size() / candidates;
  auto at = [&](size_t r, size_t c) { return seconds[r * candidates + c]; };
  std::vector<double> fastest(rounds);
  for (size_t r = 0; r < rounds; ++r) {
    fastest[r] = at(r, 0);
    for (size_t c = 1; c < candidates; ++c) fastest[r] = std::min(fastest[r], at(r, c));
  }
  std::vector<double> score(candidates);
  for (size_t c = 0; c < candidates; ++c) {
    std::vector<double> relative(rounds);
    for (size_t r = 0; r < rounds; ++r) relative[r] = fastest[r] > 0 ? at(r, c) / fastest[r] : 1.0;
    score[c] = median(std::move(relative));
  }
  trial_choice out;
  out.best = static_cast<size_t>(std::min_element(score.begin(), score.end()) - score.begin());
  if (score[0] <= score[out.best] * (1 + trial_tie)) out.best = 0;
  if (candidates < 2) return out;
  // Clear: the runner-up is far behind, or lost to the winner in two rounds of three.
  size_t runner = out.best == 0 ? 1 : 0;
  for (size_t c = 0; c < candidates; ++c)
    if (c != out.best && score[c] < score[runner]) runner = c;
  size_t won = 0;
  for (size_t r = 0; r < rounds; ++r) won += at(r, out.best) <= at(r, runner) ? 1 : 0;
  out.clear = score[runner] > score[out.best] * (1 + trial_clear_gap) || 3 * won >= 2 * rounds;
  return out;
}

size_t fastest_candidate(transport& t, size_t stages, size_t candidates,
                         const std::function<void(size_t)>& use, MPI_Comm comm) {
  auto exchange = [&] {
    for (size_t s = 0; s < stages; ++s) {
      t.start(s);
      t.wait(s);
    }
  };
  // seconds[round * candidates + c]: the slowest rank's time, round by round.
  std::vector<double> seconds;
  trial_choice choice;
  do {
    std::vector<double> more(rounds_at_once * candidates, 0.0);
    for (size_t i = 0; i < more.size(); ++i) {
      use(i % candidates);
      for (int k = 0; k < untimed; ++k) exchange();
      // Every rank starts the timed exchanges together: one rank's late
      // arrival is not counted against the candidate on the others.
      start_together(comm);
      const double t0 = MPI_Wtime();
      for (int k = 0; k < timed; ++k) exchange();
      more[i] = MPI_Wtime() - t0;
    }
    yielding_allreduce(MPI_IN_PLACE, more.data(), static_cast<int>(more.size()), MPI_DOUBLE,
                       MPI_MAX, comm);
    seconds.insert(seconds.end(), more.begin(), more.end());
    choice = choose_from_rounds(seconds, candidates);
  } while (!choice.clear && seconds.size() < most_rounds * candidates);
  return choice.best;
}

std::vector<size_t> agreed_union(const std::vector<size_t>& mine, size_t below, MPI_Comm comm) {
  std::vector<uint64_t> bits((below + 63) / 64, 0);
  for (size_t v : mine) {
    if (v >= below) throw std::logic_error("agreed_union: a value out of range");
    bits[v / 64] |= uint64_t{1} << (v % 64);
  }
  yielding_allreduce(MPI_IN_PLACE, bits.data(), static_cast<int>(bits.size()), MPI_UINT64_T,
                     MPI_BOR, comm);
  std::vector<size_t> out;
  for (size_t v = 0; v < below; ++v)
    if (bits[v / 64] >> (v % 64) & 1) out.push_back(v);
  return out;
}

}  // namespace halox
