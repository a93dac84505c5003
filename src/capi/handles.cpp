#include "capi/handles.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace halox::capi {
namespace {

// Handles are checked against this set, never dereferenced first: a
// destroyed handle is reported, not read after its memory was freed.
std::mutex registry_mutex;
std::unordered_map<const void*, handle_kind>& registry() {
  static std::unordered_map<const void*, handle_kind> live;
  return live;
}

const char* name_of(handle_kind kind) {
  switch (kind) {
    case handle_kind::decomposition: return "decomposition";
    case handle_kind::exchange: return "exchange";
    case handle_kind::shared_fields: return "shared fields";
  }
  return "?";
}

// A fixed buffer: recording an error must not need memory.
thread_local char last_error[4096] = "";

void check_live_locked(const void* handle, handle_kind kind, const char* function) {
  if (handle == nullptr)
    throw usage_error(fmt::format("{}: the {} handle is NULL (not created, or destroyed)",
                                  function, name_of(kind)));
  auto found = registry().find(handle);
  if (found == registry().end())
    throw usage_error(fmt::format("{}: the {} handle is not a live one (destroyed already, or "
                                  "never created)", function, name_of(kind)));
  if (found->second != kind)
    throw usage_error(fmt::format("{}: wrong kind of handle: {} (expected: {})", function,
                                  name_of(found->second), name_of(kind)));
}

}  // namespace

void register_handle(const void* handle, handle_kind kind) {
  std::lock_guard lock(registry_mutex);
  registry()[handle] = kind;
}

void unregister_handle(const void* handle, handle_kind kind, const char* function) {
  std::lock_guard lock(registry_mutex);
  check_live_locked(handle, kind, function);
  registry().erase(handle);
}

void require_live(const void* handle, handle_kind kind, const char* function) {
  std::lock_guard lock(registry_mutex);
  check_live_locked(handle, kind, function);
}

std::shared_ptr<shared_field_memory> shared_memory_holding(const std::vector<void*>& fields) {
  std::vector<std::byte*> pointers;
  for (void* f : fields) pointers.push_back(static_cast<std::byte*>(f));
  const shared_field_memory* holder = shared_field_memory::holding(pointers);
  if (holder == nullptr) return nullptr;
  std::lock_guard lock(registry_mutex);
  for (const auto& [handle, kind] : registry()) {
    if (kind != handle_kind::shared_fields) continue;
    const auto* shared = static_cast<const halox_shared_fields_s*>(handle);
    if (shared->memory.get() == holder) return shared->memory;
  }
  return nullptr;
}

halox_status fail(halox_status status, const char* function, const char* message) noexcept {
  if (message == nullptr) message = "";
  if (function != nullptr)
    std::snprintf(last_error, sizeof last_error, "%s: %s", function, message);
  else
    std::snprintf(last_error, sizeof last_error, "%s", message);
  return status;
}

halox_status fail_with_current_exception(const char* function) noexcept {
  try {
    throw;
  } catch (const usage_error& e) {  // messages that name their function already
    return fail(HALOX_ERROR_USAGE, nullptr, e.what());
  } catch (const state_error& e) {
    return fail(HALOX_ERROR_STATE, nullptr, e.what());
  } catch (const timeout_error& e) {
    return fail(HALOX_ERROR_TIMEOUT, nullptr, e.what());
  } catch (const std::bad_alloc&) {
    return fail(HALOX_ERROR_ALLOCATION, function, "out of memory");
  } catch (const std::exception& e) {
    return fail(HALOX_ERROR_INTERNAL, function, e.what());
  } catch (...) {
    return fail(HALOX_ERROR_INTERNAL, function, "an unknown error");
  }
}

halox::halo_widths widths_of(const halox_halo_widths& halo) {
  return {{halo.lo[0], halo.lo[1], halo.lo[2]}, {halo.hi[0], halo.hi[1], halo.hi[2]}};
}

std::string halo_problem(const halox_halo_widths& halo) {
  for (int d = 0; d < 3; ++d)
    if (halo.lo[d] < 0 || halo.hi[d] < 0)
      return fmt::format("halo widths must not be negative, got .lo = {{{}, {}, {}}}, "
                         ".hi = {{{}, {}, {}}}", halo.lo[0], halo.lo[1], halo.lo[2], halo.hi[0],
                         halo.hi[1], halo.hi[2]);
  return {};
}

void copy_out(const std::string& text, char* buf, size_t size, const char* function) {
  if (buf == nullptr || size == 0)
    throw usage_error(fmt::format("{}: no buffer to write into (NULL or size 0)", function));
  size_t n = std::min(text.size(), size - 1);
  std::memcpy(buf, text.data(), n);
  buf[n] = '\0';
}

}  // namespace halox::capi

extern "C" const char* halox_last_error(void) { return halox::capi::last_error; }

extern "C" const char* halox_status_name(int status) {
  switch (status) {
    case HALOX_SUCCESS: return "success";
    case HALOX_ERROR_USAGE: return "usage";
    case HALOX_ERROR_STATE: return "state";
    case HALOX_ERROR_TIMEOUT: return "timeout";
    case HALOX_ERROR_ALLOCATION: return "allocation";
    case HALOX_ERROR_INTERNAL: return "internal";
  }
  return "unknown";
}
