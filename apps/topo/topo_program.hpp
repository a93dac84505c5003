// halox-topo's parts: options, the planned layouts and their output. Private to the program.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

#include "halox/programs/decomposition/auto.hpp"
#include "halox_programs/decomposition/options.hpp"
#include "halox/programs/decomposition/time_model.hpp"
#include "halox/programs/decomposition/traffic.hpp"
#include "halox/extend/topology.hpp"

namespace halox::topo_program {

struct topo_options {
  decomposition_options layout;  // --mpicart, level grids, --order, --topology, --assume-binding
  int nodes = 1;
  int ranks_per_node = 0;  // 0: one per core
  std::vector<int> domain{64, 64, 64};
  int halo = 1;
  int fields = 1;
  int element_size = static_cast<int>(exchange_shape{}.element_size);
  std::string algorithm = "standard";
  bool json = false;
  bool print = false;  // the node and core of every rank, per layout
  // halox-topo predict
  std::string model;          // time model parameters (JSON)
  bool coefficients = false;  // JSON: each layout's distinct coefficient rows
};

struct layout_result {
  std::string name, options;
  ivec3 dims{1, 1, 1};
  std::vector<ivec3> coords;
  traffic bytes;
  std::vector<rank_load> loads;  // per rank, for the time model
};

// Everything halox-topo prints: the ranks placed on the nodes and each layout's traffic.
struct topo_plan {
  explicit topo_plan(topology t) : topo(std::move(t)) {}
  topology topo;
  exchange_shape shape;
  std::array<bool, 3> periodic{};
  binding_policy binding = binding_policy::spread;
  int per_node = 0;
  std::vector<rank_placement> placements;
  std::vector<layout_result> layouts;  // mpicart, hw when given, auto
  auto_choice choice;
};

// options.cpp
void add_options(CLI::App& app, topo_options& o);
// Throws usage_error for a bad exchange.
exchange_shape exchange_of(const topo_options& o);

// layouts.cpp: a pure function of the options (no communication).
topo_plan plan_layouts(const topo_options& o);

// output.cpp
void print_json(const topo_options& o, const topo_plan& plan);
void print_tables(const topo_options& o, const topo_plan& plan);

// predict.cpp: the predict subcommand's option, model file and output.
CLI::App* add_predict_command(CLI::App& app, topo_options& o);
// Throws usage_error for a missing or malformed model file.
time_parameters load_model(const std::string& path);
void print_prediction_json(const topo_options& o, const topo_plan& plan, const time_parameters& p);
void print_prediction_table(const topo_options& o, const topo_plan& plan,
                            const time_parameters& p);

}  // namespace halox::topo_program
