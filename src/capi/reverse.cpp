// C API: reverse calls (every copy of a point combined into its owner or into
// every holder), and fields whose memory moves between calls. Every argument
// is read inside the guard.
#include <fmt/format.h>

#include <vector>

#include "capi/handles.hpp"
#include "halox/extend/plan.hpp"

using halox::capi::guarded;
using halox::capi::handle_kind;
using halox::capi::live;

extern "C" {

halox_status halox_reverse_start(halox_exchange ex, halox_reduction op, int count,
                                 const int* indices, int depth, int every_holder) {
  const char* function = "halox_reverse_start";
  return guarded(function, [&] {
    auto* h = live(ex, handle_kind::exchange, function);
    if (h->reverse_in_flight)
      throw halox::capi::state_error(fmt::format(
          "{}: a reverse call is in flight already (call halox_reverse_wait first)", function));
    if (op != HALOX_SUM && op != HALOX_MIN && op != HALOX_MAX)
      throw halox::usage_error(fmt::format(
          "{}: op {} is not HALOX_SUM, HALOX_MIN or HALOX_MAX", function, static_cast<int>(op)));
    if (count < 0 || (count > 0 && indices == nullptr) || (count == 0 && indices != nullptr))
      throw halox::usage_error(fmt::format(
          "{}: count {} with {} indices (a subset names at least one field; count 0 with NULL "
          "indices: every field)",
          function, count, indices ? "non-NULL" : "NULL"));
    const halox::reduction how = op == HALOX_SUM   ? halox::reduction::sum
                                 : op == HALOX_MIN ? halox::reduction::min
                                                   : halox::reduction::max;
    const halox::reverse_to to =
        every_holder ? halox::reverse_to::every_holder : halox::reverse_to::owner;
    std::vector<int> fields(indices, indices + count);
    if (count == 0)
      for (int f = 0; f < static_cast<int>(h->exchange->plan().layouts.size()); ++f)
        fields.push_back(f);
    try {
      (void)h->exchange->check_subset(fields, depth);
    } catch (const halox::usage_error& e) {
      throw halox::usage_error(fmt::format("{}: {}", function, e.what()));
    }
    h->exchange->start_reverse(how, fields, depth, to);
    h->reverse_in_flight = true;
  });
}

halox_status halox_reverse_wait(halox_exchange ex) {
  const char* function = "halox_reverse_wait";
  return guarded(function, [&] {
    auto* h = live(ex, handle_kind::exchange, function);
    if (!h->reverse_in_flight)
      throw halox::capi::state_error(fmt::format(
          "{}: no reverse call is in flight (call halox_reverse_start first)", function));
    h->reverse_in_flight = false;
    h->exchange->wait_reverse();
  });
}

halox_status halox_reverse(halox_exchange ex, halox_reduction op, int count, const int* indices,
                           int depth, int every_holder) {
  const halox_status status = halox_reverse_start(ex, op, count, indices, depth, every_holder);
  return status == HALOX_SUCCESS ? halox_reverse_wait(ex) : status;
}

halox_status halox_exchange_set_field_data(halox_exchange ex, int index, void* data) {
  const char* function = "halox_exchange_set_field_data";
  return guarded(function, [&] {
    auto* h = live(ex, handle_kind::exchange, function);
    if (h->in_flight || h->reverse_in_flight)
      throw halox::capi::state_error(fmt::format(
          "{}: a call is in flight (call halox_wait or halox_reverse_wait first)", function));
    h->exchange->set_field_data(index, data);
  });
}

}  // extern "C"
