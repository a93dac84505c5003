// What to send and receive, step by step, for one exchange.
//
// Built from the local neighbour list only: O(neighbours), no global gather.
// A stage holds the messages that may be in flight together; stages run in
// order (the steps of the staged algorithm, and in the sequence grouping one field
// after another). A stage carries one message per peer and way: a peer that
// is a neighbour in several directions (a dimension of 2 ranks puts the same
// rank at -x and +x) gets all of them in one message, field by field, so that
// the rows its boxes share are walked once.
//
// The fields move in blocks sized to the cache (exchange_plan::
// fields_per_block), block by block and each block through all steps: the
// x-halo lines a block's x step writes are still cached when its y and z
// steps send them on. A message of more fields than a block (compact, or N
// fields per message) travels in fragments of a block each, in that order.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "halox/decomposition.hpp"
#include "halox/field.hpp"
#include "halox/grid.hpp"

namespace halox {

struct field_box {
  int field = 0;
  box region;
  ivec3 direction{0, 0, 0};  // of the neighbour the box goes to (sends) or comes from (receives)
};

// One message to (or from) a peer: every direction in which the peer is a
// neighbour, field by field. Boxes are packed in order: by field, then by the
// direction the sender sends toward, so both ends list them alike.
struct message {
  int peer = -1;
  int tag = 0;
  ivec3 direction{0, 0, 0};  // of the first box
  std::vector<field_box> boxes;
  size_t bytes = 0;
};

// A halo region filled from this rank's own interior (a dimension of one rank
// with periodic wrap): copy `from[i]` to `to[i]`.
struct local_copy {
  ivec3 direction{0, 0, 0};  // of the halo being filled
  std::vector<field_box> from, to;
  size_t bytes = 0;
};

struct stage {
  std::vector<message> sends, recvs;
  std::vector<local_copy> copies;
};

// The fields a stage fills on this rank (its receives and local copies), ascending.
std::vector<int> fields_filled(const stage& st);

struct exchange_plan {
  // Every field of the exchange, by field index (the boxes' `field`); a plan
  // moves those of `moved`, at `depth` (0: each field's whole halo).
  std::vector<field_layout> layouts;
  std::vector<int> moved;
  int depth = 0;
  int nfields = 1;  // moved.size()
  algorithm alg = algorithm::standard;
  field_grouping grouping = field_grouping::compact;
  int fields_per_message = 1;  // fields a message carries, as the grouping asks
  int fields_per_block = 1;    // fields a stage moves: a message, or a fragment of one
  std::vector<stage> stages;

  size_t bytes_sent() const;      // to other ranks, per exchange
  size_t bytes_copied() const;    // local copies, per exchange
  size_t bytes_received() const;  // from other ranks, per exchange
  size_t message_count() const;   // messages sent per exchange

  const local_grid& grid_of(int field) const { return layouts[static_cast<size_t>(field)].grid; }
  size_t element_bytes_of(int field) const {
    return layouts[static_cast<size_t>(field)].element_bytes;
  }
  // The layout of the first moved field (all of them, when uniform()).
  const field_layout& first_layout() const { return layouts[static_cast<size_t>(moved.front())]; }
  // Whether every moved field has the same layout and element type.
  bool uniform() const;
};

// Tag of a message sent toward `direction` in the given field slot.
int message_tag(int field_slot, const ivec3& direction);

// Fields of their own layouts (field.hpp: layout_of, cell_fields), of which
// the plan moves `moved` (ascending field indices, each once) at `depth`.
// fields_per_message > 0 groups the fields in messages of that many; 0 takes
// the grouping's count (compact: all, sequence: one, cache: fields_per_block).
// The stages move blocks of min(fields per message, fields_per_block) fields;
// fields_per_block 0 means blocks as large as the messages.
struct plan_request {
  std::vector<field_layout> layouts;
  std::vector<int> moved;  // empty: all
  int depth = 0;           // 0: each field's whole halo
  algorithm alg = algorithm::standard;
  field_grouping grouping = field_grouping::compact;
  int fields_per_message = 0;
  int fields_per_block = 0;
};
exchange_plan make_plan(const decomposition& d, plan_request request);

// The largest block of the request's fields whose halo traffic in one stage
// (the cache lines its sent, received and copied boxes touch in the fields;
// the largest field's counts) fits in a quarter of `cache_bytes`; at least
// one, and at least as many as make the largest message to a peer
// min_fragment_bytes (a block is a message of its own: smaller ones cost more
// in messages and signals than the cache saves).
inline constexpr size_t min_fragment_bytes = 64 * 1024;
int cache_sized_block(const decomposition& d, const plan_request& request, size_t cache_bytes);

// The sides of each dimension on which this rank has a neighbour.
neighbour_sides sides_of(const decomposition& d);

}  // namespace halox
