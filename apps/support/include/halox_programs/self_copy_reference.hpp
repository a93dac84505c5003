// The self-copy reference of halox-bench: what an exchange would cost if no
// byte crossed ranks. Every halo box the plan fills is filled from the rank's
// own cells, with the copy kernels of the single-copy transports, in their
// order (stage by stage, field by field): a box received from a neighbour
// from the interior box one sub-domain across (as a periodic dimension of one
// rank fills it), a local copy as the plan has it. The copies read and write
// the cache lines of the exchange's own boxes (a halo a few cells wide across
// x costs a line or two per row, whatever crosses), so the time of all ranks
// doing them at once is what the layout costs on the machine; the single-copy
// floor, a memcpy of the halo bytes, is what the bytes cost.
#pragma once

#include <cstddef>

#include "halox/extend/pack.hpp"
#include "halox/extend/plan.hpp"

namespace halox {

// The box a received halo box is filled from: shifted by the interior extent
// back into the interior along every dimension in which it lies outside.
box mirrored_source(const local_grid& grid, const box& halo_box);

// The copies of the reference for this rank's plan on its fields.
copy_list self_copy_reference(const exchange_plan& plan, std::byte* const* fields);

}  // namespace halox
