/* Every create call of the C API under memory pressure: an allocation failure
 * put at each allocation of the call in turn (failing_new.h). Each time the
 * call returns HALOX_ERROR_ALLOCATION with its name in the message, leaves its
 * handle NULL and frees what it allocated; with no failure left to put, it
 * succeeds. One rank: a failure on one rank of a collective call leaves the
 * others waiting. Any failure: exit 1. */
#include <halox/halox.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "failing_new.h"

enum { N = 8, H = 1, CELLS = (N + 2 * H) * (N + 2 * H) * (N + 2 * H) };

static int failures = 0;
static halox_decomposition decomp = NULL;
static halox_shared_fields shared = NULL;
static double u[CELLS], v[CELLS];
static float uf[CELLS];
static const halox_halo_widths halo = {.lo = {H, H, H}, .hi = {H, H, H}};
static halox_options options = HALOX_OPTIONS_INIT;

static halox_status decomposition_create(void** out) {
  const int global[3] = {N, N, N};
  halox_decomposition d = (halox_decomposition)&failures; /* not NULL: the call must clear it */
  halox_status status = halox_decomposition_create(&d, MPI_COMM_WORLD, global, NULL, NULL);
  *out = d;
  return status;
}

static halox_status decomposition_create_f(void** out) {
  const int global[3] = {N, N, N};
  halox_decomposition d = (halox_decomposition)&failures;
  halox_status status =
      halox_decomposition_create_f(&d, MPI_Comm_c2f(MPI_COMM_WORLD), global, NULL, NULL);
  *out = d;
  return status;
}

static void decomposition_destroy(void* handle) {
  halox_decomposition d = handle;
  halox_decomposition_destroy(&d);
}

static halox_status shared_fields_create(void** out) {
  halox_shared_fields f = (halox_shared_fields)&failures;
  halox_status status = halox_shared_fields_create(&f, decomp, NULL, &halo, HALOX_DOUBLE, 2);
  *out = f;
  return status;
}

static void shared_fields_destroy(void* handle) {
  halox_shared_fields f = handle;
  halox_shared_fields_destroy(&f);
}

static halox_status exchange_create(void** out) {
  halox_array fields[2] = {{u, HALOX_DOUBLE, {N + 2 * H, N + 2 * H, N + 2 * H}},
                           {v, HALOX_DOUBLE, {N + 2 * H, N + 2 * H, N + 2 * H}}};
  halox_exchange ex = (halox_exchange)&failures;
  halox_status status = halox_exchange_create(&ex, decomp, NULL, &halo, 2, fields, &options);
  *out = ex;
  return status;
}

static halox_status exchange_create_double(void** out) {
  double* fields[2] = {u, v};
  halox_exchange ex = (halox_exchange)&failures;
  halox_status status = halox_exchange_create_double(&ex, decomp, NULL, &halo, 2, fields, &options);
  *out = ex;
  return status;
}

static halox_status exchange_create_float(void** out) {
  float* fields[1] = {uf};
  halox_exchange ex = (halox_exchange)&failures;
  halox_status status = halox_exchange_create_float(&ex, decomp, NULL, &halo, 1, fields, &options);
  *out = ex;
  return status;
}

/* Arrays of node-shared fields: the exchange finds the memory and keeps it. */
static halox_status exchange_create_on_shared(void** out) {
  double* fields[2] = {NULL, NULL};
  for (int f = 0; f < 2; ++f) halox_shared_fields_data(shared, f, (void**)&fields[f]);
  halox_exchange ex = (halox_exchange)&failures;
  halox_status status = halox_exchange_create_double(&ex, decomp, NULL, &halo, 2, fields, &options);
  *out = ex;
  return status;
}

static halox_status decomposition_adopt(void** out) {
  int global[3] = {N, N, N}, dims[3] = {1, 1, 1}, periodic[3] = {1, 0, 1}, offset[3] = {0, 0, 0};
  halox_decomposition d = (halox_decomposition)&failures;
  halox_status status =
      halox_decomposition_adopt(&d, MPI_COMM_WORLD, global, dims, periodic, "XYZ", offset, global);
  *out = d;
  return status;
}

static halox_status decomposition_adopt_f(void** out) {
  int global[3] = {N, N, N}, dims[3] = {1, 1, 1}, periodic[3] = {1, 0, 1}, offset[3] = {0, 0, 0};
  halox_decomposition d = (halox_decomposition)&failures;
  halox_status status = halox_decomposition_adopt_f(&d, MPI_Comm_c2f(MPI_COMM_WORLD), global, dims,
                                                    periodic, "XYZ", offset, global);
  *out = d;
  return status;
}

/* A cell field and a vertex field of their own halos and types. */
static halox_status exchange_create_fields(void** out) {
  halox_exchange ex = (halox_exchange)&failures;
  halox_field fields[2] = {
      {u, HALOX_DOUBLE, HALOX_CELL, {.lo = {H, H, H}, .hi = {H, H, H}}, {0, 0, 0}, "u"},
      {uf, HALOX_FLOAT, HALOX_VERTEX, {.lo = {H - 1, H - 1, H - 1}, .hi = {H, H, H}}, {0, 0, 0},
       "uf"}};
  halox_status status = halox_exchange_create_fields(&ex, decomp, NULL, 2, fields, &options);
  *out = ex;
  return status;
}

static void exchange_destroy(void* handle) {
  halox_exchange ex = handle;
  halox_exchange_destroy(&ex);
}

/* The call made once to warm what the library sets up on first use, then
 * with the failure after 0, 1, 2, ... allocations until none is left to fail. */
static void each_allocation_fails(const char* name, halox_status (*create)(void**),
                                  void (*destroy)(void*)) {
  void* handle = NULL;
  if (create(&handle) != HALOX_SUCCESS) {
    fprintf(stderr, "%s without a failure: %s\n", name, halox_last_error());
    ++failures;
    return;
  }
  destroy(handle);
  for (long n = 0;; ++n) {
    long live = failing_new_live();
    failing_new_arm(n);
    halox_status status = create(&handle);
    long injected = failing_new_failures();
    failing_new_arm(-1);
    if (injected == 0) {
      if (status != HALOX_SUCCESS || handle == NULL) {
        fprintf(stderr, "%s: %s \"%s\" with no failure put\n", name, halox_status_name(status),
                halox_last_error());
        ++failures;
      } else {
        destroy(handle);
      }
      printf("%s: a failure at each of its %ld allocations reported\n", name, n);
      return;
    }
    if (status == HALOX_SUCCESS) { /* the library got over it (a fallback): fine */
      destroy(handle);
      continue;
    }
    if (status != HALOX_ERROR_ALLOCATION || handle != NULL ||
        strstr(halox_last_error(), name) == NULL ||
        strstr(halox_last_error(), "out of memory") == NULL || failing_new_live() != live) {
      fprintf(stderr, "%s, allocation %ld failing: %s \"%s\", handle %s, %ld allocations left\n",
              name, n + 1, halox_status_name(status), halox_last_error(), handle ? "set" : "NULL",
              failing_new_live() - live);
      ++failures;
      if (failures > 5) return;
    }
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  options.transport = "mpi-p2p";
  each_allocation_fails("halox_decomposition_create", decomposition_create, decomposition_destroy);
  each_allocation_fails("halox_decomposition_create", decomposition_create_f,
                        decomposition_destroy);
  each_allocation_fails("halox_decomposition_adopt", decomposition_adopt, decomposition_destroy);
  each_allocation_fails("halox_decomposition_adopt", decomposition_adopt_f, decomposition_destroy);
  void* d = NULL;
  if (decomposition_create(&d) == HALOX_SUCCESS) {
    decomp = d;
    each_allocation_fails("halox_shared_fields_create", shared_fields_create,
                          shared_fields_destroy);
    each_allocation_fails("halox_exchange_create", exchange_create, exchange_destroy);
    each_allocation_fails("halox_exchange_create_double", exchange_create_double, exchange_destroy);
    each_allocation_fails("halox_exchange_create_float", exchange_create_float, exchange_destroy);
    each_allocation_fails("halox_exchange_create_fields", exchange_create_fields, exchange_destroy);
    void* f = NULL;
    if (shared_fields_create(&f) == HALOX_SUCCESS) {
      shared = f;
      each_allocation_fails("halox_exchange_create_double", exchange_create_on_shared,
                            exchange_destroy);
      halox_shared_fields_destroy(&shared);
    } else {
      ++failures;
    }
    halox_decomposition_destroy(&decomp);
  } else {
    ++failures;
  }
  MPI_Finalize();
  return failures ? 1 : 0;
}
