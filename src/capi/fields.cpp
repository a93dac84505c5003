// C API: fields of their own locations, halos and types; subset calls; a
// code's own decomposition. Every argument is read inside the guard.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "capi/handles.hpp"

using halox::capi::guarded;
using halox::capi::handle_kind;
using halox::capi::live;

namespace {

const char* type_name(halox_type t) { return t == HALOX_FLOAT ? "float (real32)" : "double (real64)"; }

std::string name_of(const halox_field& f, int i) {
  return f.name ? std::string(f.name) : fmt::format("field {}", i);
}

// A field descriptor as C++ sees it; its own problems as this rank sees them.
std::string spec_problem(const halox_field& f, int i, halox::field& out) {
  if (f.type != HALOX_FLOAT && f.type != HALOX_DOUBLE)
    return fmt::format("field '{}': type {} is neither HALOX_FLOAT nor HALOX_DOUBLE", name_of(f, i),
                       static_cast<int>(f.type));
  if (f.location < HALOX_CELL || f.location > HALOX_VERTEX)
    return fmt::format("field '{}': location {} is not a halox_location", name_of(f, i),
                       static_cast<int>(f.location));
  if (f.shared != HALOX_SHARED_FROM_OWNER && f.shared != HALOX_SHARED_KEPT)
    return fmt::format("field '{}': shared {} is neither HALOX_SHARED_FROM_OWNER nor "
                       "HALOX_SHARED_KEPT", name_of(f, i), static_cast<int>(f.shared));
  if (f.data == nullptr) return fmt::format("field '{}': data is NULL", name_of(f, i));
  if (auto p = halox::capi::halo_problem(f.halo); !p.empty())
    return fmt::format("field '{}': {}", name_of(f, i), p);
  out.data = f.data;
  out.type = f.type == HALOX_FLOAT ? halox::element_type::f32 : halox::element_type::f64;
  out.at = halox::all_locations[f.location];
  out.halo = halox::capi::widths_of(f.halo);
  out.name = name_of(f, i);
  out.shared = f.shared == HALOX_SHARED_KEPT ? halox::shared_points::kept
                                             : halox::shared_points::from_owner;
  return {};
}

// The array's extents against its location's points plus halos.
std::string extent_problem(const halox_field& f, const halox::field& field,
                           const halox::decomposition& d, const halox::ivec3& cells) {
  if (!(f.allocated[0] || f.allocated[1] || f.allocated[2])) return {};
  const auto layout = halox::layout_of(d, cells, field);
  const auto want = layout.grid.allocated();
  if (f.allocated[0] == want[0] && f.allocated[1] == want[1] && f.allocated[2] == want[2])
    return {};
  const auto& p = layout.grid.interior;
  return fmt::format("field '{}' ({}, {}) is {} x {} x {} points, but a {} field on this rank "
                     "holds {} x {} x {} points plus halos {}+{}, {}+{}, {}+{}: {} x {} x {}",
                     field.name, halox::to_string(field.at), type_name(f.type), f.allocated[0],
                     f.allocated[1], f.allocated[2], halox::to_string(field.at), p[0], p[1], p[2],
                     f.halo.lo[0], f.halo.hi[0], f.halo.lo[1], f.halo.hi[1], f.halo.lo[2],
                     f.halo.hi[2], want[0], want[1], want[2]);
}

// This rank's first problem with the interior and the fields (empty when
// none; an impossible layout throws usage_error); describes them as C++
// fields and sets cells on the way.
std::string fields_problem(const halox_decomposition_s& d, const int interior[3], int nfields,
                           const halox_field* fields, std::vector<halox::field>& described,
                           halox::ivec3& cells) {
  if (interior) cells = {interior[0], interior[1], interior[2]};
  if (nfields <= 0) return fmt::format("no fields (nfields is {})", nfields);
  if (fields == nullptr) return "fields is NULL";
  for (int i = 0; i < nfields; ++i) {
    described.emplace_back();
    std::string problem = spec_problem(fields[i], i, described.back());
    if (problem.empty()) problem = extent_problem(fields[i], described.back(), *d.decomp, cells);
    if (!problem.empty()) return problem;
  }
  return {};
}

}  // namespace

extern "C" {

halox_status halox_exchange_create_fields(halox_exchange* ex, halox_decomposition decomp,
                                          const int interior[3], int nfields,
                                          const halox_field* fields,
                                          const halox_options* options) {
  const char* function = "halox_exchange_create_fields";
  return halox::capi::create_handle(function, "ex", ex, handle_kind::exchange, [&] {
    const auto& d = *live(decomp, handle_kind::decomposition, function);
    std::vector<halox::field> described;
    halox::ivec3 cells = d.sub.extent;
    auto check = [&] { return fields_problem(d, interior, nfields, fields, described, cells); };
    auto build = [&](halox_exchange_s& h, const halox::exchange_options& cpp) {
      std::vector<void*> data;
      for (const auto& f : described) data.push_back(f.data);
      h.shared = halox::capi::shared_memory_holding(data);
      h.exchange.emplace(*h.decomp, cells, described, cpp);
    };
    return halox::capi::make_exchange(d, options, function, check, build);
  });
}

halox_status halox_start_subset(halox_exchange ex, int count, const int* indices, int depth) {
  return halox_start_subset_algorithm(ex, count, indices, depth, nullptr);
}

halox_status halox_start_subset_algorithm(halox_exchange ex, int count, const int* indices,
                                          int depth, const char* algorithm) {
  const char* function = algorithm ? "halox_start_subset_algorithm" : "halox_start_subset";
  return guarded(function, [&] {
    auto* h = live(ex, handle_kind::exchange, function);
    if (h->in_flight)
      throw halox::capi::state_error(fmt::format(
          "{}: the exchange is in flight already (call halox_wait before starting it again)",
          function));
    if (count <= 0 || indices == nullptr)
      throw halox::usage_error(fmt::format("{}: no fields (count {})", function, count));
    const std::vector<int> fields(indices, indices + count);
    halox::algorithm alg{};
    try {
      (void)h->exchange->check_subset(fields, depth);
      if (algorithm) alg = halox::parse_algorithm(algorithm);
    } catch (const halox::usage_error& e) {
      throw halox::usage_error(fmt::format("{}: {}", function, e.what()));
    }
    if (algorithm)
      h->exchange->start(fields, depth, alg);
    else
      h->exchange->start(fields, depth);
    h->in_flight = true;
  });
}

halox_status halox_exchange_subset(halox_exchange ex, int count, const int* indices, int depth) {
  const halox_status status = halox_start_subset(ex, count, indices, depth);
  return status == HALOX_SUCCESS ? halox_wait(ex) : status;
}

halox_status halox_field_index(halox_exchange ex, const char* name, int* index) {
  const char* function = "halox_field_index";
  return guarded(function, [&] {
    auto* h = live(ex, handle_kind::exchange, function);
    if (name == nullptr || index == nullptr)
      throw halox::usage_error(fmt::format("{}: name or index is NULL", function));
    *index = h->exchange->fields_named(std::vector<std::string>{name}).front();
  });
}

}  // extern "C"
