// Replaces every global operator new and delete of the test program (and so
// of the library it links): counts what is live, and fails one allocation on
// request (failing_new.h).
#include "failing_new.h"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace {

std::atomic<long> countdown{-1};  // allocations to let through before one fails
std::atomic<long> failures{0};
std::atomic<long> live{0};

bool fail_this_one() {
  long left = countdown.load();
  while (left >= 0) {
    if (countdown.compare_exchange_weak(left, left - 1)) {
      if (left > 0) return false;
      failures.fetch_add(1);
      return true;
    }
  }
  return false;
}

void* allocate(std::size_t size, std::size_t alignment) noexcept {
  if (fail_this_one()) return nullptr;
  if (size == 0) size = 1;
  void* p = nullptr;
  if (alignment <= alignof(std::max_align_t)) {
    p = std::malloc(size);
  } else if (posix_memalign(&p, alignment, size) != 0) {
    p = nullptr;
  }
  if (p != nullptr) live.fetch_add(1);
  return p;
}

void* allocate_or_throw(std::size_t size, std::size_t alignment) {
  void* p = allocate(size, alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void release(void* p) noexcept {
  if (p == nullptr) return;
  live.fetch_sub(1);
  std::free(p);
}

constexpr std::size_t plain = alignof(std::max_align_t);

}  // namespace

extern "C" void failing_new_arm(long n) {
  failures.store(0);
  countdown.store(n);
}
extern "C" long failing_new_failures(void) { return failures.load(); }
extern "C" long failing_new_live(void) { return live.load(); }

void* operator new(std::size_t n) { return allocate_or_throw(n, plain); }
void* operator new[](std::size_t n) { return allocate_or_throw(n, plain); }
void* operator new(std::size_t n, std::align_val_t a) {
  return allocate_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return allocate_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return allocate(n, plain); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return allocate(n, plain); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<std::size_t>(a));
}

void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
