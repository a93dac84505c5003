#include "halox_programs/ipc/mapping_cache.hpp"

#include <fmt/core.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace halox::ipc {

std::byte* memfd_mapper::map(size_t offset, size_t length) {
  int flags = MAP_SHARED | (populate_ ? MAP_POPULATE : 0);
  void* address = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, flags, arena_.fd(),
                         static_cast<off_t>(arena_.data_offset() + offset));
  if (address == MAP_FAILED)
    throw std::runtime_error(fmt::format("mmap of {} B of the owner's arena at {}: {}", length,
                                         offset, std::strerror(errno)));
  return static_cast<std::byte*>(address);
}

void memfd_mapper::unmap(std::byte* address, size_t length) {
  ::munmap(address, length);
}

namespace {
size_t page_floor(size_t bytes) {
  return bytes / page_size() * page_size();
}
}  // namespace

scoped_mapping::scoped_mapping(region_mapper& mapper, size_t offset, size_t length)
    : mapper_(mapper), offset_(offset), start_(page_floor(offset)) {
  length_ = round_up_to_page(offset + length) - start_;
  base_ = mapper_.map(start_, length_);
}

scoped_mapping::~scoped_mapping() {
  mapper_.unmap(base_, length_);
}

mapping_cache::mapping_cache(region_mapper& mapper, const std::atomic<uint64_t>* epoch)
    : mapper_(mapper), epoch_(epoch) {
  if (epoch_) seen_epoch_ = epoch_->load(std::memory_order_acquire);
}

mapping_cache::~mapping_cache() {
  clear();
}

void mapping_cache::clear() {
  for (auto& [start, e] : entries_) mapper_.unmap(e.address, e.length);
  entries_.clear();
}

const std::byte* mapping_cache::lookup(size_t offset, size_t length) {
  if (epoch_) {
    uint64_t now = epoch_->load(std::memory_order_acquire);
    if (now != seen_epoch_) {
      clear();
      seen_epoch_ = now;
      ++counters_.invalidations;
    }
  }
  auto it = entries_.upper_bound(offset);
  if (it != entries_.begin()) {
    --it;
    if (it->first + it->second.length >= offset + length) {
      ++counters_.hits;
      return it->second.address + (offset - it->first);
    }
  }
  ++counters_.misses;
  size_t start = page_floor(offset);
  size_t bytes = round_up_to_page(offset + length) - start;
  // A shorter mapping with the same start is replaced by the longer one.
  if (auto same = entries_.find(start); same != entries_.end()) {
    mapper_.unmap(same->second.address, same->second.length);
    entries_.erase(same);
  }
  std::byte* address = mapper_.map(start, bytes);
  entries_.emplace(start, entry{address, bytes});
  return address + (offset - start);
}

}  // namespace halox::ipc
