// XPMEM through libxpmem, loaded with dlopen: no build dependency, and the
// columns say "n/a" where the module or the library is missing. The API
// declarations follow xpmem.h of the XPMEM project (hpc/xpmem).
#include "halox_programs/ipc/xpmem.hpp"

#include <dlfcn.h>
#include <fmt/core.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "halox/common/error.hpp"

namespace halox::ipc {

namespace {

using xpmem_segid_t = int64_t;
using xpmem_apid_t = int64_t;
struct xpmem_addr {
  xpmem_apid_t apid;
  off_t offset;
};
constexpr int xpmem_rdwr = 0x2;
constexpr int xpmem_permit_mode = 0x1;
constexpr const char* xpmem_device = "/dev/xpmem";

struct xpmem_library {
  void* handle = nullptr;
  xpmem_segid_t (*make)(void*, size_t, int, void*) = nullptr;
  int (*remove)(xpmem_segid_t) = nullptr;
  xpmem_apid_t (*get)(xpmem_segid_t, int, int, void*) = nullptr;
  int (*release)(xpmem_apid_t) = nullptr;
  void* (*attach)(xpmem_addr, size_t, void*) = nullptr;
  int (*detach)(void*) = nullptr;
  std::string problem;

  xpmem_library() {
    for (const char* name : {"libxpmem.so.0", "libxpmem.so"})
      if ((handle = ::dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!handle) {
      problem = "libxpmem not found";
      return;
    }
    auto bind = [&](auto& function, const char* symbol) {
      function =
          reinterpret_cast<std::remove_reference_t<decltype(function)>>(::dlsym(handle, symbol));
      if (!function && problem.empty()) problem = fmt::format("libxpmem lacks {}", symbol);
    };
    bind(make, "xpmem_make");
    bind(remove, "xpmem_remove");
    bind(get, "xpmem_get");
    bind(release, "xpmem_release");
    bind(attach, "xpmem_attach");
    bind(detach, "xpmem_detach");
  }
};

const xpmem_library& library() {
  static const xpmem_library loaded;
  return loaded;
}

}  // namespace

std::string xpmem_unavailable_reason() {
  if (::access(xpmem_device, R_OK | W_OK) != 0)
    return fmt::format("no {} (XPMEM kernel module not loaded)", xpmem_device);
  return library().problem;
}

class xpmem_copy::attach_mapper : public region_mapper {
 public:
  explicit attach_mapper(xpmem_apid_t apid) : apid_(apid) {}
  std::byte* map(size_t offset, size_t length) override {
    void* address =
        library().attach(xpmem_addr{apid_, static_cast<off_t>(offset)}, length, nullptr);
    if (address == reinterpret_cast<void*>(-1))
      throw std::runtime_error(fmt::format("xpmem_attach: {}", std::strerror(errno)));
    return static_cast<std::byte*>(address);
  }
  void unmap(std::byte* address, size_t) override { library().detach(address); }

 private:
  xpmem_apid_t apid_;
};

xpmem_copy::xpmem_copy(ipc_context& context, bool cached)
    : copy_mechanism(context), cached_(cached) {
  std::string problem = xpmem_unavailable_reason();
  if (auto error = agree_on_error(context.comm(), problem); !error.empty())
    throw run_error(fmt::format("{}: {}", name(), error));
  const auto& xp = library();
  // The whole source arena is one segment; copies attach ranges of it.
  if (context.is_owner()) {
    segid_ = xp.make(context.source(), round_up_to_page(context.source_capacity()),
                     xpmem_permit_mode, reinterpret_cast<void*>(0600));
    if (segid_ == -1) problem = fmt::format("xpmem_make: {}", std::strerror(errno));
  }
  if (auto error = agree_on_error(context.comm(), problem); !error.empty())
    throw run_error(fmt::format("{}: {}", name(), error));
  MPI_Bcast(&segid_, 1, MPI_INT64_T, 0, context.comm());
  if (!context.is_owner()) {
    apid_ = xp.get(segid_, xpmem_rdwr, xpmem_permit_mode, nullptr);
    if (apid_ == -1) problem = fmt::format("xpmem_get: {}", std::strerror(errno));
  }
  if (auto error = agree_on_error(context.comm(), problem); !error.empty())
    throw run_error(fmt::format("{}: {}", name(), error));
  if (!context.is_owner()) {
    mapper_ = std::make_unique<attach_mapper>(apid_);
    if (cached_)
      cache_ = std::make_unique<mapping_cache>(*mapper_, context.source_arena().epoch_word());
  }
}

xpmem_copy::~xpmem_copy() {
  cache_.reset();
  if (apid_ != -1) library().release(apid_);
  if (segid_ != -1 && context_.is_owner()) library().remove(segid_);
}

void xpmem_copy::on_prepare() {
  if (cache_) cache_->clear();
}

void xpmem_copy::on_copy() {
  if (context_.is_owner()) return;
  copy_through_mapping(*mapper_, cache_.get());
}

}  // namespace halox::ipc
