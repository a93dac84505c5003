#include "halox_programs/ipc/layout.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "halox/common/error.hpp"

namespace halox::ipc {

layout_kind parse_layout(const std::string& name) {
  if (name == "contiguous") return layout_kind::contiguous;
  if (name == "strided") return layout_kind::strided;
  throw usage_error(fmt::format("unknown layout '{}' (expected contiguous or strided)", name));
}

std::string to_string(layout_kind kind) {
  return kind == layout_kind::contiguous ? "contiguous" : "strided";
}

block_layout block_layout::contiguous(size_t buffer_bytes, size_t block) {
  return strided(buffer_bytes, block, 1);
}

block_layout block_layout::strided(size_t buffer_bytes, size_t block, size_t factor) {
  // Words of the pattern are 4 bytes; every block holds whole words.
  if (block == 0 || block % 4 != 0 || buffer_bytes % block != 0 || factor == 0)
    throw std::invalid_argument(
        fmt::format("bad block layout: buffer {} B, block {} B, stride factor {}", buffer_bytes,
                    block, factor));
  return {block, buffer_bytes / block, block * factor};
}

block_layout block_layout::make(layout_kind kind, size_t buffer_bytes, size_t block,
                                size_t factor) {
  return kind == layout_kind::contiguous ? contiguous(buffer_bytes, block)
                                         : strided(buffer_bytes, block, factor);
}

namespace {

template <size_t Block>
void copy_fixed(std::byte* __restrict d, size_t ds, const std::byte* __restrict s, size_t ss,
                size_t count) {
  for (size_t i = 0; i < count; ++i, d += ds, s += ss) std::memcpy(d, s, Block);
}

}  // namespace

void copy_blocks(std::byte* destination, size_t destination_stride, const std::byte* source,
                 size_t source_stride, size_t block, size_t count) {
  auto* d = destination;
  const auto* s = source;
  switch (block) {
    case 4:
      return copy_fixed<4>(d, destination_stride, s, source_stride, count);
    case 8:
      return copy_fixed<8>(d, destination_stride, s, source_stride, count);
    case 16:
      return copy_fixed<16>(d, destination_stride, s, source_stride, count);
    case 32:
      return copy_fixed<32>(d, destination_stride, s, source_stride, count);
    case 64:
      return copy_fixed<64>(d, destination_stride, s, source_stride, count);
    case 128:
      return copy_fixed<128>(d, destination_stride, s, source_stride, count);
    case 256:
      return copy_fixed<256>(d, destination_stride, s, source_stride, count);
    default:
      for (size_t i = 0; i < count; ++i, d += destination_stride, s += source_stride)
        std::memcpy(d, s, block);
  }
}

namespace {

// Walks packed bytes [begin, end): a partial head block, whole blocks, a
// partial tail block. to_packed selects the direction.
template <bool ToPacked>
void walk_range(std::byte* packed, std::byte* laid_out, const block_layout& L, size_t begin,
                size_t end) {
  end = std::min(end, L.payload());
  if (begin >= end) return;
  auto move = [](std::byte* p, std::byte* l, size_t n) {
    if constexpr (ToPacked)
      std::memcpy(p, l, n);
    else
      std::memcpy(l, p, n);
  };
  size_t block = begin / L.block, within = begin % L.block;
  std::byte* p = packed;
  size_t remaining = end - begin;
  if (within != 0) {
    size_t n = std::min(L.block - within, remaining);
    move(p, laid_out + L.offset(block) + within, n);
    p += n;
    remaining -= n;
    ++block;
  }
  size_t whole = remaining / L.block;
  if (whole > 0) {
    if constexpr (ToPacked)
      copy_blocks(p, L.block, laid_out + L.offset(block), L.stride, L.block, whole);
    else
      copy_blocks(laid_out + L.offset(block), L.stride, p, L.block, L.block, whole);
    p += whole * L.block;
    remaining -= whole * L.block;
    block += whole;
  }
  if (remaining > 0) move(p, laid_out + L.offset(block), remaining);
}

}  // namespace

void pack_range(std::byte* packed, const std::byte* laid_out, const block_layout& layout,
                size_t begin, size_t end) {
  walk_range<true>(packed, const_cast<std::byte*>(laid_out), layout, begin, end);
}

void unpack_range(std::byte* laid_out, const std::byte* packed, const block_layout& layout,
                  size_t begin, size_t end) {
  walk_range<false>(const_cast<std::byte*>(packed), laid_out, layout, begin, end);
}

void fill_blocks(std::byte* buffer, const block_layout& layout, uint64_t generation) {
  const size_t words_per_block = layout.block / 4;
  uint64_t word = 0;
  for (size_t i = 0; i < layout.count; ++i) {
    auto* out = reinterpret_cast<uint32_t*>(buffer + layout.offset(i));
    for (size_t w = 0; w < words_per_block; ++w, ++word) out[w] = pattern_word(word, generation);
  }
}

void initialise_extent(std::byte* buffer, const block_layout& layout, uint64_t generation,
                       std::byte gap_fill) {
  if (!layout.is_dense()) std::memset(buffer, static_cast<int>(gap_fill), layout.extent());
  fill_blocks(buffer, layout, generation);
}

std::string check_blocks(const std::byte* buffer, const block_layout& layout, uint64_t generation,
                         std::byte gap_fill) {
  const size_t words_per_block = layout.block / 4;
  uint32_t gap_word;
  std::memset(&gap_word, static_cast<int>(gap_fill), sizeof gap_word);
  uint64_t word = 0;
  for (size_t i = 0; i < layout.count; ++i) {
    const auto* in = reinterpret_cast<const uint32_t*>(buffer + layout.offset(i));
    for (size_t w = 0; w < words_per_block; ++w, ++word) {
      uint32_t expected = pattern_word(word, generation);
      if (in[w] != expected)
        return fmt::format("block {} byte {}: expected {:#010x}, found {:#010x}", i, 4 * w,
                           expected, in[w]);
    }
    if (i + 1 < layout.count && !layout.is_dense()) {
      // Gaps are whole words (block and stride are multiples of 4).
      const auto* gap = reinterpret_cast<const uint32_t*>(in + words_per_block);
      for (size_t g = 0; g < (layout.stride - layout.block) / 4; ++g)
        if (gap[g] != gap_word)
          return fmt::format("gap after block {} byte {} was overwritten", i, 4 * g);
    }
  }
  return {};
}

}  // namespace halox::ipc
