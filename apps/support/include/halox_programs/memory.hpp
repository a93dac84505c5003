// Memory the programs allocate for fields and for the single-copy floor:
// anonymous mappings with the pages a program's heap gets, or advised to use
// transparent huge pages, as a tuned stencil code's allocator does. A halo
// walk across x touches every page of a field once per few rows; with 4 KiB
// pages that is a TLB miss (a nested page walk in a VM) per page, with 2 MiB
// pages a handful per field, so the choice moves what an exchange costs.
#pragma once

#include <cstddef>
#include <string>

namespace halox {

enum class page_size {
  system,  // no advice: what a plain heap gets (huge only where THP is "always")
  huge,    // madvise(MADV_HUGEPAGE): huge where THP is "always" or "madvise"
};

// "system" or "huge"; the reverse, throwing std::invalid_argument.
const char* to_string(page_size pages);
page_size page_size_from(const std::string& name);

class mapped_buffer {
 public:
  mapped_buffer() = default;
  // `bytes` zeroed bytes, page-aligned (throws std::bad_alloc).
  mapped_buffer(size_t bytes, page_size pages);
  mapped_buffer(mapped_buffer&& other) noexcept;
  mapped_buffer& operator=(mapped_buffer&& other) noexcept;
  mapped_buffer(const mapped_buffer&) = delete;
  mapped_buffer& operator=(const mapped_buffer&) = delete;
  ~mapped_buffer();

  std::byte* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  std::byte* data_ = nullptr;
  size_t size_ = 0, mapped_ = 0;
};

// How the kernel treats madvise(MADV_HUGEPAGE) on anonymous memory: "always",
// "madvise" (huge pages where advised) or "never", from
// /sys/kernel/mm/transparent_hugepage/enabled; "unknown" when unreadable.
std::string transparent_huge_pages();

}  // namespace halox
