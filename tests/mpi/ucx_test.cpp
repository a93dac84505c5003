// What the verification matrix does not show about the ucx transport: a peer
// that never arrives ends in timeout_error naming it (and the late peer still
// completes afterwards); exchanges alive at the same time never take each
// other's messages; building exchanges again and again reuses the process's
// UCX worker and endpoints; and more ranks than cores do not collapse: busy-polling
// progress makes an oversubscribed exchange 10 to 100 times slower than the MPI
// library's yielding one, so ucx must stay within a generous factor of mpi-p2p,
// both measured in turn in the same run.
#include <dirent.h>
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "halox/common/error.hpp"
#include "halox/exchange.hpp"
#include "halox/extend/plan.hpp"
#include "halox/extend/registry.hpp"
#include "halox_programs/verify.hpp"

using namespace halox;

namespace {

// Oversubscribed runs take fewer rounds (CMake sets HALOX_TEST_MATRIX there:
// reduced, or minimal for MPICH, which busy-polls).
int test_rounds(int full) {
  const char* value = std::getenv("HALOX_TEST_MATRIX");
  return value && *value ? std::max(full / 10, 5) : full;
}

bool ucx_missing(std::string* why) {
  *why = find_transport("ucx").unavailable();
  return !why->empty();
}

#define SKIP_WITHOUT_UCX()                      \
  do {                                          \
    std::string why;                            \
    if (ucx_missing(&why)) GTEST_SKIP() << why; \
  } while (0)

// Fields of one rank with their verification context.
struct rank_fields {
  local_grid grid;
  verify_context ctx;
  std::vector<std::vector<double>> storage;
  std::vector<double*> pointers;

  rank_fields(const decomposition& d, const ivec3& cells, int width, int nfields, algorithm alg)
      : grid(cells, halo_widths::uniform(width)),
        ctx{grid, subdomain_per_rank(d, cells), d.periodic(), alg},
        storage(static_cast<size_t>(nfields), std::vector<double>(grid.points())) {
    for (auto& f : storage) pointers.push_back(f.data());
  }
  std::span<double* const> span() const { return pointers; }
  size_t wrong_cells(int epoch) const {
    size_t total = 0;
    check_fields(pointers, ctx, epoch, 1, &total);
    return total;
  }
};

bool receives_from(const halo_exchange& ex, int peer) {
  for (const auto& s : ex.plan().stages)
    for (const auto& m : s.recvs)
      if (m.peer == peer) return true;
  return false;
}

TEST(Ucx, PeerThatNeverArrivesTimesOutNamingIt) {
  SKIP_WITHOUT_UCX();
  auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, true, true}, false);
  if (d.size() < 2) GTEST_SKIP() << "needs two ranks";
  const int late = d.size() - 1;
  // Small messages: the eager protocol completes a send without the receiver.
  rank_fields f(d, {4, 4, 4}, 1, 1, algorithm::standard);
  exchange_options options{algorithm::standard, field_grouping::compact,
                           parse_transport_choice("ucx")};
  // Endpoints are the process's: connect them all first, so that what
  // follows needs no connection handshake with a rank that is not polling.
  halo_exchange(d, f.grid, f.span(), options).exchange();
  options.timeout_seconds = 0.5;
  halo_exchange ex(d, f.grid, f.span(), options);
  fill_fields(f.pointers, f.ctx, 0);

  if (d.rank() != late) {
    std::string error;
    try {
      ex.exchange();
    } catch (const timeout_error& e) {
      error = e.what();
    }
    if (receives_from(ex, late)) {
      EXPECT_NE(error.find(fmt::format("rank {}:", d.rank())), std::string::npos) << error;
      EXPECT_NE(error.find(fmt::format("from rank {} ", late)), std::string::npos) << error;
      EXPECT_NE(error.find("ucx"), std::string::npos) << error;
    } else {
      EXPECT_EQ(error, "");
      EXPECT_EQ(f.wrong_cells(0), 0u);
    }
  }
  // The late rank arrives once the others gave up: their messages are there,
  // so it completes, and nothing is left hanging.
  MPI_Barrier(d.comm());
  if (d.rank() == late) {
    EXPECT_NO_THROW(ex.exchange());
    EXPECT_EQ(f.wrong_cells(0), 0u);
  }
  MPI_Barrier(d.comm());
}

TEST(Ucx, WorkerStaysUsableAfterATimeout) {
  SKIP_WITHOUT_UCX();
  // Runs after the timeout test in the same process: abandoned messages of
  // the old exchange must not reach a new one.
  auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, true, true}, false);
  rank_fields f(d, {4, 4, 4}, 1, 1, algorithm::standard);
  halo_exchange ex(d, f.grid, f.span(),
                   {algorithm::standard, field_grouping::compact, parse_transport_choice("ucx")});
  for (int epoch = 0; epoch < 3; ++epoch) {
    fill_fields(f.pointers, f.ctx, epoch);
    ex.exchange();
    EXPECT_EQ(f.wrong_cells(epoch), 0u) << "epoch " << epoch;
  }
}

TEST(Ucx, ExchangesAliveTogetherKeepTheirMessagesApart) {
  SKIP_WITHOUT_UCX();
  auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, true, true}, false);
  // Same neighbours, same tags: only the channels tell the two apart.
  rank_fields a(d, {5, 4, 3}, 1, 2, algorithm::standard);
  rank_fields b(d, {5, 4, 3}, 1, 2, algorithm::standard);
  exchange_options options{algorithm::standard, field_grouping::compact,
                           parse_transport_choice("ucx")};
  halo_exchange first(d, a.grid, a.span(), options);
  halo_exchange second(d, b.grid, b.span(), options);
  for (int epoch = 0; epoch < 3; ++epoch) {
    fill_fields(a.pointers, a.ctx, epoch);
    fill_fields(b.pointers, b.ctx, epoch + 10);
    first.start();
    second.start();
    if (epoch % 2 == 0) {
      second.wait();
      first.wait();
    } else {
      first.wait();
      second.wait();
    }
    EXPECT_EQ(a.wrong_cells(epoch), 0u) << "epoch " << epoch;
    EXPECT_EQ(b.wrong_cells(epoch + 10), 0u) << "epoch " << epoch;
  }
}

size_t open_file_descriptors() {
  size_t count = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (readdir(dir)) ++count;
    closedir(dir);
  }
  return count;
}

// Milliseconds per exchange built, run once (verified) and destroyed.
double set_up_ms(const decomposition& d, const std::string& transport, int rounds) {
  rank_fields f(d, {4, 4, 4}, 1, 1, algorithm::staged);
  exchange_options options{algorithm::staged, field_grouping::compact,
                           parse_transport_choice(transport)};
  MPI_Barrier(d.comm());
  const double start = MPI_Wtime();
  for (int i = 0; i < rounds; ++i) {
    fill_fields(f.pointers, f.ctx, i);
    halo_exchange ex(d, f.grid, f.span(), options);
    ex.exchange();
    EXPECT_EQ(f.wrong_cells(i), 0u) << transport << " round " << i;
  }
  return (MPI_Wtime() - start) / rounds * 1e3;
}

TEST(Ucx, RepeatedSetUpReusesWorkerAndEndpoints) {
  SKIP_WITHOUT_UCX();
  auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, true, true}, false);
  set_up_ms(d, "ucx", 1);  // endpoints to every neighbour
  const size_t before = open_file_descriptors();
  const double ucx = set_up_ms(d, "ucx", test_rounds(100));
  EXPECT_EQ(open_file_descriptors(), before);
  const double mpi = set_up_ms(d, "mpi-p2p", test_rounds(100));
  if (d.rank() == 0)
    fmt::print(
        "{} ranks: an exchange built, run once and destroyed: ucx {:.2f} ms, mpi-p2p "
        "{:.2f} ms\n",
        d.size(), ucx, mpi);
}

// Median over ranks' slowest exchange time, microseconds.
double exchange_time_us(const decomposition& d, const std::string& transport, algorithm alg,
                        int repetitions) {
  rank_fields f(d, {32, 32, 32}, 2, 2, alg);
  halo_exchange ex(d, f.grid, f.span(),
                   {alg, field_grouping::compact, parse_transport_choice(transport)});
  fill_fields(f.pointers, f.ctx, 0);
  for (int i = 0; i < 5; ++i) ex.exchange();
  std::vector<double> times;
  for (int i = 0; i < repetitions; ++i) {
    const double start = MPI_Wtime();
    ex.exchange();
    double mine = MPI_Wtime() - start, slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, d.comm());
    times.push_back(slowest);
  }
  std::nth_element(times.begin(), times.begin() + repetitions / 2, times.end());
  EXPECT_EQ(f.wrong_cells(0), 0u) << transport;
  return times[static_cast<size_t>(repetitions / 2)] * 1e6;
}

// More ranks on this node than it has cores (the launcher oversubscribes).
bool more_ranks_than_cores(MPI_Comm comm) {
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int ranks_on_node = 0;
  MPI_Comm_size(node, &ranks_on_node);
  MPI_Comm_free(&node);
  return ranks_on_node > sysconf(_SC_NPROCESSORS_ONLN);
}

// A collapse is 10 to 100 times; a loaded machine moves either time by far less
// than this, and each side keeps its least disturbed block.
constexpr double collapse_factor = 8;

TEST(Ucx, MoreRanksThanCoresDoNotCollapse) {
  SKIP_WITHOUT_UCX();
  if (!more_ranks_than_cores(MPI_COMM_WORLD))
    GTEST_SKIP() << "needs more ranks on the node than it has cores";
  auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, true, true}, false);
  for (auto alg : {algorithm::standard, algorithm::staged}) {
    // Blocks in turn, so that a busy moment of the machine hits both transports.
    double ucx = std::numeric_limits<double>::max(), mpi = ucx;
    for (int block = 0; block < 3; ++block) {
      ucx = std::min(ucx, exchange_time_us(d, "ucx", alg, test_rounds(70)));
      mpi = std::min(mpi, exchange_time_us(d, "mpi-p2p", alg, test_rounds(70)));
    }
    if (d.rank() == 0)
      fmt::print(
          "{} ranks, 32^3 cells, halo 2, 2 fields, {}: ucx {:.1f} us, mpi-p2p {:.1f} us "
          "per exchange (median of the slowest rank, best of 3 blocks)\n",
          d.size(), to_string(alg), ucx, mpi);
    EXPECT_LT(ucx, collapse_factor * mpi)
        << to_string(alg) << ": ucx " << ucx << " us against mpi-p2p " << mpi << " us";
  }
}

}  // namespace
