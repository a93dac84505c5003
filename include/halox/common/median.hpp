// The one median of the library and its programs.
#pragma once

#include <vector>

namespace halox {

// The middle value of an odd count, the mean of the two middle values of an
// even count (the conventional median). Throws std::invalid_argument for no values.
double median(std::vector<double> values);

}  // namespace halox
