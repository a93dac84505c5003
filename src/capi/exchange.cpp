// C API: exchanges, their start and wait, and what they report.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include "capi/handles.hpp"

using halox::capi::create_handle;
using halox::capi::guarded;
using halox::capi::handle_kind;
using halox::capi::live;
using halox::capi::make_exchange;
using halox::capi::options_of;

namespace {

const char* ordinal(int i) {
  static const char* names[] = {"1st", "2nd", "3rd"};
  static thread_local std::string other;
  if (i < 3) return names[i];
  other = std::to_string(i + 1) + "th";
  return other.c_str();
}

const char* type_name(halox_type t) { return t == HALOX_FLOAT ? "float (real32)" : "double (real64)"; }

// The fields' own problems, as this rank sees them (empty when none).
std::string field_problem(const halox::local_grid& grid, int nfields, const halox_array* fields) {
  if (nfields <= 0) return fmt::format("no fields (nfields is {})", nfields);
  if (fields == nullptr) return "fields is NULL";
  auto want = grid.allocated();
  for (int i = 0; i < nfields; ++i) {
    const auto& f = fields[i];
    if (f.type != HALOX_FLOAT && f.type != HALOX_DOUBLE)
      return fmt::format("the {} field's type {} is neither HALOX_FLOAT nor HALOX_DOUBLE",
                         ordinal(i), static_cast<int>(f.type));
    if (f.type != fields[0].type)
      return fmt::format("the fields differ in type: the 1st is {}, the {} {} (one exchange "
                         "moves one type; make one exchange per type)",
                         type_name(fields[0].type), ordinal(i), type_name(f.type));
    if (f.data == nullptr) return fmt::format("the {} field's data is NULL", ordinal(i));
    bool checked = f.allocated[0] || f.allocated[1] || f.allocated[2];
    if (checked && (f.allocated[0] != want[0] || f.allocated[1] != want[1] ||
                    f.allocated[2] != want[2]))
      return fmt::format("the {} field is {} x {} x {} cells, the sub-domain with its halos is "
                         "{} x {} x {} (interior {} x {} x {}, halos {}+{}, {}+{}, {}+{})",
                         ordinal(i), f.allocated[0], f.allocated[1], f.allocated[2], want[0],
                         want[1], want[2], grid.interior[0], grid.interior[1], grid.interior[2],
                         grid.halo.lo[0], grid.halo.hi[0], grid.halo.lo[1], grid.halo.hi[1],
                         grid.halo.lo[2], grid.halo.hi[2]);
  }
  return {};
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() < 9 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// This rank's problem with the grid and the fields (empty when none; an
// impossible grid throws usage_error); sets grid.
std::string grid_problem(const halox_decomposition_s& d, const int interior[3],
                         const halox_halo_widths* halo, int nfields, const halox_array* fields,
                         halox::local_grid& grid) {
  if (halo == nullptr) return "halo is NULL";
  if (auto p = halox::capi::halo_problem(*halo); !p.empty()) return p;
  const int* cells = interior ? interior : d.sub.extent.data();
  for (int i = 0; i < 3; ++i)
    if (cells[i] <= 0)
      return fmt::format("the interior must have cells in every dimension, got {} x {} x {}",
                         cells[0], cells[1], cells[2]);
  grid = halox::local_grid({cells[0], cells[1], cells[2]}, halox::capi::widths_of(*halo));
  halox::validate_grid(grid);  // throws usage_error: make_exchange reports it
  return field_problem(grid, nfields, fields);
}

std::unique_ptr<halox_exchange_s> exchange_on_grid(halox_decomposition decomp,
                                                   const int interior[3],
                                                   const halox_halo_widths* halo, int nfields,
                                                   const halox_array* fields,
                                                   const halox_options* options,
                                                   const char* function) {
  const auto& d = *live(decomp, handle_kind::decomposition, function);
  halox::local_grid grid;
  auto check = [&] { return grid_problem(d, interior, halo, nfields, fields, grid); };
  auto build = [&](halox_exchange_s& h, halox::exchange_options& cpp) {
    std::vector<void*> pointers;
    for (int i = 0; i < nfields; ++i) pointers.push_back(fields[i].data);
    auto type = fields[0].type == HALOX_FLOAT ? halox::element_type::f32 : halox::element_type::f64;
    h.shared = halox::capi::shared_memory_holding(pointers);
    h.exchange.emplace(*h.decomp, grid, type, pointers, cpp);
  };
  return make_exchange(d, options, function, check, build);
}

// The typed arrays described as halox_fields (type, no shape check).
template <class T>
std::unique_ptr<halox_exchange_s> exchange_of_arrays(halox_decomposition decomp,
                                                     const int interior[3],
                                                     const halox_halo_widths* halo, int nfields,
                                                     T* const* fields,
                                                     const halox_options* options,
                                                     halox_type type, const char* function) {
  std::vector<halox_array> described;
  for (int i = 0; fields != nullptr && i < nfields; ++i)
    described.push_back({fields[i], type, {0, 0, 0}});
  return exchange_on_grid(decomp, interior, halo, nfields,
                          fields == nullptr ? nullptr : described.data(), options, function);
}

}  // namespace

namespace halox::capi {

// Throws usage_error for a bad option (this rank's view).
halox::exchange_options options_of(const halox_options* o) {
  halox::exchange_options out;
  if (o == nullptr) return out;
  if (o->transport && std::string(o->transport) == "auto")
    out.auto_transport = true;
  else if (o->transport)
    out.transport = halox::parse_transport_choice(o->transport);
  // "auto" for the algorithm and the grouping as for the transport: measured.
  if (o->algorithm && std::string(o->algorithm) == "auto")
    out.auto_algorithm = true;
  else if (o->algorithm)
    out.alg = halox::parse_algorithm(o->algorithm);
  if (o->grouping && std::string(o->grouping) == "auto")
    out.auto_grouping = true;
  else if (o->grouping && all_digits(o->grouping) && std::stoi(o->grouping) > 0)
    out.fields_per_message = std::stoi(o->grouping);
  else if (o->grouping)
    out.grouping = halox::parse_field_grouping(o->grouping);
  out.auto_transport = out.auto_transport || o->auto_transport != 0;
  out.auto_algorithm = out.auto_algorithm || o->auto_algorithm != 0;
  out.auto_grouping = out.auto_grouping || o->auto_grouping != 0;
  if (!(o->timeout_seconds >= 0))
    throw halox::usage_error(fmt::format("timeout must be 0 (the default) or positive, got {}",
                                         o->timeout_seconds));
  out.timeout_seconds = o->timeout_seconds;
  if (o->wisdom_file) out.wisdom_file = o->wisdom_file;
  if (o->memory) out.memory = halox::parse_memory_kind(o->memory);
  out.cuda_stream = o->cuda_stream;
  if (o->ranks_per_node < 0)
    throw halox::usage_error(fmt::format("ranks_per_node must be 0 or positive, got {}",
                                         o->ranks_per_node));
  out.ranks_per_node = o->ranks_per_node;
  return out;
}

}  // namespace halox::capi

extern "C" {

halox_status halox_exchange_create(halox_exchange* ex, halox_decomposition decomp,
                                   const int interior[3], const halox_halo_widths* halo,
                                   int nfields, const halox_array* fields,
                                   const halox_options* options) {
  const char* function = "halox_exchange_create";
  return create_handle(function, "ex", ex, handle_kind::exchange, [&] {
    return exchange_on_grid(decomp, interior, halo, nfields, fields, options, function);
  });
}

halox_status halox_exchange_create_double(halox_exchange* ex, halox_decomposition decomp,
                                          const int interior[3], const halox_halo_widths* halo,
                                          int nfields, double* const* fields,
                                          const halox_options* options) {
  const char* function = "halox_exchange_create_double";
  return create_handle(function, "ex", ex, handle_kind::exchange, [&] {
    return exchange_of_arrays(decomp, interior, halo, nfields, fields, options, HALOX_DOUBLE,
                              function);
  });
}

halox_status halox_exchange_create_float(halox_exchange* ex, halox_decomposition decomp,
                                         const int interior[3], const halox_halo_widths* halo,
                                         int nfields, float* const* fields,
                                         const halox_options* options) {
  const char* function = "halox_exchange_create_float";
  return create_handle(function, "ex", ex, handle_kind::exchange, [&] {
    return exchange_of_arrays(decomp, interior, halo, nfields, fields, options, HALOX_FLOAT,
                              function);
  });
}

halox_status halox_exchange_destroy(halox_exchange* ex) {
  const char* function = "halox_exchange_destroy";
  return guarded(function, [&] {
    if (ex == nullptr) throw halox::usage_error(fmt::format("{}: ex is NULL", function));
    halox::capi::unregister_handle(*ex, handle_kind::exchange, function);
    std::unique_ptr<halox_exchange_s> owned(*ex);
    *ex = nullptr;
    if (owned->in_flight) owned->exchange->wait();
    if (owned->reverse_in_flight) owned->exchange->wait_reverse();
  });
}

halox_status halox_start(halox_exchange ex) {
  return guarded("halox_start", [&] {
    auto* h = live(ex, handle_kind::exchange, "halox_start");
    if (h->in_flight)
      throw halox::capi::state_error("halox_start: the exchange is in flight already (call "
                                     "halox_wait before starting it again)");
    h->exchange->start();
    h->in_flight = true;
  });
}

halox_status halox_wait(halox_exchange ex) {
  return guarded("halox_wait", [&] {
    auto* h = live(ex, handle_kind::exchange, "halox_wait");
    if (!h->in_flight)
      throw halox::capi::state_error("halox_wait: the exchange was not started (call halox_start "
                                     "first)");
    h->in_flight = false;
    h->exchange->wait();
  });
}

halox_status halox_exchange_halos(halox_exchange ex) {
  halox_status status = halox_start(ex);
  return status == HALOX_SUCCESS ? halox_wait(ex) : status;
}

}  // extern "C"
