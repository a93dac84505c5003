// Every copy mechanism, driven exactly as halox-ipc drives it (measure_cell:
// new data every copy, verification of every copy), with 2 and 3 ranks
// (one owner, one or two peers), contiguous and strided layouts, and block
// sizes from 4 B to the whole buffer. Mechanisms unavailable here (XPMEM
// without /dev/xpmem) are skipped with the reason.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "halox/common/error.hpp"
#include "halox_programs/ipc/map.hpp"
#include "halox_programs/ipc/measure.hpp"
#include "halox_programs/ipc/mechanism.hpp"
#include "halox_programs/ipc/shared_arena.hpp"

namespace {

using namespace halox::ipc;

constexpr size_t buffer_bytes = 32768;
constexpr size_t widest_factor = 3;

int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

// A peer's destination (null on the owner).
struct destination_buffer {
  std::vector<std::byte> storage;
  explicit destination_buffer(const ipc_context& context)
      : storage(context.is_owner() ? 0 : buffer_bytes * widest_factor) {}
  std::byte* get() { return storage.empty() ? nullptr : storage.data(); }
};

std::vector<int> one_to_many_owners() {
  std::vector<int> owners(static_cast<size_t>(world_size()), 0);
  owners[0] = -1;
  return owners;
}

class every_mechanism : public testing::TestWithParam<mechanism_kind> {
 protected:
  void SetUp() override {
    if (world_size() < 2) GTEST_SKIP() << "needs an owner and at least one peer";
    context_ = std::make_unique<ipc_context>(MPI_COMM_WORLD, buffer_bytes * widest_factor);
    auto status = probe_availability(GetParam(), *context_);
    if (!status.available) GTEST_SKIP() << to_string(GetParam()) << ": " << status.reason;
    mechanism_options options;
    options.max_payload = buffer_bytes;
    options.chunk_bytes = 3000;  // cuts blocks, so partial chunk ends are exercised
    mechanism_ = make_mechanism(GetParam(), *context_, options);
  }
  void TearDown() override {
    mechanism_.reset();
    context_.reset();
  }
  std::byte* source() { return context_->is_owner() ? context_->source() : nullptr; }

  std::unique_ptr<ipc_context> context_;
  std::unique_ptr<copy_mechanism> mechanism_;
};

TEST_P(every_mechanism, copies_are_exact_for_every_layout_and_block_size) {
  destination_buffer destination(*context_);
  measure_options options;
  options.warmup = 1;
  options.repetitions = 3;
  uint64_t generation = 0;
  for (size_t factor : {size_t{1}, size_t{2}, size_t{3}}) {
    for (size_t block : {size_t{4}, size_t{8}, size_t{64}, size_t{4096}, buffer_bytes}) {
      if (buffer_bytes % block != 0) continue;
      auto layout = block_layout::strided(buffer_bytes, block, factor);
      auto samples = measure_cell(*mechanism_, layout, source(), destination.get(), MPI_COMM_WORLD,
                                  generation, options);
      EXPECT_EQ(samples.problem, "") << "block " << block << " stride factor " << factor;
      EXPECT_EQ(samples.spans.size(), 3u);
      // Peers always did work; the spans are ordered.
      if (!context_->is_owner()) {
        EXPECT_TRUE(samples.spans.back().did_work());
      }
    }
  }
}

TEST_P(every_mechanism, verification_catches_a_corrupted_byte_a_stale_copy_and_a_written_gap) {
  destination_buffer destination(*context_);
  auto layout = block_layout::strided(buffer_bytes, 64, 2);
  uint64_t generation = 0;
  measure_options options;
  options.warmup = 0;
  options.repetitions = 1;
  auto samples = measure_cell(*mechanism_, layout, source(), destination.get(), MPI_COMM_WORLD,
                              generation, options);
  ASSERT_EQ(samples.problem, "");
  if (context_->is_owner()) {
    EXPECT_EQ(mechanism_->verify(generation), "");
    return;
  }
  std::byte* d = destination.get();
  EXPECT_EQ(mechanism_->verify(generation), "");
  // The owner writes the next generation but nobody copies: stale.
  EXPECT_NE(mechanism_->verify(generation + 1), "");
  d[layout.offset(7) + 3] ^= std::byte{0x80};
  EXPECT_NE(mechanism_->verify(generation).find("block 7"), std::string::npos);
  d[layout.offset(7) + 3] ^= std::byte{0x80};
  d[layout.offset(7) + layout.block] = std::byte{0};
  EXPECT_NE(mechanism_->verify(generation).find("gap after block 7"), std::string::npos);
}

std::string mechanism_name(const testing::TestParamInfo<mechanism_kind>& info) {
  return to_string(info.param);
}

INSTANTIATE_TEST_SUITE_P(ipc, every_mechanism, testing::ValuesIn(all_mechanisms()), mechanism_name);

// A copy that skips the last block: measure_cell must report it, proving that
// a mechanism cannot pass by leaving old or no data behind.
class lazy_copy : public copy_mechanism {
 public:
  using copy_mechanism::copy_mechanism;
  mechanism_kind kind() const override { return mechanism_kind::map_c; }

 protected:
  void on_prepare() override {
    // Peers read through a mapping of the owner's arena, like MAP_C.
    if (!context_.is_owner())
      mapper_ = std::make_unique<memfd_mapper>(context_.source_arena(), true);
  }
  void on_copy() override {
    if (context_.is_owner()) return;
    scoped_mapping view(*mapper_, owner_source_offset_, layout_.extent());
    copy_blocks(destination_, layout_.stride, view.data(), layout_.stride, layout_.block,
                layout_.count - 1);
  }
  bool owner_works() const override { return false; }
  std::unique_ptr<memfd_mapper> mapper_;
};

TEST(ipc_verification, a_copy_that_misses_a_block_fails_on_every_peer) {
  if (world_size() < 2) GTEST_SKIP();
  ipc_context context(MPI_COMM_WORLD, buffer_bytes);
  lazy_copy broken(context);
  destination_buffer destination(context);
  uint64_t generation = 0;
  measure_options options;
  options.warmup = 0;
  options.repetitions = 2;
  auto samples = measure_cell(broken, block_layout::contiguous(buffer_bytes, 256),
                              context.is_owner() ? context.source() : nullptr, destination.get(),
                              MPI_COMM_WORLD, generation, options);
  if (context.is_owner())
    EXPECT_EQ(samples.problem, "");
  else
    EXPECT_NE(samples.problem.find("block 127"), std::string::npos) << samples.problem;
}

TEST(ipc_measure, copy_time_is_reduced_to_rank_zero_for_every_peer) {
  if (world_size() < 2) GTEST_SKIP();
  ipc_context context(MPI_COMM_WORLD, buffer_bytes);
  auto mechanism = make_mechanism(mechanism_kind::shmem_np, context, {buffer_bytes, 4096, true});
  destination_buffer destination(context);
  uint64_t generation = 0;
  measure_options options;
  options.warmup = 1;
  options.repetitions = 4;
  auto samples = measure_cell(*mechanism, block_layout::contiguous(buffer_bytes, 512),
                              context.is_owner() ? context.source() : nullptr, destination.get(),
                              MPI_COMM_WORLD, generation, options);
  auto result = reduce_cell(samples, MPI_COMM_WORLD, one_to_many_owners());
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) return;
  ASSERT_EQ(result.peers.size(), static_cast<size_t>(world_size() - 1));
  EXPECT_EQ(result.repetitions, 4);
  for (const auto& p : result.peers) {
    EXPECT_EQ(p.owner, 0);
    EXPECT_EQ(p.copy_us.count, 4u);
    EXPECT_GT(p.copy_us.min, 0.0);
    EXPECT_LE(p.copy_us.median, result.time_us);
  }
}

// Pairs 0-1, 2-3, ...: every pair is its own context, all copy at once.
TEST(ipc_pairs, every_pair_copies_its_own_owners_data) {
  int size = world_size(), rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (size < 2 || size % 2 != 0) GTEST_SKIP() << "needs an even number of ranks";
  MPI_Comm pair;
  MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pair);
  {
    ipc_context context(pair, buffer_bytes * 2);
    destination_buffer destination(context);
    for (auto kind : all_mechanisms()) {
      auto status = probe_availability(kind, context);
      int usable = status.available ? 1 : 0, all_usable = 0;
      MPI_Allreduce(&usable, &all_usable, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      if (!all_usable) continue;
      auto mechanism = make_mechanism(kind, context, {buffer_bytes, 4096, true});
      uint64_t generation = 0;
      measure_options options;
      options.warmup = 0;
      options.repetitions = 2;
      auto samples = measure_cell(*mechanism, block_layout::strided(buffer_bytes, 16, 2),
                                  context.is_owner() ? context.source() : nullptr,
                                  destination.get(), MPI_COMM_WORLD, generation, options);
      EXPECT_EQ(samples.problem, "") << to_string(kind);
    }
  }
  MPI_Comm_free(&pair);
}

// Both ways of handing the owner's descriptor to the peers.
TEST(ipc_fd_passing, pidfd_getfd_and_unix_socket_both_deliver_the_owners_memory) {
  if (world_size() < 2) GTEST_SKIP();
  for (bool socket : {false, true}) {
    ipc_context context(MPI_COMM_WORLD, 4096, socket);
    EXPECT_EQ(context.how_shared(), socket ? fd_passing::unix_socket : fd_passing::pidfd_getfd);
    if (context.is_owner()) std::memset(context.source(), 0x3c, 4096);
    MPI_Barrier(MPI_COMM_WORLD);
    if (!context.is_owner()) {
      memfd_mapper mapper(context.source_arena(), false);
      scoped_mapping view(mapper, 0, 4096);
      EXPECT_EQ(view.data()[4095], std::byte{0x3c});
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

}  // namespace
