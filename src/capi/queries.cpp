// C API: what an exchange reports (transport as run, plan bytes, profile).
#include <fmt/format.h>

#include "capi/handles.hpp"
#include "halox/extend/plan.hpp"
#include "halox/extend/registry.hpp"

using halox::capi::copy_out;
using halox::capi::guarded;
using halox::capi::handle_kind;
using halox::capi::live;

namespace {

// Runs query(exchange) on a live exchange handle.
template <class Query>
halox_status query(halox_exchange ex, const char* function, Query&& q) {
  return guarded(function, [&] { q(*live(ex, handle_kind::exchange, function)->exchange); });
}

}  // namespace

extern "C" {

halox_status halox_exchange_transport(halox_exchange ex, char* buf, size_t size) {
  const char* f = "halox_exchange_transport";
  return query(ex, f, [&](auto& e) { copy_out(e.transport_name(), buf, size, f); });
}

halox_status halox_exchange_transport_path(halox_exchange ex, char* buf, size_t size) {
  const char* f = "halox_exchange_transport_path";
  return query(ex, f, [&](auto& e) { copy_out(e.transport_path(), buf, size, f); });
}

halox_status halox_exchange_algorithm(halox_exchange ex, char* buf, size_t size) {
  const char* f = "halox_exchange_algorithm";
  return query(ex, f, [&](auto& e) { copy_out(halox::to_string(e.options().alg), buf, size, f); });
}

halox_status halox_exchange_grouping(halox_exchange ex, char* buf, size_t size) {
  const char* f = "halox_exchange_grouping";
  return query(ex, f, [&](auto& e) {
    int per_message = e.options().fields_per_message;
    copy_out(per_message > 0 ? std::to_string(per_message) : halox::to_string(e.options().grouping),
             buf, size, f);
  });
}

halox_status halox_exchange_bytes(halox_exchange ex, size_t* sent, size_t* received,
                                  size_t* copied) {
  return query(ex, "halox_exchange_bytes", [&](auto& e) {
    if (sent) *sent = e.plan().bytes_sent();
    if (received) *received = e.plan().bytes_received();
    if (copied) *copied = e.plan().bytes_copied();
  });
}

halox_status halox_exchange_stages(halox_exchange ex, int* stages) {
  return query(ex, "halox_exchange_stages", [&](auto& e) {
    if (stages) *stages = static_cast<int>(e.plan().stages.size());
  });
}

halox_status halox_exchange_record_stages(halox_exchange ex, int on) {
  return query(ex, "halox_exchange_record_stages", [&](auto& e) { e.record_stages(on != 0); });
}

halox_status halox_exchange_stage_profile(halox_exchange ex, int stage, double times[5],
                                          unsigned long long* exchanges) {
  const char* f = "halox_exchange_stage_profile";
  return query(ex, f, [&](auto& e) {
    auto profile = e.profile();
    if (stage < 0 || stage >= static_cast<int>(profile.stages.size()))
      throw halox::usage_error(fmt::format("{}: stage {} of {} (0-based)", f, stage,
                                           profile.stages.size()));
    const auto& s = profile.stages[static_cast<size_t>(stage)];
    if (times) {
      times[0] = s.pack_s;
      times[1] = s.copy_s;
      times[2] = s.wait_peers_s;
      times[3] = s.wait_readers_s;
      times[4] = s.other_s;
    }
    if (exchanges) *exchanges = profile.exchanges;
  });
}

halox_status halox_available_transports(halox_decomposition decomp, char* buf, size_t size) {
  const char* f = "halox_available_transports";
  return guarded(f, [&] {
    auto* d = live(decomp, handle_kind::decomposition, f);
    std::string names;
    for (const auto& choice : halox::available_transport_choices(d->decomp->comm())) {
      if (!names.empty()) names += ' ';
      names += choice.name();
    }
    copy_out(names, buf, size, f);
  });
}

}  // extern "C"
