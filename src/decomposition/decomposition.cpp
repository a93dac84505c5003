#include "halox/decomposition.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <utility>

#include "halox/common/error.hpp"

namespace halox {

rank_order rank_order::parse(const std::string& name) {
  std::string upper = name;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  rank_order order;
  bool seen[3] = {false, false, false};
  bool ok = upper.size() == 3;
  for (size_t i = 0; ok && i < 3; ++i) {
    int dim = upper[i] - 'X';
    if (dim < 0 || dim > 2 || seen[dim]) { ok = false; break; }
    seen[dim] = true;
    order.fastest_first[i] = dim;
  }
  if (!ok)
    throw usage_error(fmt::format(
        "unknown order '{}' (expected a permutation of XYZ: XYZ, XZY, YXZ, YZX, ZXY, ZYX)", name));
  return order;
}

std::string rank_order::name() const {
  std::string s;
  for (int d : fastest_first) s += static_cast<char>('X' + d);
  return s;
}

int linear_index(const ivec3& coords, const ivec3& dims, const rank_order& order) {
  const auto& o = order.fastest_first;
  return coords[o[0]] + dims[o[0]] * (coords[o[1]] + dims[o[1]] * coords[o[2]]);
}

ivec3 coords_of(int index, const ivec3& dims, const rank_order& order) {
  const auto& o = order.fastest_first;
  ivec3 c{0, 0, 0};
  c[o[0]] = index % dims[o[0]];
  index /= dims[o[0]];
  c[o[1]] = index % dims[o[1]];
  c[o[2]] = index / dims[o[1]];
  return c;
}

decomposition::decomposition(MPI_Comm comm, const ivec3& dims, const std::array<bool, 3>& periodic,
                             const rank_order& order, std::string kind)
    : comm_(comm), dims_(dims), periodic_(periodic), order_(order), kind_(std::move(kind)) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  coords_ = coords_of(rank_, dims_, order_);
}

decomposition::decomposition(decomposition&& other) noexcept { *this = std::move(other); }

decomposition& decomposition::operator=(decomposition&& other) noexcept {
  if (this != &other) {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    rank_ = other.rank_;
    size_ = other.size_;
    dims_ = other.dims_;
    coords_ = other.coords_;
    periodic_ = other.periodic_;
    order_ = other.order_;
    kind_ = std::move(other.kind_);
  }
  return *this;
}

decomposition::~decomposition() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

std::optional<int> decomposition::neighbor(const ivec3& direction) const {
  ivec3 c = coords_;
  for (int d = 0; d < 3; ++d) {
    c[d] += direction[d];
    if (c[d] < 0 || c[d] >= dims_[d]) {
      if (!periodic_[d]) return std::nullopt;
      c[d] = (c[d] + dims_[d]) % dims_[d];
    }
  }
  return rank_of(c);
}

MPI_Comm decomposition::export_cartesian() const {
  // Renumber so that the Cartesian (row-major) rank of our coords is our rank.
  int cart_rank = linear_index(coords_, dims_, rank_order::mpi_cart());
  MPI_Comm renumbered = MPI_COMM_NULL, cart = MPI_COMM_NULL;
  MPI_Comm_split(comm_, 0, cart_rank, &renumbered);
  int periods[3] = {periodic_[0], periodic_[1], periodic_[2]};
  MPI_Cart_create(renumbered, 3, dims_.data(), periods, 0, &cart);
  MPI_Comm_free(&renumbered);
  return cart;
}

decomposition make_cart_decomposition(MPI_Comm parent, ivec3 dims,
                                      const std::array<bool, 3>& periodic, bool reorder) {
  int size = 1;
  MPI_Comm_size(parent, &size);
  long long fixed = 1;
  for (int d = 0; d < 3; ++d) {
    if (dims[d] < 0)
      throw usage_error(fmt::format("rank grid entries must be positive (0 = choose), got {} {} {}",
                                    dims[0], dims[1], dims[2]));
    if (dims[d] > 0) fixed *= dims[d];
  }
  bool all_fixed = dims[0] > 0 && dims[1] > 0 && dims[2] > 0;
  if ((all_fixed && fixed != size) || (!all_fixed && size % fixed != 0))
    throw usage_error(fmt::format("rank grid {}x{}x{} does not fit {} ranks", dims[0], dims[1],
                                  dims[2], size));
  MPI_Dims_create(size, 3, dims.data());
  int periods[3] = {periodic[0], periodic[1], periodic[2]};
  MPI_Comm cart = MPI_COMM_NULL;
  MPI_Cart_create(parent, 3, dims.data(), periods, reorder ? 1 : 0, &cart);
  return decomposition(cart, dims, periodic, rank_order::mpi_cart(), "cart");
}

std::pair<int, int> split_extent(int global, int parts, int index) {
  int base = global / parts, remainder = global % parts;
  int offset = index * base + std::min(index, remainder);
  return {offset, base + (index < remainder ? 1 : 0)};
}

subdomain subdomain_per_rank(const decomposition& d, const ivec3& per_rank) {
  subdomain s;
  for (int i = 0; i < 3; ++i) {
    s.extent[i] = per_rank[i];
    s.offset[i] = d.coords()[i] * per_rank[i];
    s.global[i] = d.dims()[i] * per_rank[i];
  }
  return s;
}

subdomain subdomain_of_global(const decomposition& d, const ivec3& global) {
  static const char* names = "xyz";
  subdomain s;
  s.global = global;
  for (int i = 0; i < 3; ++i) {
    if (global[i] < d.dims()[i])
      throw usage_error(fmt::format("global domain {} cells in {} cannot be split over {} ranks",
                                    global[i], names[i], d.dims()[i]));
    auto [offset, extent] = split_extent(global[i], d.dims()[i], d.coords()[i]);
    s.offset[i] = offset;
    s.extent[i] = extent;
  }
  return s;
}

}  // namespace halox
