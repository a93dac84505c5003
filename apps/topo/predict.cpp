// halox-topo predict: each layout's time per exchange from a time model
// (include/halox/programs/decomposition/time_model.hpp) and its ratio to
// --mpicart.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "halox/common/error.hpp"
#include "topo_program.hpp"

namespace halox::topo_program {

namespace {

// A layout's time over MPICart's; none when the model predicts no time at all (every parameter
// zero), where a ratio would read as nan.
std::optional<double> vs_mpicart(const time_prediction& t,
                                 const std::vector<time_prediction>& predictions) {
  const double mpicart = predictions.front().us;
  if (!(mpicart > 0)) return std::nullopt;
  return t.us / mpicart;
}

std::vector<time_prediction> predictions_of(const topo_plan& plan, const time_parameters& p) {
  std::vector<time_prediction> out;
  for (const auto& l : plan.layouts) out.push_back(predict_time(l.loads, p));
  return out;
}

// The largest terms first, "node-injection 225.1, latency.node 19.0" style.
std::string largest_terms(std::vector<time_term> terms, size_t count) {
  std::sort(terms.begin(), terms.end(),
            [](const time_term& a, const time_term& b) { return a.us > b.us; });
  std::string out;
  for (size_t i = 0; i < std::min(count, terms.size()); ++i)
    out += fmt::format("{}{} {:.1f}", i ? ", " : "", terms[i].name, terms[i].us);
  return out;
}

nlohmann::json coefficient_rows_json(const std::vector<rank_load>& loads) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : distinct_rows(loads)) {
    nlohmann::json c;
    for (const auto& [name, value] : row.coefficients)
      if (value != 0) c[name] = value;
    rows.push_back({{"ranks", row.ranks}, {"first_rank", row.first_rank}, {"coefficients", c}});
  }
  return rows;
}

}  // namespace

CLI::App* add_predict_command(CLI::App& app, topo_options& o) {
  auto* predict = app.add_subcommand(
      "predict",
      "Predicted time per exchange of each layout from a time model (docs/topology.md); the "
      "other options may follow");
  predict->fallthrough();
  predict
      ->add_option("--model", o.model,
                   "Time model parameters (JSON): from `halox calibrate`, or the Betzy model "
                   "python/halox/data/betzy/model.json")
      ->required();
  predict->add_flag("--coefficients", o.coefficients,
                    "With --json: each layout's distinct rows of per-parameter coefficients "
                    "(what a calibration fits)");
  return predict;
}

time_parameters load_model(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw usage_error(fmt::format("cannot read the model file '{}'", path));
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw usage_error(fmt::format("the model file '{}' is not JSON ({})", path, e.what()));
  }
  if (!j.is_object() || !j.contains("parameters") || !j["parameters"].is_object())
    throw usage_error(
        fmt::format("the model file '{}' has no \"parameters\" object of {{name: {{value, "
                    "source}}}}",
                    path));
  time_parameters p;
  for (const auto& [name, entry] : j["parameters"].items()) {
    if (!entry.is_object() || !entry.contains("value") || !entry["value"].is_number())
      throw usage_error(
          fmt::format("the model file '{}': parameter {} needs a numeric \"value\"", path, name));
    p.value[name] = entry["value"].get<double>();
    p.source[name] = entry.value("source", std::string{});
  }
  p.validate();
  return p;
}

void print_prediction_json(const topo_options& o, const topo_plan& plan, const time_parameters& p) {
  const auto predictions = predictions_of(plan, p);
  nlohmann::json j;
  j["topology"] = {{"source", plan.topo.source()}, {"summary", plan.topo.summary()}};
  j["nodes"] = o.nodes;
  j["ranks_per_node"] = plan.per_node;
  j["model"] = o.model;
  // What halox calibrate ties into one per-message cost on a node.
  j["on_node_levels"] = on_node_levels();
  j["exchange"] = {{"domain", o.domain},       {"halo", o.halo},
                   {"fields", o.fields},       {"element_size", o.element_size},
                   {"algorithm", o.algorithm}, {"periodic", o.layout.periodic}};
  for (size_t i = 0; i < plan.layouts.size(); ++i) {
    const auto& l = plan.layouts[i];
    const auto& t = predictions[i];
    nlohmann::json terms;
    for (const auto& term : t.terms) terms[term.name] = term.us;
    nlohmann::json row = {
        {"name", l.name},        {"options", l.options},           {"us", t.us},
        {"vs_mpicart", nullptr}, {"slowest_rank", t.slowest_rank}, {"terms", terms}};
    if (const auto ratio = vs_mpicart(t, predictions)) row["vs_mpicart"] = *ratio;
    if (o.coefficients) row["rows"] = coefficient_rows_json(l.loads);
    j["layouts"].push_back(row);
  }
  fmt::print("{}\n", j.dump(2));
}

void print_prediction_table(const topo_options& o, const topo_plan& plan,
                            const time_parameters& p) {
  const auto predictions = predictions_of(plan, p);
  fmt::print("topology: {} ({} per node), {} node{} x {} ranks\n",
             plan.topo.is_this_machine() ? std::string("this machine") : plan.topo.source(),
             plan.topo.summary(), o.nodes, o.nodes == 1 ? "" : "s", plan.per_node);
  fmt::print("exchange: {}x{}x{} cells per rank, halo {}, {} field{} x {} B, {}\n", o.domain[0],
             o.domain[1], o.domain[2], o.halo, o.fields, o.fields == 1 ? "" : "s", o.element_size,
             o.algorithm);
  fmt::print("model:    {}\n\n", o.model);
  size_t width = 6;
  for (const auto& l : plan.layouts) width = std::max(width, l.name.size());
  fmt::print("{:<{}} {:>12} {:>10} {:>10}  {}\n", "layout", width, "us/exchange", "s/10000",
             "vs mpicart", "slowest rank: largest terms (us)");
  for (size_t i = 0; i < plan.layouts.size(); ++i) {
    const auto& t = predictions[i];
    const auto ratio = vs_mpicart(t, predictions);
    fmt::print("{:<{}} {:>12.1f} {:>10.4f} {:>10}  rank {}: {}\n", plan.layouts[i].name, width,
               t.us, t.us * 1e-2, ratio ? fmt::format("{:.3f}", *ratio) : std::string("-"),
               t.slowest_rank, largest_terms(t.terms, 4));
  }
  const auto fastest = std::min_element(
      predictions.begin(), predictions.end(),
      [](const time_prediction& a, const time_prediction& b) { return a.us < b.us; });
  fmt::print("\nfastest predicted: {}\n\n",
             plan.layouts[static_cast<size_t>(fastest - predictions.begin())].name);
  for (const auto& l : plan.layouts) fmt::print("{:<{}} {}\n", l.name, width, l.options);
  fmt::print("\nparameters (0: no term):\n");
  for (const auto& name : model_parameter_names())
    if (p.get(name) > 0)
      fmt::print("  {:<28} {:>10.4g}  {}\n", name, p.get(name),
                 p.source.count(name) ? p.source.at(name) : "");
}

}  // namespace halox::topo_program
