// Mapping another process's memory into this one, and a cache of such
// mappings (what XPMEM users call an attachment cache).
//
// Reference algorithm of a cached look-up:
//   if owner's epoch != epoch seen:  unmap every cached range; remember epoch
//   if a cached range covers [offset, offset+length): return it      (hit)
//   map the page-rounded range, remember it, return it                (miss)
// The epoch check is one load from the owner's arena header per look-up: the
// price of never copying from memory the owner has repurposed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>

#include "halox_programs/ipc/shared_arena.hpp"

namespace halox::ipc {

// Maps page-aligned ranges of an owner's data into this process.
class region_mapper {
 public:
  virtual ~region_mapper() = default;
  virtual std::byte* map(size_t offset, size_t length) = 0;
  virtual void unmap(std::byte* address, size_t length) = 0;
};

// mmap of an imported memfd arena. populate pre-faults the page tables in the
// mmap call (one pass in the kernel instead of one fault per page).
class memfd_mapper : public region_mapper {
 public:
  memfd_mapper(const shared_arena& arena, bool populate) : arena_(arena), populate_(populate) {}
  std::byte* map(size_t offset, size_t length) override;
  void unmap(std::byte* address, size_t length) override;

 private:
  const shared_arena& arena_;
  bool populate_;
};

// A mapping that lives for one scope (the uncached path).
class scoped_mapping {
 public:
  scoped_mapping(region_mapper& mapper, size_t offset, size_t length);
  ~scoped_mapping();
  scoped_mapping(const scoped_mapping&) = delete;
  scoped_mapping& operator=(const scoped_mapping&) = delete;
  const std::byte* data() const { return base_ + (offset_ - start_); }

 private:
  region_mapper& mapper_;
  std::byte* base_;
  size_t offset_, start_, length_;
};

class mapping_cache {
 public:
  struct counters {
    uint64_t hits = 0, misses = 0, invalidations = 0;
  };

  // epoch may be null (nothing ever invalidates). The mapper must outlive the cache.
  mapping_cache(region_mapper& mapper, const std::atomic<uint64_t>* epoch);
  ~mapping_cache();
  mapping_cache(const mapping_cache&) = delete;
  mapping_cache& operator=(const mapping_cache&) = delete;

  // Local address of the owner's data byte `offset`, valid for `length` bytes.
  const std::byte* lookup(size_t offset, size_t length);
  void clear();  // unmaps everything
  const counters& stats() const { return counters_; }
  size_t size() const { return entries_.size(); }

 private:
  struct entry {
    std::byte* address;
    size_t length;
  };
  region_mapper& mapper_;
  const std::atomic<uint64_t>* epoch_;
  uint64_t seen_epoch_ = 0;
  std::map<size_t, entry> entries_;  // by start offset
  counters counters_;
};

}  // namespace halox::ipc
