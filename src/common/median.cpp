#include "halox/common/median.hpp"

#include <algorithm>
#include <cstddef>
#include <stdexcept>

namespace halox {

double median(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("the median of no values");
  const auto upper = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), upper, values.end());
  if (values.size() % 2 == 1) return *upper;
  // nth_element leaves the lower half before `upper`: its largest is the other middle value.
  return (*std::max_element(values.begin(), upper) + *upper) / 2;
}

}  // namespace halox
