// The pieces of halox::ipc that need no peer: layouts, copy kernels, the data
// pattern and its check, the memfd arena and the mapping cache.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "halox/common/error.hpp"
#include "halox_programs/ipc/layout.hpp"
#include "halox_programs/ipc/mapping_cache.hpp"
#include "halox_programs/ipc/mechanism.hpp"
#include "halox_programs/ipc/shared_arena.hpp"

namespace {

using namespace halox::ipc;

std::vector<std::byte> random_bytes(size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<std::byte>((i * 131 + seed * 7 + (i >> 7)) & 0xff);
  return v;
}

TEST(ipc_layout, contiguous_and_strided_geometry) {
  auto c = block_layout::contiguous(4096, 64);
  EXPECT_EQ(c.count, 64u);
  EXPECT_EQ(c.stride, 64u);
  EXPECT_EQ(c.extent(), 4096u);
  EXPECT_TRUE(c.is_dense());
  auto s = block_layout::strided(4096, 64, 2);
  EXPECT_EQ(s.count, 64u);
  EXPECT_EQ(s.stride, 128u);
  EXPECT_EQ(s.extent(), 63u * 128 + 64);
  EXPECT_EQ(s.payload(), 4096u);
  auto whole = block_layout::strided(4096, 4096, 2);
  EXPECT_EQ(whole.count, 1u);
  EXPECT_EQ(whole.extent(), 4096u);
}

TEST(ipc_layout, rejects_blocks_that_do_not_divide_or_are_not_words) {
  EXPECT_THROW(block_layout::contiguous(4096, 3), std::invalid_argument);
  EXPECT_THROW(block_layout::contiguous(4096, 12), std::invalid_argument);
  EXPECT_THROW(block_layout::contiguous(4096, 0), std::invalid_argument);
  EXPECT_THROW(parse_layout("diagonal"), halox::usage_error);
}

TEST(ipc_kernels, copy_blocks_matches_the_reference_for_every_block_size) {
  for (size_t block : {4u, 8u, 12u, 16u, 32u, 64u, 100u, 128u, 256u, 512u, 4096u}) {
    for (size_t factor : {1u, 2u, 3u}) {
      size_t count = 37, stride = block * factor;
      auto source = random_bytes(count * stride, static_cast<unsigned>(block));
      std::vector<std::byte> got(count * stride, std::byte{0xee}), want = got;
      copy_blocks(got.data(), stride, source.data(), stride, block, count);
      for (size_t i = 0; i < count; ++i)
        std::memcpy(want.data() + i * stride, source.data() + i * stride, block);
      EXPECT_EQ(got, want) << "block " << block << " factor " << factor;
    }
  }
}

TEST(ipc_kernels, pack_and_unpack_ranges_cut_blocks_anywhere) {
  for (size_t block : {4u, 64u, 1024u}) {
    auto layout = block_layout::strided(8192, block, 3);
    auto source = random_bytes(layout.extent(), 3);
    std::vector<std::byte> packed(layout.payload());
    // Chunks that end inside blocks, at block ends, and past the payload.
    size_t chunk = 1000;
    for (size_t begin = 0; begin < layout.payload(); begin += chunk)
      pack_range(packed.data() + begin, source.data(), layout, begin, begin + chunk);
    for (size_t i = 0; i < layout.count; ++i)
      ASSERT_EQ(0, std::memcmp(packed.data() + i * block, source.data() + layout.offset(i), block))
          << "block " << i;
    std::vector<std::byte> back(layout.extent(), std::byte{0x11});
    for (size_t begin = 0; begin < layout.payload(); begin += chunk)
      unpack_range(back.data(), packed.data() + begin, layout, begin, begin + chunk);
    for (size_t i = 0; i < layout.count; ++i) {
      ASSERT_EQ(
          0, std::memcmp(back.data() + layout.offset(i), source.data() + layout.offset(i), block));
      if (i + 1 < layout.count) {
        ASSERT_EQ(back[layout.offset(i) + block], std::byte{0x11}) << "gap written";
      }
    }
  }
}

TEST(ipc_pattern, every_word_changes_between_generations) {
  for (uint64_t w : {0ull, 1ull, 12345ull, 1ull << 30})
    for (uint64_t g : {0ull, 1ull, 99ull}) EXPECT_NE(pattern_word(w, g), pattern_word(w, g + 1));
}

TEST(ipc_pattern, check_detects_a_wrong_byte_a_stale_copy_and_a_written_gap) {
  auto layout = block_layout::strided(4096, 16, 2);
  std::vector<std::byte> buffer(layout.extent());
  initialise_extent(buffer.data(), layout, 7, destination_gap_fill);
  EXPECT_EQ(check_blocks(buffer.data(), layout, 7, destination_gap_fill), "");
  // Stale: the data of generation 7 is not that of 8.
  EXPECT_NE(check_blocks(buffer.data(), layout, 8, destination_gap_fill), "");
  auto corrupted = buffer;
  corrupted[layout.offset(100) + 5] ^= std::byte{1};
  auto message = check_blocks(corrupted.data(), layout, 7, destination_gap_fill);
  EXPECT_NE(message.find("block 100 byte 4"), std::string::npos) << message;
  auto gap_written = buffer;
  gap_written[layout.offset(3) + layout.block + 2] = std::byte{0};
  message = check_blocks(gap_written.data(), layout, 7, destination_gap_fill);
  EXPECT_NE(message.find("gap after block 3"), std::string::npos) << message;
  // The last block's tail is not a gap: the extent ends with the block.
  auto contiguous = block_layout::contiguous(4096, 4);
  std::vector<std::byte> dense(contiguous.extent());
  fill_blocks(dense.data(), contiguous, 1);
  EXPECT_EQ(check_blocks(dense.data(), contiguous, 1, destination_gap_fill), "");
}

TEST(ipc_mechanisms, names_round_trip_and_unknown_names_are_usage_errors) {
  for (auto kind : all_mechanisms()) EXPECT_EQ(parse_mechanism(to_string(kind)), kind);
  EXPECT_EQ(parse_mechanism("shmem-p"), mechanism_kind::shmem_p);
  EXPECT_EQ(parse_mechanism("map_c"), mechanism_kind::map_c);
  EXPECT_THROW(parse_mechanism("carrier-pigeon"), halox::usage_error);
}

TEST(ipc_mechanisms, xpmem_is_reported_unavailable_with_a_reason_where_absent) {
  if (::access("/dev/xpmem", F_OK) == 0) GTEST_SKIP() << "this machine has /dev/xpmem";
  auto a = local_availability(mechanism_kind::xpmem_nc);
  EXPECT_FALSE(a.available);
  EXPECT_NE(a.reason.find("/dev/xpmem"), std::string::npos) << a.reason;
  EXPECT_TRUE(local_availability(mechanism_kind::map_c).available);
}

TEST(ipc_arena, imported_descriptor_sees_the_owners_data_and_epoch) {
  auto owner = shared_arena::create("test", 3 * page_size() + 10, 256);
  EXPECT_EQ(owner.data_bytes(), 3 * page_size() + 10);
  EXPECT_GE(owner.control_bytes(), 256u);
  std::memset(owner.data(), 0x42, owner.data_bytes());
  auto peer = shared_arena::import(::dup(owner.fd()), /*map_data=*/true);
  EXPECT_EQ(peer.data_bytes(), owner.data_bytes());
  EXPECT_EQ(peer.data()[owner.data_bytes() - 1], std::byte{0x42});
  peer.control()[10] = std::byte{7};
  EXPECT_EQ(owner.control()[10], std::byte{7});
  uint64_t before = peer.epoch();
  owner.invalidate();
  EXPECT_EQ(peer.epoch(), before + 1);
  // Descriptors of other files are refused, empty or not.
  int empty = ::memfd_create("empty", MFD_CLOEXEC);
  EXPECT_THROW(shared_arena::import(empty, false), std::runtime_error);
  int zeros = ::memfd_create("zeros", MFD_CLOEXEC);
  ASSERT_EQ(::ftruncate(zeros, 4 * page_size()), 0);
  EXPECT_THROW(shared_arena::import(zeros, false), std::runtime_error);
}

TEST(ipc_mapping_cache, hits_after_the_first_mapping_and_remaps_after_invalidation) {
  const size_t bytes = 8 * page_size();
  auto owner = shared_arena::create("test", bytes);
  auto peer = shared_arena::import(::dup(owner.fd()), /*map_data=*/false);
  EXPECT_EQ(peer.data(), nullptr);
  memfd_mapper mapper(peer, /*populate=*/true);
  mapping_cache cache(mapper, peer.epoch_word());
  std::memset(owner.data(), 1, bytes);

  const std::byte* first = cache.lookup(100, 5000);
  EXPECT_EQ(first[0], std::byte{1});
  EXPECT_EQ(cache.stats().misses, 1u);
  const std::byte* again = cache.lookup(100, 5000);
  EXPECT_EQ(again, first);
  EXPECT_EQ(cache.stats().hits, 1u);
  // A range inside the cached one hits; one beyond it maps anew.
  EXPECT_EQ(cache.lookup(200, 10), first + 100);
  EXPECT_EQ(cache.stats().hits, 2u);
  cache.lookup(0, bytes);
  EXPECT_EQ(cache.stats().misses, 2u);
  // Shared pages: the owner's new data shows through the cached mapping.
  owner.data()[150] = std::byte{9};
  EXPECT_EQ(cache.lookup(150, 1)[0], std::byte{9});

  owner.invalidate();
  size_t misses = cache.stats().misses;
  EXPECT_EQ(cache.lookup(100, 5000)[0], std::byte{1});
  EXPECT_EQ(cache.stats().invalidations, 1u);
  EXPECT_EQ(cache.stats().misses, misses + 1);
  EXPECT_EQ(cache.size(), 1u);

  scoped_mapping once(mapper, 4 * page_size() + 8, 16);
  EXPECT_EQ(once.data()[0], std::byte{1});
}

// The descriptor socket serves only processes of this user that belong to the
// job: a process of another user, or an unexpected one, is refused.
TEST(ipc_fd_socket, refuses_a_process_of_another_user_and_a_stranger) {
  const std::string name = "halox-test-" + std::to_string(::getpid());
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path + 1, name.data(), name.size());
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), length), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  // A child connects (as another user when `other_user`) and waits to be closed.
  auto connect_child = [&](bool other_user) {
    pid_t child = ::fork();
    if (child == 0) {
      if (other_user && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
      int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
      if (::connect(s, reinterpret_cast<sockaddr*>(&address), length) != 0) ::_exit(4);
      char byte;
      while (::read(s, &byte, 1) > 0) {
      }
      ::_exit(0);
    }
    return child;
  };
  auto serve = [&](pid_t child, std::vector<pid_t> expected) {
    int connection = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    pid_t trusted = halox::ipc::trusted_socket_peer(connection, expected);
    ::close(connection);
    int status = 0;
    ::waitpid(child, &status, 0);
    return std::pair{trusted, status};
  };
  pid_t same = connect_child(false);
  auto [trusted, status] = serve(same, {same});
  EXPECT_EQ(trusted, same);
  EXPECT_EQ(status, 0);
  pid_t stranger = connect_child(false);
  std::tie(trusted, status) = serve(stranger, {stranger + 100000});
  EXPECT_EQ(trusted, -1) << "a process outside the job was trusted";
  if (::getuid() == 0) {
    pid_t other = connect_child(true);
    std::tie(trusted, status) = serve(other, {other});
    EXPECT_EQ(status, 0) << "the child could not become another user";
    EXPECT_EQ(trusted, -1) << "a process of another user was trusted";
  }
  ::close(listener);
}

}  // namespace
