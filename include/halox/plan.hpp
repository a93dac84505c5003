// What to send and receive, step by step, for one exchange.
//
// Built from the local neighbour list only: O(neighbours), no global gather.
// A stage holds the messages that may be in flight together; stages run in
// order (the steps of the staged algorithm, and in sequence mode one field
// after another).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "halox/decomposition.hpp"
#include "halox/grid.hpp"

namespace halox {

enum class field_mode {
  compact,   // all fields of a neighbour travel in one message
  sequence,  // the fields are exchanged one after another
};
field_mode parse_field_mode(const std::string& name);  // throws usage_error
std::string to_string(field_mode m);

enum class element_type { f32, f64 };
element_type parse_element_type(const std::string& name);  // "float" | "double"
std::string to_string(element_type t);
size_t element_size(element_type t);

struct field_box {
  int field = 0;
  box region;
};

// One message to (or from) a peer; boxes are packed in order, field-major.
struct message {
  int peer = -1;
  int tag = 0;
  ivec3 direction{0, 0, 0};  // toward the peer
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

struct exchange_plan {
  local_grid grid;
  int nfields = 1;
  size_t element_bytes = 8;
  algorithm alg = algorithm::standard;
  field_mode mode = field_mode::compact;
  int fields_per_message = 1;  // fields a message carries (the last block may carry fewer)
  std::vector<stage> stages;

  size_t bytes_sent() const;      // to other ranks, per exchange
  size_t bytes_copied() const;    // local copies, per exchange
  size_t bytes_received() const;  // from other ranks, per exchange
  size_t message_count() const;   // messages sent per exchange
};

// Tag of a message sent toward `direction` in the given field slot.
int message_tag(int field_slot, const ivec3& direction);

// fields_per_message > 0 groups the fields in blocks of that many, one message
// per block and neighbour; 0 takes the mode's grouping (compact: all, sequence: one).
exchange_plan make_plan(const decomposition& d, const local_grid& grid, int nfields,
                        size_t element_bytes, algorithm alg, field_mode mode,
                        int fields_per_message = 0);

}  // namespace halox
