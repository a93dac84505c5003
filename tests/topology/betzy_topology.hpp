// A node of Betzy (2 sockets, 4 NUMA domains each, 4 L3 caches per domain, 4
// cores per L3) as an hwloc synthetic topology, for the topology tests.
#pragma once

#include <string>

namespace halox {

inline const std::string betzy = "synthetic:pack:2 numa:4 l3:4 core:4 pu:1";

}  // namespace halox
