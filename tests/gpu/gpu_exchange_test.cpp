// Fields in CUDA device memory: every transport that moves them (mpi-p2p
// through pinned host buffers, cuda-ipc on the node, routed together), every
// algorithm and grouping, on the ranks of the launch sharing the GPUs,
// verified cell by cell on the host after copying back. Where
// cudaGetDeviceCount finds no device the exchanges skip with the reason; the
// registry's availability text and the bad inputs are checked everywhere.
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#if defined(HALOX_WITH_CUDA)
#include <cuda_runtime.h>
#endif

#include "halox/common/error.hpp"
#include "halox/device.hpp"
#include "halox/exchange.hpp"
#include "halox/extend/plan.hpp"
#include "halox/extend/registry.hpp"
#include "halox_programs/verify.hpp"
#include "halox_programs/device_memory.hpp"
#include "test_world.hpp"

using namespace halox;

namespace {

using testing_support::world_size;

int node_rank() {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int rank = 0;
  MPI_Comm_rank(node, &rank);
  MPI_Comm_free(&node);
  return rank;
}

#define SKIP_WITHOUT_DEVICE()                            \
  do {                                                   \
    if (cuda::device_count() == 0) {                     \
      GTEST_SKIP() << "no GPU: " << cuda::unavailable(); \
    }                                                    \
    cuda::select_device(node_rank());                    \
  } while (0)

std::vector<ivec3> rank_grids() {
  switch (world_size()) {
    case 1:
      return {{1, 1, 1}};
    case 2:
      return {{2, 1, 1}, {1, 1, 2}};
    case 4:
      return {{2, 2, 1}, {4, 1, 1}};
    default:
      return {{0, 0, 0}};
  }
}

// Device copies of host fields, freed at the end.
struct device_fields {
  std::vector<void*> pointers;
  device_fields(size_t bytes, int n) {
    for (int f = 0; f < n; ++f) pointers.push_back(cuda::allocate(bytes));
  }
  ~device_fields() {
    for (void* p : pointers) cuda::release(p);
  }
  template <class T>
  std::vector<T*> as() const {
    std::vector<T*> out;
    for (void* p : pointers) out.push_back(static_cast<T*>(p));
    return out;
  }
};

struct device_case {
  ivec3 dims;
  std::array<bool, 3> periodic;
  halo_widths halo;
  algorithm alg;
  field_grouping grouping;
  std::string transport;
  memory_kind memory;
  std::string describe() const {
    return fmt::format(
        "dims {}x{}x{} periodic {}{}{} halo lo {},{},{} hi {},{},{} {} {} {} memory {}", dims[0],
        dims[1], dims[2], periodic[0], periodic[1], periodic[2], halo.lo[0], halo.lo[1], halo.lo[2],
        halo.hi[0], halo.hi[1], halo.hi[2], to_string(alg), to_string(grouping), transport,
        to_string(memory));
  }
};

// Two exchanges (whole, then split phase with new values), each verified on
// the host; returns the transport's path.
template <class T>
std::string exchange_and_verify(const device_case& c, void* stream = nullptr) {
  auto decomp = make_cart_decomposition(MPI_COMM_WORLD, c.dims, c.periodic, false);
  const ivec3 interior{6, 5, 4};
  const local_grid grid(interior, c.halo);
  const subdomain sub = subdomain_per_rank(decomp, interior);
  const verify_context ctx{grid, sub, decomp.periodic(), c.alg};
  constexpr int nfields = 3;
  std::vector<std::vector<T>> host(nfields, std::vector<T>(grid.points()));
  std::vector<T*> host_pointers;
  for (auto& h : host) host_pointers.push_back(h.data());
  device_fields device(grid.points() * sizeof(T), nfields);
  const auto fields = device.as<T>();
  auto upload = [&] {
    for (int f = 0; f < nfields; ++f)
      cuda::copy_to_device(fields[f], host_pointers[f], grid.points() * sizeof(T));
  };
  auto verify = [&](int epoch, const char* when) {
    for (int f = 0; f < nfields; ++f)
      cuda::copy_to_host(host_pointers[f], fields[f], grid.points() * sizeof(T));
    size_t total = 0;
    const auto bad = check_fields(host_pointers, ctx, epoch, 1, &total);
    EXPECT_EQ(total, 0u) << when << ", " << c.describe() << ": "
                         << (bad.empty() ? std::string() : describe(bad.front()));
  };
  exchange_options options{
      .alg = c.alg, .grouping = c.grouping, .transport = parse_transport_choice(c.transport)};
  options.memory = c.memory;
  options.cuda_stream = stream;
  halo_exchange ex(decomp, grid, std::span<T* const>(fields), options);
  fill_fields(host_pointers, ctx, 0);
  upload();
  ex.exchange();
  verify(0, "the first exchange");
  fill_fields(host_pointers, ctx, 1);
  upload();
  ex.start();
  ex.wait();
  verify(1, "the split-phase exchange");
  return ex.transport_path();
}

std::vector<std::string> device_transports() {
  // cuda-ipc alone routes the off-node neighbours by mpi-p2p.
  return {"mpi-p2p", "cuda-ipc", "cuda-ipc+mpi-p2p"};
}

}  // namespace

TEST(DeviceRegistry, ListsTheDeviceTransportsWithTheirAvailability) {
  const std::string list = "\n" + list_transports();
  const auto line_of = [&](const std::string& name) {
    const auto at = list.find("\n" + name + " ");
    return at == std::string::npos ? std::string()
                                   : list.substr(at + 1, list.find('\n', at + 1) - at - 1);
  };
  const std::string ipc = line_of("cuda-ipc");
  ASSERT_FALSE(ipc.empty()) << list;
  const transport_entry& entry = find_transport("cuda-ipc");
  EXPECT_FALSE(entry.moves_host_memory());
  EXPECT_TRUE(entry.moves_device_memory());
  EXPECT_TRUE(find_transport("mpi-p2p").moves_device_memory());
  EXPECT_TRUE(find_transport("mpi-p2p").moves_host_memory());
  // The device implementation is the entry's own, and listed with it.
  EXPECT_NE(line_of("mpi-p2p").find("; device fields: "), std::string::npos) << list;
  EXPECT_FALSE(find_transport("shm").moves_device_memory());
  if (cuda::device_count() == 0) {
    const std::string why = cuda::built() ? "no CUDA device" : "halox was built without CUDA";
    EXPECT_EQ(cuda::unavailable().rfind(why, 0), 0u) << cuda::unavailable();
    EXPECT_NE(ipc.find("unavailable"), std::string::npos) << ipc;
    EXPECT_NE(ipc.find("(" + why), std::string::npos) << ipc;
    try {
      parse_transport_choice("cuda-ipc");
      ADD_FAILURE() << "cuda-ipc parsed without a device";
    } catch (const usage_error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  } else {
    EXPECT_TRUE(cuda::built());
    EXPECT_NE(ipc.find("available"), std::string::npos) << ipc;
    EXPECT_EQ(ipc.find("unavailable"), std::string::npos) << ipc;
    EXPECT_EQ(parse_transport_choice("cuda-ipc"),
              transport_choice(find_transport("cuda-ipc"), find_transport("mpi-p2p")));
  }
}

TEST(DeviceOptions, MemoryKindsParse) {
  EXPECT_EQ(parse_memory_kind("device"), memory_kind::device);
  EXPECT_EQ(parse_memory_kind("host"), memory_kind::host);
  EXPECT_EQ(parse_memory_kind("detect"), memory_kind::detect);
  EXPECT_THROW(parse_memory_kind("gpu"), usage_error);
  for (auto k : {memory_kind::detect, memory_kind::host, memory_kind::device})
    EXPECT_EQ(parse_memory_kind(to_string(k)), k);
}

// Host fields declared as device memory, or handed to a device-only
// transport: one usage_error on every rank, before anything moves.
TEST(DeviceOptions, WrongMemoryIsAUsageErrorOnEveryRank) {
  auto decomp = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, true, true}, false);
  const local_grid grid({4, 4, 4}, halo_widths::uniform(1));
  std::vector<double> a(grid.points()), b(grid.points());
  const std::vector<double*> fields{a.data(), b.data()};
  exchange_options device_memory{};
  device_memory.memory = memory_kind::device;
  try {
    halo_exchange ex(decomp, grid, fields, device_memory);
    ADD_FAILURE() << "host fields accepted as device memory";
  } catch (const usage_error& e) {
    const std::string text = e.what();
    if (cuda::device_count() == 0)
      EXPECT_NE(text.find("need CUDA"), std::string::npos) << text;
    else
      EXPECT_NE(text.find("not in CUDA device memory"), std::string::npos) << text;
  }
  if (cuda::device_count() > 0) {
    EXPECT_THROW(
        halo_exchange(decomp, grid, fields, {.transport = parse_transport_choice("cuda-ipc")}),
        usage_error);
  }
  // Without a device, detection finds host memory: the exchange runs as always.
  if (cuda::device_count() == 0) {
    halo_exchange ex(decomp, grid, fields, {.transport = parse_transport_choice("mpi-p2p")});
    ex.exchange();
  }
}

TEST(DeviceOptions, DeviceFieldsRefuseHostTransportsAndAutoChoices) {
  SKIP_WITHOUT_DEVICE();
  auto decomp = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, true, true}, false);
  const local_grid grid({4, 4, 4}, halo_widths::uniform(1));
  device_fields device(grid.points() * sizeof(double), 2);
  const auto fields = device.as<double>();
  for (const char* host_only : {"shm", "mpi-types", "shm+mpi-p2p", "cuda-ipc+mpi-types"}) {
    try {
      halo_exchange ex(decomp, grid, fields, {.transport = parse_transport_choice(host_only)});
      ADD_FAILURE() << host_only << " accepted device fields";
    } catch (const usage_error& e) {
      EXPECT_NE(std::string(e.what()).find("host memory only"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(halo_exchange(decomp, grid, fields, {.auto_transport = true}), usage_error);
}

TEST(DeviceExchange, EveryTransportAlgorithmAndFieldModeVerified) {
  SKIP_WITHOUT_DEVICE();
  const halo_widths per_side{{2, 1, 1}, {1, 2, 0}};
  for (const auto& dims : rank_grids())
    for (bool periodic : {true, false})
      for (const auto& transport : device_transports())
        for (auto alg : {algorithm::standard, algorithm::staged, algorithm::faces})
          for (auto grouping :
               {field_grouping::compact, field_grouping::sequence, field_grouping::cache}) {
            const std::array<bool, 3> p{periodic, periodic, true};
            const device_case floats{dims,     p,         halo_widths::uniform(1), alg,
                                     grouping, transport, memory_kind::detect};
            const std::string path = exchange_and_verify<float>(floats);
            if (transport == "mpi-p2p") {
              EXPECT_NE(path.find("device"), std::string::npos) << path;
            }
            const device_case doubles{dims,     p,         per_side,           alg,
                                      grouping, transport, memory_kind::device};
            exchange_and_verify<double>(doubles);
          }
}

TEST(DeviceExchange, OnTheCallersStream) {
  SKIP_WITHOUT_DEVICE();
#if defined(HALOX_WITH_CUDA)
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  for (const auto& transport : device_transports())
    exchange_and_verify<double>({rank_grids().front(),
                                 {true, true, true},
                                 halo_widths::uniform(2),
                                 algorithm::staged,
                                 field_grouping::compact,
                                 transport,
                                 memory_kind::device},
                                stream);
  cudaStreamDestroy(stream);
#endif
}

// Blocks of fields are sized for a CPU's cache; on a GPU every block would be
// one more synchronised round, so device fields move in one block whatever the
// host's cache would choose.
TEST(DeviceExchange, FieldsMoveInOneBlock) {
  SKIP_WITHOUT_DEVICE();
  const ivec3 interior{64, 64, 64};
  const local_grid grid(interior, halo_widths::uniform(5));
  constexpr int nfields = 8;
  device_fields device(grid.points() * sizeof(float), nfields);
  const auto fields = device.as<float>();
  for (auto grouping : {field_grouping::compact, field_grouping::cache}) {
    auto decomp =
        make_cart_decomposition(MPI_COMM_WORLD, rank_grids().front(), {true, true, true}, false);
    exchange_options options{.alg = algorithm::staged,
                             .grouping = grouping,
                             .transport = parse_transport_choice("mpi-p2p")};
    options.memory = memory_kind::device;
    halo_exchange ex(decomp, grid, std::span<float* const>(fields), options);
    EXPECT_EQ(ex.plan().fields_per_block, nfields) << to_string(grouping);
    ex.exchange();
  }
}

// Device mpi-p2p posts its sends in start(), once the pack kernel is done:
// rank 0 only starts, and every other rank completes its whole exchange (which
// needs rank 0's messages) before rank 0 calls wait(). Had the sends waited
// for wait(), the others would still be waiting when rank 0 gives up polling.
TEST(DeviceExchange, SplitPhaseSendsAreInFlightAfterStart) {
  SKIP_WITHOUT_DEVICE();
  if (world_size() < 2) GTEST_SKIP() << "needs a neighbour on another rank";
  auto decomp = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, true, true}, false);
  const ivec3 interior{6, 5, 4};
  const local_grid grid(interior, halo_widths::uniform(1));
  const verify_context ctx{grid, subdomain_per_rank(decomp, interior), decomp.periodic(),
                           algorithm::standard};
  std::vector<double> host(grid.points());
  std::vector<double*> host_pointers{host.data()};
  device_fields device(grid.points() * sizeof(double), 1);
  const auto fields = device.as<double>();
  exchange_options options{.alg = algorithm::standard,
                           .transport = parse_transport_choice("mpi-p2p")};
  options.memory = memory_kind::device;
  halo_exchange ex(decomp, grid, std::span<double* const>(fields), options);
  fill_fields(host_pointers, ctx, 0);
  cuda::copy_to_device(fields[0], host.data(), grid.points() * sizeof(double));
  MPI_Comm notes = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &notes);
  int rank = 0, size = 1;
  MPI_Comm_rank(notes, &rank);
  MPI_Comm_size(notes, &size);
  ex.start();
  int others_done = 1;
  if (rank != 0) {
    ex.wait();
    MPI_Send(nullptr, 0, MPI_BYTE, 0, 0, notes);
  } else {
    std::vector<MPI_Request> got(size - 1);
    for (int r = 1; r < size; ++r) MPI_Irecv(nullptr, 0, MPI_BYTE, r, 0, notes, &got[r - 1]);
    others_done = 0;
    for (const double until = MPI_Wtime() + 30; !others_done && MPI_Wtime() < until;)
      MPI_Testall(size - 1, got.data(), &others_done, MPI_STATUSES_IGNORE);
    ex.wait();
    if (!others_done) MPI_Waitall(size - 1, got.data(), MPI_STATUSES_IGNORE);
  }
  MPI_Comm_free(&notes);
  EXPECT_TRUE(others_done) << "rank 0's sends were not in flight after start()";
  cuda::copy_to_host(host.data(), fields[0], grid.points() * sizeof(double));
  size_t total = 1;
  check_fields(host_pointers, ctx, 0, 1, &total);
  EXPECT_EQ(total, 0u);
}
