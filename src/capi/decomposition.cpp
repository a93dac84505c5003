// C API: decompositions and node-shared fields.
#include <fmt/format.h>

#include <string>

#include "capi/handles.hpp"

using halox::capi::create_handle;
using halox::capi::guarded;
using halox::capi::handle_kind;
using halox::capi::live;

namespace {

halox::ivec3 global_of(const int global[3], const char* function) {
  if (global == nullptr) throw halox::usage_error(fmt::format("{}: global is NULL", function));
  for (int d = 0; d < 3; ++d)
    if (global[d] <= 0)
      throw halox::usage_error(fmt::format("{}: the global grid must have cells in every "
                                           "dimension, got {} x {} x {}",
                                           function, global[0], global[1], global[2]));
  return {global[0], global[1], global[2]};
}

std::unique_ptr<halox_decomposition_s> make_decomposition(MPI_Comm comm, const int global[3],
                                                          const int dims[3],
                                                          const int periodic[3],
                                                          const char* function) {
  if (comm == MPI_COMM_NULL)
    throw halox::usage_error(fmt::format("{}: the communicator is MPI_COMM_NULL", function));
  auto cells = global_of(global, function);
  halox::ivec3 rank_dims{0, 0, 0};
  std::array<bool, 3> wrap{true, true, true};
  for (int d = 0; d < 3; ++d) {
    if (dims) rank_dims[d] = dims[d];
    if (periodic) wrap[d] = periodic[d] != 0;
  }
  auto handle = std::make_unique<halox_decomposition_s>();
  handle->decomp = std::make_shared<halox::decomposition>(
      halox::make_cart_decomposition(comm, rank_dims, wrap, false));
  handle->sub = halox::subdomain_of_global(*handle->decomp, cells);
  return handle;
}

std::unique_ptr<halox_decomposition_s> adopted(MPI_Comm comm, const int global[3],
                                               const int dims[3], const int periodic[3],
                                               const char* order, const int offset[3],
                                               const int extent[3], const char* function,
                                               const char* advice) {
  if (comm == MPI_COMM_NULL)
    throw halox::usage_error(fmt::format("{}: the communicator is MPI_COMM_NULL", function));
  auto cells = global_of(global, function);
  if (dims == nullptr || order == nullptr)
    throw halox::usage_error(fmt::format("{}: dims or order is NULL", function));
  if (offset == nullptr || extent == nullptr)
    throw halox::usage_error(fmt::format(
        "{}: offset or extent is NULL (this rank's sub-domain, as the code holds it, is what "
        "shows a wrong rank order)",
        function));
  std::array<bool, 3> wrap{true, true, true};
  for (int d = 0; d < 3; ++d)
    if (periodic) wrap[d] = periodic[d] != 0;
  auto handle = std::make_unique<halox_decomposition_s>();
  handle->sub.global = cells;
  handle->sub.offset = {offset[0], offset[1], offset[2]};
  handle->sub.extent = {extent[0], extent[1], extent[2]};
  try {
    handle->decomp = std::make_shared<halox::decomposition>(
        halox::adopt_decomposition(comm, {dims[0], dims[1], dims[2]}, wrap,
                                   halox::rank_order::parse(order), handle->sub));
  } catch (const halox::usage_error& e) {
    // The core's advice on adopting a rank order, as the caller's language spells it.
    std::string message = e.what();
    const std::string_view cpp = halox::adopt_order_advice;
    if (auto at = message.find(cpp); at != std::string::npos) message.replace(at, cpp.size(), advice);
    throw halox::usage_error(message);
  }
  return handle;
}

halox::local_grid grid_of(const int interior[3], const halox_halo_widths* halo,
                          const char* function) {
  if (interior == nullptr || halo == nullptr)
    throw halox::usage_error(fmt::format("{}: interior or halo is NULL", function));
  if (auto problem = halox::capi::halo_problem(*halo); !problem.empty())
    throw halox::usage_error(fmt::format("{}: {}", function, problem));
  return halox::local_grid({interior[0], interior[1], interior[2]},
                           halox::capi::widths_of(*halo));
}

}  // namespace

extern "C" {

void halox_options_init(halox_options* options) {
  if (options) *options = halox_options HALOX_OPTIONS_INIT;
}

size_t halox_options_size(void) { return sizeof(halox_options); }

halox_status halox_decomposition_create(halox_decomposition* decomp, MPI_Comm comm,
                                        const int global[3], const int dims[3],
                                        const int periodic[3]) {
  const char* function = "halox_decomposition_create";
  return create_handle(function, "decomp", decomp, handle_kind::decomposition,
                       [&] { return make_decomposition(comm, global, dims, periodic, function); });
}

halox_status halox_decomposition_create_f(halox_decomposition* decomp, MPI_Fint comm,
                                          const int global[3], const int dims[3],
                                          const int periodic[3]) {
  const char* function = "halox_decomposition_create";
  return create_handle(function, "decomp", decomp, handle_kind::decomposition, [&] {
    return make_decomposition(MPI_Comm_f2c(comm), global, dims, periodic, function);
  });
}

halox_status halox_decomposition_adopt(halox_decomposition* decomp, MPI_Comm comm,
                                       const int global[3], const int dims[3],
                                       const int periodic[3], const char* order,
                                       const int offset[3], const int extent[3]) {
  const char* function = "halox_decomposition_adopt";
  return create_handle(function, "decomp", decomp, handle_kind::decomposition, [&] {
    return adopted(comm, global, dims, periodic, order, offset, extent, function,
                   "halox_decomposition_adopt(&decomp, comm, global, dims, periodic, \"XYZ\", "
                   "offset, extent)");
  });
}

halox_status halox_decomposition_adopt_f(halox_decomposition* decomp, MPI_Fint comm,
                                         const int global[3], const int dims[3],
                                         const int periodic[3], const char* order,
                                         const int offset[3], const int extent[3]) {
  const char* function = "halox_decomposition_adopt";
  return create_handle(function, "decomp", decomp, handle_kind::decomposition, [&] {
    // The Fortran module's way in.
    return adopted(MPI_Comm_f2c(comm), global, dims, periodic, order, offset, extent, function,
                   "call halox_decomposition_adopt(decomp, comm, global, dims, periodic, "
                   "order=\"XYZ\", offset=..., extent=...)");
  });
}

halox_status halox_decomposition_destroy(halox_decomposition* decomp) {
  return guarded("halox_decomposition_destroy", [&] {
    const char* function = "halox_decomposition_destroy";
    if (decomp == nullptr) throw halox::usage_error(fmt::format("{}: decomp is NULL", function));
    halox::capi::unregister_handle(*decomp, handle_kind::decomposition, function);
    delete *decomp;
    *decomp = nullptr;
  });
}

halox_status halox_subdomain(halox_decomposition decomp, int extent[3], int offset[3]) {
  return guarded("halox_subdomain", [&] {
    auto* d = live(decomp, handle_kind::decomposition, "halox_subdomain");
    for (int i = 0; i < 3; ++i) {
      if (extent) extent[i] = d->sub.extent[i];
      if (offset) offset[i] = d->sub.offset[i];
    }
  });
}

halox_status halox_decomposition_rank(halox_decomposition decomp, int* rank, int* size) {
  return guarded("halox_decomposition_rank", [&] {
    auto* d = live(decomp, handle_kind::decomposition, "halox_decomposition_rank");
    if (rank) *rank = d->decomp->rank();
    if (size) *size = d->decomp->size();
  });
}

halox_status halox_field_points(halox_decomposition decomp, halox_location location,
                                int points[3]) {
  return guarded("halox_field_points", [&] {
    auto* d = live(decomp, handle_kind::decomposition, "halox_field_points");
    if (location < HALOX_CELL || location > HALOX_VERTEX)
      throw halox::usage_error(fmt::format("halox_field_points: location {} is not a halox_location",
                                           static_cast<int>(location)));
    const halox::ivec3 held =
        halox::field_points(*d->decomp, d->sub.extent, halox::all_locations[location]);
    for (int i = 0; i < 3; ++i) points[i] = held[i];
  });
}

halox_status halox_decomposition_grid(halox_decomposition decomp, int dims[3], int coords[3]) {
  return guarded("halox_decomposition_grid", [&] {
    auto* d = live(decomp, handle_kind::decomposition, "halox_decomposition_grid");
    for (int i = 0; i < 3; ++i) {
      if (dims) dims[i] = d->decomp->dims()[i];
      if (coords) coords[i] = d->decomp->coords()[i];
    }
  });
}

halox_status halox_decomposition_comm(halox_decomposition decomp, MPI_Comm* comm) {
  return guarded("halox_decomposition_comm", [&] {
    auto* d = live(decomp, handle_kind::decomposition, "halox_decomposition_comm");
    if (comm) *comm = d->decomp->comm();
  });
}

halox_status halox_agree(halox_decomposition decomp, const char* function, const char* problem) {
  const char* name = function ? function : "halox_agree";
  return guarded(name, [&] {
    auto* d = live(decomp, handle_kind::decomposition, name);
    std::string local;
    if (problem && *problem) local = fmt::format("rank {}: {}", d->decomp->rank(), problem);
    auto agreed = halox::agree_on_error(d->decomp->comm(), local);
    if (!agreed.empty()) throw halox::usage_error(fmt::format("{}: {}", name, agreed));
  });
}

halox_status halox_shared_fields_create(halox_shared_fields* fields, halox_decomposition decomp,
                                        const int interior[3], const halox_halo_widths* halo,
                                        halox_type type, int nfields) {
  const char* function = "halox_shared_fields_create";
  return create_handle(function, "fields", fields, handle_kind::shared_fields, [&] {
    auto* d = live(decomp, handle_kind::decomposition, function);
    if (type != HALOX_FLOAT && type != HALOX_DOUBLE)
      throw halox::usage_error(fmt::format("{}: type {} is neither HALOX_FLOAT nor HALOX_DOUBLE",
                                           function, static_cast<int>(type)));
    if (nfields <= 0)
      throw halox::usage_error(fmt::format("{}: nfields is {}, at least 1 needed", function,
                                           nfields));
    auto handle = std::make_unique<halox_shared_fields_s>();
    handle->decomp = d->decomp;
    handle->grid = grid_of(interior ? interior : d->sub.extent.data(), halo, function);
    halox::validate_grid(handle->grid);
    handle->type = type == HALOX_FLOAT ? halox::element_type::f32 : halox::element_type::f64;
    handle->memory = std::make_shared<halox::shared_field_memory>(
        *d->decomp, handle->grid.points() * halox::element_size(handle->type), nfields);
    return handle;
  });
}

halox_status halox_shared_fields_data(halox_shared_fields fields, int index, void** data) {
  const char* function = "halox_shared_fields_data";
  return guarded(function, [&] {
    auto* f = live(fields, handle_kind::shared_fields, function);
    if (data == nullptr) throw halox::usage_error(fmt::format("{}: data is NULL", function));
    if (index < 0 || index >= f->memory->nfields())
      throw halox::usage_error(fmt::format("{}: field {} of {} (0-based)", function, index,
                                           f->memory->nfields()));
    *data = f->memory->field(index);
  });
}

halox_status halox_shared_fields_destroy(halox_shared_fields* fields) {
  const char* function = "halox_shared_fields_destroy";
  return guarded(function, [&] {
    if (fields == nullptr) throw halox::usage_error(fmt::format("{}: fields is NULL", function));
    halox::capi::unregister_handle(*fields, handle_kind::shared_fields, function);
    delete *fields;
    *fields = nullptr;
  });
}

}  // extern "C"
