// exchange_options' choice as JSON (nlohmann-json), the one format for
// automatic choices: the wisdom file, the benchmark's records and the Python
// tools read and write these objects. Private: the public form is text
// (choice_json and apply_choice_json in halox/exchange.hpp), so that
// nlohmann-json stays out of the users' builds.
//
//   {"transport": "shm", "algorithm": "staged", "fields": "compact",
//    "fields_per_message": 0, "fields_per_block": 8}
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "halox/exchange.hpp"

namespace halox {

inline void to_json(nlohmann::json& j, const transport_choice& c) { j = c.name(); }
inline void from_json(const nlohmann::json& j, transport_choice& c) {
  c = parse_transport_choice(j.get<std::string>());
}

// What an automatic choice decides: transport, algorithm and field grouping.
inline nlohmann::json choice_to_json(const exchange_options& o) {
  return {{"transport", o.transport},
          {"algorithm", to_string(o.alg)},
          {"fields", to_string(o.mode)},
          {"fields_per_message", o.fields_per_message},
          {"fields_per_block", o.fields_per_block}};
}

// Sets the choice's members of `o`; throws usage_error (an unknown or
// unavailable transport, algorithm or mode) or nlohmann::json::exception (a
// missing member or a wrong type).
inline void choice_from_json(const nlohmann::json& j, exchange_options& o) {
  o.transport = j.at("transport").get<transport_choice>();
  o.alg = parse_algorithm(j.at("algorithm").get<std::string>());
  o.mode = parse_field_mode(j.at("fields").get<std::string>());
  o.fields_per_message = j.at("fields_per_message").get<int>();
  o.fields_per_block = j.at("fields_per_block").get<int>();
}

}  // namespace halox
