// The staggered mini-app's halo time, measured three ways in one run
// (interleaved rounds, the slowest rank's time per round, medians):
//
//  1. the app's halo updates per step: halox against the plain-MPI exchange
//     written the way CloverLeaf's is;
//  2. all 14 fields (5 cell, 3 node, 6 face) at depth 1 and 2: one mixed
//     exchange against one exchange per location;
//  3. subset calls of the mixed exchange against exchanges built for that
//     subset alone;
//  4. CloverLeaf3D's update_halo calls (cloverleaf_calls.hpp: 19 fields, the
//     subsets and depths of a step in order, compute between them): halox,
//     shared faces kept, against the code's own exchange, per kind of call
//     (the two runs in step, call by call); both runs' fields compared point
//     by point.
//
//   mpiexec -n 2 --bind-to core halox-example-hydro3d-bench cells=32 rounds=7
//     cells=N (32, per rank) steps=S (10) calls=C (20) rounds=R (7)
//     transport=NAME|auto (mpi-p2p) algorithm=NAME|auto (staged) boundary=periodic|open
//     compute=on|off (on: the cloverleaf part runs a kernel over the next call's fields)
//     shared=kept|from_owner (kept: halox's staggered fields move what the code's exchange
//     does, and both runs' fields must agree; from_owner: the shared faces too, not compared)
//     block=N (fields per block; 0: halox's choice) parts=app,mixed,subsets,cloverleaf
//     memory=private|shared (private: halox's fields on the heap, as the code's own; shared:
//     allocated in halox's node-shared memory, which shm reads in place: one copy per point)
//     breakdown=on|off (off; on: the cloverleaf part also prints, per kind of call and rank,
//     where the time went: halox's stage parts, the code's pack, messages and unpack; the
//     headline times then include the clock reads)
//
// Prints a table and one JSON object per measurement.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "cloverleaf_calls.hpp"
#include "fields.hpp"
#include "halox/common/error.hpp"
#include "halox/field_memory.hpp"
#include "step.hpp"

namespace {

using halox::ivec3;
using hydro::field3d;

struct bench_options {
  int cells = 32, steps = 10, calls = 20, rounds = 7, block = 0;
  std::string transport = "mpi-p2p", algorithm = "staged";
  bool periodic = true;  // boundary=periodic|open (CloverLeaf's: open, walls)
  bool compute = true;   // compute=on|off: the kernels between CloverLeaf3D's calls
  halox::shared_points shared = halox::shared_points::kept;  // shared=kept|from_owner
  bool shared_memory = false;  // memory=private|shared: where the cloverleaf part's halox fields live
  bool breakdown = false;      // breakdown=on|off: the cloverleaf part's time by part
  std::string parts = "app,mixed,subsets,cloverleaf";  // which of the measurements run
};

bench_options parse(int argc, char** argv) {
  bench_options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto [key, value] = hydro::split_argument(arg);
    if (key == "cells") o.cells = std::stoi(value);
    else if (key == "steps") o.steps = std::stoi(value);
    else if (key == "calls") o.calls = std::stoi(value);
    else if (key == "rounds") o.rounds = std::stoi(value);
    else if (key == "block") o.block = std::stoi(value);
    else if (key == "transport") o.transport = value;
    else if (key == "parts") o.parts = value;
    else if (key == "algorithm") o.algorithm = value;
    else if (key == "boundary" && (value == "periodic" || value == "open")) o.periodic = value == "periodic";
    else if (key == "compute" && (value == "on" || value == "off")) o.compute = value == "on";
    else if (key == "shared") o.shared = halox::parse_shared_points(value);
    else if (key == "memory" && (value == "private" || value == "shared")) o.shared_memory = value == "shared";
    else if (key == "breakdown" && (value == "on" || value == "off")) o.breakdown = value == "on";
    else throw halox::usage_error("unknown argument '" + arg + "'");
  }
  return o;
}

// Times the halo updates of whatever runs inside (the slowest rank's sum).
// The ranks meet (untimed) before each update: otherwise a rank whose compute
// the machine slowed would show up as the other's halo time, and on a shared
// machine that wait, not the exchange, set the figure.
class timed_updater final : public hydro::halo_updater {
 public:
  timed_updater(hydro::halo_updater& inner, MPI_Comm comm) : inner_(inner), comm_(comm) {}
  void update(const std::vector<int>& fields, int depth) override {
    MPI_Barrier(comm_);
    const double t0 = MPI_Wtime();
    inner_.update(fields, depth);
    seconds += MPI_Wtime() - t0;
  }
  double seconds = 0;

 private:
  hydro::halo_updater& inner_;
  MPI_Comm comm_;
};

double slowest(double mine, MPI_Comm comm) {
  double most = 0;
  MPI_Allreduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, comm);
  return most;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs each candidate once per round, in turn; each returns its seconds.
std::vector<double> medians(int rounds, const std::vector<std::function<double()>>& candidates) {
  std::vector<std::vector<double>> times(candidates.size());
  for (int r = 0; r < rounds; ++r)
    for (size_t c = 0; c < candidates.size(); ++c) times[c].push_back(candidates[c]());
  std::vector<double> out;
  for (auto& t : times) out.push_back(median(t));
  return out;
}

// "auto" lets halox measure and choose, as a code that names nothing gets.
halox::exchange_options options_of(const bench_options& o) {
  halox::exchange_options x{.grouping = halox::field_grouping::compact,
                            .fields_per_block = o.block};
  x.auto_algorithm = o.algorithm == "auto";
  if (!x.auto_algorithm) x.alg = halox::parse_algorithm(o.algorithm);
  x.auto_transport = o.transport == "auto";
  if (!x.auto_transport) x.transport = halox::parse_transport_choice(o.transport);
  return x;
}

// The options of `o` with the transports' tuning as `built` measured them.
halox::exchange_options with_tuning_of(const halox::halo_exchange& built, const bench_options& o) {
  halox::exchange_options x = options_of(o);
  x.tuning = built.tuning_as_built();
  return x;
}

void report(int rank, const char* what, const char* a, double ta, const char* b, double tb,
            const bench_options& o) {
  if (rank != 0) return;
  std::printf("%-40s %-22s %10.1f us  %-22s %10.1f us  ratio %.3f\n", what, a, ta * 1e6, b, tb * 1e6,
              ta / tb);
  std::printf("{\"measurement\": \"%s\", \"cells\": %d, \"transport\": \"%s\", \"algorithm\": "
              "\"%s\", \"%s_us\": %.2f, \"%s_us\": %.2f, \"ratio\": %.4f}\n",
              what, o.cells, o.transport.c_str(), o.algorithm.c_str(), a, ta * 1e6, b, tb * 1e6,
              ta / tb);
}

// 1. The app's halo time per step, halox against the plain exchange.
void app_halos(const halox::decomposition& d, const hydro::geometry& g, const bench_options& o) {
  const ivec3 cells{o.cells, o.cells, o.cells};
  std::vector<field3d> halox_fields = hydro::make_fields(d, cells), plain_fields = hydro::make_fields(d, cells);
  hydro::halox_updater with_halox(d, cells, halox_fields, options_of(o));
  hydro::plain_updater with_plain(d, plain_fields);
  auto run = [&](std::vector<field3d>& f, hydro::halo_updater& u) {
    hydro::initial_state(f, g);
    timed_updater timed(u, d.comm());
    MPI_Barrier(d.comm());
    for (int s = 0; s < o.steps; ++s) hydro::step(f, g, timed);
    return slowest(timed.seconds, d.comm()) / o.steps;
  };
  const auto t = medians(o.rounds, {[&] { return run(halox_fields, with_halox); },
                                    [&] { return run(plain_fields, with_plain); }});
  report(d.rank(), "halo time per step", "halox", t[0], "cloverleaf-style", t[1], o);
}

// Calls of `exchange` (C per batch), the slowest rank's time per call.
double per_call(MPI_Comm comm, int calls, const std::function<void()>& exchange) {
  exchange();  // warm
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  for (int c = 0; c < calls; ++c) exchange();
  return slowest(MPI_Wtime() - t0, comm) / calls;
}

// 2. All fields at a depth: one mixed exchange against one per location.
void mixed_against_separate(const halox::decomposition& d, const bench_options& o) {
  const ivec3 cells{o.cells, o.cells, o.cells};
  std::vector<field3d> f = hydro::make_fields(d, cells);
  const auto all = hydro::descriptors(f);
  halox::halo_exchange mixed(d, cells, all, options_of(o));
  // The separate exchanges run with the mixed one's tuning (as measured when
  // it was built): the comparison is of grouping, not of two measurements.
  const halox::exchange_options same = with_tuning_of(mixed, o);
  auto only = [&](auto keep) {
    std::vector<halox::field> some;
    for (const auto& x : all)
      if (keep(x.at)) some.push_back(x);
    return some;
  };
  halox::halo_exchange cell(d, cells, only([](auto at) { return at == halox::location::cell; }), same);
  halox::halo_exchange node(d, cells, only([](auto at) { return at == halox::location::vertex; }), same);
  halox::halo_exchange face(d, cells, only([](auto at) {
    return at != halox::location::cell && at != halox::location::vertex;
  }), same);
  std::vector<int> every(hydro::field_count);
  for (int i = 0; i < hydro::field_count; ++i) every[static_cast<size_t>(i)] = i;
  for (int depth : {1, 2}) {
    auto index_list = [](size_t n) {
      std::vector<int> v(n);
      for (size_t i = 0; i < n; ++i) v[i] = static_cast<int>(i);
      return v;
    };
    const auto cell_all = index_list(5), node_all = index_list(3), face_all = index_list(6);
    const auto t = medians(o.rounds, {[&] { return per_call(d.comm(), o.calls, [&] { mixed.exchange(every, depth); }); },
                                      [&] {
                                        return per_call(d.comm(), o.calls, [&] {
                                          cell.exchange(cell_all, depth);
                                          node.exchange(node_all, depth);
                                          face.exchange(face_all, depth);
                                        });
                                      }});
    const std::string what = "all 14 fields, depth " + std::to_string(depth);
    report(d.rank(), what.c_str(), "one mixed exchange", t[0], "one per location", t[1], o);
  }
}

// 3. Subset calls of the 14-field exchange against exchanges of that subset alone.
void subset_against_dedicated(const halox::decomposition& d, const bench_options& o) {
  const ivec3 cells{o.cells, o.cells, o.cells};
  std::vector<field3d> f = hydro::make_fields(d, cells);
  const auto all = hydro::descriptors(f);
  halox::halo_exchange whole(d, cells, all, options_of(o));
  struct subset_case {
    const char* what;
    std::vector<int> fields;
    int depth;
  };
  const std::vector<subset_case> cases{
      {"subset {density, energy}, depth 2", {hydro::density, hydro::energy}, 2},
      {"subset {xvel, yvel, zvel}, depth 1", {hydro::xvel, hydro::yvel, hydro::zvel}, 1},
      {"subset of the 6 fluxes, depth 1",
       {hydro::vol_flux_x, hydro::vol_flux_y, hydro::vol_flux_z, hydro::mass_flux_x,
        hydro::mass_flux_y, hydro::mass_flux_z},
       1}};
  for (const auto& c : cases) {
    std::vector<halox::field> some;
    std::vector<int> own;
    for (int i : c.fields) {
      own.push_back(static_cast<int>(some.size()));
      some.push_back(all[static_cast<size_t>(i)]);
    }
    // With the tuning the subset call runs with: the whole exchange's as built.
    halox::halo_exchange dedicated(d, cells, some, with_tuning_of(whole, o));
    whole.prepare(c.fields, c.depth);
    const auto t = medians(o.rounds, {[&] { return per_call(d.comm(), o.calls, [&] { whole.exchange(c.fields, c.depth); }); },
                                      [&] { return per_call(d.comm(), o.calls, [&] { dedicated.exchange(own, c.depth); }); }});
    report(d.rank(), c.what, "subset call", t[0], "dedicated exchange", t[1], o);
  }
}

// 4. CloverLeaf3D's calls: `steps` steps per run (after the start-up call),
// each kind of call's time per call (the slowest rank's), halox against the
// code's own exchange, and the halo time per step.
// breakdown=on: this rank's seconds by part and kind of call, over every round;
// print() gathers every rank's and rank 0 prints them, µs per call.
class call_breakdown {
 public:
  void add(const std::string& label, halox::halo_exchange& ex) {
    halox::stage_split& to = halox_[label];
    for (const auto& st : ex.profile().stages) {
      to.pack_s += st.pack_s;
      to.copy_s += st.copy_s;
      to.wait_peers_s += st.wait_peers_s;
      to.wait_readers_s += st.wait_readers_s;
      to.other_s += st.other_s;
    }
    ex.record_stages(false);
  }
  void add(const std::string& label, hydro::cloverleaf::own_exchange& own) {
    hydro::cloverleaf::own_parts& to = own_[label];
    to.pack_s += own.parts.pack_s;
    to.messages_s += own.parts.messages_s;
    to.unpack_s += own.parts.unpack_s;
    own.parts = {};
  }
  // `per_run`: calls of each kind in one run.
  void print(const halox::decomposition& d, const std::map<std::string, int>& per_run,
             const bench_options& o) {
    constexpr int parts = 8;
    for (const auto& [label, count] : per_run) {
      const double us = 1e6 / (static_cast<double>(count) * o.rounds);
      const halox::stage_split& h = halox_[label];
      const hydro::cloverleaf::own_parts& c = own_[label];
      const std::array<double, parts> mine{h.pack_s * us, h.copy_s * us, h.wait_peers_s * us,
                                           h.wait_readers_s * us, h.other_s * us, c.pack_s * us,
                                           c.messages_s * us, c.unpack_s * us};
      std::vector<double> all(static_cast<size_t>(parts * d.size()));
      MPI_Gather(mine.data(), parts, MPI_DOUBLE, all.data(), parts, MPI_DOUBLE, 0, d.comm());
      if (d.rank() != 0) continue;
      for (int r = 0; r < d.size(); ++r)
        print_rank(label, r, &all[static_cast<size_t>(r * parts)], o);
    }
  }

 private:
  static void print_rank(const std::string& label, int rank, const double* v,
                         const bench_options& o) {
    std::printf("breakdown %-20s rank %d halox: pack %.1f copy %.1f wait peers %.1f wait "
                "readers %.1f other %.1f | code's own: pack %.1f messages %.1f unpack %.1f "
                "(us per call)\n",
                label.c_str(), rank, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
    std::printf("{\"measurement\": \"breakdown %s\", \"rank\": %d, \"cells\": %d, "
                "\"halox_pack_us\": %.2f, \"halox_copy_us\": %.2f, "
                "\"halox_wait_peers_us\": %.2f, \"halox_wait_readers_us\": %.2f, "
                "\"halox_other_us\": %.2f, \"own_pack_us\": %.2f, \"own_messages_us\": %.2f, "
                "\"own_unpack_us\": %.2f}\n",
                label.c_str(), rank, o.cells, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
  }
  std::map<std::string, halox::stage_split> halox_;
  std::map<std::string, hydro::cloverleaf::own_parts> own_;
};

// The two runs of CloverLeaf3D's calls, halox's and the code's own, in step: call by call,
// each after its own kernel, so that both meet the machine in the same state (a drift within
// the launch moves both alike).
struct runs_in_step {
  using run_seconds = std::map<std::string, double>;
  const halox::decomposition& d;
  const bench_options& o;
  const ivec3& cells;
  std::vector<field3d>& halox_fields;
  std::vector<field3d>& own_fields;
  hydro::halox_updater& with_halox;
  hydro::cloverleaf::own_exchange& with_own;
  call_breakdown& parts;

  // Seconds per kind of call in one run of each, and each run's halo time per step.
  void run(const hydro::cloverleaf::call& start, const std::vector<hydro::cloverleaf::call>& calls,
           run_seconds& by_halox, run_seconds& by_own) {
    hydro::cloverleaf::initial_state(halox_fields, d, cells);
    hydro::cloverleaf::initial_state(own_fields, d, cells);
    auto both = [&](const hydro::cloverleaf::call& c) {
      timed(c, halox_fields, with_halox, by_halox);
      timed(c, own_fields, with_own, by_own);
    };
    both(start);
    for (int s = 0; s < o.steps; ++s)
      for (const auto& c : calls) both(c);
    for (run_seconds* seconds : {&by_halox, &by_own}) {
      double total = 0;
      for (auto& [label, t] : *seconds) {
        t = slowest(t, d.comm());
        total += t;
      }
      (*seconds)["halo time per step"] = total / o.steps;
    }
  }

  void timed(const hydro::cloverleaf::call& c, std::vector<field3d>& f, hydro::halo_updater& u,
             run_seconds& seconds) {
    const bool is_halox = &u == &with_halox;
    if (o.compute) hydro::cloverleaf::compute(f, c.fields, d);  // the kernel before the call
    if (o.breakdown && is_halox) with_halox.exchange().record_stages(true);
    MPI_Barrier(d.comm());
    const double t0 = MPI_Wtime();
    u.update(c.fields, c.depth);
    seconds[c.label] += MPI_Wtime() - t0;
    if (o.breakdown)
      is_halox ? parts.add(c.label, with_halox.exchange()) : parts.add(c.label, with_own);
  }
};

// Each kind of call's schedules, as their transport chose when they were built.
void print_call_settings(const halox::halo_exchange& ex,
                         const std::vector<hydro::cloverleaf::call>& calls) {
  std::set<std::pair<std::string, std::string>> said;
  for (const auto& c : calls) {
    const std::string settings = ex.transport_settings(c.fields, c.depth);
    if (!settings.empty() && said.insert({c.label, settings}).second)
      std::printf("# CloverLeaf3D's calls: %s: %s\n", c.label.c_str(), settings.c_str());
  }
}

void cloverleaf_calls(const halox::decomposition& d, const bench_options& o) {
  namespace cl = hydro::cloverleaf;
  const ivec3 cells{o.cells, o.cells, o.cells};
  std::vector<field3d> halox_fields = cl::make_fields(d, cells), own_fields = cl::make_fields(d, cells);
  // With memory=shared, one node-shared slot per field, as large as the largest.
  size_t largest = 0;
  for (const auto& f : halox_fields) largest = std::max(largest, f.data.size_bytes());
  std::unique_ptr<halox::shared_field_memory> memory;
  if (o.shared_memory) {
    memory = std::make_unique<halox::shared_field_memory>(d, largest, cl::field_count);
    for (int i = 0; i < cl::field_count; ++i)
      halox_fields[static_cast<size_t>(i)].place_at(static_cast<double*>(memory->field(i)));
  }
  hydro::halox_updater with_halox(d, cells, cl::descriptors(halox_fields, o.shared), options_of(o));
  cl::own_exchange with_own(d, own_fields);
  if (d.rank() == 0) {
    std::printf("# CloverLeaf3D's calls: halox's fields in %s memory, path %s\n",
                o.shared_memory ? "node-shared" : "private", with_halox.exchange().transport_path().c_str());
    std::printf("# CloverLeaf3D's calls: %s\n", with_halox.exchange().transport_settings().c_str());
  }
  const cl::call start = cl::start_call();
  const std::vector<cl::call> calls = cl::step_calls();
  call_breakdown parts;  // breakdown=on
  with_own.time_parts = o.breakdown;
  runs_in_step runs{d, o, cells, halox_fields, own_fields, with_halox, with_own, parts};
  std::map<std::string, int> per_run{{start.label, 1}};
  for (const auto& c : calls) per_run[c.label] += o.steps;
  std::map<std::string, std::vector<double>> halox_times, own_times;
  for (int r = 0; r < o.rounds; ++r) {
    runs_in_step::run_seconds by_halox, by_own;
    runs.run(start, calls, by_halox, by_own);
    for (const auto& [label, t] : by_halox) halox_times[label].push_back(t);
    for (const auto& [label, t] : by_own) own_times[label].push_back(t);
  }
  if (d.rank() == 0) print_call_settings(with_halox.exchange(), calls);
  const long differ = cl::differing_points(halox_fields, own_fields);
  if (differ != 0 && o.shared == halox::shared_points::kept)
    throw std::runtime_error("CloverLeaf3D's calls: halox and the code's own exchange leave " +
                             std::to_string(differ) + " points different");
  if (d.rank() == 0)
    std::printf("# CloverLeaf3D's calls: rank 0's fields after halox and after the code's own "
                "exchange differ at %ld points%s\n",
                differ, o.shared == halox::shared_points::kept ? "" : " (shared=from_owner: not required to agree)");
  auto report_calls = [&](const std::string& label, const std::string& what) {
    const int count = per_run.count(label) ? per_run[label] : 1;
    report(d.rank(), what.c_str(), "halox", median(halox_times[label]) / count, "cloverleaf-own",
           median(own_times[label]) / count, o);
  };
  for (const auto& [label, count] : per_run)
    report_calls(label, "cloverleaf3d " + label + " x" + std::to_string(count));
  report_calls("halo time per step", "cloverleaf3d halo time per step");
  if (o.breakdown) parts.print(d, per_run, o);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, status = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  try {
    const bench_options o = parse(argc, argv);
    const std::array<bool, 3> periodic{o.periodic, o.periodic, o.periodic};
    const auto decomp = halox::make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, periodic, false);
    const ivec3 dims = decomp.dims();
    const auto sub = halox::subdomain_per_rank(decomp, {o.cells, o.cells, o.cells});
    const hydro::geometry g{sub.offset, sub.global, periodic};
    if (rank == 0)
      std::printf("# %d ranks (%dx%dx%d, %s), %d^3 cells per rank, transport %s, algorithm %s, "
                  "%d rounds\n",
                  size, dims[0], dims[1], dims[2], o.periodic ? "periodic" : "open", o.cells,
                  o.transport.c_str(), o.algorithm.c_str(), o.rounds);
    auto runs = [&](const char* part) { return o.parts.find(part) != std::string::npos; };
    if (runs("app")) app_halos(decomp, g, o);
    if (runs("mixed")) mixed_against_separate(decomp, o);
    if (runs("subsets")) subset_against_dedicated(decomp, o);
    if (runs("cloverleaf")) cloverleaf_calls(decomp, o);
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "halox-example-hydro3d-bench: error: %s\n", e.what());
    status = 1;
  }
  MPI_Finalize();
  return status;
}
