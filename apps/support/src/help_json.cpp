#include "halox_programs/help_json.hpp"

#include <regex>
#include <string>
#include <vector>

namespace halox {

namespace {

nlohmann::json split_words(const std::string& text) {
  nlohmann::json words = nlohmann::json::array();
  for (auto& word : CLI::detail::split(text, ',')) words.push_back(CLI::detail::trim_copy(word));
  return words;
}

// CLI11's validators say what they accept only in their descriptions:
// IsMember "{a,b,c}", Range "INT in [1 - 1073741824]", declared_values
// "{a,b,c} or a count, all = {a,b}".
void add_checks(CLI::Option& option, nlohmann::json& entry) {
  static const std::regex range(R"(in \[(\S+) - (\S+)\])");
  static const std::regex declared(R"(^\{([^}]*)\}( or a count)?(, all = \{([^}]*)\})?$)");
  for (int i = 0;; ++i) {
    const CLI::Validator* validator = nullptr;
    try {
      validator = option.get_validator(i);
    } catch (const CLI::OptionNotFound&) {
      break;
    }
    const std::string text = validator->get_description();
    std::smatch bounds, words;
    if (std::regex_match(text, words, declared) && (words[2].matched || words[3].matched)) {
      entry["choices"] = split_words(words[1]);
      if (words[2].matched) entry["counts"] = true;
      if (words[3].matched) entry["all"] = split_words(words[4]);
    } else if (text.size() >= 2 && text.front() == '{' && text.back() == '}') {
      entry["choices"] = split_words(text.substr(1, text.size() - 2));
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

CLI::Validator declared_values(const std::vector<std::string>& words, bool counts,
                               const std::vector<std::string>& all) {
  std::string text = "{";
  for (size_t i = 0; i < words.size(); ++i) text += (i ? "," : "") + words[i];
  text += "}";
  if (counts) text += " or a count";
  if (!all.empty()) {
    text += ", all = {";
    for (size_t i = 0; i < all.size(); ++i) text += (i ? "," : "") + all[i];
    text += "}";
  }
  return CLI::Validator([](std::string&) { return std::string(); }, text);
}

}  // namespace halox
