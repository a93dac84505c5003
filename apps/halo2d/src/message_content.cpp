#include "halox_programs/halo2d/message_content.hpp"

#include <bit>
#include <cstring>

#include "halox_programs/splitmix64.hpp"

namespace halox::halo2d {

namespace {

// The words a message consists of.
class content_stream {
 public:
  explicit content_stream(const message_id& id) : iteration_(id.iteration) {
    base_ = splitmix64(static_cast<std::uint64_t>(id.sender));
    base_ = splitmix64(base_ ^ static_cast<std::uint64_t>(id.direction));
    base_ = splitmix64(base_ ^ static_cast<std::uint64_t>(id.bytes));
    key_ = splitmix64(base_ ^ iteration_);
  }
  // Byte 0 is (base ^ iteration) mod 256, so consecutive iterations of the
  // same message always differ: a stale message of any size >= 1 B is found.
  std::uint64_t word(std::size_t index) const {
    std::uint64_t w = splitmix64(key_ + index);
    return index == 0 ? (w & ~0xffULL) | ((base_ ^ iteration_) & 0xff) : w;
  }

 private:
  std::uint64_t iteration_;
  std::uint64_t base_ = 0;  // sender, direction, size
  std::uint64_t key_ = 0;   // ... and iteration
};

// Byte k of a word is (word >> 8k) & 0xff on every machine.
std::byte byte_of(std::uint64_t word, std::size_t k) {
  return static_cast<std::byte>((word >> (8 * k)) & 0xff);
}

void fill(std::span<std::byte> buffer, const message_id& id, std::uint64_t flip) {
  const content_stream stream(id);
  for (std::size_t start = 0; start < buffer.size(); start += 8) {
    std::uint64_t word = stream.word(start / 8) ^ flip;
    std::size_t count = buffer.size() - start < 8 ? buffer.size() - start : 8;
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(buffer.data() + start, &word, count);
    } else {
      for (std::size_t k = 0; k < count; ++k) buffer[start + k] = byte_of(word, k);
    }
  }
}

}  // namespace

void fill_content(std::span<std::byte> buffer, const message_id& id) {
  fill(buffer, id, 0);
}

void fill_complement(std::span<std::byte> buffer, const message_id& id) {
  fill(buffer, id, ~0ULL);
}

std::byte expected_byte(const message_id& id, std::size_t index) {
  return byte_of(content_stream(id).word(index / 8), index % 8);
}

std::optional<std::size_t> first_mismatch(std::span<const std::byte> buffer, const message_id& id) {
  const content_stream stream(id);
  for (std::size_t start = 0; start < buffer.size(); start += 8) {
    std::uint64_t word = stream.word(start / 8);
    std::size_t count = buffer.size() - start < 8 ? buffer.size() - start : 8;
    if constexpr (std::endian::native == std::endian::little) {
      std::uint64_t got = 0;
      std::memcpy(&got, buffer.data() + start, count);
      if (count == 8 && got == word) continue;
    }
    for (std::size_t k = 0; k < count; ++k)
      if (buffer[start + k] != byte_of(word, k)) return start + k;
  }
  return std::nullopt;
}

}  // namespace halox::halo2d
