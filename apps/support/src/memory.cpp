#include "halox_programs/memory.hpp"

#include <sys/mman.h>

#include <fstream>
#include <new>
#include <stdexcept>
#include <utility>

namespace halox {

namespace {
constexpr size_t huge_page = size_t{2} << 20;
}  // namespace

const char* to_string(page_size pages) { return pages == page_size::huge ? "huge" : "system"; }

page_size page_size_from(const std::string& name) {
  if (name == "system") return page_size::system;
  if (name == "huge") return page_size::huge;
  throw std::invalid_argument("page size '" + name + "': expected system or huge");
}

mapped_buffer::mapped_buffer(size_t bytes, page_size pages) : size_(bytes) {
  if (bytes == 0) return;
  // Whole huge pages, either way: the last one is not split, and both kinds
  // start at the same alignment.
  mapped_ = (bytes + huge_page - 1) / huge_page * huge_page;
  void* p = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  // Advice only: ignored where huge pages are off.
  if (pages == page_size::huge) ::madvise(p, mapped_, MADV_HUGEPAGE);
#endif
  data_ = static_cast<std::byte*>(p);
}

mapped_buffer::mapped_buffer(mapped_buffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)) {}

mapped_buffer& mapped_buffer::operator=(mapped_buffer&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(data_, mapped_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

mapped_buffer::~mapped_buffer() {
  if (data_) ::munmap(data_, mapped_);
}

std::string transparent_huge_pages() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(in, line)) return "unknown";
  const auto open = line.find('['), close = line.find(']');
  return open == std::string::npos || close == std::string::npos
             ? "unknown"
             : line.substr(open + 1, close - open - 1);
}

}  // namespace halox
