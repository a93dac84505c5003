/* A C stencil code using halox (the C API, halox/halox.h): explicit 7-point
 * heat diffusion on a periodic global grid, one halo exchange per step.
 *
 *   mpiexec -n 4 halox-example-heat3d-c [global N] [steps] [transport]
 *
 * Prints a checksum of the final field, gathered and summed on rank 0 in
 * one order: the same digits on any number of ranks. */
#include <halox/halox.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                   \
  do {                                                                \
    if ((call) != HALOX_SUCCESS) {                                    \
      fprintf(stderr, "heat3d: %s\n", halox_last_error());            \
      MPI_Abort(MPI_COMM_WORLD, 1);                                   \
    }                                                                 \
  } while (0)

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int n = argc > 1 ? atoi(argv[1]) : 24, steps = argc > 2 ? atoi(argv[2]) : 20, rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int global[3] = {n, n, n}, e[3], o[3];
  halox_decomposition decomp = NULL;
  CHECK(halox_decomposition_create(&decomp, MPI_COMM_WORLD, global, NULL, NULL));
  CHECK(halox_subdomain(decomp, e, o));
  /* Cell (x, y, z) of the interior, halo cells at -1 and e[d]. */
  const int ax = e[0] + 2, ay = e[1] + 2;
#define AT(f, x, y, z) (f)[((x) + 1) + ax * (((y) + 1) + ay * ((z) + 1))]
  size_t cells = (size_t)ax * ay * (e[2] + 2);
  double* u = calloc(cells, sizeof(double));
  double* next = calloc(cells, sizeof(double));
  for (int z = 0; z < e[2]; ++z)
    for (int y = 0; y < e[1]; ++y)
      for (int x = 0; x < e[0]; ++x)
        AT(u, x, y, z) = sin(2 * M_PI * (o[0] + x) / n) * cos(2 * M_PI * (o[1] + y) / n) +
                         0.5 * sin(4 * M_PI * (o[2] + z) / n);

  halox_options options = HALOX_OPTIONS_INIT;
  options.transport = argc > 3 ? argv[3] : "mpi-p2p";
  options.algorithm = "faces"; /* a 7-point stencil needs the faces only */
  halox_exchange exchange[2] = {NULL, NULL};
  /* Cell fields with a halo of 1 on every side: below (lo) and above (hi) along x, y, z. */
  const halox_halo_widths halo = {.lo = {1, 1, 1}, .hi = {1, 1, 1}};
  halox_field fields[2] = {
      {.data = u, .type = HALOX_DOUBLE, .location = HALOX_CELL, .halo = halo, .name = "u"},
      {.data = next, .type = HALOX_DOUBLE, .location = HALOX_CELL, .halo = halo, .name = "next"}};
  CHECK(halox_exchange_create_fields(&exchange[0], decomp, e, 1, &fields[0], &options));
  CHECK(halox_exchange_create_fields(&exchange[1], decomp, e, 1, &fields[1], &options));
  for (int step = 0; step < steps; ++step) {
    double* in = step % 2 == 0 ? u : next;
    double* out = step % 2 == 0 ? next : u;
    CHECK(halox_exchange_halos(exchange[step % 2]));
    for (int z = 0; z < e[2]; ++z)
      for (int y = 0; y < e[1]; ++y)
        for (int x = 0; x < e[0]; ++x)
          AT(out, x, y, z) = AT(in, x, y, z) +
                             0.1 * (AT(in, x + 1, y, z) + AT(in, x - 1, y, z) + AT(in, x, y + 1, z) +
                                    AT(in, x, y - 1, z) + AT(in, x, y, z + 1) +
                                    AT(in, x, y, z - 1) - 6 * AT(in, x, y, z));
  }

  /* Every cell from its owner, added to zeros (exact), summed in one order. */
  const double* final_field = steps % 2 == 0 ? u : next;
  double* mine = calloc((size_t)n * n * n, sizeof(double));
  double* whole = calloc((size_t)n * n * n, sizeof(double));
  for (int z = 0; z < e[2]; ++z)
    for (int y = 0; y < e[1]; ++y)
      for (int x = 0; x < e[0]; ++x)
        mine[(o[0] + x) + n * ((o[1] + y) + (size_t)n * (o[2] + z))] = AT(final_field, x, y, z);
  MPI_Reduce(mine, whole, n * n * n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  double sum = 0, sq = 0;
  for (size_t i = 0; i < (size_t)n * n * n; ++i) {
    sum += whole[i];
    sq += whole[i] * whole[i];
  }
  if (rank == 0) printf("heat3d n=%d steps=%d sum=%.17e norm2=%.17e\n", n, steps, sum, sq);
  CHECK(halox_exchange_destroy(&exchange[0]));
  CHECK(halox_exchange_destroy(&exchange[1]));
  CHECK(halox_decomposition_destroy(&decomp));
  free(u), free(next), free(mine), free(whole);
  MPI_Finalize();
  return 0;
}
