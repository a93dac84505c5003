"""Run under mpiexec (tests/python/test_bindings.py does): fields as codes hold
them through halox.Field — cell, face, edge and node locations with halos and
dtypes of their own in one exchange, open and periodic boundaries, the whole
exchange and subsets at depths 1 and 2, a code's own rank order adopted or
refused, and bad arguments refused with the same error on every rank.

The expected values are derived here, with numpy, from the conventions of
include/halox/field.hpp (as tests/mpi/staggered_test.cpp derives them): which
points each rank holds, which halo points a call fills, and each point's value
from its global index. Every check is agreed on by all ranks."""
import numpy as np
import pytest
from mpi4py import MPI

import halox

comm = MPI.COMM_WORLD

# Axes along which a location's points sit on the cells' faces (x, y, z).
STAGGERED = {"cell": (0, 0, 0), "x_face": (1, 0, 0), "y_face": (0, 1, 0), "z_face": (0, 0, 1),
             "x_edge": (0, 1, 1), "y_edge": (1, 0, 1), "z_edge": (1, 1, 0), "vertex": (1, 1, 1)}

# (name, location, dtype, (halo below, halo above)): CloverLeaf's node extents,
# DMStag's and per-side widths, float32 beside float64, a field without a z halo.
FIELDS = [("density", "cell", np.float64, ((2, 2, 2), (2, 2, 2))),
          ("xvel", "vertex", np.float64, ((2, 2, 2), (3, 3, 3))),
          ("vol_flux_x", "x_face", np.float32, ((1, 2, 1), (2, 1, 2))),
          ("edge_y", "y_edge", np.float32, ((1, 1, 1), (2, 1, 2))),
          ("w", "z_face", np.float64, ((2, 2, 2), (2, 2, 2))),
          ("tracer", "cell", np.float32, ((1, 1, 0), (1, 1, 0)))]


def agreed(ok: bool) -> bool:
    return comm.allreduce(bool(ok), op=MPI.LAND)


def rank_grid() -> tuple[int, int, int]:
    return {1: (1, 1, 1), 2: (2, 1, 1), 3: (1, 3, 1), 4: (2, 2, 1)}.get(comm.size, (0, 0, 0))


class Geometry:
    """Where one field's points lie on this rank: points held, first global point, halo."""

    def __init__(self, decomp, sub, location, halo):
        stag = STAGGERED[location]
        self.lo, self.hi = halo
        self.periodic = decomp.periodic
        self.offset = sub.offset
        self.global_points = tuple(sub.global_domain[k] + (stag[k] and not self.periodic[k])
                                   for k in range(3))
        self.points = tuple(sub.extent[k] + (stag[k] and not self.periodic[k]
                                             and decomp.coords[k] == decomp.dims[k] - 1)
                            for k in range(3))
        self.stag = stag
        self.shape = tuple(self.lo[k] + self.points[k] + self.hi[k] for k in (2, 1, 0))

    def local(self, k):
        return np.arange(-self.lo[k], self.points[k] + self.hi[k])


def point_value(field, gx, gy, gz, epoch):
    """A value naming the field, the global point and the epoch, exact in float32."""
    return 1 + field * 9000 + gx + 21 * gy + 441 * gz + epoch * 70000


def unfilled_mark():
    return -1.0 - comm.rank


def fill(array, geo, field, epoch):
    x, y, z = (geo.local(k) for k in range(3))
    Z, Y, X = np.meshgrid(z, y, x, indexing="ij")
    inside = ((X >= 0) & (X < geo.points[0]) & (Y >= 0) & (Y < geo.points[1])
              & (Z >= 0) & (Z < geo.points[2]))
    ox, oy, oz = geo.offset
    own = point_value(field, ox + X, oy + Y, oz + Z, epoch)
    array[...] = np.where(inside, own, unfilled_mark())


def expected(geo, field, epoch, depth, moved, algorithm="standard"):
    """Every allocated point after a call at `depth` (0: whole halo): its owner's
    value where the call fills it, this rank's own value or mark elsewhere."""
    axes = []
    for k in range(3):
        p = geo.local(k)
        lo = min(geo.lo[k], depth) if depth else geo.lo[k]
        hi = min(geo.hi[k], depth + geo.stag[k]) if depth else geo.hi[k]
        in_window = (p >= -lo) & (p < geo.points[k] + hi)
        g = geo.offset[k] + p
        beyond = (g < 0) | (g >= geo.global_points[k])
        if geo.periodic[k]:
            g = g % geo.global_points[k]
        else:
            in_window &= ~beyond  # beyond an open boundary nobody owns it
        outside = (p < 0) | (p >= geo.points[k])
        axes.append((g, in_window, outside))
    (gx, wx, ox), (gy, wy, oy), (gz, wz, oz) = axes
    Z, Y, X = np.ix_(np.arange(len(gz)), np.arange(len(gy)), np.arange(len(gx)))
    outside = oz[Z].astype(int) + oy[Y] + ox[X]
    filled = wz[Z] & wy[Y] & wx[X] & (outside > 0) & moved
    if algorithm == "faces":  # edges and corners stay untouched
        filled &= outside <= 1
    value = point_value(field, gx[X], gy[Y], gz[Z], epoch)
    x, y, z = (geo.local(k) for k in range(3))
    own = point_value(field, geo.offset[0] + x[X], geo.offset[1] + y[Y], geo.offset[2] + z[Z],
                      epoch)
    kept = np.where(outside > 0, unfilled_mark(), own)
    return np.where(filled, value, kept)


class Case:
    """One rank's fields of the mixed set on a decomposition and sub-domain."""

    def __init__(self, decomp, sub, specs=FIELDS):
        self.specs = specs
        self.geometry = [Geometry(decomp, sub, loc, halo) for _, loc, _, halo in specs]
        self.arrays = [np.zeros(g.shape, spec[2]) for g, spec in zip(self.geometry, specs)]
        self.fields = [halox.Field(a, location=loc, halo=halo, name=name)
                       for a, (name, loc, _, halo) in zip(self.arrays, specs)]

    def fill(self, epoch):
        for f, (a, g) in enumerate(zip(self.arrays, self.geometry)):
            fill(a, g, f, epoch)

    def wrong(self, epoch, depth=0, moved=None, algorithm="standard"):
        """The names of the fields whose points differ from what the call should leave."""
        bad = []
        for f, (a, g) in enumerate(zip(self.arrays, self.geometry)):
            want = expected(g, f, epoch, depth, moved is None or f in moved, algorithm)
            if not np.array_equal(a, want.astype(a.dtype)):
                bad.append(self.specs[f][0])
        return bad


def split_decomposition(periodic, dims=None):
    decomp = halox.Decomposition(comm, dims=dims or rank_grid(), periodic=periodic)
    d = decomp.dims
    # Global extents that leave a remainder: sub-domains of 5 and 6 cells.
    sub = decomp.subdomain(global_domain=(5 * d[0] + 1, 5 * d[1] + 1, 5 * d[2] + 1))
    return decomp, sub


PERIODIC = {"periodic": (True, True, True), "open": (False, False, False),
            "mixed": (True, False, True)}


@pytest.mark.parametrize("location", list(STAGGERED))
@pytest.mark.parametrize("boundary", ["periodic", "open"])
def test_field_shape_is_the_points_of_the_location_plus_halos(location, boundary):
    decomp, sub = split_decomposition(PERIODIC[boundary])
    halo = ((1, 2, 0), (3, 1, 2))
    geo = Geometry(decomp, sub, location, halo)
    assert agreed(decomp.field_shape(sub, location, halo) == geo.shape)
    assert agreed(decomp.field_points(sub.extent, location) == geo.points)


@pytest.mark.parametrize("algorithm", halox.algorithms())
@pytest.mark.parametrize("boundary", list(PERIODIC))
def test_whole_exchange_fills_every_point_of_mixed_fields(boundary, algorithm):
    decomp, sub = split_decomposition(PERIODIC[boundary])
    case = Case(decomp, sub)
    ex = halox.HaloExchange(decomp, sub.extent, case.fields, algorithm=algorithm)
    assert ex.field_names == [name for name, *_ in FIELDS]
    for epoch, split_phase in ((1, False), (2, True)):  # exchange(), then start() ... wait()
        case.fill(epoch)
        if split_phase:
            ex.start()
            ex.wait()
        else:
            ex.exchange()
        bad = case.wrong(epoch, algorithm=algorithm)
        assert agreed(not bad), f"rank {comm.rank}: {bad} differ (split_phase={split_phase})"


# (fields by name or index, depth): every epoch refills every field, so a
# field the call must leave alone shows its own marks, and stale halos show.
SUBSET_CALLS = [(["density", "xvel"], 1), ([2, 4], 2), (None, 1), (["edge_y", "tracer"], 0),
                ("xvel", 2), (["w", 0], 1), (["density", "xvel"], 1)]


@pytest.mark.parametrize("algorithm", ["standard", "staged"])
@pytest.mark.parametrize("boundary", ["periodic", "mixed"])
def test_subsets_at_depths_fill_only_their_fields_and_depth(boundary, algorithm):
    decomp, sub = split_decomposition(PERIODIC[boundary])
    case = Case(decomp, sub)
    ex = halox.HaloExchange(decomp, halox.Subdomain(sub.offset, sub.extent, sub.global_domain),
                            case.fields, algorithm=algorithm)
    names = ex.field_names
    for epoch, (chosen, depth) in enumerate(SUBSET_CALLS, start=1):
        case.fill(epoch)
        if epoch % 2:
            ex.exchange(chosen, depth=depth)
        else:
            ex.start(chosen, depth=depth)
            ex.wait()
        items = names if chosen is None else [chosen] if isinstance(chosen, str) else chosen
        moved = {names.index(c) if isinstance(c, str) else c for c in items}
        bad = case.wrong(epoch, depth, moved, algorithm)
        assert agreed(not bad), f"rank {comm.rank}: {bad} differ after {chosen} at depth {depth}"
    # The whole exchange and one schedule per distinct subset and depth; a repeat reuses its own.
    assert ex.schedules_built == 1 + len({(str(c), d) for c, d in SUBSET_CALLS})


@pytest.mark.parametrize("boundary", ["periodic", "open"])
def test_an_algorithm_per_call(boundary):
    decomp, sub = split_decomposition(PERIODIC[boundary])
    case = Case(decomp, sub)
    ex = halox.HaloExchange(decomp, sub.extent, case.fields, algorithm="standard")
    for epoch, (chosen, depth, algorithm) in enumerate(
            [(None, 0, "faces"), (["density", "xvel"], 1, "staged"), (None, 0, None),
             (["w"], 2, "faces")], start=1):
        case.fill(epoch)
        ex.exchange(chosen, depth=depth, algorithm=algorithm)
        moved = None if chosen is None else {ex.field_names.index(c) for c in chosen}
        bad = case.wrong(epoch, depth, moved, algorithm or "standard")
        assert agreed(not bad), f"rank {comm.rank}: {bad} differ after {chosen} by {algorithm}"
    with pytest.raises(ValueError, match="unknown algorithm 'diagonal'"):
        ex.exchange(algorithm="diagonal")


def test_a_code_numbering_its_ranks_x_fastest_is_adopted():
    dims = rank_grid()
    code_coords = (comm.rank % dims[0], comm.rank // dims[0] % dims[1],
                   comm.rank // (dims[0] * dims[1]))
    global_domain = (5 * dims[0] + 1, 5 * dims[1] + 1, 5 * dims[2] + 1)
    offset, extent = own_split(global_domain, dims, code_coords)
    mine = halox.Subdomain(offset, extent, global_domain)
    by_order = halox.Decomposition.adopt(comm, dims, (False, True, False), rank_order="XYZ",
                                         subdomain=mine)
    by_coords = halox.Decomposition.adopt(comm, dims, (False, True, False), coords=code_coords,
                                          subdomain=mine)
    for decomp in (by_order, by_coords):
        assert agreed(decomp.coords == code_coords and decomp.rank_order == "XYZ")
        case = Case(decomp, mine)
        ex = halox.HaloExchange(decomp, mine, case.fields)
        case.fill(1)
        ex.exchange()
        bad = case.wrong(1)
        assert agreed(not bad), f"rank {comm.rank}: {bad} differ"


def own_split(global_domain, dims, coords):
    """A code's own split: the remainder on the last ranks (halox puts it on the first)."""
    offset, extent = [], []
    for n, parts, c in zip(global_domain, dims, coords):
        base, extra = divmod(n, parts)
        first_big = parts - extra
        offset.append(c * base + max(0, c - first_big))
        extent.append(base + (c >= first_big))
    return tuple(offset), tuple(extent)


def test_a_code_numbering_its_ranks_otherwise_is_refused_on_every_rank():
    dims = rank_grid()
    global_domain = (5 * dims[0] + 1, 5 * dims[1] + 1, 5 * dims[2] + 1)
    if comm.size in (2, 3):  # one split dimension: the code numbers from the top
        axis = dims.index(comm.size)
        code_coords = [0, 0, 0]
        code_coords[axis] = comm.size - 1 - comm.rank
        order, says = "XYZ", "the first rank in"
    else:  # z-fastest numbering taken for the code's x-fastest one (1 rank: nothing to swap)
        code_coords = [comm.rank % dims[0], comm.rank // dims[0] % dims[1], 0]
        order, says = "ZYX", "do not tile the grid"
    offset, extent = own_split(global_domain, dims, code_coords)
    if comm.size == 1:
        extent = (extent[0] - 1,) + extent[1:]  # misses the domain's last cells in x
        says = "must end at the global extent"
    mine = halox.Subdomain(offset, extent, global_domain)
    with pytest.raises(ValueError) as error:
        halox.Decomposition.adopt(comm, dims, (True, False, True), rank_order=order, subdomain=mine)
    message = str(error.value)
    assert says in message and "Decomposition.adopt" in message and "subdomain=" in message, message
    assert len(set(comm.allgather(message))) == 1


def test_adopting_without_the_subdomain_is_refused():
    """A grid and an order alone cannot show a wrong order: the sub-domain is required."""
    with pytest.raises(ValueError, match="expected subdomain=halox.Subdomain"):
        halox.Decomposition.adopt(comm, rank_grid(), rank_order="XYZ")


def test_an_exchange_handed_subdomains_that_do_not_tile_halox_grid_is_refused():
    if comm.size == 1:
        pytest.skip("one rank: nothing to swap")
    decomp = halox.Decomposition(comm, dims=rank_grid(), periodic=(True, False, True))  # z fastest
    dims = decomp.dims
    global_domain = (5 * dims[0] + 1, 5 * dims[1] + 1, 5 * dims[2] + 1)
    reversed_coords = [dims[k] - 1 - decomp.coords[k] for k in range(3)]  # the code counts down
    offset, extent = own_split(global_domain, dims, reversed_coords)
    mine = halox.Subdomain(offset, extent, global_domain)
    case = Case(decomp, mine)
    with pytest.raises(ValueError) as error:
        halox.HaloExchange(decomp, mine, case.fields)
    message = str(error.value)
    assert "do not tile the grid" in message, message
    assert len(set(comm.allgather(message))) == 1


def test_coordinates_that_follow_no_order_are_refused_on_every_rank():
    if comm.size == 1:
        pytest.skip("one rank: (0, 0, 0) is its place")
    with pytest.raises(ValueError) as error:
        halox.Decomposition.adopt(comm, rank_grid(), coords=(0, 0, 0),  # every rank claims it
                                  subdomain=halox.Subdomain((0, 0, 0), (4, 4, 4), (4, 4, 4)))
    message = str(error.value)
    assert "follow no numbering order" in message, message
    assert len(set(comm.allgather(message))) == 1


@pytest.mark.parametrize("who", ["all-ranks", "last-rank"])
@pytest.mark.parametrize("bad", ["cell-shaped vertex", "vertex-shaped cell", "int64", "fortran-order"])
def test_a_field_that_does_not_fit_its_location_is_refused_on_every_rank(bad, who):
    decomp, sub = split_decomposition(PERIODIC["mixed"])
    specs = [FIELDS[0], FIELDS[1]]
    case = Case(decomp, sub, specs)
    if who == "all-ranks" or comm.rank == comm.size - 1:
        cell_shape = case.geometry[0].shape
        node_shape = Geometry(decomp, sub, "vertex", specs[0][3]).shape  # with density's halo
        cell_shape_of_xvel = Geometry(decomp, sub, "cell", specs[1][3]).shape
        replace = {"cell-shaped vertex": (1, np.zeros(cell_shape_of_xvel)),
                   "vertex-shaped cell": (0, np.zeros(node_shape)),
                   "int64": (0, np.zeros(cell_shape, np.int64)),
                   "fortran-order": (0, np.zeros(cell_shape, order="F"))}[bad]
        index, array = replace
        name, loc, _, halo = specs[index]
        case.fields[index] = halox.Field(array, location=loc, halo=halo, name=name)
    says = {"cell-shaped vertex": "field 'xvel' (vertex): expected shape (z, y, x) = ",
            "vertex-shaped cell": "field 'density' (cell): expected shape (z, y, x) = ",
            "int64": "expected dtype float32 or float64",
            "fortran-order": "got a Fortran-ordered array"}[bad]
    with pytest.raises(ValueError) as error:
        halox.HaloExchange(decomp, sub.extent, case.fields)
    message = str(error.value)
    assert says in message, message
    assert len(set(comm.allgather(message))) == 1


@pytest.mark.parametrize("who", ["all-ranks", "last-rank"])
@pytest.mark.parametrize("call,says", [
    ((["density", "velocity"], 1), "no field named 'velocity' in this exchange (its fields: "
                                   "density, xvel, vol_flux_x, edge_y, w, tracer)"),
    ((["tracer"], 2), "depth 2 is deeper than the halo of field 'tracer' (1 cells)"),
    (([1, 9], 1), "field index 9 is not one of the exchange's 6 fields"),
    ((["xvel", 1], 1), "field 'xvel' is named twice"),
    (([], 1), "a subset call names no field"),
])
def test_a_bad_subset_call_is_refused_on_every_rank(call, says, who):
    decomp, sub = split_decomposition(PERIODIC["periodic"])
    case = Case(decomp, sub)
    ex = halox.HaloExchange(decomp, sub.extent, case.fields)
    good = (["density"], 1)
    chosen, depth = call if who == "all-ranks" or comm.rank == comm.size - 1 else good
    with pytest.raises(ValueError) as error:
        ex.exchange(chosen, depth=depth)
    message = str(error.value)
    assert says in message, message
    assert len(set(comm.allgather(message))) == 1
    # Nothing moved and nothing is left half-started: the next call works.
    case.fill(1)
    ex.exchange(*good)
    bad = case.wrong(1, 1, {0})
    assert agreed(not bad), f"rank {comm.rank}: {bad} differ"


def test_fields_go_with_cells_and_arrays_with_a_grid():
    decomp, sub = split_decomposition(PERIODIC["periodic"])
    grid = halox.Grid(sub.extent, halo=2)
    fields = Case(decomp, sub, FIELDS[:1]).fields
    with pytest.raises(ValueError, match="a halox.Field: fields go with this rank's cells"):
        halox.HaloExchange(decomp, grid, fields)
    with pytest.raises(ValueError, match="field 0: expected a halox.Field, got <class 'numpy"):
        halox.HaloExchange(decomp, sub.extent, [grid.zeros()])
    with pytest.raises(ValueError, match="grid: expected a halox.Grid .* got 'cells'"):
        halox.HaloExchange(decomp, "cells", fields)
    with pytest.raises(ValueError, match="unknown algorithm 'diagonal'"):
        halox.HaloExchange(decomp, sub, fields, algorithm="diagonal")


def test_field_arguments_are_checked_where_given():
    array = np.zeros((4, 4, 4))
    with pytest.raises(ValueError, match="unknown location 'node'"):
        halox.Field(array, location="node")
    with pytest.raises(ValueError, match=r"halo: expected an integer, 3 integers"):
        halox.Field(array, halo=(1, 2))
    with pytest.raises(ValueError, match="halo: expected widths >= 0"):
        halox.Field(array, halo=((1, 1, 1), (1, -1, 1)))
    f = halox.Field(array, location="z_edge", halo=((1, 2, 3), (4, 5, 6)), name="ez")
    assert (f.location, f.halo_lo, f.halo_hi, f.name) == ("z_edge", (1, 2, 3), (4, 5, 6), "ez")
    assert halox.Field(array, halo=(1, 2, 0)).halo_hi == (1, 2, 0)
    assert halox.Field(array, location="vertex", shared="kept").shared == "kept"
    assert halox.Field(array).shared == "from_owner"
    with pytest.raises(ValueError, match=r"unknown shared points 'mine' \(expected from_owner, kept"):
        halox.Field(array, location="vertex", shared="mine")


def test_kept_shared_faces_keep_each_holders_value():
    """shared="kept": the face a rank shares with the rank above keeps this rank's
    value; the point beyond it comes from the rank above."""
    decomp, sub = split_decomposition(PERIODIC["periodic"])
    n = sub.extent
    array = np.full((n[2] + 3, n[1] + 3, n[0] + 3), comm.rank + 1.0)  # halo 1 below, 2 above
    field = halox.Field(array, location="vertex", halo=((1, 1, 1), (2, 2, 2)), shared="kept")
    halox.HaloExchange(decomp, sub, [field]).exchange()
    z, y = 1 + n[2] // 2, 1 + n[1] // 2
    assert agreed(array[z, y, 1 + n[0]] == comm.rank + 1)
    assert agreed(decomp.dims[0] == 1 or array[z, y, 2 + n[0]] != comm.rank + 1)
    no_room = halox.Field(np.zeros((n[2] + 3, n[1] + 3, n[0] + 1)), location="vertex",
                          halo=((1, 1, 1), (0, 2, 2)), shared="kept")
    with pytest.raises(ValueError, match="keeps its shared points .* no halo above in x"):
        halox.HaloExchange(decomp, sub, [no_room])


def test_set_field_data_moves_fields_to_new_memory():
    """A code that re-allocates its arrays gives the exchange the new ones; the old ones are
    left alone, and an array of another shape or dtype is refused."""
    decomp, sub = split_decomposition(PERIODIC["mixed"])
    case = Case(decomp, sub)
    ex = halox.HaloExchange(decomp, sub, case.fields)
    case.fill(1)
    ex.exchange()
    old = [a.copy() for a in case.arrays]
    before = case.arrays
    case.arrays = [np.zeros_like(a) for a in before]
    ex.set_field_data("xvel", case.arrays[1])
    for f in range(len(case.arrays)):
        if f != 1:
            ex.set_field_data(f, case.arrays[f])
    case.fill(2)
    ex.exchange(["density", "xvel"], depth=1)
    assert agreed(not case.wrong(2, 1, {0, 1})), f"rank {comm.rank}: {case.wrong(2, 1, {0, 1})}"
    assert agreed(all(np.array_equal(a, b) for a, b in zip(before, old)))
    with pytest.raises(ValueError, match=r"set_field_data: field 'density': expected shape"):
        ex.set_field_data("density", np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match=r"set_field_data: no field named 'rho'"):
        ex.set_field_data("rho", case.arrays[0])
    with pytest.raises(ValueError, match=r"expected shape .* and dtype float64 as before"):
        ex.set_field_data(0, case.arrays[0].astype(np.float32))
