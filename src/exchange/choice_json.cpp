#include "exchange/choice_json.hpp"

#include "halox/common/error.hpp"

namespace halox {

std::string choice_json(const exchange_options& options) { return choice_to_json(options).dump(); }

void apply_choice_json(std::string_view json, exchange_options& options) {
  try {
    choice_from_json(nlohmann::json::parse(json), options);
  } catch (const nlohmann::json::exception& e) {
    throw usage_error("not a choice of exchange options (" + std::string(json) + "): " + e.what());
  }
}

}  // namespace halox
