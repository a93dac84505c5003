"""Run under mpiexec (tests/python/test_bindings.py does): reverse calls on numpy
fields of every location — sum, min and max, into the owner and on every
holder, the whole halo and subsets at depth 1, open and periodic boundaries —
and bad reverse calls refused with the same error on every rank.

The checker does not ask the library: every rank gathers every rank's copies
with their global indices (mpi4py) and combines those of each of its points
with numpy. The values are small integers, so every sum is exact whatever
its order. Every check is agreed on by all ranks."""
import numpy as np
import pytest
from mpi4py import MPI

import halox

comm = MPI.COMM_WORLD

STAGGERED = {"cell": (0, 0, 0), "x_face": (1, 0, 0), "y_face": (0, 1, 0), "z_face": (0, 0, 1),
             "x_edge": (0, 1, 1), "y_edge": (1, 0, 1), "z_edge": (1, 1, 0), "vertex": (1, 1, 1)}
# One field per location: LULESH's node halo (0 below, 1 above), float32 beside float64.
FIELDS = [(loc, loc, np.float32 if i % 2 else np.float64,
           ((0, 0, 0), (1, 1, 1)) if loc == "vertex" else ((1, 2, 1), (2, 1, 1)))
          for i, loc in enumerate(STAGGERED)]
OPS = {"sum": np.add, "min": np.minimum, "max": np.maximum}


def agreed(ok: bool) -> bool:
    return comm.allreduce(bool(ok), op=MPI.LAND)


class Field:
    def __init__(self, decomp, sub, name, location, dtype, halo):
        stag = STAGGERED[location]
        self.lo, self.hi, self.stag, self.periodic = halo[0], halo[1], stag, decomp.periodic
        self.offset = sub.offset
        self.global_points = tuple(sub.global_domain[k] + (stag[k] and not self.periodic[k])
                                   for k in range(3))
        self.points = tuple(sub.extent[k] + (stag[k] and not self.periodic[k]
                                             and decomp.coords[k] == decomp.dims[k] - 1)
                            for k in range(3))
        shape = tuple(self.lo[k] + self.points[k] + self.hi[k] for k in (2, 1, 0))
        self.array = np.zeros(shape, dtype)
        self.field = halox.Field(self.array, location=location, halo=halo, name=name)

    def held(self, depth):
        """Per allocated point (z, y, x): its global index, or -1 (not held at this depth,
        or beyond an open boundary), and whether this rank owns it."""
        index, ok, own = [], [], []
        for k in range(3):
            p = np.arange(-self.lo[k], self.points[k] + self.hi[k])
            lo = min(self.lo[k], depth) if depth else self.lo[k]
            hi = min(self.hi[k], depth + self.stag[k]) if depth else self.hi[k]
            g = self.offset[k] + p
            window = (p >= -lo) & (p < self.points[k] + hi)
            if self.periodic[k]:
                g = g % self.global_points[k]
            else:
                window &= (g >= 0) & (g < self.global_points[k])
            index.append(g)
            ok.append(window)
            own.append((p >= 0) & (p < self.points[k]))
        X, Y, Z = np.meshgrid(*index, indexing="ij")
        flat = (X + 64 * (Y + 64 * Z)).transpose(2, 1, 0)
        okay = np.einsum("i,j,k->kji", *[a.astype(int) for a in ok]).astype(bool)
        owned = np.einsum("i,j,k->kji", *[a.astype(int) for a in own]).astype(bool)
        return np.where(okay, flat, -1), owned

    def fill(self, epoch):
        z, y, x = np.indices(self.array.shape)
        self.array[...] = 1 + (comm.rank * 37 + x * 7 + y * 11 + z * 13 + epoch) % 40

    def expected(self, depth, op, every_holder):
        before = self.array.copy()
        index, owned = self.held(depth)
        mine = index >= 0
        pairs = comm.allgather((index[mine], before[mine].astype(np.float64)))
        keys = np.concatenate([k for k, _ in pairs])
        values = np.concatenate([v for _, v in pairs])
        order = np.argsort(keys, kind="stable")
        keys, values = keys[order], values[order]
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        totals = OPS[op].reduceat(values, starts)
        where = np.searchsorted(keys[starts], index[mine])
        out = before.astype(np.float64)
        target = mine & (owned | every_holder)
        out[target] = totals[where][target[mine]]
        return out.astype(self.array.dtype)


def make_case(periodic):
    dims = {1: (1, 1, 1), 2: (2, 1, 1), 4: (2, 1, 2)}.get(comm.size, (0, 0, 0))
    decomp = halox.Decomposition(comm, dims=dims, periodic=periodic)
    sub = decomp.subdomain(global_domain=tuple(4 * d + 1 for d in decomp.dims))
    fields = [Field(decomp, sub, *spec) for spec in FIELDS]
    return decomp, sub, fields


@pytest.mark.parametrize("boundary", ["periodic", "open"])
@pytest.mark.parametrize("op", list(OPS))
def test_reverse_calls_combine_every_copy(boundary, op):
    decomp, sub, fields = make_case((boundary == "periodic",) * 3)
    ex = halox.HaloExchange(decomp, sub.extent, [f.field for f in fields], algorithm="staged")
    for epoch, (chosen, depth, every) in enumerate(
            [(None, 0, False), (None, 0, True), (["cell", "z_face", "x_edge"], 1, True),
             ([1, 3, 6], 1, False), (["vertex", "y_edge"], 0, True)], start=1):
        for f in fields:
            f.fill(epoch)
        moved = range(len(fields)) if chosen is None else [
            ex.field_names.index(c) if isinstance(c, str) else c for c in chosen]
        want = {i: fields[i].expected(depth, op, every) for i in moved}
        if epoch % 2:
            ex.reverse(op, chosen, depth=depth, every_holder=every)
        else:
            ex.start_reverse(op, chosen, depth=depth, every_holder=every)
            ex.wait_reverse()
        bad = [fields[i].field.name for i in moved if not np.array_equal(fields[i].array, want[i])]
        assert agreed(not bad), f"rank {comm.rank}: {bad} differ ({op}, {chosen}, depth {depth})"


def test_bad_reverse_calls_raise_everywhere():
    decomp, sub, fields = make_case((True, True, True))
    ex = halox.HaloExchange(decomp, sub.extent, [f.field for f in fields])
    for call, words in [(lambda: ex.reverse("prod"), "unknown reduction 'prod'"),
                        (lambda: ex.reverse("sum", ["cell", "nope"]), "no field named 'nope'"),
                        (lambda: ex.reverse("sum", ["vertex"], depth=3), "deeper than the halo"),
                        (lambda: ex.reverse("sum", []), "names no field")]:
        with pytest.raises(ValueError, match=words):
            call()
    ex.start(["cell"])
    with pytest.raises(ValueError, match="in a forward exchange still in flight"):
        ex.start_reverse("sum", ["cell"])
    ex.wait()
    ex.reverse("sum")  # still usable
