// The 2-D process mesh of halox-halo2d: directions, neighbours, the single
// sender, the phase colouring, and who sends what to whom in each test.
// Pure arithmetic on coordinates (no MPI), so every rule is unit-tested.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace halox::halo2d {

using coord2 = std::array<int, 2>;

struct mesh2d {
  coord2 dims{1, 1};     // processes per dimension, as MPI_Dims_create orders them
  bool periodic = true;  // wrap in both dimensions
  int size() const { return dims[0] * dims[1]; }
};

// A neighbour direction. The first 2, 4 or 8 of all_directions are the 1-D,
// star and box stencils, in MPI_Cart_shift order (dimension 0, then 1, then
// the diagonals). A message travelling in direction d carries tag d.
struct direction {
  coord2 offset;
  std::string_view name;
};
inline constexpr std::array<direction, 8> all_directions{{{{-1, 0}, "-x"},
                                                          {{+1, 0}, "+x"},
                                                          {{0, -1}, "-y"},
                                                          {{0, +1}, "+y"},
                                                          {{-1, -1}, "-x-y"},
                                                          {{-1, +1}, "-x+y"},
                                                          {{+1, -1}, "+x-y"},
                                                          {{+1, +1}, "+x+y"}}};

bool is_neighbor_count(int count);  // 2, 4 or 8
std::span<const direction> directions(int neighbor_count);
int opposite(int direction_index);

// MPI_Cart_create numbering with reorder off: row-major, dimension 1 fastest.
int rank_of(const mesh2d& mesh, const coord2& coords);
coord2 coords_of(const mesh2d& mesh, int rank);
std::string to_string(const coord2& coords);  // "(1,1)"
std::string mesh_string(const mesh2d& mesh);  // "2x2"

// The process one step in a direction: wrapped when periodic, none across an
// open boundary. On a periodic extent of 1 that is the process itself.
std::optional<coord2> neighbor(const mesh2d& mesh, const coord2& from, int direction_index);

// The seed's sender at (1,1); in a dimension of extent 1 the only coordinate, 0.
coord2 single_sender(const mesh2d& mesh);

// Empty when every test can run k neighbours on this mesh, else what it needs:
// without wrap an interior process (1,1) with all k neighbours must exist,
// because times are divided by k.
std::string mesh_requirement(const mesh2d& mesh, int neighbor_count);

// Phase rule of the phased test: a proper colouring of the neighbour graph,
// and every message travels in the phase numbered by its sender's colour. So
// in a phase the processes of one colour send everything and their neighbours
// (other colours, by properness) receive: nobody sends and receives at once,
// and both ends derive the phase from the sender's coordinates.
// Per dimension: c mod 2, except on a periodic odd extent (an odd cycle) where
// the last coordinate takes colour 2; an extent of 1 has colour 0.
int dimension_colour(int coordinate, int extent, bool periodic);
int dimension_colour_count(int extent, bool periodic);
// 2 neighbours: colour of x. 4: (cx + cy) mod M, M = 3 if a dimension needs 3
// colours, else 2 (a checkerboard). 8: cx + mx * cy (diagonals differ in both).
int phase_count(const mesh2d& mesh, int neighbor_count);
int phase_of(const mesh2d& mesh, int neighbor_count, const coord2& sender);

enum class test_kind { single, all, phased, persistent, irecv_first, sendrecv };
inline constexpr std::array<test_kind, 6> all_tests{test_kind::single,      test_kind::all,
                                                    test_kind::phased,      test_kind::persistent,
                                                    test_kind::irecv_first, test_kind::sendrecv};
std::string_view name_of(test_kind test);   // "irecv-first"
std::string_view title_of(test_kind test);  // "all send/receive"
std::optional<test_kind> test_from_name(std::string_view name);
std::string test_names();  // "single, all, ..." for error messages

struct transfer {
  int direction = 0;  // the sender's direction: the message tag
  coord2 peer{0, 0};  // the receiver of a send, the sender of a receive
  int phase = 0;      // always 0 outside the phased test
};

// This process's messages in one exchange. A periodic extent of 1 or 2 makes
// the same peer (or the process itself) appear in several directions; the tag
// keeps those messages apart.
struct message_plan {
  std::vector<transfer> sends, receives;
  int phases = 1;
};
message_plan plan_messages(test_kind test, const mesh2d& mesh, int neighbor_count,
                           const coord2& me);

}  // namespace halox::halo2d
