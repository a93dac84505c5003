/* halox for C (C99) and for languages that call C: Fortran (the `halox`
 * module is built on this header), Julia, Rust.
 *
 *   halox_decomposition d = NULL;
 *   halox_exchange ex = NULL;
 *   int global[3] = {64, 48, 32}, periodic[3] = {1, 0, 1}, extent[3], offset[3];
 *   halox_halo_widths halo = {.lo = {2, 2, 2}, .hi = {2, 2, 2}};
 *   halox_decomposition_create(&d, MPI_COMM_WORLD, global, NULL, periodic);
 *   halox_subdomain(d, extent, offset);
 *   ... allocate u, v: (extent[0] + 4) * (extent[1] + 4) * (extent[2] + 4) doubles ...
 *   double* fields[2] = {u, v};
 *   halox_options options = HALOX_OPTIONS_INIT;
 *   options.transport = "shm";
 *   if (halox_exchange_create_double(&ex, d, extent, &halo, 2, fields, &options) != HALOX_SUCCESS)
 *     fprintf(stderr, "%s\n", halox_last_error());
 *   halox_start(ex);   ... interior work ...   halox_wait(ex);
 *   halox_exchange_destroy(&ex);
 *   halox_decomposition_destroy(&d);
 *
 * Field layout as in the C++ API (halox/exchange.hpp): one array per field
 * over the allocated box, interior plus halos, x fastest, then y, then z; the
 * pointer is the first allocated cell. This is a Fortran array's layout:
 * u(1-h:nx+h, 1-h:ny+h, 1-h:nz+h) is such a field.
 *
 * Errors: every function returns a halox_status; on anything but
 * HALOX_SUCCESS, halox_last_error() holds the message (per thread, until the
 * thread's next failing call). No C++ exception crosses this interface and no
 * error aborts the process. A NULL handle, or one already destroyed, is
 * HALOX_ERROR_USAGE. Creating an exchange is collective: a configuration
 * error found on any rank (a field that does not match, a halo wider than the
 * sub-domain, an unknown or unavailable transport) fails it on every rank
 * with the same message, before any halo moves.
 */
#ifndef HALOX_HALOX_H
#define HALOX_HALOX_H

#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum halox_status {
  HALOX_SUCCESS = 0,
  /* a bad argument, an impossible configuration, a NULL or destroyed handle */
  HALOX_ERROR_USAGE = 1,
  /* start() while an exchange is in flight, wait() without start() */
  HALOX_ERROR_STATE = 2,
  /* a peer did not arrive within the timeout (this rank only: end the job) */
  HALOX_ERROR_TIMEOUT = 3,
  /* buffers or node-shared memory could not be allocated */
  HALOX_ERROR_ALLOCATION = 4,
  /* anything else the library reported */
  HALOX_ERROR_INTERNAL = 5
} halox_status;

typedef enum halox_type { HALOX_FLOAT = 1, HALOX_DOUBLE = 2 } halox_type;

/* Halo widths in points, per dimension (x, y, z): lo below the interior, hi
 * above it, as halox::halo_widths in C++. Always given by name:
 * {.lo = {2, 2, 2}, .hi = {3, 2, 2}} is 2 points below and 3 above along x,
 * 2 on either side along y and z. Widths are never negative. */
typedef struct halox_halo_widths {
  int lo[3];
  int hi[3];
} halox_halo_widths;

typedef struct halox_decomposition_s* halox_decomposition;
typedef struct halox_exchange_s* halox_exchange;
typedef struct halox_shared_fields_s* halox_shared_fields;

/* One array of cells on an exchange's grid (halox_exchange_create): its first
 * allocated cell, its element type and, optionally, its extents (0, 0, 0: not
 * checked). With extents, creating the exchange checks them against interior
 * plus halos. A field of its own location and halos is a halox_field. */
typedef struct halox_array {
  void* data;
  halox_type type;
  int allocated[3];
} halox_array;

/* Where a field's points sit on the cell grid (halox/field.hpp, the
 * conventions of PETSc's DMStag): at cell centres, on the x, y or z faces, on
 * the edges running along x, y or z, or on the vertices (cell corners). Along each axis a
 * location staggers, the rank at the high end of an open axis holds one more
 * point than it has cells. */
typedef enum halox_location {
  HALOX_CELL = 0,
  HALOX_X_FACE = 1,
  HALOX_Y_FACE = 2,
  HALOX_Z_FACE = 3,
  HALOX_X_EDGE = 4,
  HALOX_Y_EDGE = 5,
  HALOX_Z_EDGE = 6,
  HALOX_VERTEX = 7
} halox_location;

/* A field as a code holds it: its first allocated point, element type,
 * location, halo widths in points (halox_halo_widths: .lo and .hi), and
 * optionally the extents of its array (0, 0, 0: not checked), a name
 * (NULL: "field <index>") for errors and subset calls by name, and what
 * happens to the faces it shares with its neighbours along its staggered axes
 * (halox/field.hpp, shared_points): HALOX_SHARED_FROM_OWNER (0, the default)
 * sends the owner's copy to the other holder, HALOX_SHARED_KEPT keeps each
 * holder's own copy and moves only the points beyond it, as CloverLeaf does. */
typedef enum halox_shared_points {
  HALOX_SHARED_FROM_OWNER = 0,
  HALOX_SHARED_KEPT = 1
} halox_shared_points;

typedef struct halox_field {
  void* data;
  halox_type type;
  halox_location location;
  halox_halo_widths halo;
  int allocated[3];
  const char* name;
  halox_shared_points shared;
} halox_field;

/* The options of an exchange. Start from HALOX_OPTIONS_INIT (or
 * halox_options_init()): every member then means "the library's default",
 * and the HALOX_* environment variables apply as in C++. Strings are read
 * while the exchange is created only. */
typedef struct halox_options {
  /* "mpi-p2p" (NULL: the default), "shm" (= shm+mpi-p2p), "shm+ucx", ...,
   * or "auto": measured among the available ones (as auto_transport) */
  const char* transport;
  /* "standard" (NULL), "staged", "faces", or "auto" (as auto_algorithm) */
  const char* algorithm;
  /* how the fields are grouped into messages: "compact" (all in one),
   * "sequence" (one after another), "cache" (NULL: blocks sized to the L2
   * cache), a number of fields per message, or "auto" (as auto_grouping) */
  const char* grouping;
  /* non-zero: measure the candidates when the exchange is created and keep
   * the fastest (agreed by all ranks) */
  int auto_transport;
  int auto_algorithm;
  int auto_grouping;
  /* seconds a wait may last (0: HALOX_TIMEOUT or 600) */
  double timeout_seconds;
  /* a file of earlier measured choices (NULL: HALOX_WISDOM, or none) */
  const char* wisdom_file;
  /* "detect" (NULL), "host" or "device": where the fields live */
  const char* memory;
  /* a cudaStream_t for device fields (NULL: the default stream) */
  void* cuda_stream;
  /* groups of this many consecutive ranks count as nodes (0: shared-memory nodes) */
  int ranks_per_node;
} halox_options;

#define HALOX_OPTIONS_INIT {NULL, NULL, NULL, 0, 0, 0, 0.0, NULL, NULL, NULL, 0}
void halox_options_init(halox_options* options);
/* sizeof(halox_options), for bindings that mirror the struct */
size_t halox_options_size(void);

/* The message of the calling thread's last failing call ("" when none). */
const char* halox_last_error(void);
/* "usage", "state", "timeout", "allocation", "internal" or "success" */
const char* halox_status_name(int status);

/* ---- Decomposition: the ranks of comm on a process grid, a global grid split
 * over them. Collective over comm. dims: ranks per dimension, NULL or 0
 * entries chosen by MPI_Dims_create; periodic: non-zero per periodic
 * dimension (NULL: all periodic). The decomposition owns a duplicate of comm. */
halox_status halox_decomposition_create(halox_decomposition* decomp, MPI_Comm comm,
                                        const int global[3], const int dims[3],
                                        const int periodic[3]);
/* A code's own decomposition: its ranks numbered in `order` ("XYZ": x
 * fastest, as CloverLeaf numbers its chunks; "ZYX": z fastest, as
 * MPI_Cart_create) on a dims grid (every entry given), and its own sub-domain
 * on this rank, as the code holds it (offset: global index of its first cell;
 * extent: its cells; both required). Collective: the sub-domains are checked
 * to tile the global grid as the order places the ranks, so a wrong order is
 * refused (HALOX_ERROR_USAGE on every rank, naming both layouts). */
halox_status halox_decomposition_adopt(halox_decomposition* decomp, MPI_Comm comm,
                                       const int global[3], const int dims[3],
                                       const int periodic[3], const char* order,
                                       const int offset[3], const int extent[3]);
halox_status halox_decomposition_adopt_f(halox_decomposition* decomp, MPI_Fint comm,
                                         const int global[3], const int dims[3],
                                         const int periodic[3], const char* order,
                                         const int offset[3], const int extent[3]);
/* The same with a Fortran communicator (MPI_Comm_c2f, mpi_f08's MPI_VAL). */
halox_status halox_decomposition_create_f(halox_decomposition* decomp, MPI_Fint comm,
                                          const int global[3], const int dims[3],
                                          const int periodic[3]);
/* Collective. Sets *decomp to NULL. Exchanges built on it stay usable. */
halox_status halox_decomposition_destroy(halox_decomposition* decomp);
/* This rank's interior: cells per dimension, and the global index (0-based)
 * of its first cell. */
halox_status halox_subdomain(halox_decomposition decomp, int extent[3], int offset[3]);
halox_status halox_decomposition_rank(halox_decomposition decomp, int* rank, int* size);
halox_status halox_decomposition_grid(halox_decomposition decomp, int dims[3], int coords[3]);
/* The points a field at `location` holds on this rank, halos not counted:
 * its cells, and one point more along a staggered axis at the high end of an
 * open dimension (the last face or vertex): halox::field_points, the one
 * statement of the staggered geometry, as the Fortran module asks it. */
halox_status halox_field_points(halox_decomposition decomp, halox_location location,
                                int points[3]);
/* The decomposition's communicator (owned by it: do not free). */
halox_status halox_decomposition_comm(halox_decomposition decomp, MPI_Comm* comm);

/* For bindings: a problem found outside the library (empty or NULL: none)
 * reported like the library's own. Collective over the decomposition's ranks:
 * when any rank passes one, every rank gets HALOX_ERROR_USAGE and the lowest
 * such rank's message, "rank N: problem". */
halox_status halox_agree(halox_decomposition decomp, const char* function, const char* problem);

/* ---- Node-shared fields: nfields fields of `grid` cells in memory the ranks
 * of a node read directly, so that `shm` copies halos in place: an exchange
 * over arrays of halox_shared_fields_data finds them there. Collective. */
halox_status halox_shared_fields_create(halox_shared_fields* fields, halox_decomposition decomp,
                                        const int interior[3], const halox_halo_widths* halo,
                                        halox_type type, int nfields);
halox_status halox_shared_fields_data(halox_shared_fields fields, int index, void** data);
/* Collective. The memory lives on while an exchange over it does. */
halox_status halox_shared_fields_destroy(halox_shared_fields* fields);

/* ---- Exchange. Collective over the decomposition's ranks, every rank with
 * the same options. interior: the sub-domain's cells (NULL: the
 * decomposition's sub-domain); halo: the widths below and above the interior
 * (halox_halo_widths). All fields share the grid and the element type. */
halox_status halox_exchange_create(halox_exchange* ex, halox_decomposition decomp,
                                   const int interior[3], const halox_halo_widths* halo,
                                   int nfields, const halox_array* fields,
                                   const halox_options* options);
halox_status halox_exchange_create_double(halox_exchange* ex, halox_decomposition decomp,
                                          const int interior[3], const halox_halo_widths* halo,
                                          int nfields, double* const* fields,
                                          const halox_options* options);
halox_status halox_exchange_create_float(halox_exchange* ex, halox_decomposition decomp,
                                         const int interior[3], const halox_halo_widths* halo,
                                         int nfields, float* const* fields,
                                         const halox_options* options);
/* Fields of their own locations, halos and types in one exchange. interior:
 * the rank's cells (NULL: the decomposition's sub-domain). With `allocated`
 * set, each array's extents are checked against its location's points plus
 * its halos. */
halox_status halox_exchange_create_fields(halox_exchange* ex, halox_decomposition decomp,
                                          const int interior[3], int nfields,
                                          const halox_field* fields,
                                          const halox_options* options);
/* Subset calls: only the `count` fields of `indices` (0-based, as created),
 * at `depth` (0: each field's whole halo). The first call of a subset and
 * depth builds its schedule (collectively); later ones reuse it. Arguments
 * are checked before anything moves (HALOX_ERROR_USAGE). */
halox_status halox_start_subset(halox_exchange ex, int count, const int* indices, int depth);
halox_status halox_exchange_subset(halox_exchange ex, int count, const int* indices, int depth);
/* A subset call with an algorithm of its own ("standard", "staged" or "faces";
 * NULL: the exchange's), where a code's calls want different algorithms:
 * each subset, depth and algorithm has its schedule. */
halox_status halox_start_subset_algorithm(halox_exchange ex, int count, const int* indices,
                                          int depth, const char* algorithm);
/* The index of the field named `name` (HALOX_ERROR_USAGE when none is). */
halox_status halox_field_index(halox_exchange ex, const char* name, int* index);

/* ---- Reverse calls (adding into halos, docs/library.md#adding-into-halos):
 * every copy of a point in a halo combined into the point's owner with `op`,
 * or, with every_holder non-zero, into every rank that holds the point (the
 * same total everywhere). Fields: the `count` of `indices` at `depth`, as
 * halox_start_subset takes them; count 0 and indices NULL: every field at
 * `depth` (0: each field's whole halo). Copies are combined in one fixed
 * order (z, then y, then x; along an axis the owner's value, then the copy
 * below, then the copy above): the same bits whatever the transport,
 * algorithm or grouping. Split phase like halox_start/halox_wait; a reverse
 * call may be in flight beside a forward call of other fields. */
typedef enum halox_reduction { HALOX_SUM = 1, HALOX_MIN = 2, HALOX_MAX = 3 } halox_reduction;
halox_status halox_reverse_start(halox_exchange ex, halox_reduction op, int count,
                                 const int* indices, int depth, int every_holder);
halox_status halox_reverse_wait(halox_exchange ex);
halox_status halox_reverse(halox_exchange ex, halox_reduction op, int count, const int* indices,
                           int depth, int every_holder);

/* A field's memory moved (0-based index, as created): the calls after this
 * one use `data`, laid out as before. Every rank gives the same fields new
 * addresses between the same two calls (the next call rebuilds what moves
 * them, collectively). Not for node-shared or device fields. */
halox_status halox_exchange_set_field_data(halox_exchange ex, int index, void* data);

/* Sets *ex to NULL. Not collective; an exchange in flight is completed first. */
halox_status halox_exchange_destroy(halox_exchange* ex);

/* start: the first stage is in flight on return (overlap work here); wait:
 * every halo cell is final; exchange: both. */
halox_status halox_start(halox_exchange ex);
halox_status halox_wait(halox_exchange ex);
halox_status halox_exchange_halos(halox_exchange ex);

/* ---- Queries. Strings are copied into buf (at most size bytes, always
 * terminated); a longer answer is cut short. */
/* The transport as run, e.g. "shm" (= shm+mpi-p2p) */
halox_status halox_exchange_transport(halox_exchange ex, char* buf, size_t size);
/* How the data moved, e.g. "shm(outbox)+mpi-p2p" */
halox_status halox_exchange_transport_path(halox_exchange ex, char* buf, size_t size);
/* The algorithm and the field grouping as run (after measured choices) */
halox_status halox_exchange_algorithm(halox_exchange ex, char* buf, size_t size);
halox_status halox_exchange_grouping(halox_exchange ex, char* buf, size_t size);
/* Bytes per exchange this rank sends to other ranks, receives from them and
 * copies within itself, by the plan; and the plan's stage count. */
halox_status halox_exchange_bytes(halox_exchange ex, size_t* sent, size_t* received,
                                  size_t* copied);
halox_status halox_exchange_stages(halox_exchange ex, int* stages);
/* Per-stage profile (halox/exchange_profile.hpp): record_stages(ex, 1)
 * starts recording anew; stage_profile gives, for stage `stage`, the seconds
 * summed over the recorded exchanges: pack, copy, wait for peers, wait for
 * readers, other (times[5]). */
halox_status halox_exchange_record_stages(halox_exchange ex, int on);
halox_status halox_exchange_stage_profile(halox_exchange ex, int stage, double times[5],
                                          unsigned long long* exchanges);
/* The transports usable here, space separated ("mpi-p2p shm cma ..."):
 * collective over the decomposition's ranks (available on all of them). */
halox_status halox_available_transports(halox_decomposition decomp, char* buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* HALOX_HALOX_H */
