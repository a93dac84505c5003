"""Run under mpiexec (tests/python/test_bindings.py does): cell-exact halos of
numpy fields through halox.HaloExchange — faces, edges, corners, periodic and
open boundaries, float32 and float64, several fields, every algorithm and
grouping, every transport that takes user memory. Every check is agreed on
by all ranks, so a failure fails on every rank and no rank is left waiting."""
import os

import numpy as np
import pytest
from mpi4py import MPI

import halox

comm = MPI.COMM_WORLD
REDUCED = os.environ.get("HALOX_TEST_MATRIX") == "reduced"
NFIELDS = 3


def agreed(ok: bool) -> bool:
    return comm.allreduce(bool(ok), op=MPI.LAND)


def rank_grids() -> list[tuple[int, int, int]]:
    return {1: [(1, 1, 1)], 2: [(2, 1, 1), (1, 1, 2)], 3: [(3, 1, 1), (1, 3, 1)],
            4: [(2, 2, 1), (1, 2, 2)]}.get(comm.size, [(0, 0, 0)])


# (dims, periodic, halo): uniform and per-side widths (one side 0), uneven splits.
CASES = [(dims, periodic, halo)
         for i, dims in enumerate(rank_grids())
         for periodic in [(True, True, True), (False, True, False)]
         for halo in ([{"halo": 2}] if i == 0 else [{"halo_lo": (1, 2, 1), "halo_hi": (2, 0, 1)}])]
ALGORITHMS = ["standard", "staged"] if REDUCED else halox.algorithms()
GROUPINGS = ["compact"] if REDUCED else ["compact", "sequence"]
DTYPES = [np.float32] if REDUCED else [np.float32, np.float64]


def global_value(g, field, shape):
    """A value naming the global cell and the field, exact in float32."""
    gx, gy, gz = g
    return 1 + gx + shape[0] * (gy + shape[1] * gz) + field * shape[0] * shape[1] * shape[2]


def fill(arrays, sub, grid):
    ox, oy, oz = sub.offset
    nx, ny, nz = sub.extent
    gz, gy, gx = np.meshgrid(oz + np.arange(nz), oy + np.arange(ny), ox + np.arange(nx),
                             indexing="ij")
    for f, a in enumerate(arrays):
        a[...] = -1
        a[grid.interior] = global_value((gx, gy, gz), f, sub.global_domain)


def expected(field, sub, grid, periodic, algorithm, dtype):
    """Every allocated cell: its global cell's value, or -1 where nothing fills it."""
    lo, hi = grid.halo_lo, grid.halo_hi
    axes, valid, outside = [], True, 0
    for d in range(3):
        local = np.arange(-lo[d], sub.extent[d] + hi[d])
        g = sub.offset[d] + local
        ok = np.ones_like(g, dtype=bool)
        if periodic[d]:
            g = g % sub.global_domain[d]
        else:
            ok = (g >= 0) & (g < sub.global_domain[d])
        halo = (local < 0) | (local >= sub.extent[d])
        axes.append((g, ok, halo))
    (gx, okx, hx), (gy, oky, hy), (gz, okz, hz) = axes
    Z, Y, X = np.ix_(np.arange(len(gz)), np.arange(len(gy)), np.arange(len(gx)))
    valid = okz[Z] & oky[Y] & okx[X]
    if algorithm == "faces":  # edges and corners stay untouched
        outside = hz[Z].astype(int) + hy[Y] + hx[X]
        valid = valid & (outside <= 1)
    value = global_value((gx[X], gy[Y], gz[Z]), field, sub.global_domain)
    return np.where(valid, value, -1).astype(dtype)


def user_memory_transports() -> list[str]:
    """The library's transports that take plain numpy memory (the others refuse it)."""
    decomp = halox.Decomposition(comm)
    grid = halox.Grid(decomp.subdomain(per_rank=(2, 2, 2)).extent, halo=1)
    usable = []
    for name in halox.transports():
        try:
            halox.HaloExchange(decomp, grid, [grid.zeros()], transport=name)
            usable.append(name)
        except halox.UsageError:
            pass
    return usable


TRANSPORTS = user_memory_transports()


def test_default_transport_takes_user_memory():
    assert halox.default_transport in TRANSPORTS


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("grouping", GROUPINGS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("dims,periodic,halo", CASES, ids=str)
def test_halos_are_cell_exact(transport, algorithm, grouping, dtype, dims, periodic, halo):
    decomp = halox.Decomposition(comm, dims=dims, periodic=periodic)
    # Global extents that leave a remainder: sub-domains of 3 and 4 cells.
    d = decomp.dims
    sub = decomp.subdomain(global_domain=(3 * d[0] + 1, 3 * d[1] + 2, 3 * d[2] + 1))
    grid = halox.Grid(sub.extent, **halo)
    arrays = [grid.zeros(dtype) for _ in range(NFIELDS)]
    assert all(a.shape == grid.shape for a in arrays)
    ex = halox.HaloExchange(decomp, grid, arrays, algorithm=algorithm, grouping=grouping,
                            transport=transport)
    for split_phase in (False, True):  # exchange(), then start() ... wait()
        fill(arrays, sub, grid)
        if split_phase:
            ex.start()
            ex.wait()
        else:
            ex.exchange()
        bad = [f for f, a in enumerate(arrays)
               if not np.array_equal(a, expected(f, sub, grid, periodic, algorithm, dtype))]
        assert agreed(not bad), f"rank {comm.rank}: fields {bad} differ (split_phase={split_phase})"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_fields_moved_one_block_at_a_time_are_cell_exact(transport):
    decomp = halox.Decomposition(comm, periodic=(True, False, True))
    d = decomp.dims
    sub = decomp.subdomain(global_domain=(3 * d[0] + 1, 3 * d[1] + 2, 3 * d[2] + 1))
    grid = halox.Grid(sub.extent, halo=2)
    arrays = [grid.zeros(np.float64) for _ in range(NFIELDS)]
    ex = halox.HaloExchange(decomp, grid, arrays, algorithm="staged", grouping="compact",
                            transport=transport, fields_per_block=1)
    fill(arrays, sub, grid)
    ex.exchange()
    bad = [f for f, a in enumerate(arrays)
           if not np.array_equal(a, expected(f, sub, grid, (True, False, True), "staged",
                                             np.float64))]
    assert agreed(not bad), f"rank {comm.rank}: fields {bad} differ"


def test_a_negative_block_is_a_usage_error():
    decomp = halox.Decomposition(comm)
    grid = halox.Grid(decomp.subdomain(per_rank=(2, 2, 2)).extent, halo=1)
    with pytest.raises(ValueError, match="fields_per_block must not be negative"):
        halox.HaloExchange(decomp, grid, [grid.zeros()], fields_per_block=-1)
