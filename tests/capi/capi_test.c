/* The C API from C: an exchange checked cell by cell against global
 * coordinates, the queries, and bad calls, each of which must return its
 * code and a message while the program goes on. Any failure: exit 1. */
#include <halox/halox.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
static int rank = 0;

#define EXPECT(cond)                                                          \
  do {                                                                        \
    if (!(cond)) {                                                            \
      fprintf(stderr, "rank %d: %s:%d: %s\n", rank, __FILE__, __LINE__, #cond); \
      ++failures;                                                             \
    }                                                                         \
  } while (0)

/* The call fails with `code` and a message that contains `words`. */
#define EXPECT_ERROR(call, code, words)                                                 \
  do {                                                                                  \
    int status_ = (call);                                                               \
    if (status_ != (code) || strstr(halox_last_error(), (words)) == NULL) {             \
      fprintf(stderr, "rank %d: %s:%d: %s gave %s \"%s\", expected %s with \"%s\"\n",   \
              rank, __FILE__, __LINE__, #call, halox_status_name(status_),              \
              halox_last_error(), halox_status_name(code), (words));                     \
      ++failures;                                                                       \
    }                                                                                   \
  } while (0)

enum { N = 12, H = 2 };

/* A cell's value: its global coordinates (wrapped), unique per cell. */
static double value_of(int gx, int gy, int gz) {
  gx = (gx + N) % N;
  gy = (gy + N) % N;
  gz = (gz + N) % N;
  return gx + 100.0 * gy + 10000.0 * gz;
}

static void exchange_checked(halox_decomposition d, const char* transport,
                             const char* algorithm) {
  int extent[3], offset[3];
  const halox_halo_widths halo = {.lo = {H, H, H}, .hi = {H, H, H}};
  EXPECT(halox_subdomain(d, extent, offset) == HALOX_SUCCESS);
  int ax = extent[0] + 2 * H, ay = extent[1] + 2 * H, az = extent[2] + 2 * H;
  double* u = calloc((size_t)ax * ay * az, sizeof(double));
  for (int z = 0; z < extent[2]; ++z)
    for (int y = 0; y < extent[1]; ++y)
      for (int x = 0; x < extent[0]; ++x)
        u[(x + H) + ax * ((y + H) + ay * (z + H))] =
            value_of(offset[0] + x, offset[1] + y, offset[2] + z);
  halox_options options = HALOX_OPTIONS_INIT;
  options.transport = transport;
  options.algorithm = algorithm;
  options.grouping = "sequence";
  halox_exchange ex = NULL;
  double* fields[1] = {u};
  int status = halox_exchange_create_double(&ex, d, extent, &halo, 1, fields, &options);
  EXPECT(status == HALOX_SUCCESS);
  if (status != HALOX_SUCCESS) {
    fprintf(stderr, "rank %d: %s\n", rank, halox_last_error());
    free(u);
    return;
  }
  EXPECT(halox_start(ex) == HALOX_SUCCESS);
  EXPECT(halox_wait(ex) == HALOX_SUCCESS);
  EXPECT(halox_exchange_halos(ex) == HALOX_SUCCESS);
  int wrong = 0;
  for (int z = -H; z < extent[2] + H; ++z)
    for (int y = -H; y < extent[1] + H; ++y)
      for (int x = -H; x < extent[0] + H; ++x)
        wrong += u[(x + H) + ax * ((y + H) + ay * (z + H))] !=
                 value_of(offset[0] + x, offset[1] + y, offset[2] + z);
  EXPECT(wrong == 0);
  char name[64];
  EXPECT(halox_exchange_transport(ex, name, sizeof name) == HALOX_SUCCESS);
  EXPECT(strcmp(name, transport) == 0);
  EXPECT(halox_exchange_algorithm(ex, name, sizeof name) == HALOX_SUCCESS);
  EXPECT(strcmp(name, algorithm) == 0);
  EXPECT(halox_exchange_grouping(ex, name, sizeof name) == HALOX_SUCCESS);
  EXPECT(strcmp(name, "sequence") == 0);
  size_t sent = 0, received = 0, copied = 0;
  EXPECT(halox_exchange_bytes(ex, &sent, &received, &copied) == HALOX_SUCCESS);
  EXPECT(sent + copied > 0 && received + copied > 0);
  EXPECT(halox_exchange_destroy(&ex) == HALOX_SUCCESS && ex == NULL);
  free(u);
}

/* Node-shared fields exchanged by shm in place; the per-stage profile. */
static void shared_fields_checked(halox_decomposition d) {
  int extent[3], offset[3];
  const halox_halo_widths halo = {.lo = {1, 1, 1}, .hi = {1, 1, 1}};
  EXPECT(halox_subdomain(d, extent, offset) == HALOX_SUCCESS);
  halox_shared_fields fields = NULL;
  int status = halox_shared_fields_create(&fields, d, NULL, &halo, HALOX_DOUBLE, 2);
  EXPECT(status == HALOX_SUCCESS);
  if (status != HALOX_SUCCESS) {
    fprintf(stderr, "rank %d: %s\n", rank, halox_last_error());
    return;
  }
  int ax = extent[0] + 2, ay = extent[1] + 2, az = extent[2] + 2;
  double* u[2] = {NULL, NULL};
  for (int f = 0; f < 2; ++f) {
    EXPECT(halox_shared_fields_data(fields, f, (void**)&u[f]) == HALOX_SUCCESS);
    for (int z = 0; z < az; ++z)
      for (int y = 0; y < ay; ++y)
        for (int x = 0; x < ax; ++x) {
          int inside = x > 0 && y > 0 && z > 0 && x <= extent[0] && y <= extent[1] && z <= extent[2];
          u[f][x + ax * (y + ay * z)] =
              inside ? value_of(offset[0] + x - 1, offset[1] + y - 1, offset[2] + z - 1) + f : -1;
        }
  }
  EXPECT_ERROR(halox_shared_fields_data(fields, 2, (void**)&u[0]), HALOX_ERROR_USAGE, "field 2");
  halox_options options = HALOX_OPTIONS_INIT;
  options.transport = "shm";
  halox_exchange ex = NULL;
  /* Arrays of node-shared fields are found there: shm reads them in place. */
  EXPECT(halox_exchange_create_double(&ex, d, NULL, &halo, 2, u, &options) == HALOX_SUCCESS);
  EXPECT(halox_shared_fields_destroy(&fields) == HALOX_SUCCESS); /* the exchange keeps the memory */
  char path[64];
  EXPECT(halox_exchange_transport_path(ex, path, sizeof path) == HALOX_SUCCESS);
  EXPECT(strncmp(path, "shm+", 4) == 0); /* not shm(outbox) */
  EXPECT(halox_exchange_record_stages(ex, 1) == HALOX_SUCCESS);
  EXPECT(halox_exchange_halos(ex) == HALOX_SUCCESS);
  int wrong = 0;
  for (int f = 0; f < 2; ++f)
    for (int z = 0; z < az; ++z)
      for (int y = 0; y < ay; ++y)
        for (int x = 0; x < ax; ++x)
          wrong += u[f][x + ax * (y + ay * z)] !=
                   value_of(offset[0] + x - 1, offset[1] + y - 1, offset[2] + z - 1) + f;
  EXPECT(wrong == 0);
  double times[5] = {-1, -1, -1, -1, -1};
  unsigned long long recorded = 0;
  EXPECT(halox_exchange_stage_profile(ex, 0, times, &recorded) == HALOX_SUCCESS);
  EXPECT(recorded == 1 && times[0] >= 0 && times[4] >= 0);
  EXPECT_ERROR(halox_exchange_stage_profile(ex, 99, times, &recorded), HALOX_ERROR_USAGE,
               "stage 99");
  EXPECT(halox_exchange_destroy(&ex) == HALOX_SUCCESS);
}

static void bad_calls(halox_decomposition d) {
  halox_exchange ex = NULL;
  int extent[3], offset[3];
  const halox_halo_widths halo = {.lo = {1, 1, 1}, .hi = {1, 1, 1}};
  halox_subdomain(d, extent, offset);
  size_t cells = (size_t)(extent[0] + 2) * (extent[1] + 2) * (extent[2] + 2);
  double* u = calloc(cells, sizeof(double));
  float* f = calloc(cells, sizeof(float));
  halox_options options = HALOX_OPTIONS_INIT;

  /* NULL handles */
  EXPECT_ERROR(halox_start(NULL), HALOX_ERROR_USAGE, "handle is NULL");
  EXPECT_ERROR(halox_wait(NULL), HALOX_ERROR_USAGE, "handle is NULL");
  EXPECT_ERROR(halox_subdomain(NULL, extent, offset), HALOX_ERROR_USAGE, "NULL");
  EXPECT_ERROR(halox_exchange_destroy(&ex), HALOX_ERROR_USAGE, "NULL");
  EXPECT_ERROR(halox_exchange_create_double(&ex, NULL, extent, &halo, 1, &u, NULL),
               HALOX_ERROR_USAGE, "decomposition handle is NULL");
  /* unknown transport, unknown algorithm: on every rank, no hang */
  options.transport = "no-such-transport";
  EXPECT_ERROR(halox_exchange_create_double(&ex, d, extent, &halo, 1, &u, &options),
               HALOX_ERROR_USAGE, "no-such-transport");
  EXPECT(ex == NULL);
  options.transport = NULL;
  options.algorithm = "diagonal";
  EXPECT_ERROR(halox_exchange_create_double(&ex, d, extent, &halo, 1, &u, &options),
               HALOX_ERROR_USAGE, "diagonal");
  options.algorithm = NULL;
  /* mixed types */
  halox_array mixed[2] = {{u, HALOX_DOUBLE, {0, 0, 0}}, {f, HALOX_FLOAT, {0, 0, 0}}};
  EXPECT_ERROR(halox_exchange_create(&ex, d, extent, &halo, 2, mixed, NULL), HALOX_ERROR_USAGE,
               "differ in type");
  /* a shape that does not match, on rank 0 only: every rank hears of it */
  halox_array shaped = {u, HALOX_DOUBLE, {extent[0] + 2, extent[1] + 2, extent[2] + 2}};
  if (rank == 0) shaped.allocated[0] += 1;
  EXPECT_ERROR(halox_exchange_create(&ex, d, extent, &halo, 1, &shaped, NULL), HALOX_ERROR_USAGE,
               "rank 0: the 1st field is");
  /* a halo wider than the sub-domain */
  const halox_halo_widths wide = {.lo = {extent[0] + 1, 1, 1}, .hi = {1, 1, 1}};
  EXPECT_ERROR(halox_exchange_create_double(&ex, d, extent, &wide, 1, &u, NULL), HALOX_ERROR_USAGE,
               "halo");
  /* a negative width, named by its member */
  const halox_halo_widths negative = {.lo = {1, 1, 1}, .hi = {1, -1, 1}};
  EXPECT_ERROR(halox_exchange_create_double(&ex, d, extent, &negative, 1, &u, NULL),
               HALOX_ERROR_USAGE, ".hi = {1, -1, 1}");
  EXPECT_ERROR(halox_exchange_create_double(&ex, d, extent, NULL, 1, &u, NULL), HALOX_ERROR_USAGE,
               "halo is NULL");
  /* no fields */
  EXPECT_ERROR(halox_exchange_create_double(&ex, d, extent, &halo, 0, &u, NULL), HALOX_ERROR_USAGE,
               "no fields");
  /* order of start and wait, destroy twice, a destroyed handle */
  EXPECT(halox_exchange_create_double(&ex, d, extent, &halo, 1, &u, NULL) == HALOX_SUCCESS);
  EXPECT_ERROR(halox_wait(ex), HALOX_ERROR_STATE, "not started");
  EXPECT(halox_start(ex) == HALOX_SUCCESS);
  EXPECT_ERROR(halox_start(ex), HALOX_ERROR_STATE, "in flight");
  EXPECT(halox_wait(ex) == HALOX_SUCCESS);
  char small[4];
  EXPECT(halox_exchange_transport(ex, small, sizeof small) == HALOX_SUCCESS);
  EXPECT(strcmp(small, "mpi") == 0); /* "mpi-p2p", cut short and terminated */
  halox_exchange copy = ex;
  EXPECT(halox_exchange_destroy(&ex) == HALOX_SUCCESS);
  EXPECT_ERROR(halox_exchange_destroy(&ex), HALOX_ERROR_USAGE, "NULL");
  EXPECT_ERROR(halox_exchange_destroy(&copy), HALOX_ERROR_USAGE, "not a live one");
  EXPECT_ERROR(halox_start(copy), HALOX_ERROR_USAGE, "not a live one");
  /* a decomposition handle where an exchange is expected */
  EXPECT_ERROR(halox_start((halox_exchange)(void*)d), HALOX_ERROR_USAGE, "wrong kind of handle");
  free(u);
  free(f);
}


/* Widths by name, lo != hi along x and y: each halo holds the points C++'s halo_widths puts
 * there (lo below the interior, hi above), through a field record and the grid form alike.
 * Widths swapped, or read as a six-entry list, would move them: the values tell. */
static void asymmetric_halo_checked(halox_decomposition d) {
  const halox_halo_widths halo = {.lo = {1, 2, 1}, .hi = {2, 1, 1}};
  int extent[3], offset[3], a[3];
  EXPECT(halox_subdomain(d, extent, offset) == HALOX_SUCCESS);
  for (int k = 0; k < 3; ++k) a[k] = halo.lo[k] + extent[k] + halo.hi[k];
  const size_t points = (size_t)a[0] * a[1] * a[2];
  double* u[2] = {calloc(points, sizeof(double)), calloc(points, sizeof(double))};
  const halox_field field = {.data = u[0], .type = HALOX_DOUBLE, .location = HALOX_CELL,
                             .halo = halo, .allocated = {a[0], a[1], a[2]}, .name = "u"};
  halox_exchange ex[2] = {NULL, NULL};
  EXPECT(halox_exchange_create_fields(&ex[0], d, NULL, 1, &field, NULL) == HALOX_SUCCESS);
  EXPECT(halox_exchange_create_double(&ex[1], d, NULL, &halo, 1, &u[1], NULL) == HALOX_SUCCESS);
  for (int f = 0; f < 2 && ex[f] != NULL; ++f) {
    for (int z = -halo.lo[2]; z < extent[2] + halo.hi[2]; ++z)
      for (int y = -halo.lo[1]; y < extent[1] + halo.hi[1]; ++y)
        for (int x = -halo.lo[0]; x < extent[0] + halo.hi[0]; ++x) {
          const int inside = x >= 0 && y >= 0 && z >= 0 && x < extent[0] && y < extent[1] &&
                             z < extent[2];
          u[f][(x + halo.lo[0]) + a[0] * ((y + halo.lo[1]) + a[1] * (z + halo.lo[2]))] =
              inside ? value_of(offset[0] + x, offset[1] + y, offset[2] + z) : -1;
        }
    EXPECT(halox_exchange_halos(ex[f]) == HALOX_SUCCESS);
    int wrong = 0;
    for (int z = -halo.lo[2]; z < extent[2] + halo.hi[2]; ++z)
      for (int y = -halo.lo[1]; y < extent[1] + halo.hi[1]; ++y)
        for (int x = -halo.lo[0]; x < extent[0] + halo.hi[0]; ++x)
          wrong += u[f][(x + halo.lo[0]) + a[0] * ((y + halo.lo[1]) + a[1] * (z + halo.lo[2]))] !=
                   value_of(offset[0] + x, offset[1] + y, offset[2] + z);
    EXPECT(wrong == 0);
    EXPECT(halox_exchange_destroy(&ex[f]) == HALOX_SUCCESS);
  }
  /* The record's extents are checked against lo + interior + hi, the message in that order. */
  halox_field short_x = field;
  short_x.allocated[0] -= 1;
  EXPECT_ERROR(halox_exchange_create_fields(&ex[0], d, NULL, 1, &short_x, NULL),
               HALOX_ERROR_USAGE, "plus halos 1+2, 2+1, 1+1");
  free(u[0]);
  free(u[1]);
}

/* ---- Fields of their own locations: a cell field (double) and a vertex field
 * (float, CloverLeaf's extents), on an open grid numbered x fastest. */
enum { G = 8 };

static double point_value(int field, const int g[3]) {
  return 1 + field * 1000000.0 + g[0] + 100.0 * g[1] + 10000.0 * g[2];
}

/* Checks every point of one field after a call at `depth` (0: whole halo);
 * unfilled halo points hold -1. Returns the number of wrong points. */
static int located_wrong(const void* data, int is_float, int field, const int stag[3],
                         const int points[3], const int lo[3], const int hi[3],
                         const int offset[3], const int global_points[3], int depth) {
  int wrong = 0, a[3];
  for (int k = 0; k < 3; ++k) a[k] = lo[k] + points[k] + hi[k];
  for (int z = -lo[2]; z < points[2] + hi[2]; ++z)
    for (int y = -lo[1]; y < points[1] + hi[1]; ++y)
      for (int x = -lo[0]; x < points[0] + hi[0]; ++x) {
        int p[3] = {x, y, z}, g[3], inside = 1, filled = 1;
        for (int k = 0; k < 3; ++k) {
          int flo = depth ? (lo[k] < depth ? lo[k] : depth) : lo[k];
          int fhi = depth ? (hi[k] < depth + stag[k] ? hi[k] : depth + stag[k]) : hi[k];
          g[k] = offset[k] + p[k];
          if (p[k] < 0 || p[k] >= points[k]) inside = 0;
          if (p[k] < -flo || p[k] >= points[k] + fhi) filled = 0;
          if (g[k] < 0 || g[k] >= global_points[k]) filled = 0; /* open boundary */
        }
        double expected = inside || filled ? point_value(field, g) : -1;
        size_t i = (size_t)(x + lo[0]) + (size_t)a[0] * ((size_t)(y + lo[1]) + (size_t)a[1] * (size_t)(z + lo[2]));
        double found = is_float ? ((const float*)data)[i] : ((const double*)data)[i];
        wrong += found != expected;
      }
  return wrong;
}

static void located_fill(void* data, int is_float, int field, const int points[3], const int lo[3],
                         const int hi[3], const int offset[3]) {
  int a[3];
  for (int k = 0; k < 3; ++k) a[k] = lo[k] + points[k] + hi[k];
  for (int z = -lo[2]; z < points[2] + hi[2]; ++z)
    for (int y = -lo[1]; y < points[1] + hi[1]; ++y)
      for (int x = -lo[0]; x < points[0] + hi[0]; ++x) {
        int p[3] = {x, y, z}, g[3], inside = 1;
        for (int k = 0; k < 3; ++k) {
          g[k] = offset[k] + p[k];
          if (p[k] < 0 || p[k] >= points[k]) inside = 0;
        }
        double v = inside ? point_value(field, g) : -1;
        size_t i = (size_t)(x + lo[0]) + (size_t)a[0] * ((size_t)(y + lo[1]) + (size_t)a[1] * (size_t)(z + lo[2]));
        if (is_float)
          ((float*)data)[i] = (float)v;
        else
          ((double*)data)[i] = v;
      }
}

static void located_checked(int size) {
  int dims[3] = {0, 0, 0}, periodic[3] = {0, 0, 0}, global[3] = {G, G, G};
  MPI_Dims_create(size, 3, dims);
  halox_decomposition d = NULL;
  /* The code's own sub-domain: x fastest, G cells split evenly, the remainder on the first ranks. */
  int my_coords[3] = {rank % dims[0], rank / dims[0] % dims[1], rank / (dims[0] * dims[1])};
  int code_offset[3], code_extent[3];
  for (int k = 0; k < 3; ++k) {
    int base = G / dims[k], extra = G % dims[k];
    code_offset[k] = my_coords[k] * base + (my_coords[k] < extra ? my_coords[k] : extra);
    code_extent[k] = base + (my_coords[k] < extra ? 1 : 0);
  }
  /* without the sub-domain a wrong order would pass unseen */
  EXPECT_ERROR(halox_decomposition_adopt(&d, MPI_COMM_WORLD, global, dims, periodic, "XYZ", NULL,
                                         code_extent),
               HALOX_ERROR_USAGE, "halox_decomposition_adopt: offset or extent is NULL");
  EXPECT(halox_decomposition_adopt(&d, MPI_COMM_WORLD, global, dims, periodic, "XYZ", code_offset,
                                   code_extent) == HALOX_SUCCESS);
  int extent[3], offset[3], grid_dims[3], coords[3];
  EXPECT(halox_subdomain(d, extent, offset) == HALOX_SUCCESS);
  for (int k = 0; k < 3; ++k) EXPECT(extent[k] == code_extent[k] && offset[k] == code_offset[k]);
  EXPECT(halox_decomposition_grid(d, grid_dims, coords) == HALOX_SUCCESS);
  /* x fastest: rank = x + dims_x * (y + dims_y * z) */
  EXPECT(rank == coords[0] + grid_dims[0] * (coords[1] + grid_dims[1] * coords[2]));
  const int cell_stag[3] = {0, 0, 0}, node_stag[3] = {1, 1, 1};
  const int cell_lo[3] = {2, 2, 2}, cell_hi[3] = {2, 2, 2}, node_lo[3] = {2, 2, 2},
            node_hi[3] = {3, 3, 3};
  int node_points[3], node_global[3], cell_alloc = 1, node_alloc = 1;
  for (int k = 0; k < 3; ++k) {
    node_points[k] = extent[k] + (coords[k] == grid_dims[k] - 1 ? 1 : 0);
    node_global[k] = G + 1;
    cell_alloc *= extent[k] + 4;
    node_alloc *= node_points[k] + 5;
  }
  /* The library's statement of the geometry agrees with the one above (open axes: the last
   * rank holds the last node), x faces are staggered along x alone. */
  int asked[3], x_faces[3];
  EXPECT(halox_field_points(d, HALOX_VERTEX, asked) == HALOX_SUCCESS);
  EXPECT(halox_field_points(d, HALOX_X_FACE, x_faces) == HALOX_SUCCESS);
  for (int k = 0; k < 3; ++k) {
    EXPECT(asked[k] == node_points[k]);
    EXPECT(x_faces[k] == (k == 0 ? node_points[k] : extent[k]));
  }
  EXPECT_ERROR(halox_field_points(d, (halox_location)8, asked), HALOX_ERROR_USAGE,
               "halox_field_points: location 8");
  double* cell = calloc((size_t)cell_alloc, sizeof(double));
  float* node = calloc((size_t)node_alloc, sizeof(float));
  halox_field fields[2] = {
      {cell, HALOX_DOUBLE, HALOX_CELL, {.lo = {2, 2, 2}, .hi = {2, 2, 2}},
       {extent[0] + 4, extent[1] + 4, extent[2] + 4}, "density", HALOX_SHARED_FROM_OWNER},
      {node, HALOX_FLOAT, HALOX_VERTEX, {.lo = {2, 2, 2}, .hi = {3, 3, 3}},
       {node_points[0] + 5, node_points[1] + 5, node_points[2] + 5}, "xvel",
       HALOX_SHARED_FROM_OWNER}};
  halox_options options = HALOX_OPTIONS_INIT;
  options.algorithm = "staged";
  halox_exchange ex = NULL;
  EXPECT(halox_exchange_create_fields(&ex, d, NULL, 2, fields, &options) == HALOX_SUCCESS);
  located_fill(cell, 0, 0, extent, cell_lo, cell_hi, offset);
  located_fill(node, 1, 1, node_points, node_lo, node_hi, offset);
  EXPECT(halox_exchange_halos(ex) == HALOX_SUCCESS);
  int global_cells[3] = {G, G, G};
  EXPECT(located_wrong(cell, 0, 0, cell_stag, extent, cell_lo, cell_hi, offset, global_cells, 0) == 0);
  EXPECT(located_wrong(node, 1, 1, node_stag, node_points, node_lo, node_hi, offset, node_global, 0) == 0);
  /* the vertex field alone, at depth 1: the cell field's halo stays as it was */
  located_fill(cell, 0, 0, extent, cell_lo, cell_hi, offset);
  located_fill(node, 1, 1, node_points, node_lo, node_hi, offset);
  int xvel = -1, one[1] = {0};
  EXPECT(halox_field_index(ex, "xvel", &xvel) == HALOX_SUCCESS && xvel == 1);
  one[0] = xvel;
  EXPECT(halox_exchange_subset(ex, 1, one, 1) == HALOX_SUCCESS);
  EXPECT(located_wrong(node, 1, 1, node_stag, node_points, node_lo, node_hi, offset, node_global, 1) == 0);
  double* untouched = calloc((size_t)cell_alloc, sizeof(double));
  located_fill(untouched, 0, 0, extent, cell_lo, cell_hi, offset);
  EXPECT(memcmp(untouched, cell, (size_t)cell_alloc * sizeof(double)) == 0);
  free(untouched);
  /* bad calls: each a code and a message, the exchange still usable */
  int bad[2] = {0, 7};
  EXPECT_ERROR(halox_exchange_subset(ex, 2, bad, 1), HALOX_ERROR_USAGE, "field index 7");
  EXPECT_ERROR(halox_exchange_subset(ex, 1, one, 5), HALOX_ERROR_USAGE, "deeper than the halo");
  EXPECT_ERROR(halox_field_index(ex, "pressure", &xvel), HALOX_ERROR_USAGE, "no field named");
  EXPECT(halox_exchange_destroy(&ex) == HALOX_SUCCESS);
  /* a vertex field with a cell field's extents */
  fields[1].allocated[0] -= 1;
  EXPECT_ERROR(halox_exchange_create_fields(&ex, d, NULL, 2, fields, &options), HALOX_ERROR_USAGE,
               "points");
  fields[1].allocated[0] += 1;
  fields[1].location = (halox_location)11;
  EXPECT_ERROR(halox_exchange_create_fields(&ex, d, NULL, 2, fields, &options), HALOX_ERROR_USAGE,
               "not a halox_location");
  EXPECT(halox_decomposition_destroy(&d) == HALOX_SUCCESS);
  /* sub-domains that do not tile the grid as the ranks are placed: the
   * halves swapped along the split dimension */
  if (size == 2) {
    int split = dims[0] == 2 ? 0 : dims[1] == 2 ? 1 : 2;
    int my_offset[3] = {0, 0, 0}, my_extent[3] = {G, G, G};
    my_extent[split] = G / 2;
    my_offset[split] = rank == 0 ? G / 2 : 0;
    EXPECT_ERROR(halox_decomposition_adopt(&d, MPI_COMM_WORLD, global, dims, periodic, "XYZ",
                                           my_offset, my_extent),
                 HALOX_ERROR_USAGE, "do not tile");
  }
  free(cell);
  free(node);
}

/* Along one axis, the copies of local point i of a periodic grid of n points
 * per rank (at least 2): a cell field with halo 1 each side, or a vertex field
 * with halo 0 below and 1 above (the shared face held by the rank below). */
static int copies(int i, int n, int node) {
  if (node) return i == 0 || i == n ? 2 : 1;
  if (i == -1 || i == n) return 2;
  return 1 + (i == 0) + (i == n - 1);
}

/* Reverse calls: ones summed (every point's count of copies), and max. */
static void reverse_checked(void) {
  int global[3] = {N, N, N}, periodic[3] = {1, 1, 1};
  halox_decomposition d = NULL;
  EXPECT(halox_decomposition_create(&d, MPI_COMM_WORLD, global, NULL, periodic) == HALOX_SUCCESS);
  int n[3], offset[3];
  EXPECT(halox_subdomain(d, n, offset) == HALOX_SUCCESS);
  const int a[3] = {n[0] + 2, n[1] + 2, n[2] + 2}, b[3] = {n[0] + 1, n[1] + 1, n[2] + 1};
  double* cell = calloc((size_t)(a[0] * a[1] * a[2]), sizeof(double));
  float* node = calloc((size_t)(b[0] * b[1] * b[2]), sizeof(float));
  halox_field fields[2] = {{cell, HALOX_DOUBLE, HALOX_CELL, {.lo = {1, 1, 1}, .hi = {1, 1, 1}},
                            {a[0], a[1], a[2]}, "rho", HALOX_SHARED_FROM_OWNER},
                           {node, HALOX_FLOAT, HALOX_VERTEX, {.lo = {0, 0, 0}, .hi = {1, 1, 1}},
                            {b[0], b[1], b[2]}, "fx", HALOX_SHARED_FROM_OWNER}};
  halox_options options = HALOX_OPTIONS_INIT;
  halox_exchange ex = NULL;
  EXPECT(halox_exchange_create_fields(&ex, d, NULL, 2, fields, &options) == HALOX_SUCCESS);
  for (int every = 0; every <= 1; ++every) {
    for (int i = 0; i < a[0] * a[1] * a[2]; ++i) cell[i] = 1;
    for (int i = 0; i < b[0] * b[1] * b[2]; ++i) node[i] = 1;
    EXPECT(halox_reverse(ex, HALOX_SUM, 0, NULL, 0, every) == HALOX_SUCCESS);
    int wrong = 0;
    for (int z = -1; z <= n[2]; ++z)
      for (int y = -1; y <= n[1]; ++y)
        for (int x = -1; x <= n[0]; ++x) {
          const int p[3] = {x, y, z};
          int inside = 1, halo_node = 0, count = 1, node_count = 1;
          for (int k = 0; k < 3; ++k) {
            inside = inside && p[k] >= 0 && p[k] < n[k];
            halo_node = halo_node || p[k] < 0;
            count *= copies(p[k], n[k], 0);
            node_count *= copies(p[k], n[k], 1);
          }
          const double c = cell[(x + 1) + a[0] * ((y + 1) + a[1] * (z + 1))];
          if (c != (inside || every ? count : 1)) ++wrong;
          if (!halo_node) {
            int owned = 1;
            for (int k = 0; k < 3; ++k) owned = owned && p[k] < n[k];
            const float v = node[x + b[0] * (y + b[1] * z)];
            if (v != (float)(owned || every ? node_count : 1)) ++wrong;
          }
        }
    EXPECT(wrong == 0);
  }
  /* max of the rho field alone, split phase: the halos' 7 reach the owners' edges */
  for (int i = 0; i < a[0] * a[1] * a[2]; ++i) cell[i] = 7;
  for (int z = 0; z < n[2]; ++z)
    for (int y = 0; y < n[1]; ++y)
      for (int x = 0; x < n[0]; ++x) cell[(x + 1) + a[0] * ((y + 1) + a[1] * (z + 1))] = 1;
  const int rho[1] = {0};
  EXPECT(halox_reverse_start(ex, HALOX_MAX, 1, rho, 1, 0) == HALOX_SUCCESS);
  EXPECT(halox_reverse_wait(ex) == HALOX_SUCCESS);
  int wrong = 0;
  for (int z = 0; z < n[2]; ++z)
    for (int y = 0; y < n[1]; ++y)
      for (int x = 0; x < n[0]; ++x) {
        const int edge = x == 0 || y == 0 || z == 0 || x == n[0] - 1 || y == n[1] - 1 || z == n[2] - 1;
        if (cell[(x + 1) + a[0] * ((y + 1) + a[1] * (z + 1))] != (edge ? 7 : 1)) ++wrong;
      }
  EXPECT(wrong == 0);
  EXPECT_ERROR(halox_reverse(ex, (halox_reduction)9, 0, NULL, 0, 0), HALOX_ERROR_USAGE,
               "not HALOX_SUM, HALOX_MIN or HALOX_MAX");
  EXPECT_ERROR(halox_reverse(ex, HALOX_SUM, 1, rho, 2, 0), HALOX_ERROR_USAGE, "deeper than the halo");
  EXPECT_ERROR(halox_reverse(ex, HALOX_SUM, 0, rho, 0, 0), HALOX_ERROR_USAGE, "count 0");
  EXPECT_ERROR(halox_reverse_wait(ex), HALOX_ERROR_STATE, "no reverse call is in flight");
  /* the vertex field moves: the next reverse call sums the new memory */
  float* moved = calloc((size_t)(b[0] * b[1] * b[2]), sizeof(float));
  for (int i = 0; i < b[0] * b[1] * b[2]; ++i) moved[i] = 1, node[i] = -1000;
  EXPECT(halox_exchange_set_field_data(ex, 1, moved) == HALOX_SUCCESS);
  EXPECT(halox_reverse(ex, HALOX_SUM, 0, NULL, 0, 1) == HALOX_SUCCESS);
  int moved_wrong = 0;
  for (int i = 0; i < b[0] * b[1] * b[2]; ++i) moved_wrong += moved[i] < 1 || node[i] != -1000;
  EXPECT(moved_wrong == 0);
  EXPECT_ERROR(halox_exchange_set_field_data(ex, 1, NULL), HALOX_ERROR_USAGE, "null");
  free(moved);
  /* "auto" for the algorithm as for the transport: measured when created */
  halox_exchange measured = NULL;
  options.algorithm = "auto";
  fields[1].data = node;
  EXPECT(halox_exchange_create_fields(&measured, d, NULL, 2, fields, &options) == HALOX_SUCCESS);
  char chosen[32] = "";
  EXPECT(halox_exchange_algorithm(measured, chosen, sizeof chosen) == HALOX_SUCCESS);
  EXPECT(strcmp(chosen, "standard") == 0 || strcmp(chosen, "staged") == 0);
  EXPECT(halox_reverse(measured, HALOX_SUM, 0, NULL, 0, 0) == HALOX_SUCCESS);
  EXPECT(halox_exchange_destroy(&measured) == HALOX_SUCCESS);
  EXPECT(halox_exchange_destroy(&ex) == HALOX_SUCCESS);
  EXPECT(halox_decomposition_destroy(&d) == HALOX_SUCCESS);
  free(cell);
  free(node);
}

/* A node field whose shared faces are kept (HALOX_SHARED_KEPT): every point
 * a rank holds, the shared face above included, starts at its rank + 1; after
 * a call the faces shared with the rank above still hold this rank's value and
 * only the points beyond them (and the halo below) hold a neighbour's. */
static void kept_shared_faces_checked(void) {
  int global[3] = {N, N, N}, periodic[3] = {1, 1, 1};
  halox_decomposition d = NULL;
  EXPECT(halox_decomposition_create(&d, MPI_COMM_WORLD, global, NULL, periodic) == HALOX_SUCCESS);
  int n[3], offset[3];
  EXPECT(halox_subdomain(d, n, offset) == HALOX_SUCCESS);
  const int a[3] = {n[0] + 3, n[1] + 3, n[2] + 3}; /* halo 1 below, 2 above */
  double* node = malloc(sizeof(double) * (size_t)(a[0] * a[1] * a[2]));
  for (int i = 0; i < a[0] * a[1] * a[2]; ++i) node[i] = rank + 1;
  halox_field spec = {node, HALOX_DOUBLE, HALOX_VERTEX, {.lo = {1, 1, 1}, .hi = {2, 2, 2}},
                      {a[0], a[1], a[2]}, "xvel", HALOX_SHARED_KEPT};
  halox_options options = HALOX_OPTIONS_INIT;
  halox_exchange ex = NULL;
  EXPECT(halox_exchange_create_fields(&ex, d, NULL, 1, &spec, &options) == HALOX_SUCCESS);
  EXPECT(halox_exchange_halos(ex) == HALOX_SUCCESS);
  int own_faces_kept = 1, beyond_moved = 1;
  /* Along x through the middle of y and z: the face at n (shared with the rank above) and the
   * point beyond it at n + 1, which the rank above sends from its point 1. */
  const int y = 1 + n[1] / 2, z = 1 + n[2] / 2;
  const double face = node[(size_t)(n[0] + 1) + (size_t)a[0] * ((size_t)y + (size_t)a[1] * (size_t)z)];
  const double beyond = node[(size_t)(n[0] + 2) + (size_t)a[0] * ((size_t)y + (size_t)a[1] * (size_t)z)];
  if (face != rank + 1) own_faces_kept = 0;
  int dims[3], coords[3];
  EXPECT(halox_decomposition_grid(d, dims, coords) == HALOX_SUCCESS);
  if (dims[0] > 1 && beyond == rank + 1) beyond_moved = 0;
  EXPECT(own_faces_kept);
  EXPECT(beyond_moved);
  /* A call with an algorithm of its own: faces leaves the corners, standard fills them. */
  const int first = 0;
  const size_t corner = (size_t)(n[0] + 2) + (size_t)a[0] * ((size_t)(n[1] + 2) + (size_t)a[1] * (size_t)z);
  for (int i = 0; i < a[0] * a[1] * a[2]; ++i) node[i] = rank + 1;
  EXPECT(halox_start_subset_algorithm(ex, 1, &first, 0, "faces") == HALOX_SUCCESS);
  EXPECT(halox_wait(ex) == HALOX_SUCCESS);
  EXPECT(node[corner] == rank + 1);
  EXPECT(halox_start_subset_algorithm(ex, 1, &first, 0, NULL) == HALOX_SUCCESS);
  EXPECT(halox_wait(ex) == HALOX_SUCCESS);
  if (dims[0] > 1) EXPECT(node[corner] != rank + 1);
  EXPECT_ERROR(halox_start_subset_algorithm(ex, 1, &first, 0, "diagonal"), HALOX_ERROR_USAGE,
               "halox_start_subset_algorithm: unknown algorithm 'diagonal'");
  /* A kept field needs a halo above to hold its copy of the face. */
  halox_field no_room = spec;
  no_room.halo.hi[0] = 0;
  no_room.allocated[0] = n[0] + 1;
  halox_exchange bad = NULL;
  if (dims[0] > 1)
    EXPECT_ERROR(halox_exchange_create_fields(&bad, d, NULL, 1, &no_room, &options),
                 HALOX_ERROR_USAGE, "keeps its shared points");
  halox_field unknown = spec;
  unknown.shared = (halox_shared_points)7;
  EXPECT_ERROR(halox_exchange_create_fields(&bad, d, NULL, 1, &unknown, &options),
               HALOX_ERROR_USAGE, "HALOX_SHARED_KEPT");
  EXPECT(halox_exchange_destroy(&ex) == HALOX_SUCCESS);
  EXPECT(halox_decomposition_destroy(&d) == HALOX_SUCCESS);
  free(node);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  halox_decomposition d = NULL;
  int global[3] = {N, N, N};
  EXPECT(halox_decomposition_create(&d, MPI_COMM_WORLD, global, NULL, NULL) == HALOX_SUCCESS);
  int size = 0;
  EXPECT(halox_decomposition_rank(d, NULL, &size) == HALOX_SUCCESS);
  char transports[256];
  EXPECT(halox_available_transports(d, transports, sizeof transports) == HALOX_SUCCESS);
  exchange_checked(d, "mpi-p2p", "standard");
  exchange_checked(d, "mpi-p2p", "staged");
  if (strstr(transports, "shm") != NULL) {
    exchange_checked(d, "shm", "staged");
    shared_fields_checked(d);
  }
  bad_calls(d);
  asymmetric_halo_checked(d);
  located_checked(size);
  reverse_checked();
  kept_shared_faces_checked();
  /* the Fortran communicator form */
  halox_decomposition df = NULL;
  EXPECT(halox_decomposition_create_f(&df, MPI_Comm_c2f(MPI_COMM_WORLD), global, NULL, NULL) ==
         HALOX_SUCCESS);
  EXPECT(halox_decomposition_destroy(&df) == HALOX_SUCCESS && df == NULL);
  EXPECT_ERROR(halox_decomposition_destroy(&df), HALOX_ERROR_USAGE, "NULL");
  EXPECT(halox_decomposition_destroy(&d) == HALOX_SUCCESS);
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("capi_test: %d ranks, %d failures (%s)\n", size, all, transports);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
