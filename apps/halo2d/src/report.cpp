#include "halox_programs/halo2d/report.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <functional>

namespace halox::halo2d {

double measurement::bandwidth_mb_per_s() const {
  double seconds = seconds_per_message();
  return bytes == 0 || seconds <= 0 ? 0.0 : static_cast<double>(bytes) / seconds / 1e6;
}

void to_json(nlohmann::json& j, const measurement& m) {
  j = {{"test", name_of(m.test)},
       {"neighbors", m.neighbors},
       {"bytes", m.bytes},
       {"repetitions", m.repetitions},
       {"trial_seconds_per_exchange", m.trial_seconds},
       {"seconds_per_exchange", m.seconds_per_exchange},
       {"seconds_per_message", m.seconds_per_message()},
       {"bandwidth_MB_per_s", m.bandwidth_mb_per_s()}};
}

namespace {

constexpr int bytes_width = 10;
constexpr int column_width = 16;

// Wide enough for the group's title over its columns.
int group_column_width(test_kind test, size_t columns) {
  int title = static_cast<int>(title_of(test).size()) + 4;
  int cols = static_cast<int>(columns);
  return std::max(column_width, (title + cols - 1) / cols);
}

std::string centred(std::string_view text, int width) {
  int pad = std::max(0, width - static_cast<int>(text.size()));
  return std::string(static_cast<size_t>(pad / 2), ' ') + std::string(text) +
         std::string(static_cast<size_t>(pad - pad / 2), ' ');
}

std::string format_table(const std::vector<measurement>& results, const table_layout& layout,
                         const std::function<std::string(const measurement&)>& cell) {
  std::string out = fmt::format("{:>{}}", "bytes", bytes_width);
  for (auto test : layout.tests) {
    int width = group_column_width(test, layout.neighbor_counts.size());
    out += centred(title_of(test), width * static_cast<int>(layout.neighbor_counts.size()));
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  out += fmt::format("\n{:>{}}", "", bytes_width);
  for (auto test : layout.tests) {
    int width = group_column_width(test, layout.neighbor_counts.size());
    for (int k : layout.neighbor_counts) out += fmt::format("{:>{}}", k, width);
  }
  out += '\n';
  for (auto bytes : layout.sizes) {
    out += fmt::format("{:>{}}", bytes, bytes_width);
    for (auto test : layout.tests) {
      int width = group_column_width(test, layout.neighbor_counts.size());
      for (int k : layout.neighbor_counts) {
        auto found = std::find_if(results.begin(), results.end(), [&](const measurement& m) {
          return m.test == test && m.neighbors == k && m.bytes == bytes;
        });
        out += fmt::format("{:>{}}", found == results.end() ? "-" : cell(*found), width);
      }
    }
    out += '\n';
  }
  return out;
}

}  // namespace

std::string time_table(const std::vector<measurement>& results, const table_layout& layout,
                       int digits) {
  return format_table(results, layout, [digits](const measurement& m) {
    return fmt::format("{:.{}f}", m.seconds_per_message(), digits);
  });
}

std::string bandwidth_table(const std::vector<measurement>& results, const table_layout& layout) {
  return format_table(results, layout, [](const measurement& m) {
    return m.bytes == 0 ? std::string("-") : fmt::format("{:.1f}", m.bandwidth_mb_per_s());
  });
}

}  // namespace halox::halo2d
