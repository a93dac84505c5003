// The objects behind the C API's opaque handles, the registry that tells a
// live handle from a NULL, destroyed or foreign one, and the translation of
// every C++ exception into a status and the calling thread's last error.
//
// Nothing may escape into C or Fortran, also not when memory runs out: every
// C entry point runs all of its C++ (argument vectors, strings, lambdas held
// in std::function) inside `guarded`, and one that makes a handle does so
// through `create_handle`.
#pragma once

#include <fmt/format.h>

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
  bool reverse_in_flight = false;
};

namespace halox::capi {

enum class handle_kind { decomposition, exchange, shared_fields };

void register_handle(const void* handle, handle_kind kind);
// Removes a live handle; throws usage_error as require_live does.
void unregister_handle(const void* handle, handle_kind kind, const char* function);
// Throws usage_error when handle is NULL or not a live handle of this kind.
void require_live(const void* handle, handle_kind kind, const char* function);
// The memory of the live shared-fields handle that holds every one of
// `fields`, or null: an exchange over them keeps it alive.
std::shared_ptr<shared_field_memory> shared_memory_holding(const std::vector<void*>& fields);

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

// Records "function: message" (or message alone when function is NULL) as
// the thread's last error and returns status. Allocates nothing: the text is
// cut short to the thread's fixed buffer.
halox_status fail(halox_status status, const char* function, const char* message) noexcept;

// Call inside a catch block: the status of the exception being handled, its
// message recorded as the last error. usage_error, state_error, timeout_error
// and std::bad_alloc have codes of their own; anything else is internal.
halox_status fail_with_current_exception(const char* function) noexcept;

// Runs body; every exception becomes a status and the thread's last error.
template <class Body>
halox_status guarded(const char* function, Body&& body) noexcept {
  try {
    body();
    return HALOX_SUCCESS;
  } catch (...) {
    return fail_with_current_exception(function);
  }
}

// The C halo widths as C++ holds them (.lo and .hi alike in both).
halox::halo_widths widths_of(const halox_halo_widths& halo);
// The problem with C halo widths (empty when none): a negative width, named by its member.
std::string halo_problem(const halox_halo_widths& halo);

// The C options as C++ options; throws usage_error for a bad one (this rank's view).
halox::exchange_options options_of(const halox_options* o);

// The usage error `check` throws, as text (empty when none).
template <class Check>
std::string local_problem(Check&& check) {
  try {
    check();
    return {};
  } catch (const halox::usage_error& e) {
    return e.what();
  }
}

// The one way the C API builds an exchange: the options and every rank's
// arguments checked (`check` returns this rank's problem, empty when none, or
// throws usage_error), the first problem reported on all ranks before
// anything moves (collective), then the exchange built by `build(handle, options)`.
template <class Check, class Build>
std::unique_ptr<halox_exchange_s> make_exchange(const halox_decomposition_s& d,
                                                const halox_options* options,
                                                const char* function, Check&& check,
                                                Build&& build) {
  halox::exchange_options cpp;
  std::string problem = local_problem([&] { cpp = options_of(options); });
  if (problem.empty()) {
    std::string found;
    const std::string thrown = local_problem([&] { found = check(); });
    problem = found.empty() ? thrown : found;
  }
  if (!problem.empty()) problem = fmt::format("rank {}: {}", d.decomp->rank(), problem);
  auto agreed = halox::agree_on_error(d.decomp->comm(), problem);
  if (!agreed.empty()) throw halox::usage_error(fmt::format("{}: {}", function, agreed));
  auto handle = std::make_unique<halox_exchange_s>();
  handle->decomp = d.decomp;
  build(*handle, cpp);
  return handle;
}

// The one way a C function makes a handle. Inside the guard: `out` is
// checked (its C name in messages: out_name) and set to NULL, `make` checks
// the other arguments and returns the object (std::unique_ptr<Handle>); the
// object is registered and only then handed to the caller. Whatever fails,
// *out stays NULL and nothing is left allocated.
template <class Handle, class Make>
halox_status create_handle(const char* function, const char* out_name, Handle** out,
                           handle_kind kind, Make&& make) noexcept {
  return guarded(function, [&] {
    if (out == nullptr)
      throw halox::usage_error(std::string(function) + ": " + out_name + " is NULL");
    *out = nullptr;
    std::unique_ptr<Handle> handle = make();
    register_handle(handle.get(), kind);
    *out = handle.release();
  });
}

// Copies text into buf (size bytes, terminated, cut short when longer).
void copy_out(const std::string& text, char* buf, size_t size, const char* function);

}  // namespace halox::capi
