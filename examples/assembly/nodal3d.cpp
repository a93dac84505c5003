// A code that adds into its halos, using halox: an explicit node-centred step
// in LULESH's shape and a particle-deposition step in a particle-in-cell
// code's shape.
//
//   nodal step: every element adds a force into its 8 nodes; the nodes on a
//     sub-domain boundary are held by up to 8 ranks, and each holder needs
//     their total (LULESH's CommSBN): one reverse call on every holder. The
//     nodes then move, and their displacements and velocities are copied from
//     the owner (LULESH's CommSyncPosVel): one forward call.
//   deposition: particles in each cell deposit a charge into the 8 nearest
//     cell centres (cloud in cell), some into the guard cells around the
//     sub-domain; the guard cells are summed back into their owners (AMReX's
//     SumBoundary): one reverse call.
//
//   mpiexec -n 4 halox-example-nodal3d [key=value ...]
//     global=N (16) steps=S (4) periodic=XYZ (000) exchange=halox|lulesh
//     transport=NAME (mpi-p2p) algorithm=NAME (standard) bench=R (0: run the
//     app; R > 0: time each exchange R rounds and print a table)
//
// exchange=lulesh is the same app with its exchanges written the way
// LULESH's are (26 neighbours, pack, MPI_Isend/MPI_Irecv, unpack-add), the
// baseline. The app prints the global sums of its final state and a digest of
// every owned value's bits in global order: the sums agree with 1 rank's to
// rounding, and the digest is the same bitwise for every transport and
// algorithm halox runs with.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "halox/common/error.hpp"
#include "halox/exchange.hpp"

namespace {

using halox::ivec3;

struct app_options {
  int global = 16, steps = 4, bench = 0;
  std::array<bool, 3> periodic{false, false, false};
  std::string exchange = "halox", transport = "mpi-p2p", algorithm = "standard";
};

app_options parse(int argc, char** argv) {
  app_options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto eq = arg.find('=');
    const std::string key = arg.substr(0, eq), value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (key == "global") o.global = std::stoi(value);
    else if (key == "steps") o.steps = std::stoi(value);
    else if (key == "bench") o.bench = std::stoi(value);
    else if (key == "periodic" && value.size() == 3)
      for (size_t k = 0; k < 3; ++k) o.periodic[k] = value[k] == '1';
    else if (key == "exchange") o.exchange = value;
    else if (key == "transport") o.transport = value;
    else if (key == "algorithm") o.algorithm = value;
    else throw halox::usage_error("unknown argument '" + arg + "'");
  }
  if (o.exchange != "halox" && o.exchange != "lulesh")
    throw halox::usage_error("exchange must be halox or lulesh, not '" + o.exchange + "'");
  if (o.global < 2) throw halox::usage_error("global must be at least 2");
  return o;
}

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}
double unit(uint64_t x) { return static_cast<double>(mix(x) >> 11) * 0x1.0p-53; }

// One array of a field: its points and halo, x fastest.
struct array3d {
  ivec3 points{}, lo{}, hi{};
  std::vector<double> data;
  array3d(const ivec3& p, const ivec3& below, const ivec3& above) : points(p), lo(below), hi(above) {
    data.assign(static_cast<size_t>((p[0] + lo[0] + hi[0]) * (p[1] + lo[1] + hi[1]) *
                                    (p[2] + lo[2] + hi[2])),
                0.0);
  }
  size_t index(int x, int y, int z) const {
    return static_cast<size_t>(x + lo[0]) +
           static_cast<size_t>(points[0] + lo[0] + hi[0]) *
               (static_cast<size_t>(y + lo[1]) +
                static_cast<size_t>(points[1] + lo[1] + hi[1]) * static_cast<size_t>(z + lo[2]));
  }
  double& operator()(int x, int y, int z) { return data[index(x, y, z)]; }
  halox::halo_widths halo() const { return {lo, hi}; }
};

// The state: node displacements, velocities, forces and masses (halo 0 below
// and 1 above: the shared node on the face above), a charge per cell (guard
// cells one deep).
struct state {
  const halox::decomposition& d;
  halox::subdomain sub;
  ivec3 cells{}, nodes{};
  std::vector<array3d> node;  // ux uy uz vx vy vz fx fy fz mass
  array3d charge;
  enum { ux, uy, uz, vx, vy, vz, fx, fy, fz, mass };

  state(const halox::decomposition& dec, const halox::subdomain& s)
      : d(dec), sub(s), cells(s.extent), nodes(halox::field_points(dec, s.extent, halox::location::vertex)),
        charge(s.extent, {1, 1, 1}, {1, 1, 1}) {
    for (int f = 0; f < 10; ++f) node.emplace_back(nodes, ivec3{0, 0, 0}, ivec3{1, 1, 1});
  }

  std::vector<halox::field> fields() {
    static const char* names[] = {"ux", "uy", "uz", "vx", "vy", "vz", "fx", "fy", "fz", "mass"};
    std::vector<halox::field> out;
    for (int f = 0; f < 10; ++f)
      out.push_back({node[static_cast<size_t>(f)].data.data(), halox::element_type::f64,
                     halox::location::vertex, node[static_cast<size_t>(f)].halo(), names[f]});
    out.push_back({charge.data.data(), halox::element_type::f64, halox::location::cell,
                   charge.halo(), "charge"});
    return out;
  }

  // Global index of a local node or cell, wrapped where periodic.
  uint64_t global_id(int x, int y, int z, int extra) const {
    ivec3 g{sub.offset[0] + x, sub.offset[1] + y, sub.offset[2] + z};
    for (int k = 0; k < 3; ++k) {
      const int n = sub.global[k] + (d.periodic()[k] ? 0 : extra);
      g[k] = (g[k] % n + n) % n;
    }
    return static_cast<uint64_t>(g[0]) + 4096ULL * (static_cast<uint64_t>(g[1]) + 4096ULL * static_cast<uint64_t>(g[2]));
  }

  // Every node held (owned and the copies above), from its global index alone.
  void initial() {
    for (int z = 0; z <= cells[2]; ++z)
      for (int y = 0; y <= cells[1]; ++y)
        for (int x = 0; x <= cells[0]; ++x) {
          const uint64_t id = global_id(x, y, z, 1);
          for (int f = 0; f < 3; ++f) node[static_cast<size_t>(ux + f)](x, y, z) = 0.02 * (unit(id * 7 + static_cast<uint64_t>(f)) - 0.5);
          for (int f = 0; f < 3; ++f) node[static_cast<size_t>(vx + f)](x, y, z) = 0;
        }
  }
};

// The exchanges the app needs, written two ways.
class exchanger {
 public:
  virtual ~exchanger() = default;
  virtual void sum_forces_on_holders() = 0;    // fx fy fz
  virtual void sum_mass_on_holders() = 0;      // mass
  virtual void copy_motion_from_owners() = 0;  // ux..vz
  virtual void sum_charge_into_owners() = 0;   // charge guard cells
};

class halox_exchanger : public exchanger {
 public:
  halox_exchanger(const halox::decomposition& d, state& s, const app_options& o)
      : ex_(d, s.cells, s.fields(),
            {.alg = halox::parse_algorithm(o.algorithm),
             .transport = halox::parse_transport_choice(o.transport)}) {}
  void sum_forces_on_holders() override {
    ex_.reverse(halox::reduction::sum, {"fx", "fy", "fz"}, 0, halox::reverse_to::every_holder);
  }
  void sum_mass_on_holders() override {
    ex_.reverse(halox::reduction::sum, {"mass"}, 0, halox::reverse_to::every_holder);
  }
  void copy_motion_from_owners() override { ex_.exchange({"ux", "uy", "uz", "vx", "vy", "vz"}); }
  void sum_charge_into_owners() override { ex_.reverse(halox::reduction::sum, {"charge"}); }
  halox::halo_exchange& exchange() { return ex_; }

 private:
  halox::halo_exchange ex_;
};

// LULESH's way: a message per neighbour (26), each field's boundary points
// packed one after another, MPI_Isend/MPI_Irecv, unpacked by adding.
class lulesh_exchanger : public exchanger {
 public:
  lulesh_exchanger(const halox::decomposition& d, state& s) : d_(d), s_(s) {}
  void sum_forces_on_holders() override {
    run({&s_.node[state::fx], &s_.node[state::fy], &s_.node[state::fz]}, nodes_shared, add);
  }
  void sum_mass_on_holders() override { run({&s_.node[state::mass]}, nodes_shared, add); }
  void copy_motion_from_owners() override {
    std::vector<array3d*> motion;
    for (int f = state::ux; f <= state::vz; ++f) motion.push_back(&s_.node[static_cast<size_t>(f)]);
    run(motion, nodes_from_owner, copy);
  }
  void sum_charge_into_owners() override { run({&s_.charge}, guard_cells, add); }

 private:
  enum region_kind { nodes_shared, nodes_from_owner, guard_cells };
  enum unpack_kind { add, copy };
  struct span1 {
    int lo, hi;
  };

  // Along one axis, the points sent toward d and those a message from d lands on.
  // n cells, `owned` points (n + 1 for nodes at an open high end).
  void spans(region_kind kind, int n, int owned, int dir, span1& send, span1& recv) const {
    switch (kind) {
      case nodes_shared:  // the nodes on the face toward d, held by both
        send = recv = dir < 0 ? span1{0, 1} : dir > 0 ? span1{n, n + 1} : span1{0, n + 1};
        return;
      case nodes_from_owner:  // owners send their first face down; copies land on n
        send = dir < 0 ? span1{0, 1} : dir > 0 ? span1{0, 0} : span1{0, owned};
        recv = dir < 0 ? span1{0, 0} : dir > 0 ? span1{n, n + 1} : span1{0, owned};
        return;
      case guard_cells:  // guard cells to their owner, added into its edge cells
        send = dir < 0 ? span1{-1, 0} : dir > 0 ? span1{n, n + 1} : span1{0, n};
        recv = dir < 0 ? span1{0, 1} : dir > 0 ? span1{n - 1, n} : span1{0, n};
        return;
    }
  }

  void run(const std::vector<array3d*>& fields, region_kind kind, unpack_kind unpack) {
    struct peer_message {
      int peer, tag;
      std::array<span1, 3> box;
      std::vector<double> buffer;
    };
    std::vector<peer_message> sends, recvs;
    std::vector<MPI_Request> requests;
    for (int dir = 0; dir < 27; ++dir) {
      if (dir == 13) continue;
      const ivec3 dv{dir % 3 - 1, dir / 3 % 3 - 1, dir / 9 - 1};
      const auto peer = d_.neighbor(dv);
      if (!peer) continue;
      std::array<span1, 3> send{}, recv{};
      for (size_t k = 0; k < 3; ++k) spans(kind, s_.cells[k], s_.nodes[k], dv[k], send[k], recv[k]);
      auto volume = [](const std::array<span1, 3>& b) {
        return static_cast<size_t>(std::max(0, b[0].hi - b[0].lo) * std::max(0, b[1].hi - b[1].lo) *
                                   std::max(0, b[2].hi - b[2].lo));
      };
      const int opposite = 26 - dir;
      if (volume(send) > 0) sends.push_back({*peer, dir, send, std::vector<double>(volume(send) * fields.size())});
      if (volume(recv) > 0) recvs.push_back({*peer, opposite, recv, std::vector<double>(volume(recv) * fields.size())});
    }
    requests.resize(sends.size() + recvs.size());
    for (size_t i = 0; i < recvs.size(); ++i)
      MPI_Irecv(recvs[i].buffer.data(), static_cast<int>(recvs[i].buffer.size()), MPI_DOUBLE,
                recvs[i].peer, recvs[i].tag, d_.comm(), &requests[i]);
    for (size_t i = 0; i < sends.size(); ++i) {
      double* out = sends[i].buffer.data();
      for (array3d* f : fields) walk(*f, sends[i].box, [&](double& v) { *out++ = v; });
      MPI_Isend(sends[i].buffer.data(), static_cast<int>(sends[i].buffer.size()), MPI_DOUBLE,
                sends[i].peer, sends[i].tag, d_.comm(), &requests[recvs.size() + i]);
    }
    MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
    for (auto& m : recvs) {
      const double* in = m.buffer.data();
      for (array3d* f : fields)
        walk(*f, m.box, [&](double& v) { v = unpack == add ? v + *in++ : *in++; });
    }
  }

  template <class Visit>
  static void walk(array3d& f, const std::array<span1, 3>& b, Visit&& visit) {
    for (int z = b[2].lo; z < b[2].hi; ++z)
      for (int y = b[1].lo; y < b[1].hi; ++y)
        for (int x = b[0].lo; x < b[0].hi; ++x) visit(f(x, y, z));
  }

  const halox::decomposition& d_;
  state& s_;
};

// The 8 nodes of element (x, y, z).
template <class Visit>
void for_corners(int x, int y, int z, Visit&& visit) {
  for (int c = 0; c < 8; ++c) visit(x + (c & 1), y + (c >> 1 & 1), z + (c >> 2));
}

void element_masses(state& s) {
  s.node[state::mass].data.assign(s.node[state::mass].data.size(), 0.0);
  for (int z = 0; z < s.cells[2]; ++z)
    for (int y = 0; y < s.cells[1]; ++y)
      for (int x = 0; x < s.cells[0]; ++x) {
        const double m = (1.0 + unit(s.global_id(x, y, z, 0) * 3 + 1)) / 8;
        for_corners(x, y, z, [&](int a, int b, int c) { s.node[state::mass](a, b, c) += m; });
      }
}

// Each element pulls its nodes toward its mean displacement, with a stiffness
// of its own and a cubic term (so that the step is not linear).
void element_forces(state& s) {
  for (int f = state::fx; f <= state::fz; ++f)
    s.node[static_cast<size_t>(f)].data.assign(s.node[static_cast<size_t>(f)].data.size(), 0.0);
  for (int z = 0; z < s.cells[2]; ++z)
    for (int y = 0; y < s.cells[1]; ++y)
      for (int x = 0; x < s.cells[0]; ++x) {
        const double k = 1.0 + unit(s.global_id(x, y, z, 0) * 3 + 2);
        for (int axis = 0; axis < 3; ++axis) {
          array3d& u = s.node[static_cast<size_t>(state::ux + axis)];
          array3d& f = s.node[static_cast<size_t>(state::fx + axis)];
          double mean = 0;
          for_corners(x, y, z, [&](int a, int b, int c) { mean += u(a, b, c); });
          mean /= 8;
          for_corners(x, y, z, [&](int a, int b, int c) {
            const double pull = mean - u(a, b, c);
            f(a, b, c) += k * pull * (1 + 50 * pull * pull);
          });
        }
      }
}

// Every node held moves by its own total force: the copies stay identical
// where every holder has the same total.
void move_nodes(state& s, double dt) {
  for (int z = 0; z <= s.cells[2]; ++z)
    for (int y = 0; y <= s.cells[1]; ++y)
      for (int x = 0; x <= s.cells[0]; ++x)
        for (int axis = 0; axis < 3; ++axis) {
          double& v = s.node[static_cast<size_t>(state::vx + axis)](x, y, z);
          v += dt * s.node[static_cast<size_t>(state::fx + axis)](x, y, z) / s.node[state::mass](x, y, z);
          s.node[static_cast<size_t>(state::ux + axis)](x, y, z) += dt * v;
        }
}

// Particles: two per cell at places drawn from the cell's global index and
// the step, each depositing its charge into the 8 nearest cell centres.
void deposit(state& s, int step) {
  s.charge.data.assign(s.charge.data.size(), 0.0);
  for (int z = 0; z < s.cells[2]; ++z)
    for (int y = 0; y < s.cells[1]; ++y)
      for (int x = 0; x < s.cells[0]; ++x)
        for (int p = 0; p < 2; ++p) {
          const uint64_t id = s.global_id(x, y, z, 0) * 16 + static_cast<uint64_t>(p) + 1000003ULL * static_cast<uint64_t>(step);
          const double q = 0.5 + unit(id * 4);
          std::array<int, 3> base{};
          std::array<double, 3> w{};
          const ivec3 cell{x, y, z};
          for (size_t k = 0; k < 3; ++k) {
            const double at = cell[k] + unit(id * 4 + k + 1) - 0.5;  // in cell-centre units
            base[k] = static_cast<int>(std::floor(at));
            w[k] = at - base[k];
          }
          for (int c = 0; c < 8; ++c) {
            const int a = c & 1, b = c >> 1 & 1, e = c >> 2;
            const double weight = (a ? w[0] : 1 - w[0]) * (b ? w[1] : 1 - w[1]) * (e ? w[2] : 1 - w[2]);
            s.charge(base[0] + a, base[1] + b, base[2] + e) += q * weight;
          }
        }
}

struct digest {
  double sum = 0;
  uint64_t bits = 0;
};

// The owned values' sum, and a digest of their bits keyed by global index.
template <class Each>
digest digest_of(state& s, array3d& f, int extra, Each&& owned_range) {
  digest out;
  ivec3 n{};
  owned_range(n);
  for (int z = 0; z < n[2]; ++z)
    for (int y = 0; y < n[1]; ++y)
      for (int x = 0; x < n[0]; ++x) {
        const double v = f(x, y, z);
        uint64_t b = 0;
        std::memcpy(&b, &v, sizeof b);
        out.sum += v;
        out.bits += mix(b ^ mix(s.global_id(x, y, z, extra)));
      }
  MPI_Allreduce(MPI_IN_PLACE, &out.sum, 1, MPI_DOUBLE, MPI_SUM, s.d.comm());
  MPI_Allreduce(MPI_IN_PLACE, &out.bits, 1, MPI_UINT64_T, MPI_SUM, s.d.comm());
  return out;
}

// Copies of a node that the copy from its owner changed: zero where every
// holder computed the same total.
long long copies_changed(state& s, exchanger& ex) {
  std::vector<std::vector<double>> before;
  for (int f = state::ux; f <= state::vz; ++f) before.push_back(s.node[static_cast<size_t>(f)].data);
  ex.copy_motion_from_owners();
  long long changed = 0;
  for (int f = state::ux; f <= state::vz; ++f)
    for (size_t i = 0; i < before[0].size(); ++i)
      changed += before[static_cast<size_t>(f)][i] != s.node[static_cast<size_t>(f)].data[i];
  MPI_Allreduce(MPI_IN_PLACE, &changed, 1, MPI_LONG_LONG, MPI_SUM, s.d.comm());
  return changed;
}

void run_app(state& s, exchanger& ex, const app_options& o, int rank) {
  s.initial();
  element_masses(s);
  ex.sum_mass_on_holders();
  long long changed = 0;
  for (int step = 0; step < o.steps; ++step) {
    element_forces(s);
    ex.sum_forces_on_holders();
    move_nodes(s, 0.05);
    changed += copies_changed(s, ex);
    deposit(s, step);
    ex.sum_charge_into_owners();
  }
  auto owned_nodes = [&](ivec3& n) { n = s.nodes; };
  auto owned_cells = [&](ivec3& n) { n = s.cells; };
  const digest u = digest_of(s, s.node[state::ux], 1, owned_nodes);
  const digest v = digest_of(s, s.node[state::vz], 1, owned_nodes);
  const digest q = digest_of(s, s.charge, 0, owned_cells);
  if (rank == 0) {
    std::printf("nodes: sum ux %.15e vz %.15e digest %016llx %016llx\n", u.sum, v.sum,
                static_cast<unsigned long long>(u.bits), static_cast<unsigned long long>(v.bits));
    std::printf("charge: sum %.15e digest %016llx\n", q.sum, static_cast<unsigned long long>(q.bits));
    std::printf("copies the owners' copy changed: %lld\n", changed);
  }
}

// Each exchange timed in turn, round after round; the median of the slowest rank.
void run_bench(state& s, const app_options& o, const halox::decomposition& d, int rank) {
  halox_exchanger hx(d, s, o);
  lulesh_exchanger lx(d, s);
  auto& ex = hx.exchange();
  using halox::reduction;
  using halox::reverse_to;
  struct timed {
    const char* name;
    std::function<void()> call;
    std::vector<double> times;
  };
  std::vector<timed> cases{
      {"forces: LULESH-style sum on every holder", [&] { lx.sum_forces_on_holders(); }, {}},
      {"forces: halox sum on every holder", [&] { hx.sum_forces_on_holders(); }, {}},
      {"forces: halox reverse then forward",
       [&] {
         ex.reverse(reduction::sum, {"fx", "fy", "fz"});
         ex.exchange({"fx", "fy", "fz"});
       },
       {}},
      {"forces: halox reverse (into owner)", [&] { ex.reverse(reduction::sum, {"fx", "fy", "fz"}); }, {}},
      {"forces: halox forward", [&] { ex.exchange({"fx", "fy", "fz"}); }, {}},
      {"charge: LULESH-style guard-cell sum", [&] { lx.sum_charge_into_owners(); }, {}},
      {"charge: halox reverse (into owner)", [&] { hx.sum_charge_into_owners(); }, {}},
      {"charge: halox forward", [&] { ex.exchange({"charge"}); }, {}}};
  s.initial();
  for (auto& c : cases) c.call();  // schedules built, buffers touched
  const int per_round = 20;
  for (int round = 0; round < o.bench; ++round)
    for (auto& c : cases) {
      MPI_Barrier(d.comm());
      const double begun = MPI_Wtime();
      for (int i = 0; i < per_round; ++i) c.call();
      double t = (MPI_Wtime() - begun) / per_round;
      MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, d.comm());
      c.times.push_back(t);
    }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  if (rank != 0) return;
  const double base_forces = median(cases[0].times), base_charge = median(cases[5].times);
  std::printf("%d ranks, %d^3 cells, transport %s, algorithm %s, median of %d rounds x %d calls\n",
              d.size(), o.global, ex.transport_name().c_str(), o.algorithm.c_str(), o.bench, per_round);
  std::printf("%-44s %12s %14s\n", "exchange", "us per call", "x LULESH-style");
  for (size_t i = 0; i < cases.size(); ++i) {
    const double t = median(cases[i].times);
    std::printf("%-44s %12.1f %14.2f\n", cases[i].name, t * 1e6, t / (i < 5 ? base_forces : base_charge));
  }
  std::printf("reverse / forward: forces %.2f, charge %.2f\n", median(cases[3].times) / median(cases[4].times),
              median(cases[6].times) / median(cases[7].times));
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, status = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  try {
    const app_options o = parse(argc, argv);
    ivec3 dims{0, 0, 0};
    MPI_Dims_create(size, 3, dims.data());
    const auto d = halox::make_cart_decomposition(MPI_COMM_WORLD, dims, o.periodic, false);
    const auto sub = halox::subdomain_of_global(d, {o.global, o.global, o.global});
    state s(d, sub);
    if (o.bench > 0) {
      run_bench(s, o, d, rank);
    } else if (o.exchange == "halox") {
      halox_exchanger ex(d, s, o);
      run_app(s, ex, o, rank);
    } else {
      lulesh_exchanger ex(d, s);
      run_app(s, ex, o, rank);
    }
  } catch (const halox::usage_error& e) {
    if (rank == 0) std::fprintf(stderr, "halox-example-nodal3d: error: %s\n", e.what());
    status = 2;
  }
  MPI_Finalize();
  return status;
}
