// Time per exchange for a placement: a sum of named terms, each a count from
// the exchange's plan times one parameter, and the slowest rank's sum is the
// exchange's time.
//
// Reference: for rank r, with messages m_l(r) and bytes b_l(r) it sends across
// level l (self, core, L3, NUMA, socket, node; counted as in traffic.hpp),
//
//   t(r) =   sum_l m_l(r) * l.us_per_message              latency.<l>
//          + sum_l b_l(r) * l.ns_per_byte                  transfer.<l>
//          + sum_{q on r's node} b_node(q) * node.injection_ns_per_byte
//                                                          node-injection (the port is shared)
//          + sum_{q on r's socket} b(q) * socket.memory_ns_per_byte
//                                                          socket-memory (its cores share it)
//          + 2 b(r) * rank.copy_ns_per_byte                copy (pack and unpack)
//
//   t = max_r t(r)        (microseconds; a parameter of 0 drops its term)
//
// Every term is linear in its one parameter, so a calibration is a least-squares
// fit over the coefficients (the counts) that model_coefficients() lists.
#pragma once

#include <array>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "halox/programs/decomposition/traffic.hpp"

namespace halox {

// What one rank sends per exchange, by the highest boundary crossed, and the
// loads of the resources it shares.
struct rank_load {
  int rank = 0;
  rank_traffic sent;
  long long node_cross_bytes = 0;  // cross-node bytes of all ranks on its node
  long long socket_bytes = 0;      // all bytes sent by the ranks on its socket
  long long total_bytes() const;
};

// Per-rank counts of an exchange over all ranks (layout as in count_traffic).
std::vector<rank_load> rank_loads(const std::vector<ivec3>& coords, const ivec3& dims,
                                  const std::array<bool, 3>& periodic,
                                  const std::vector<rank_placement>& placements,
                                  const exchange_shape& shape);

// The levels within a node, bottom-up, by the names that prefix their
// parameters: messages to oneself ("self") first, the node's own boundary
// ("node", between nodes) not among them.
std::vector<std::string> on_node_levels();

// The model's parameter names, in a fixed order: "<level>.us_per_message" and
// "<level>.ns_per_byte" per level, then node.injection_ns_per_byte,
// socket.memory_ns_per_byte and rank.copy_ns_per_byte.
const std::vector<std::string>& model_parameter_names();

// A value per parameter (absent: 0) and where it came from.
struct time_parameters {
  std::map<std::string, double> value;
  std::map<std::string, std::string> source;
  double get(const std::string& name) const;
  // Throws usage_error naming an unknown parameter or a negative value.
  void validate() const;
};

// The coefficient of each parameter in t(r), in microseconds per unit of the
// parameter: the model's one formula.
std::vector<std::pair<std::string, double>> model_coefficients(const rank_load& load);

struct time_term {
  std::string name;       // latency.core, transfer.node, node-injection, socket-memory, copy
  std::string parameter;  // the one parameter it multiplies
  double us = 0;
};

struct time_prediction {
  double us = 0;  // the slowest rank's time
  int slowest_rank = 0;
  std::vector<time_term> terms;  // the slowest rank's terms
};

// Time of one rank, term by term (terms of a zero parameter or count left out).
std::vector<time_term> time_terms(const rank_load& load, const time_parameters& p);
time_prediction predict_time(const std::vector<rank_load>& loads, const time_parameters& p);

// The distinct coefficient rows among the ranks (with how many ranks share
// each): what a calibration fits the parameters to.
struct coefficient_row {
  std::vector<std::pair<std::string, double>> coefficients;
  int ranks = 0;
  int first_rank = 0;
};
std::vector<coefficient_row> distinct_rows(const std::vector<rank_load>& loads);

}  // namespace halox
