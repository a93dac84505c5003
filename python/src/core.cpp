// halox._core: the Python bindings of the core library (numpy fields, mpi4py
// communicators). Every check that could fail on some ranks only is agreed on
// by all ranks before any exchange, so a bad argument raises the same
// ValueError everywhere instead of leaving ranks waiting for each other.
#include <mpi.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "halox/common/error.hpp"
#include "halox/common/mpi_library.hpp"
#include "halox/decomposition.hpp"
#include "halox/exchange.hpp"
#include "halox/extend/registry.hpp"
#include "halox/extend/transport.hpp"
#include "halox/field.hpp"
#include "halox/grid.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using halox::ivec3;

bool mpi_finalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

std::string repr_of(nb::handle object) {
  return nb::cast<std::string>(nb::repr(object));
}

// MPI started by halox itself (no mpi4py): finalized at interpreter exit.
void ensure_mpi_initialized() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  nb::module_::import_("atexit").attr("register")(nb::cpp_function([] {
    if (!mpi_finalized()) MPI_Finalize();
  }));
}

// The MPI_Comm inside an mpi4py communicator, or MPI_COMM_WORLD for None.
MPI_Comm comm_of(nb::handle comm) {
  if (comm.is_none()) {
    ensure_mpi_initialized();
    return MPI_COMM_WORLD;
  }
  nb::module_ mpi = nb::module_::import_("mpi4py.MPI");
  if (!nb::isinstance(comm, mpi.attr("Comm")))
    throw nb::type_error(
        ("expected an mpi4py communicator (mpi4py.MPI.Comm) or None, got " + repr_of(comm))
            .c_str());
  // mpi4py must sit on the same MPI library: handles of two libraries do not mix.
  auto theirs = halox::version_line(nb::cast<std::string>(mpi.attr("Get_library_version")()));
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (theirs != halox::mpi_library_version() || !initialized)
    throw std::runtime_error(
        "mpi4py is built against another MPI library than halox (mpi4py: " + theirs +
        "; halox: " + halox::mpi_library_version() + "); rebuild it: MPICC=<mpicc of halox's MPI> pip install --no-binary=mpi4py "
        "--no-cache-dir mpi4py");
  auto address = nb::cast<uintptr_t>(mpi.attr("_addressof")(comm));
  MPI_Comm handle = *reinterpret_cast<const MPI_Comm*>(address);
  if (handle == MPI_COMM_NULL) throw nb::value_error("the communicator is MPI.COMM_NULL");
  return handle;
}

nb::tuple tuple_of(const ivec3& v) {
  return nb::make_tuple(v[0], v[1], v[2]);
}

// 3 integers (x, y, z); a single integer stands for all three when allowed.
ivec3 ivec3_of(nb::handle value, const char* what, bool scalar_ok) {
  if (scalar_ok && nb::isinstance<int>(value)) {
    int v = nb::cast<int>(value);
    return {v, v, v};
  }
  ivec3 out{};
  try {
    auto items = nb::cast<std::vector<nb::object>>(value);
    if (items.size() != 3) throw nb::cast_error();
    for (int d = 0; d < 3; ++d) {
      if (!nb::isinstance<int>(items[d]) && !nb::hasattr(items[d], "__index__"))
        throw nb::cast_error();
      out[d] = nb::cast<int>(items[d].attr("__index__")());
    }
  } catch (const nb::cast_error&) {
    throw nb::value_error((std::string(what) + ": expected " + (scalar_ok ? "an integer or " : "") +
                           "3 integers (x, y, z), got " + repr_of(value))
                              .c_str());
  }
  return out;
}

std::array<bool, 3> bool3_of(nb::handle value, const char* what) {
  std::array<bool, 3> out{};
  try {
    auto items = nb::cast<std::vector<nb::object>>(value);
    if (items.size() != 3) throw nb::cast_error();
    for (int d = 0; d < 3; ++d) out[d] = nb::cast<bool>(nb::bool_(items[d]));
  } catch (const nb::cast_error&) {
    throw nb::value_error(
        (std::string(what) + ": expected 3 booleans (x, y, z), got " + repr_of(value)).c_str());
  }
  return out;
}

struct py_decomposition {
  std::unique_ptr<halox::decomposition> d;
  ~py_decomposition() {
    if (mpi_finalized()) (void)d.release();  // too late to free the communicator
  }
};

struct py_grid {
  halox::local_grid g;
};

// One field as a code holds it: a numpy array at a location, with its halo.
struct py_field {
  nb::object array;
  halox::location at = halox::location::cell;
  halox::halo_widths halo{};
  std::string name;
  halox::shared_points shared = halox::shared_points::from_owner;
};

struct py_exchange {
  nb::object decomp;  // keeps the communicator alive
  nb::list arrays;    // keeps the field memory alive
  std::unique_ptr<halox::halo_exchange> ex;
  std::vector<std::string> names;  // as subset calls name the fields
  // Subset calls (sorted fields, depth) whose arguments all ranks accepted.
  std::set<std::pair<std::vector<int>, int>> agreed_calls{};
  ~py_exchange() {
    if (mpi_finalized()) (void)ex.release();  // its MPI requests went with MPI
  }
};

// Shape (z, y, x) of the allocated box.
nb::tuple shape_of(const halox::local_grid& g) {
  auto a = g.allocated();
  return nb::make_tuple(a[2], a[1], a[0]);
}

// Why `array` cannot be field `index` of an exchange on `g` (empty when it can).
std::string array_problem(nb::handle array, size_t index, const halox::local_grid& g,
                          nb::handle first_dtype) {
  std::string field = "field " + std::to_string(index) + ": ";
  nb::module_ np = nb::module_::import_("numpy");
  if (nb::isinstance<py_field>(array))
    return field +
           "a halox.Field: fields go with this rank's cells (x, y, z) or a Subdomain "
           "in place of the Grid";
  if (!nb::isinstance(array, np.attr("ndarray")))
    return field + "expected a numpy.ndarray, got " + nb::cast<std::string>(nb::str(array.type()));
  nb::object dtype = array.attr("dtype");
  bool f32 = dtype.equal(np.attr("dtype")("float32"));
  bool f64 = dtype.equal(np.attr("dtype")("float64"));
  if (!f32 && !f64)
    return field + "expected dtype float32 or float64 (native byte order), got " +
           nb::cast<std::string>(nb::str(dtype));
  if (first_dtype.is_valid() && !dtype.equal(first_dtype))
    return field + "expected dtype " + nb::cast<std::string>(nb::str(first_dtype)) +
           " like field 0, got " + nb::cast<std::string>(nb::str(dtype));
  nb::object shape = array.attr("shape");
  nb::tuple expected = shape_of(g);
  if (!shape.equal(expected))
    return field + "expected shape (z, y, x) = " + repr_of(expected) +
           " (the allocated box, halo included), got " + repr_of(shape);
  nb::object flags = array.attr("flags");
  if (!nb::cast<bool>(flags.attr("c_contiguous")))
    return field + std::string("expected a C-contiguous array (x fastest), got ") +
           (nb::cast<bool>(flags.attr("f_contiguous")) ? "a Fortran-ordered array"
                                                       : "a non-contiguous view") +
           " (allocate fields with Grid.zeros)";
  if (!nb::cast<bool>(flags.attr("writeable")))
    return field + "expected a writeable array, got a read-only one";
  return {};
}

// Why a CUDA array (CuPy, anything with __cuda_array_interface__) cannot be
// field `index` of an exchange on `g` (empty when it can); *data gets its
// device pointer and *typestr its element type ("<f4" or "<f8").
std::string cuda_array_problem(nb::handle array, size_t index, const halox::local_grid& g,
                               const std::string& first_typestr, uintptr_t* data,
                               std::string* typestr) {
  std::string field = "field " + std::to_string(index) + ": ";
  if (!halox::cuda::built())
    return field + "a CUDA array, but halox was built without CUDA (use numpy arrays)";
  nb::dict cai = nb::cast<nb::dict>(array.attr("__cuda_array_interface__"));
  *typestr = nb::cast<std::string>(cai["typestr"]);
  if (*typestr != "<f4" && *typestr != "<f8")
    return field + "expected a CUDA array of float32 or float64 (little endian), got typestr " +
           *typestr;
  if (!first_typestr.empty() && *typestr != first_typestr)
    return field + "expected typestr " + first_typestr + " like field 0, got " + *typestr;
  nb::object shape = cai["shape"];
  nb::tuple expected = shape_of(g);
  if (!nb::cast<nb::tuple>(shape).equal(expected))
    return field + "expected shape (z, y, x) = " + repr_of(expected) +
           " (the allocated box, halo included), got " + repr_of(shape);
  const size_t item = *typestr == "<f4" ? 4 : 8;
  const auto a = g.allocated();
  nb::object strides = cai.contains("strides") ? nb::object(cai["strides"]) : nb::none();
  if (!strides.is_none() &&
      !nb::cast<nb::tuple>(strides).equal(nb::make_tuple(item * static_cast<size_t>(a[0]) * static_cast<size_t>(a[1]),
                                               item * static_cast<size_t>(a[0]), item)))
    return field + "expected a C-contiguous CUDA array (x fastest), got strides " + repr_of(strides);
  nb::tuple pointer = nb::cast<nb::tuple>(cai["data"]);
  if (nb::cast<bool>(pointer[1])) return field + "expected a writeable CUDA array, got a read-only one";
  *data = nb::cast<uintptr_t>(pointer[0]);
  return {};
}

// The arrays' pointers and element type (checked: one kind, one dtype, the
// grid's shape); device arrays set options.memory. Returns what is wrong, or "".
std::string gather_fields(nb::handle arrays, const halox::local_grid& g,
                          halox::exchange_options& options, halox::element_type& type,
                          std::vector<void*>& fields, nb::list& kept) {
  std::string problem;
  if ((!nb::isinstance<nb::list>(arrays) && !nb::isinstance<nb::tuple>(arrays)))
    problem = "arrays: expected a list of numpy arrays, got " +
              nb::cast<std::string>(nb::str(arrays.type()));
  if (problem.empty() && nb::len(arrays) == 0) problem = "arrays: expected at least one field";
  // CUDA arrays (all fields or none): packed on the GPU, on the default stream.
  bool on_device = false;
  if (problem.empty()) {
    size_t cuda_arrays = 0;
    for (nb::handle array : arrays) cuda_arrays += nb::hasattr(array, "__cuda_array_interface__") ? 1 : 0;
    on_device = cuda_arrays > 0;
    if (on_device && cuda_arrays < nb::len(arrays))
      problem = "arrays: " + std::to_string(cuda_arrays) + " of " + std::to_string(nb::len(arrays)) +
                " are CUDA arrays, the others not: an exchange takes fields of one kind";
  }
  if (problem.empty() && on_device) {
    options.memory = halox::memory_kind::device;
    std::string first_typestr;
    size_t index = 0;
    for (nb::handle array : arrays) {
      uintptr_t data = 0;
      std::string typestr;
      problem = cuda_array_problem(array, index, g, first_typestr, &data, &typestr);
      if (!problem.empty()) break;
      if (index == 0) {
        first_typestr = typestr;
        type = typestr == "<f4" ? halox::element_type::f32 : halox::element_type::f64;
      }
      fields.push_back(reinterpret_cast<void*>(data));
      kept.append(array);
      ++index;
    }
  }
  if (problem.empty() && !on_device) {
    nb::object first_dtype;
    size_t index = 0;
    for (nb::handle array : arrays) {
      problem = array_problem(array, index, g, first_dtype);
      if (!problem.empty()) break;
      if (index == 0) {
        first_dtype = array.attr("dtype");
        type = nb::cast<int>(first_dtype.attr("itemsize")) == 4 ? halox::element_type::f32
                                                                : halox::element_type::f64;
      }
      auto data = nb::cast<uintptr_t>(array.attr("ctypes").attr("data"));
      fields.push_back(reinterpret_cast<void*>(data));
      kept.append(array);
      ++index;
    }
  }
  return problem;
}

// The options as named in Python; what is wrong with them, or "".
std::string parse_options(const std::string& alg, const std::string& grouping,
                          const std::string& transport, int fields_per_block,
                          halox::exchange_options& options) {
  try {
    options.alg = halox::parse_algorithm(alg);
    options.grouping = halox::parse_field_grouping(grouping);
    if (fields_per_block < 0)
      throw halox::usage_error("fields_per_block must not be negative, got " +
                               std::to_string(fields_per_block));
    options.fields_per_block = fields_per_block;
    options.transport = halox::parse_transport_choice(transport);  // before anything collective
  } catch (const halox::usage_error& e) {
    return e.what();
  }
  return {};
}

// Collective: raises ValueError on every rank when any rank has a problem.
void agree_or_raise(const halox::decomposition& decomp, std::string problem) {
  if (!problem.empty()) problem = "rank " + std::to_string(decomp.rank()) + ": " + problem;
  std::string agreed;
  {
    nb::gil_scoped_release release;
    agreed = halox::agree_on_error(decomp.comm(), problem);
  }
  if (!agreed.empty()) throw nb::value_error(agreed.c_str());
}

// Both forms end here: one construction, from field descriptors.
py_exchange* built_exchange(py_exchange* self, nb::object decomp_object, nb::list kept,
                            std::vector<std::string> names, const ivec3& cells,
                            const std::vector<halox::field>& fields,
                            const halox::exchange_options& options) {
  auto& decomp = *nb::cast<py_decomposition&>(decomp_object).d;
  std::unique_ptr<halox::halo_exchange> ex;
  {
    nb::gil_scoped_release release;  // construction is collective
    ex = std::make_unique<halox::halo_exchange>(decomp, cells, fields, options);
  }
  return new (self)
      py_exchange{std::move(decomp_object), std::move(kept), std::move(ex), std::move(names)};
}

py_exchange* make_grid_exchange(py_exchange* self, nb::object decomp_object, const py_grid& grid,
                                nb::handle arrays, const halox::exchange_options& parsed,
                                std::string problem) {
  auto& decomp = *nb::cast<py_decomposition&>(decomp_object).d;
  // Local checks first, then agreed on: every rank raises the same error.
  halox::exchange_options options = parsed;
  halox::element_type type = halox::element_type::f64;
  std::vector<void*> fields;
  nb::list kept;
  if (problem.empty()) {
    try {
      halox::validate_grid(grid.g);
    } catch (const halox::usage_error& e) {
      problem = e.what();
    }
  }
  if (problem.empty()) problem = gather_fields(arrays, grid.g, options, type, fields, kept);
  agree_or_raise(decomp, problem);

  std::vector<std::string> names;
  for (size_t f = 0; f < fields.size(); ++f) names.push_back("field " + std::to_string(f));
  return built_exchange(self, std::move(decomp_object), std::move(kept), std::move(names),
                        grid.g.interior, halox::cell_fields(grid.g, type, fields), options);
}

std::string halo_repr(const halox::halo_widths& h) {
  return "(" + repr_of(tuple_of(h.lo)) + ", " + repr_of(tuple_of(h.hi)) + ")";
}

// halo=: one width, (x, y, z), or ((lo_x, lo_y, lo_z), (hi_x, hi_y, hi_z)).
halox::halo_widths halo_of(nb::handle value) {
  halox::halo_widths h;
  bool parsed = false;
  if (nb::isinstance<int>(value) ||
      (nb::hasattr(value, "__index__") && !nb::hasattr(value, "__len__"))) {
    h.lo = h.hi = ivec3_of(value, "halo", true);
    parsed = true;
  } else if (nb::hasattr(value, "__len__") && nb::len(value) == 3) {
    h.lo = h.hi = ivec3_of(value, "halo", false);
    parsed = true;
  } else if (nb::hasattr(value, "__len__") && nb::len(value) == 2 &&
             !nb::isinstance<nb::str>(value)) {
    try {
      h.lo = ivec3_of(value[0], "halo", false);
      h.hi = ivec3_of(value[1], "halo", false);
      parsed = true;
    } catch (const nb::builtin_exception&) {
    }
  }
  if (!parsed)
    throw nb::value_error(("halo: expected an integer, 3 integers (x, y, z), or "
                           "((lo_x, lo_y, lo_z), (hi_x, hi_y, hi_z)), got " +
                           repr_of(value))
                              .c_str());
  for (int d = 0; d < 3; ++d)
    if (h.lo[d] < 0 || h.hi[d] < 0)
      throw nb::value_error(("halo: expected widths >= 0, got " + repr_of(value)).c_str());
  return h;
}

// This rank's cells: 3 integers, or a Subdomain's extent.
ivec3 cells_of(nb::handle value) {
  if (nb::isinstance<halox::subdomain>(value))
    return nb::cast<const halox::subdomain&>(value).extent;
  return ivec3_of(value, "cells", false);
}

// Why field `f`, named `name`, cannot be exchanged on this rank
// with `cells` cells (empty when it can); fills `out` when it can.
std::string field_problem(const py_field& f, const std::string& name, const halox::decomposition& d,
                          const ivec3& cells, halox::field& out) {
  const std::string field = "field '" + name + "' (" + halox::to_string(f.at) + "): ";
  nb::module_ np = nb::module_::import_("numpy");
  nb::handle array = f.array;
  if (nb::hasattr(array, "__cuda_array_interface__"))
    return field +
           "a CUDA array: Field takes numpy arrays (CUDA arrays go to "
           "HaloExchange(decomp, grid, arrays))";
  if (!nb::isinstance(array, np.attr("ndarray")))
    return field + "expected a numpy.ndarray, got " + nb::cast<std::string>(nb::str(array.type()));
  nb::object dtype = array.attr("dtype");
  const bool f32 = dtype.equal(np.attr("dtype")("float32"));
  if (!f32 && !dtype.equal(np.attr("dtype")("float64")))
    return field + "expected dtype float32 or float64 (native byte order), got " +
           nb::cast<std::string>(nb::str(dtype));
  out = {nullptr, f32 ? halox::element_type::f32 : halox::element_type::f64, f.at, f.halo, name,
         f.shared};
  const halox::local_grid layout = halox::layout_of(d, cells, out).grid;
  const ivec3 a = layout.allocated();
  nb::tuple expected = nb::make_tuple(a[2], a[1], a[0]);
  if (!array.attr("shape").equal(expected))
    return field + "expected shape (z, y, x) = " + repr_of(expected) + ": " +
           repr_of(tuple_of(layout.interior)) + " points (x, y, z) of a " + halox::to_string(f.at) +
           " field on this rank (a staggered open axis holds one more on its last rank) plus "
           "halo " +
           halo_repr(f.halo) + "; got " + repr_of(array.attr("shape"));
  nb::object flags = array.attr("flags");
  if (!nb::cast<bool>(flags.attr("c_contiguous")))
    return field + "expected a C-contiguous array (x fastest), got " +
           (nb::cast<bool>(flags.attr("f_contiguous")) ? "a Fortran-ordered array"
                                                       : "a non-contiguous view");
  if (!nb::cast<bool>(flags.attr("writeable")))
    return field + "expected a writeable array, got a read-only one";
  out.data = reinterpret_cast<void*>(nb::cast<uintptr_t>(array.attr("ctypes").attr("data")));
  return {};
}

// The core's advice on adopting a rank order, as a Python program follows it.
std::string in_python_terms(std::string message) {
  const std::string_view cpp = halox::adopt_order_advice;
  if (auto at = message.find(cpp); at != std::string::npos)
    message.replace(
        at, cpp.size(),
        "halox.Decomposition.adopt(comm, dims, periodic, rank_order=\"XYZ\", subdomain=mine)");
  return message;
}

// HaloExchange(decomp, cells or Subdomain, [Field, ...]): fields as codes hold them.
py_exchange* make_field_exchange(py_exchange* self, nb::object decomp_object, nb::handle domain,
                                 nb::handle fields, const halox::exchange_options& options,
                                 std::string problem) {
  auto& decomp = *nb::cast<py_decomposition&>(decomp_object).d;
  const bool own_subdomain = nb::isinstance<halox::subdomain>(domain);
  ivec3 cells{};
  std::vector<const py_field*> described;
  nb::list kept;
  if (problem.empty()) {
    try {
      cells = cells_of(domain);
    } catch (const nb::builtin_exception&) {
      problem =
          "grid: expected a halox.Grid (with numpy arrays), or this rank's cells (x, y, z) "
          "or a halox.Subdomain (with halox.Field descriptors), got " +
          repr_of(domain);
    }
  }
  if (problem.empty() && !nb::isinstance<nb::list>(fields) && !nb::isinstance<nb::tuple>(fields))
    problem = "fields: expected a list of halox.Field, got " +
              nb::cast<std::string>(nb::str(fields.type()));
  if (problem.empty() && nb::len(fields) == 0) problem = "fields: expected at least one field";
  for (size_t i = 0; problem.empty() && i < nb::len(fields); ++i) {
    nb::handle f = fields[i];
    if (!nb::isinstance<py_field>(f))
      problem = "field " + std::to_string(i) + ": expected a halox.Field, got " +
                nb::cast<std::string>(nb::str(f.type())) +
                " (numpy arrays alone go with a halox.Grid: HaloExchange(decomp, grid, arrays))";
    else
      described.push_back(&nb::cast<const py_field&>(f));
  }
  agree_or_raise(decomp, problem);

  // A code's own sub-domain must tile the grid as decomp places the ranks:
  // checked before the shapes, which follow from where each rank sits.
  if (own_subdomain) {
    const auto& mine = nb::cast<const halox::subdomain&>(domain);
    std::string refused;
    {
      nb::gil_scoped_release release;  // collective; usage_error on every rank alike
      try {
        halox::require_tiling(decomp, mine);
      } catch (const halox::usage_error& e) {
        refused = e.what();
      }
    }
    if (!refused.empty()) throw nb::value_error(in_python_terms(refused).c_str());
  }
  std::vector<halox::field> descriptors(described.size());
  std::vector<std::string> names;
  for (size_t i = 0; problem.empty() && i < described.size(); ++i) {
    names.push_back(described[i]->name.empty() ? "field " + std::to_string(i) : described[i]->name);
    problem = field_problem(*described[i], names.back(), decomp, cells, descriptors[i]);
    kept.append(described[i]->array);
  }
  agree_or_raise(decomp, problem);

  return built_exchange(self, std::move(decomp_object), std::move(kept), std::move(names), cells,
                        descriptors, options);
}

py_exchange* make_exchange(py_exchange* self, nb::object decomp_object, nb::handle grid,
                           nb::handle arrays, const std::string& alg, const std::string& grouping,
                           const std::string& transport, int fields_per_block) {
  halox::exchange_options options;
  std::string problem = parse_options(alg, grouping, transport, fields_per_block, options);
  if (nb::isinstance<py_grid>(grid))
    return make_grid_exchange(self, std::move(decomp_object), nb::cast<const py_grid&>(grid),
                              arrays, options, std::move(problem));
  return make_field_exchange(self, std::move(decomp_object), grid, arrays, options,
                             std::move(problem));
}

// The fields of a subset call as indices: None (every field), a name, an
// index, or a list of names and indices. Empty optional: the whole exchange.
// Checked as the core checks it, and agreed on by all ranks the first time a
// subset and depth is called (when its schedule is built, collectively), so
// a bad call raises the same error everywhere instead of leaving ranks waiting.
std::optional<std::vector<int>> agreed_call(py_exchange& s, nb::handle fields, int depth) {
  if (fields.is_none() && depth == 0) return std::nullopt;
  const auto& layouts = s.ex->plan().layouts;
  const int count = static_cast<int>(layouts.size());
  std::vector<int> chosen;
  std::string problem;
  auto add = [&](nb::handle item) {
    if (nb::isinstance<nb::str>(item)) {
      const auto name = nb::cast<std::string>(item);
      const auto at = std::find(s.names.begin(), s.names.end(), name);
      if (at == s.names.end()) {
        std::string known;
        for (const auto& n : s.names) known += (known.empty() ? "" : ", ") + n;
        problem = "no field named '" + name + "' in this exchange (its fields: " + known + ")";
      } else {
        chosen.push_back(static_cast<int>(at - s.names.begin()));
      }
    } else if (nb::isinstance<int>(item)) {
      const int index = nb::cast<int>(item);
      if (index < 0 || index >= count)
        problem = "field index " + std::to_string(index) + " is not one of the exchange's " +
                  std::to_string(count) + " fields (0 to " + std::to_string(count - 1) + ")";
      else
        chosen.push_back(index);
    } else {
      problem = "fields: expected names or indices, got " + repr_of(item);
    }
  };
  if (fields.is_none()) {
    for (int f = 0; f < count; ++f) chosen.push_back(f);
  } else if (nb::isinstance<nb::str>(fields) || nb::isinstance<int>(fields)) {
    add(fields);
  } else if (nb::isinstance<nb::list>(fields) || nb::isinstance<nb::tuple>(fields)) {
    for (nb::handle item : fields)
      if (problem.empty()) add(item);
  } else {
    problem = "fields: expected a name, an index or a list of them, got " + repr_of(fields);
  }
  // The core's own checks (empty, twice, out of range, too deep), not collective.
  if (problem.empty()) {
    try {
      chosen = s.ex->check_subset(chosen, depth);
    } catch (const halox::usage_error& e) {
      problem = e.what();
    }
  }
  const auto key = std::make_pair(chosen, depth);
  if (problem.empty() && s.agreed_calls.count(key)) return chosen;
  const auto& decomp = *nb::cast<py_decomposition&>(s.decomp).d;
  if (!problem.empty()) problem = "rank " + std::to_string(decomp.rank()) + ": " + problem;
  std::string agreed;
  {
    nb::gil_scoped_release release;
    agreed = halox::agree_on_error(decomp.comm(), problem);
  }
  if (!agreed.empty()) throw halox::usage_error(agreed);
  s.agreed_calls.insert(key);
  return chosen;
}

// A forward call: all fields or a subset, with the exchange's algorithm or the call's own.
void start_call(py_exchange& s, nb::handle fields, int depth, nb::handle algorithm) {
  std::optional<halox::algorithm> alg;
  if (!algorithm.is_none()) alg = halox::parse_algorithm(nb::cast<std::string>(algorithm));
  auto call = agreed_call(s, fields, depth);
  if (alg && !call) {
    call.emplace();
    for (int f = 0; f < static_cast<int>(s.ex->plan().layouts.size()); ++f) call->push_back(f);
  }
  nb::gil_scoped_release release;
  if (call && alg)
    s.ex->start(*call, depth, *alg);
  else if (call)
    s.ex->start(*call, depth);
  else
    s.ex->start();
}

void start_reverse(py_exchange& s, const std::string& op, nb::handle fields, int depth,
                   bool every_holder) {
  const halox::reduction how = halox::parse_reduction(op);
  const halox::reverse_to to =
      every_holder ? halox::reverse_to::every_holder : halox::reverse_to::owner;
  auto call = agreed_call(s, fields, depth);
  nb::gil_scoped_release release;
  if (call)
    s.ex->start_reverse(how, *call, depth, to);
  else
    s.ex->start_reverse(how, to);
}

void init_grid(py_grid* self, nb::handle extent, nb::handle halo, nb::handle halo_lo,
               nb::handle halo_hi) {
  ivec3 n = ivec3_of(extent, "extent", false);
  halox::halo_widths widths;
  if (!halo.is_none()) {
    if (!halo_lo.is_none() || !halo_hi.is_none())
      throw nb::value_error("Grid: expected halo=, or halo_lo= and halo_hi=, not both");
    widths.lo = widths.hi = ivec3_of(halo, "halo", true);
  } else if (!halo_lo.is_none() && !halo_hi.is_none()) {
    widths.lo = ivec3_of(halo_lo, "halo_lo", true);
    widths.hi = ivec3_of(halo_hi, "halo_hi", true);
  } else if (!halo_lo.is_none() || !halo_hi.is_none()) {
    throw nb::value_error("Grid: expected halo_lo= and halo_hi= together");
  } else {
    widths = halox::halo_widths::uniform(1);
  }
  for (int d = 0; d < 3; ++d) {
    if (n[d] <= 0)
      throw nb::value_error(
          ("Grid: expected a positive extent, got " + repr_of(extent)).c_str());
    if (widths.lo[d] < 0 || widths.hi[d] < 0)
      throw nb::value_error("Grid: expected halo widths >= 0");
  }
  new (self) py_grid{halox::local_grid(n, widths)};
}

// Errors, and what this build and machine offer.
void bind_module_functions(nb::module_& m) {
  // Bad configurations are ValueErrors; run failures RuntimeErrors.
  nb::exception<halox::usage_error>(m, "UsageError", PyExc_ValueError);
  nb::exception<halox::run_error>(m, "RunError", PyExc_RuntimeError);
  nb::exception<halox::timeout_error>(m, "PeerTimeoutError", PyExc_TimeoutError);

  m.def(
      "transports",
      [] {
        std::vector<std::string> names;
        for (const auto& c : halox::available_transport_choices()) names.push_back(c.name());
        return names;
      },
      "Transports available here (a same-node one alone routes the other neighbours by "
      "mpi-p2p; LOCAL+REMOTE names a routing).");
  m.def(
      "list_transports", [] { return halox::list_transports(); },
      "One line per transport: name, availability (and why not), reach, description.");
  m.def(
      "algorithms",
      [] {
        std::vector<std::string> names;
        for (const auto a : halox::all_algorithms) names.push_back(halox::to_string(a));
        return names;
      },
      "Names of the exchange algorithms.");
  m.def(
      "field_groupings",
      [] {
        std::vector<std::string> names;
        for (const auto f : halox::all_field_groupings) names.push_back(halox::to_string(f));
        return names;
      },
      "Names of the field groupings (grouping=).");
  m.def("mpi_library_version", &halox::mpi_library_version,
        "The MPI library halox is built against (the first line of MPI_Get_library_version).");
  m.attr("default_transport") = halox::exchange_options{}.transport.name();
  m.attr("cuda_built") = halox::cuda::built();
  m.def("cuda_unavailable", &halox::cuda::unavailable,
        "Why CUDA arrays cannot be exchanged here (built without CUDA, no device); empty when "
        "they can.");
}

void bind_subdomain(nb::module_& m) {
  nb::class_<halox::subdomain>(m, "Subdomain", "This rank's part of the global domain, (x, y, z).")
      .def(
          "__init__",
          [](halox::subdomain* self, nb::handle offset, nb::handle extent,
             nb::handle global_domain) {
            new (self) halox::subdomain{ivec3_of(offset, "offset", false),
                                        ivec3_of(extent, "extent", false),
                                        ivec3_of(global_domain, "global_domain", false)};
          },
          "offset"_a, "extent"_a, "global_domain"_a,
          "A code's own sub-domain, as it computed it: the global coordinates of its first "
          "cell, its cells and the whole domain's, (x, y, z).")
      .def_prop_ro(
          "offset", [](const halox::subdomain& s) { return tuple_of(s.offset); },
          "Global coordinates of the first interior cell.")
      .def_prop_ro(
          "extent", [](const halox::subdomain& s) { return tuple_of(s.extent); },
          "Interior cells of this rank.")
      .def_prop_ro(
          "global_domain", [](const halox::subdomain& s) { return tuple_of(s.global); },
          "Cells of the whole domain.")
      .def("__repr__", [](const halox::subdomain& s) {
        return "Subdomain(offset=" + repr_of(tuple_of(s.offset)) +
               ", extent=" + repr_of(tuple_of(s.extent)) +
               ", global_domain=" + repr_of(tuple_of(s.global)) + ")";
      });
}

// A code's own rank grid, and the points its fields hold.
void bind_code_decomposition(nb::class_<py_decomposition>& decomposition) {
  decomposition
      .def_static(
          "adopt",
          [](nb::handle comm, nb::handle dims, nb::handle periodic, nb::handle rank_order,
             nb::handle coords, nb::handle subdomain) {
            MPI_Comm parent = comm_of(comm);
            ivec3 d = ivec3_of(dims, "dims", false);
            auto p = bool3_of(periodic, "periodic");
            if (rank_order.is_none() == coords.is_none())
              throw nb::value_error(
                  "Decomposition.adopt: expected rank_order= (\"XYZ\", \"ZYX\", ...) or "
                  "coords=(x, y, z), exactly one of them");
            if (!nb::isinstance<halox::subdomain>(subdomain))
              throw nb::value_error(
                  ("Decomposition.adopt: expected subdomain=halox.Subdomain(offset, extent, "
                   "global_domain), this rank's part as the code holds it (what shows a wrong "
                   "rank order), got " +
                   repr_of(subdomain))
                      .c_str());
            const auto& mine = nb::cast<const halox::subdomain&>(subdomain);
            std::optional<halox::rank_order> order;
            ivec3 at{};
            if (!rank_order.is_none())
              order = halox::rank_order::parse(nb::cast<std::string>(rank_order));
            else
              at = ivec3_of(coords, "coords", false);
            std::string refused;
            std::unique_ptr<halox::decomposition> decomp;
            {
              nb::gil_scoped_release release;  // collective; usage_error on every rank alike
              try {
                decomp = std::make_unique<halox::decomposition>(
                    order ? halox::adopt_decomposition(parent, d, p, *order, mine)
                          : halox::adopt_decomposition(parent, d, p, at, mine));
              } catch (const halox::usage_error& e) {
                refused = e.what();
              }
            }
            if (!refused.empty()) throw halox::usage_error(in_python_terms(refused));
            return new py_decomposition{std::move(decomp)};
          },
          "comm"_a, "dims"_a, "periodic"_a = nb::make_tuple(true, true, true), nb::kw_only(),
          "rank_order"_a = nb::none(), "coords"_a = nb::none(), "subdomain"_a = nb::none(),
          nb::rv_policy::take_ownership,
          "A code's own rank grid (collective over comm, duplicated): dims (x, y, z) exactly, "
          "either rank_order, which dimension runs fastest in its rank numbering (\"XYZ\": "
          "x fastest, as CloverLeaf numbers its chunks; \"ZYX\": as MPI_Cart_create), or "
          "coords, this rank's coordinates as the code computed them, and subdomain, this "
          "rank's part as the code holds it (a halox.Subdomain). Raises ValueError on every "
          "rank when dims do not fit the ranks or the sub-domains do not tile the global "
          "domain as the order places the ranks.")
      .def_prop_ro(
          "rank_order", [](const py_decomposition& s) { return s.d->order().name(); },
          "Which dimension runs fastest in the rank numbering, e.g. \"ZYX\" (MPI_Cart_create).")
      .def(
          "field_points",
          [](const py_decomposition& s, nb::handle cells, const std::string& location) {
            return tuple_of(
                halox::field_points(*s.d, cells_of(cells), halox::parse_location(location)));
          },
          "cells"_a, "location"_a = "cell",
          "The points (x, y, z) a field at location holds on this rank for cells (x, y, z) or "
          "a Subdomain: one more along a staggered open axis on its last rank.")
      .def(
          "field_shape",
          [](const py_decomposition& s, nb::handle cells, const std::string& location,
             nb::handle halo) {
            halox::field f{nullptr,
                           halox::element_type::f64,
                           halox::parse_location(location),
                           halo_of(halo),
                           {}};
            const ivec3 a = halox::layout_of(*s.d, cells_of(cells), f).grid.allocated();
            return nb::make_tuple(a[2], a[1], a[0]);
          },
          "cells"_a, "location"_a = "cell", "halo"_a = 1,
          "The shape (z, y, x) of a Field's array on this rank: its points plus halo (as "
          "Field's halo=).");
}

void bind_decomposition(nb::module_& m) {
  auto decomposition = nb::class_<py_decomposition>(
      m, "Decomposition", "The Cartesian process grid (MPI_Dims_create / MPI_Cart_create).");
  decomposition
      .def(
          "__init__",
          [](py_decomposition* self, nb::handle comm, nb::handle dims, nb::handle periodic,
             bool reorder) {
            MPI_Comm parent = comm_of(comm);
            ivec3 d = ivec3_of(dims, "dims", false);
            auto p = bool3_of(periodic, "periodic");
            auto decomp = std::make_unique<halox::decomposition>([&] {
              nb::gil_scoped_release release;  // collective
              return halox::make_cart_decomposition(parent, d, p, reorder);
            }());
            new (self) py_decomposition{std::move(decomp)};
          },
          "comm"_a = nb::none(), "dims"_a = nb::make_tuple(0, 0, 0),
          "periodic"_a = nb::make_tuple(true, true, true), "reorder"_a = false,
          "Collective over comm (an mpi4py communicator; None: MPI_COMM_WORLD). dims entries of "
          "0 are chosen by MPI_Dims_create; (x, y, z) order.")
      .def_prop_ro("rank", [](const py_decomposition& s) { return s.d->rank(); })
      .def_prop_ro("size", [](const py_decomposition& s) { return s.d->size(); })
      .def_prop_ro("dims", [](const py_decomposition& s) { return tuple_of(s.d->dims()); })
      .def_prop_ro("coords", [](const py_decomposition& s) { return tuple_of(s.d->coords()); })
      .def_prop_ro("periodic",
                   [](const py_decomposition& s) {
                     auto p = s.d->periodic();
                     return nb::make_tuple(p[0], p[1], p[2]);
                   })
      .def_prop_ro(
          "comm",
          [](const py_decomposition& s) {
            // The decomposition's communicator, owned by it (do not free).
            return nb::module_::import_("mpi4py.MPI")
                .attr("Cartcomm")
                .attr("f2py")(static_cast<int>(MPI_Comm_c2f(s.d->comm())));
          },
          "The decomposition's own communicator as an mpi4py Cartcomm (owned by it).")
      .def(
          "subdomain",
          [](const py_decomposition& s, nb::handle global_domain, nb::handle per_rank) {
            if (global_domain.is_none() == per_rank.is_none())
              throw nb::value_error(
                  "subdomain: expected global_domain=(x, y, z) or "
                  "per_rank=(x, y, z), exactly one of them");
            if (!per_rank.is_none())
              return halox::subdomain_per_rank(*s.d, ivec3_of(per_rank, "per_rank", false));
            return halox::subdomain_of_global(*s.d,
                                              ivec3_of(global_domain, "global_domain", false));
          },
          nb::kw_only(), "global_domain"_a = nb::none(), "per_rank"_a = nb::none(),
          "This rank's sub-domain: a global domain split over the ranks (remainders one cell "
          "each over the first ranks), or per_rank cells on every rank.")
      .def("__repr__", [](const py_decomposition& s) {
        return "Decomposition(dims=" + repr_of(tuple_of(s.d->dims())) +
               ", coords=" + repr_of(tuple_of(s.d->coords())) +
               ", rank=" + std::to_string(s.d->rank()) + ")";
      });
  bind_code_decomposition(decomposition);
}

void bind_grid(nb::module_& m) {
  nb::class_<py_grid>(m, "Grid", "One rank's field layout: interior extent and halo widths.")
      .def(
          "__init__",
          &init_grid,
          "extent"_a, nb::kw_only(), "halo"_a = nb::none(), "halo_lo"_a = nb::none(),
          "halo_hi"_a = nb::none(),
          "extent: interior cells (x, y, z); halo: one width or (x, y, z), or per side "
          "halo_lo= (below) and halo_hi= (above). Default: halo 1.")
      .def_prop_ro("extent", [](const py_grid& s) { return tuple_of(s.g.interior); })
      .def_prop_ro("halo_lo", [](const py_grid& s) { return tuple_of(s.g.halo.lo); })
      .def_prop_ro("halo_hi", [](const py_grid& s) { return tuple_of(s.g.halo.hi); })
      .def_prop_ro(
          "shape", [](const py_grid& s) { return shape_of(s.g); },
          "Shape (z, y, x) of a field: the allocated box, halo included.")
      .def_prop_ro(
          "interior",
          [](const py_grid& s) {
            nb::object slice = nb::module_::import_("builtins").attr("slice");
            auto part = [&](int d) {
              return slice(s.g.halo.lo[d], s.g.halo.lo[d] + s.g.interior[d]);
            };
            return nb::make_tuple(part(2), part(1), part(0));
          },
          "Slices (z, y, x) of the interior: field[grid.interior].")
      .def(
          "zeros",
          [](const py_grid& s, nb::handle dtype) {
            nb::module_ np = nb::module_::import_("numpy");
            nb::object dt = np.attr("dtype")(dtype);
            if (!dt.equal(np.attr("dtype")("float32")) && !dt.equal(np.attr("dtype")("float64")))
              throw nb::value_error(("Grid.zeros: expected dtype float32 or float64, got " +
                                     nb::cast<std::string>(nb::str(dt)))
                                        .c_str());
            return np.attr("zeros")(shape_of(s.g), dt);
          },
          "dtype"_a = nb::none(),
          "A zero field of shape (z, y, x) (the allocated box), float32 or float64 (default).")
      .def("__repr__", [](const py_grid& s) {
        return "Grid(extent=" + repr_of(tuple_of(s.g.interior)) +
               ", halo_lo=" + repr_of(tuple_of(s.g.halo.lo)) +
               ", halo_hi=" + repr_of(tuple_of(s.g.halo.hi)) + ")";
      });
}

void bind_field(nb::module_& m) {
  nb::class_<py_field>(m, "Field",
                       "One field as a code holds it: a numpy array at a location of the cell "
                       "grid, with its own halo widths and dtype.")
      .def(
          "__init__",
          [](py_field* self, nb::object array, const std::string& location, nb::handle halo,
             const std::string& name, const std::string& shared) {
            new (self) py_field{std::move(array), halox::parse_location(location), halo_of(halo),
                                name, halox::parse_shared_points(shared)};
          },
          "array"_a, "location"_a = "cell", "halo"_a = 1, "name"_a = "", "shared"_a = "from_owner",
          "array: C-contiguous float32 or float64, shape (z, y, x) = the location's points on "
          "this rank plus halos (Decomposition.field_shape). location: cell, x_face, y_face, "
          "z_face, x_edge, y_edge, z_edge or vertex. halo: in points, one width, (x, y, z), or "
          "((lo_x, lo_y, lo_z), (hi_x, hi_y, hi_z)). name: names it in errors and subset calls. "
          "shared: from_owner (the faces shared with a neighbour along a staggered axis take the "
          "owner's values) or kept (each holder keeps its own; only the points beyond move). "
          "The array is checked when the exchange is built.")
      .def_prop_ro("array", [](const py_field& f) { return f.array; })
      .def_prop_ro("location", [](const py_field& f) { return halox::to_string(f.at); })
      .def_prop_ro("halo_lo", [](const py_field& f) { return tuple_of(f.halo.lo); })
      .def_prop_ro("halo_hi", [](const py_field& f) { return tuple_of(f.halo.hi); })
      .def_prop_ro("name", [](const py_field& f) { return f.name; })
      .def_prop_ro("shared", [](const py_field& f) { return halox::to_string(f.shared); })
      .def("__repr__", [](const py_field& f) {
        return "Field(location=" + repr_of(nb::str(halox::to_string(f.at).c_str())) +
               ", halo=" + halo_repr(f.halo) + ", name=" + repr_of(nb::str(f.name.c_str())) +
               (f.shared == halox::shared_points::kept ? ", shared='kept'" : "") + ")";
      });
}

// The reverse calls: every halo copy combined into its owner, or on every holder.
void bind_reverse_calls(nb::class_<py_exchange>& exchange) {
  exchange
      .def(
          "reverse",
          [](py_exchange& s, const std::string& op, nb::handle fields, int depth,
             bool every_holder) {
            start_reverse(s, op, fields, depth, every_holder);
            nb::gil_scoped_release release;
            s.ex->wait_reverse();
          },
          "op"_a = "sum", "fields"_a = nb::none(), "depth"_a = 0, "every_holder"_a = false,
          "The reverse of exchange(): every copy of a point in a halo combined into the point's "
          "owner. op: sum | min | max; fields, depth: as for exchange(); every_holder: every "
          "rank that holds the point, owner or not, ends with the same total. Copies combine in "
          "one fixed order (z, then y, then x; along an axis the owner's value, then the copy "
          "below, then the copy above), so the result is bitwise the same whatever the "
          "transport, algorithm or grouping.")
      .def(
          "start_reverse",
          [](py_exchange& s, const std::string& op, nb::handle fields, int depth,
             bool every_holder) { start_reverse(s, op, fields, depth, every_holder); },
          "op"_a = "sum", "fields"_a = nb::none(), "depth"_a = 0, "every_holder"_a = false,
          "Puts the first step of a reverse call in flight (as reverse()); then wait_reverse().")
      .def(
          "wait_reverse",
          [](py_exchange& s) {
            nb::gil_scoped_release release;
            s.ex->wait_reverse();
          },
          "Completes a reverse call.");
}

// HaloExchange.set_field_data: the array checked against the one it replaces.
void set_field_data(py_exchange& s, nb::handle field, nb::object array) {
  int index = -1;
  if (nb::isinstance<nb::str>(field)) {
    try {
      index = s.ex->fields_named({nb::cast<std::string>(field)}).front();
    } catch (const halox::usage_error& e) {
      throw nb::value_error((std::string("set_field_data: ") + e.what()).c_str());
    }
  } else if (nb::isinstance<int>(field)) {
    index = nb::cast<int>(field);
    if (index < 0 || index >= static_cast<int>(nb::len(s.arrays)))
      throw nb::value_error(("set_field_data: field index " + std::to_string(index) +
                             " is not one of the exchange's " + std::to_string(nb::len(s.arrays)) +
                             " fields").c_str());
  } else {
    throw nb::value_error(("set_field_data: field: expected a name or an index, got " + repr_of(field)).c_str());
  }
  nb::object old = s.arrays[static_cast<size_t>(index)];
  nb::module_ np = nb::module_::import_("numpy");
  const std::string what = "set_field_data: field '" + s.names[static_cast<size_t>(index)] + "': ";
  if (!nb::isinstance(array, np.attr("ndarray")) || !nb::isinstance(old, np.attr("ndarray")))
    throw nb::value_error((what + "expected a numpy.ndarray in place of one, got " +
                           nb::cast<std::string>(nb::str(array.type())))
                              .c_str());
  const nb::object dtype = array.attr("dtype"), old_dtype = old.attr("dtype");
  const nb::object shape = array.attr("shape"), old_shape = old.attr("shape");
  if (!dtype.equal(old_dtype) || !shape.equal(old_shape))
    throw nb::value_error((what + "expected shape " + repr_of(old_shape) + " and dtype " +
                           nb::cast<std::string>(nb::str(old_dtype)) + " as before, got " +
                           repr_of(shape) + " " + nb::cast<std::string>(nb::str(dtype)))
                              .c_str());
  nb::object flags = array.attr("flags");
  if (!nb::cast<bool>(flags.attr("c_contiguous")) || !nb::cast<bool>(flags.attr("writeable")))
    throw nb::value_error((what + "expected a C-contiguous, writable array").c_str());
  s.ex->set_field_data(index, reinterpret_cast<void*>(nb::cast<uintptr_t>(array.attr("ctypes").attr("data"))));
  s.arrays[static_cast<size_t>(index)] = array;
}

void bind_exchange(nb::module_& m) {
  auto exchange = nb::class_<py_exchange>(m, "HaloExchange",
                          "Exchanges the halos of numpy fields; collective over the "
                          "decomposition's communicator.")
      .def("__init__", &make_exchange, "decomp"_a, "grid"_a, "arrays"_a, nb::kw_only(),
           "algorithm"_a = "standard",
           "grouping"_a = halox::to_string(halox::exchange_options{}.grouping),
           "transport"_a = halox::exchange_options{}.transport.name(), "fields_per_block"_a = 0,
           "grid: a Grid, with arrays: C-contiguous float32/float64 arrays of shape grid.shape "
           "(z, y, x), all of one dtype: numpy arrays, or CUDA arrays (CuPy, "
           "__cuda_array_interface__) where halox was built with CUDA, packed on the GPU. Or "
           "this rank's cells (x, y, z), or a Subdomain (a code's own, checked to tile the "
           "global grid as decomp places the ranks), with arrays: a list of halox.Field, each "
           "of its own location, halo and dtype. algorithm: standard | staged | faces; grouping "
           "(how the fields are grouped into messages): cache | compact | sequence; transport: "
           "one of transports(); fields_per_block: fields a step moves at a time (0: sized to "
           "the L2 cache). Raises ValueError, the same on every rank, when any rank's arguments "
           "are wrong.")
      .def(
          "exchange",
          [](py_exchange& s, nb::handle fields, int depth, nb::handle algorithm) {
            start_call(s, fields, depth, algorithm);
            nb::gil_scoped_release release;
            s.ex->wait();
          },
          "fields"_a = nb::none(), "depth"_a = 0, "algorithm"_a = nb::none(),
          "start() then wait(): every halo point holds its neighbour's value. fields: names or "
          "indices of a subset (None: all); depth: the halo width to fill, in cells (0: each "
          "field's whole halo); algorithm: this call's own (standard | staged | faces; None: the "
          "exchange's). Every rank makes the same calls.")
      .def(
          "start",
          [](py_exchange& s, nb::handle fields, int depth, nb::handle algorithm) {
            start_call(s, fields, depth, algorithm);
          },
          "fields"_a = nb::none(), "depth"_a = 0, "algorithm"_a = nb::none(),
          "Puts the first step in flight (of all fields, or a subset at a depth, as exchange()); "
          "overlap interior work, then wait().")
      .def(
          "wait",
          [](py_exchange& s) {
            nb::gil_scoped_release release;
            s.ex->wait();
          },
          "Completes the exchange.")
      .def("set_field_data", &set_field_data, "field"_a, "array"_a,
           "Gives field (a name or an index) new memory: a numpy array of the same shape and "
           "dtype as the one it replaces, C-contiguous and writable (a code that re-allocates "
           "its arrays between calls, as LULESH does). Not collective, but every rank that gives "
           "a field new memory must do so before the same call, which then re-establishes the "
           "moved fields' schedules collectively.")
      .def(
          "prepare",
          [](py_exchange& s, nb::handle fields, int depth) {
            auto call = agreed_call(s, fields, depth);
            nb::gil_scoped_release release;
            if (call) s.ex->prepare(*call, depth);
          },
          "fields"_a = nb::none(), "depth"_a = 0,
          "Builds a subset call's schedule now (collective) instead of at its first call.")
      .def_prop_ro(
          "field_names", [](const py_exchange& s) { return s.names; },
          "The fields' names, as subset calls name them (\"field <index>\" where unnamed).")
      .def_prop_ro(
          "schedules_built", [](const py_exchange& s) { return s.ex->schedules_built(); },
          "Schedules built so far: the whole exchange and each subset and depth called.")
      .def_prop_ro("algorithm",
                   [](const py_exchange& s) { return halox::to_string(s.ex->options().alg); })
      .def_prop_ro("grouping",
                   [](const py_exchange& s) { return halox::to_string(s.ex->options().grouping); })
      .def_prop_ro("transport", [](const py_exchange& s) { return s.ex->transport_name(); })
      .def_prop_ro(
          "transport_path", [](const py_exchange& s) { return s.ex->transport_path(); },
          "How the data moved, e.g. shm(outbox)+mpi-p2p for fields in private memory.")
      .def_prop_ro("arrays", [](const py_exchange& s) { return s.arrays; });
  bind_reverse_calls(exchange);
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "halox core bindings: decomposition, grid, halo exchange on numpy arrays";
  bind_module_functions(m);
  bind_subdomain(m);
  bind_decomposition(m);
  bind_grid(m);
  bind_field(m);
  bind_exchange(m);
}
