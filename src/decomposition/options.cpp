#include "halox/decomposition/options.hpp"

#include <fmt/core.h>

#include "halox/common/error.hpp"

namespace halox {

void add_decomposition_options(CLI::App& app, decomposition_options& options) {
  app.add_option("--mpicart", options.mpicart,
                 "Plain MPI_Cart_create rank grid NX NY NZ (0 = let MPI_Dims_create choose)")
      ->expected(3)
      ->group("Decomposition");
  app.add_option("--periodic", options.periodic, "Periodicity per dimension PX PY PZ (0 or 1)")
      ->expected(3)
      ->check(CLI::IsMember({0, 1}))
      ->capture_default_str()
      ->group("Decomposition");
  app.add_flag("--reorder", options.reorder, "Let MPI_Cart_create reorder ranks")
      ->group("Decomposition");
}

decomposition build_decomposition(MPI_Comm world, const decomposition_options& options,
                                  const exchange_shape& shape) {
  ivec3 dims{0, 0, 0};
  if (!options.mpicart.empty()) dims = {options.mpicart[0], options.mpicart[1], options.mpicart[2]};
  std::array<bool, 3> periodic{options.periodic[0] != 0, options.periodic[1] != 0,
                               options.periodic[2] != 0};
  return make_cart_decomposition(world, dims, periodic, options.reorder);
}

}  // namespace halox
