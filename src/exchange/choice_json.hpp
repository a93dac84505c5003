// exchange_options' choice as JSON (nlohmann-json), the one format for
// automatic choices: the wisdom file, the benchmark's records and the Python
// tools read and write these objects. Private: the public form is text
// (choice_json and apply_choice_json in halox/exchange.hpp), so that
// nlohmann-json stays out of the users' builds.
//
//   {"transport": "shm", "algorithm": "staged", "grouping": "compact",
//    "fields_per_message": 0, "fields_per_block": 8}
//
// Compatibility: choices written before the grouping had its own word (older
// wisdom files and records) name it "fields", a string; a choice without
// "grouping" whose "fields" is a string is read with that as its grouping, and
// a wisdom key's "measured": {"fields": ...} as "measured": {"grouping": ...}.
// Only "grouping" is written.
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
          {"grouping", to_string(o.grouping)},
          {"fields_per_message", o.fields_per_message},
          {"fields_per_block", o.fields_per_block}};
}

// The member that holds the grouping: "grouping", or an older choice's "fields"
// (the compatibility rule above).
inline const char* grouping_member(const nlohmann::json& j) {
  const bool older = !j.contains("grouping") && j.contains("fields") && j["fields"].is_string();
  return older ? "fields" : "grouping";
}

// A wisdom entry's key as this build writes it: an older key's "measured"
// "fields" is its "grouping" (the compatibility rule above).
inline nlohmann::json current_wisdom_key(nlohmann::json key) {
  if (!key.is_object() || !key.contains("measured")) return key;
  nlohmann::json& measured = key["measured"];
  if (measured.is_object() && measured.contains("fields") && !measured.contains("grouping")) {
    measured["grouping"] = measured["fields"];
    measured.erase("fields");
  }
  return key;
}

// Sets the choice's members of `o`; throws usage_error (an unknown or
// unavailable transport, algorithm or grouping) or nlohmann::json::exception (a
// missing member or a wrong type).
inline void choice_from_json(const nlohmann::json& j, exchange_options& o) {
  o.transport = j.at("transport").get<transport_choice>();
  o.alg = parse_algorithm(j.at("algorithm").get<std::string>());
  o.grouping = parse_field_grouping(j.at(grouping_member(j)).get<std::string>());
  o.fields_per_message = j.at("fields_per_message").get<int>();
  o.fields_per_block = j.at("fields_per_block").get<int>();
}

}  // namespace halox
