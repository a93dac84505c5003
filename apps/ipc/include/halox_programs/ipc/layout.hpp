// Blocks of a buffer cut into IOV_count pieces of IOV_size bytes, the data
// pattern that proves a copy, and the copy kernels all mechanisms share.
//
// Reference algorithm (what every mechanism must produce):
//   for i in 0 .. count-1:
//     memcpy(destination + i*stride, source + i*stride, block)
// The destination has the same layout as the source (a halo row lands in a
// halo row); gap bytes between blocks are never touched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace halox::ipc {

enum class layout_kind { contiguous, strided };
layout_kind parse_layout(const std::string& name);  // throws usage_error
std::string to_string(layout_kind kind);

struct block_layout {
  size_t block = 0;   // IOV_size, bytes
  size_t count = 0;   // IOV_count
  size_t stride = 0;  // distance between block starts, >= block

  static block_layout contiguous(size_t buffer_bytes, size_t block);
  // Blocks with gaps: stride = factor * block (halo rows of a wider field).
  static block_layout strided(size_t buffer_bytes, size_t block, size_t factor);
  static block_layout make(layout_kind kind, size_t buffer_bytes, size_t block, size_t factor);

  size_t payload() const { return block * count; }
  // Bytes spanned from the first block's start to the last block's end.
  size_t extent() const { return count == 0 ? 0 : (count - 1) * stride + block; }
  size_t offset(size_t i) const { return i * stride; }
  bool is_dense() const { return stride == block; }
};

// Copies count blocks of `block` bytes; block-size-specialised loops for small
// blocks (a fixed-size memcpy compiles to a few moves), memcpy for the others.
void copy_blocks(std::byte* destination, size_t destination_stride, const std::byte* source,
                 size_t source_stride, size_t block, size_t count);

// Gathers bytes [begin, end) of the packed stream (block 0, block 1, ...) from
// the laid-out source into packed (copy-in), and the reverse (copy-out).
// Ranges may cut blocks anywhere, so pipelined copies can use any chunk size.
void pack_range(std::byte* packed, const std::byte* laid_out, const block_layout& layout,
                size_t begin, size_t end);
void unpack_range(std::byte* laid_out, const std::byte* packed, const block_layout& layout,
                  size_t begin, size_t end);

// The data of a generation: 32-bit word w of the packed stream holds
// pattern_word(w, generation). Every word changes from one generation to the
// next (a stale copy fails) and words differ within a generation (a misplaced
// block fails). Gaps hold fixed fill bytes that a copy must not overwrite.
inline constexpr std::byte source_gap_fill{0x5a};
inline constexpr std::byte destination_gap_fill{0xa5};
inline uint32_t pattern_word(uint64_t word, uint64_t generation) {
  return static_cast<uint32_t>(word * 0x9e3779b1u + generation * 0x85ebca77u + 0x27d4eb2fu);
}

// Writes the generation's pattern into the blocks (gaps untouched).
void fill_blocks(std::byte* buffer, const block_layout& layout, uint64_t generation);
// Sets the whole extent: blocks to the pattern, gaps to gap_fill.
void initialise_extent(std::byte* buffer, const block_layout& layout, uint64_t generation,
                       std::byte gap_fill);
// Empty when the blocks hold the generation's pattern and the gaps still hold
// gap_fill; otherwise the first difference, e.g. "block 3 byte 8: expected ..".
std::string check_blocks(const std::byte* buffer, const block_layout& layout, uint64_t generation,
                         std::byte gap_fill);

}  // namespace halox::ipc
