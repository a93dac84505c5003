// What a halox-halo2d message carries. Every byte derives from (sender,
// direction, size, iteration), so a message from the wrong peer or direction,
// of the wrong size, left over from an earlier iteration, or only partly
// delivered does not compare equal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace halox::halo2d {

struct message_id {
  int sender = 0;         // rank in the mesh communicator
  int direction = 0;      // the sender's direction (the tag)
  std::size_t bytes = 0;  // message size
  std::uint64_t iteration = 0;
};

// Byte i is byte (i mod 8) of splitmix64(key(id) + i / 8), except byte 0,
// which differs between consecutive iterations of the same message. A 0-byte
// message carries nothing: only its source, tag and count can be checked.
void fill_content(std::span<std::byte> buffer, const message_id& id);
// The bitwise complement of the content: a receive buffer prepared this way
// differs from the expected message in every byte until the message lands.
void fill_complement(std::span<std::byte> buffer, const message_id& id);
std::byte expected_byte(const message_id& id, std::size_t index);
// The first byte that differs from the content of id, if any.
std::optional<std::size_t> first_mismatch(std::span<const std::byte> buffer, const message_id& id);

}  // namespace halox::halo2d
