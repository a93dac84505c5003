// The objects behind the C API's opaque handles, the registry that tells a
// live handle from a NULL, destroyed or foreign one, and the translation of
// every C++ exception into a status and the calling thread's last error.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "halox/common/error.hpp"
#include "halox/decomposition.hpp"
#include "halox/exchange.hpp"
#include "halox/field_memory.hpp"
#include "halox/grid.hpp"
#include "halox/halox.h"

struct halox_decomposition_s {
  std::shared_ptr<halox::decomposition> decomp;
  halox::subdomain sub;
};

struct halox_shared_fields_s {
  std::shared_ptr<halox::decomposition> decomp;
  halox::local_grid grid;
  halox::element_type type = halox::element_type::f64;
  std::shared_ptr<halox::shared_field_memory> memory;
};

struct halox_exchange_s {
  std::shared_ptr<halox::decomposition> decomp;     // outlives its handle's destroy
  std::shared_ptr<halox::shared_field_memory> shared;  // node-shared fields, if any
  std::optional<halox::halo_exchange> exchange;
  bool in_flight = false;
};

namespace halox::capi {

enum class handle_kind { decomposition, exchange, shared_fields };

void register_handle(const void* handle, handle_kind kind);
// Removes a live handle; throws usage_error as require_live does.
void unregister_handle(const void* handle, handle_kind kind, const char* function);
// Throws usage_error when handle is NULL or not a live handle of this kind.
void require_live(const void* handle, handle_kind kind, const char* function);

template <class Handle>
Handle* live(Handle* handle, handle_kind kind, const char* function) {
  require_live(handle, kind, function);
  return handle;
}

// A library error of a kind the C API reports: the start/wait order.
class state_error : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

halox_status fail(halox_status status, const std::string& message) noexcept;

// Runs body; every exception becomes a status and the thread's last error.
template <class Body>
halox_status guarded(const char* function, Body&& body) noexcept {
  try {
    body();
    return HALOX_SUCCESS;
  } catch (const halox::usage_error& e) {
    return fail(HALOX_ERROR_USAGE, e.what());
  } catch (const halox::timeout_error& e) {
    return fail(HALOX_ERROR_TIMEOUT, e.what());
  } catch (const std::bad_alloc&) {
    return fail(HALOX_ERROR_ALLOCATION, std::string(function) + ": out of memory");
  } catch (const std::logic_error& e) {  // start twice, wait without start
    return fail(HALOX_ERROR_STATE, e.what());
  } catch (const std::exception& e) {
    return fail(HALOX_ERROR_INTERNAL, std::string(function) + ": " + e.what());
  } catch (...) {
    return fail(HALOX_ERROR_INTERNAL, std::string(function) + ": an unknown error");
  }
}

// The C options as C++ options; throws usage_error for a bad one (this rank's view).
halox::exchange_options options_of(const halox_options* o);

// Copies text into buf (size bytes, terminated, cut short when longer).
void copy_out(const std::string& text, char* buf, size_t size, const char* function);

}  // namespace halox::capi
