#include "halox/common/help_json.hpp"

#include <regex>
#include <string>
#include <vector>

namespace halox {

namespace {

// CLI11's validators say what they accept only in their descriptions:
// IsMember "{a,b,c}", Range "INT in [1 - 1073741824]".
void add_checks(CLI::Option& option, nlohmann::json& entry) {
  static const std::regex range(R"(in \[(\S+) - (\S+)\])");
  for (int i = 0;; ++i) {
    const CLI::Validator* validator = nullptr;
    try {
      validator = option.get_validator(i);
    } catch (const CLI::OptionNotFound&) {
      break;
    }
    const std::string text = validator->get_description();
    std::smatch bounds;
    if (text.size() >= 2 && text.front() == '{' && text.back() == '}') {
      nlohmann::json choices = nlohmann::json::array();
      for (auto& choice : CLI::detail::split(text.substr(1, text.size() - 2), ','))
        choices.push_back(CLI::detail::trim_copy(choice));
      entry["choices"] = choices;
    } else if (std::regex_search(text, bounds, range)) {
      entry["range"] = {std::stod(bounds[1]), std::stod(bounds[2])};
    }
  }
}

bool is_help(const CLI::App& app, const CLI::Option* option) {
  const std::string name = option->get_name();
  return option == app.get_help_ptr() || option == app.get_help_all_ptr() || name == help_json_flag;
}

nlohmann::json option_entry(CLI::Option& option) {
  nlohmann::json entry;
  std::vector<std::string> names, negations;
  for (const auto& s : option.get_snames()) names.push_back("-" + s);
  for (const auto& l : option.get_lnames()) {
    // "--x,!--no-x": the second name sets false.
    const bool negates = option.get_items_expected_max() == 0 && option.check_fname(l) &&
                         option.get_flag_value(l, "") == "false";
    (negates ? negations : names).push_back("--" + l);
  }
  entry["name"] = names.empty() ? option.get_name() : names.back();
  for (const auto& n : names)
    if (n.rfind("--", 0) == 0) {
      entry["name"] = n;
      break;
    }
  entry["names"] = names;
  if (!negations.empty()) entry["negations"] = negations;
  const bool flag = option.get_items_expected_max() == 0;
  entry["flag"] = flag;
  const int most = option.get_items_expected_max();
  entry["expected"] = most >= CLI::detail::expected_max_vector_size ? -1 : most;
  if (!flag) {
    const std::string type = option.get_type_name();
    entry["type"] = type.substr(0, type.find(':'));
  }
  if (option.get_delimiter() != '\0') entry["delimiter"] = std::string(1, option.get_delimiter());
  if (!option.get_default_str().empty()) entry["default"] = option.get_default_str();
  entry["help"] = option.get_description();
  entry["hidden"] = option.get_group().empty();
  add_checks(option, entry);
  return entry;
}

}  // namespace

nlohmann::json option_schema(CLI::App& app) {
  nlohmann::json options = nlohmann::json::array();
  for (CLI::Option* option : app.get_options())
    if (!is_help(app, option) && !option->get_positional())
      options.push_back(option_entry(*option));
  return {{"program", app.get_name()}, {"options", options}};
}

}  // namespace halox
