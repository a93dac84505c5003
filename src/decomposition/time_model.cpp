#include "halox/programs/decomposition/time_model.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "halox/common/error.hpp"

namespace halox {

namespace {

// Parameter prefix of each boundary: messages to oneself are "self".
const char* level_name(size_t k) {
  static const char* names[] = {"self", "core", "L3", "NUMA", "socket", "node"};
  return names[k];
}

constexpr size_t levels = static_cast<size_t>(boundary_count);
constexpr double us_per_ns = 1e-3;

// The socket a rank's memory traffic goes through: one per node where the
// topology has none (or the binding spans two).
std::pair<int, int> socket_of(const rank_placement& p) {
  return {p.node, std::max(-1, p.domain(level::socket))};
}

}  // namespace

long long rank_load::total_bytes() const {
  long long sum = 0;
  for (long long b : sent.bytes) sum += b;
  return sum;
}

std::vector<rank_load> rank_loads(const std::vector<ivec3>& coords, const ivec3& dims,
                                  const std::array<bool, 3>& periodic,
                                  const std::vector<rank_placement>& placements,
                                  const exchange_shape& shape) {
  const auto per_rank = traffic_per_rank(coords, dims, periodic, placements, shape);
  const auto node = static_cast<size_t>(boundary::node);
  std::map<int, long long> node_cross;
  std::map<std::pair<int, int>, long long> socket_sent;
  std::vector<rank_load> out(per_rank.size());
  for (size_t r = 0; r < per_rank.size(); ++r) {
    out[r].rank = static_cast<int>(r);
    out[r].sent = per_rank[r];
    node_cross[placements[r].node] += per_rank[r].bytes[node];
    socket_sent[socket_of(placements[r])] += out[r].total_bytes();
  }
  for (size_t r = 0; r < out.size(); ++r) {
    out[r].node_cross_bytes = node_cross[placements[r].node];
    out[r].socket_bytes = socket_sent[socket_of(placements[r])];
  }
  return out;
}

std::vector<std::string> on_node_levels() {
  std::vector<std::string> out;
  for (size_t k = 0; k < static_cast<size_t>(boundary::node); ++k) out.push_back(level_name(k));
  return out;
}

const std::vector<std::string>& model_parameter_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (size_t k = 0; k < levels; ++k)
      n.push_back(fmt::format("{}.us_per_message", level_name(k)));
    for (size_t k = 0; k < levels; ++k) n.push_back(fmt::format("{}.ns_per_byte", level_name(k)));
    n.insert(n.end(),
             {"node.injection_ns_per_byte", "socket.memory_ns_per_byte", "rank.copy_ns_per_byte"});
    return n;
  }();
  return names;
}

double time_parameters::get(const std::string& name) const {
  auto it = value.find(name);
  return it == value.end() ? 0.0 : it->second;
}

void time_parameters::validate() const {
  const auto& names = model_parameter_names();
  for (const auto& [name, v] : value) {
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw usage_error(
          fmt::format("unknown model parameter '{}' (known: {})", name, fmt::join(names, ", ")));
    if (!(v >= 0))
      throw usage_error(fmt::format("model parameter {} must be >= 0, not {}", name, v));
  }
}

std::vector<std::pair<std::string, double>> model_coefficients(const rank_load& load) {
  std::vector<std::pair<std::string, double>> c;
  const auto& names = model_parameter_names();
  for (size_t k = 0; k < levels; ++k) {
    c.emplace_back(names[k], static_cast<double>(load.sent.messages[k]));
    c.emplace_back(names[levels + k], static_cast<double>(load.sent.bytes[k]) * us_per_ns);
  }
  c.emplace_back("node.injection_ns_per_byte",
                 static_cast<double>(load.node_cross_bytes) * us_per_ns);
  c.emplace_back("socket.memory_ns_per_byte", static_cast<double>(load.socket_bytes) * us_per_ns);
  c.emplace_back("rank.copy_ns_per_byte",
                 2.0 * static_cast<double>(load.total_bytes()) * us_per_ns);
  return c;
}

std::vector<time_term> time_terms(const rank_load& load, const time_parameters& p) {
  static const std::map<std::string, std::string> term_of = [] {
    std::map<std::string, std::string> m;
    for (size_t k = 0; k < levels; ++k) {
      m[model_parameter_names()[k]] = fmt::format("latency.{}", level_name(k));
      m[model_parameter_names()[levels + k]] = fmt::format("transfer.{}", level_name(k));
    }
    m["node.injection_ns_per_byte"] = "node-injection";
    m["socket.memory_ns_per_byte"] = "socket-memory";
    m["rank.copy_ns_per_byte"] = "copy";
    return m;
  }();
  std::vector<time_term> out;
  for (const auto& [parameter, coefficient] : model_coefficients(load)) {
    const double us = coefficient * p.get(parameter);
    if (us > 0) out.push_back({term_of.at(parameter), parameter, us});
  }
  return out;
}

time_prediction predict_time(const std::vector<rank_load>& loads, const time_parameters& p) {
  time_prediction best;
  bool first = true;
  for (const auto& load : loads) {
    auto terms = time_terms(load, p);
    double us = 0;
    for (const auto& t : terms) us += t.us;
    if (first || us > best.us) {
      best = {us, load.rank, std::move(terms)};
      first = false;
    }
  }
  return best;
}

std::vector<coefficient_row> distinct_rows(const std::vector<rank_load>& loads) {
  std::map<std::vector<std::pair<std::string, double>>, size_t> index;
  std::vector<coefficient_row> rows;
  for (const auto& load : loads) {
    auto c = model_coefficients(load);
    auto [it, inserted] = index.emplace(c, rows.size());
    if (inserted) rows.push_back({std::move(c), 0, load.rank});
    rows[it->second].ranks += 1;
  }
  return rows;
}

}  // namespace halox
