"""Run under mpiexec (tests/python/test_bindings.py does): every wrong field
raises a ValueError that names what was expected, with the same message on
every rank, whether one rank or all hold the bad array, and nobody hangs."""
import numpy as np
import pytest
from mpi4py import MPI

import halox

comm = MPI.COMM_WORLD


@pytest.fixture(scope="module")
def setup():
    decomp = halox.Decomposition(comm, dims=(0, 0, 0), periodic=(True, False, True))
    sub = decomp.subdomain(per_rank=(5, 4, 3))
    return decomp, halox.Grid(sub.extent, halo=1)


def readonly(a):
    a.setflags(write=False)
    return a


# name -> (make the bad fields from (grid, good field), what the message says)
CASES = {
    "shape": (lambda g, u: [u, np.zeros(g.shape[::-1])], "expected shape (z, y, x) = (5, 6, 7)"),
    "interior-only": (lambda g, u: [np.zeros((3, 4, 5))], "halo included"),
    "dtype": (lambda g, u: [np.zeros(g.shape, dtype=np.int64)],
              "expected dtype float32 or float64 (native byte order), got int64"),
    "mixed-dtypes": (lambda g, u: [u, g.zeros(np.float32)],
                     "expected dtype float64 like field 0, got float32"),
    "byte-order": (lambda g, u: [np.zeros(g.shape, dtype=">f8")], "native byte order"),
    "non-contiguous": (lambda g, u: [np.zeros(g.shape[:2] + (2 * g.shape[2],))[:, :, ::2]],
                       "expected a C-contiguous array (x fastest), got a non-contiguous view"),
    "fortran-order": (lambda g, u: [np.zeros(g.shape, order="F")],
                      "expected a C-contiguous array (x fastest), got a Fortran-ordered array"),
    "read-only": (lambda g, u: [readonly(g.zeros())], "expected a writeable array"),
    "not-an-array": (lambda g, u: [u.tolist()], "expected a numpy.ndarray, got <class 'list'>"),
    "no-fields": (lambda g, u: [], "expected at least one field"),
}


@pytest.mark.parametrize("who", ["all-ranks", "last-rank"])
@pytest.mark.parametrize("case", CASES)
def test_bad_fields_raise_the_same_value_error_everywhere(setup, case, who):
    decomp, grid = setup
    good = grid.zeros(np.float64)
    make, says = CASES[case]
    bad_here = who == "all-ranks" or comm.rank == comm.size - 1
    fields = make(grid, good) if bad_here else [good]
    if case == "mixed-dtypes" and not bad_here:
        fields = [good, grid.zeros(np.float64)]
    with pytest.raises(ValueError) as error:
        halox.HaloExchange(decomp, grid, fields)
    message = str(error.value)
    assert says in message
    assert len(set(comm.allgather(message))) == 1


@pytest.mark.parametrize("option,value,says", [
    ("algorithm", "diagonal", "unknown algorithm 'diagonal'"),
    ("grouping", "packed", "unknown field grouping 'packed'"),
    ("transport", "carrier-pigeon", "unknown transport 'carrier-pigeon'"),
])
def test_bad_options_raise_value_error(setup, option, value, says):
    decomp, grid = setup
    with pytest.raises(ValueError, match=says):
        halox.HaloExchange(decomp, grid, [grid.zeros()], **{option: value})


def test_halo_wider_than_a_subdomain_fails_on_every_rank():
    # Only the last rank's sub-domain is too thin for the halo.
    decomp = halox.Decomposition(comm, dims=(comm.size, 1, 1))
    thin = 1 if comm.rank == comm.size - 1 else 4
    grid = halox.Grid((thin, 4, 4), halo=2)
    with pytest.raises(ValueError, match="wider than the sub-domain"):
        halox.HaloExchange(decomp, grid, [grid.zeros()])


def test_bad_grid_and_subdomain_arguments(setup):
    decomp, _ = setup
    with pytest.raises(ValueError, match="expected global_domain=.* or per_rank="):
        decomp.subdomain()
    with pytest.raises(ValueError, match=r"extent: expected 3 integers \(x, y, z\)"):
        halox.Grid((4, 4))
    with pytest.raises(ValueError, match="not both"):
        halox.Grid((4, 4, 4), halo=1, halo_lo=(1, 1, 1), halo_hi=(1, 1, 1))
    with pytest.raises(ValueError, match="float32 or float64"):
        halox.Grid((4, 4, 4)).zeros(np.int32)


def test_exchanges_work_after_the_errors(setup):
    decomp, grid = setup
    u = grid.zeros()
    u[grid.interior] = comm.rank + 1
    ex = halox.HaloExchange(decomp, grid, [u])
    ex.exchange()
    assert comm.allreduce(bool(np.all(u[grid.interior] == comm.rank + 1)), op=MPI.LAND)
    with pytest.raises(RuntimeError):
        ex.wait()  # wait without start


class HostArrayPosingAsCuda:
    """Host memory behind a __cuda_array_interface__: what a CUDA array looks like to halox."""

    def __init__(self, a, typestr=None):
        self.keep = a
        self.__cuda_array_interface__ = {"shape": a.shape, "typestr": typestr or a.dtype.str,
                                         "data": (a.ctypes.data, False), "strides": None,
                                         "version": 3}


def test_cuda_arrays_without_a_usable_gpu_raise_the_reason(setup):
    decomp, grid = setup
    why = halox.cuda_unavailable()
    if not why:
        pytest.skip("a GPU is usable here: tests/python/test_cupy.py exchanges CuPy arrays")
    with pytest.raises(ValueError) as error:
        halox.HaloExchange(decomp, grid, [HostArrayPosingAsCuda(grid.zeros())])
    assert why in str(error.value)


def test_cuda_and_host_arrays_do_not_mix(setup):
    decomp, grid = setup
    with pytest.raises(ValueError, match="1 of 2 are CUDA arrays, the others not"):
        halox.HaloExchange(decomp, grid, [grid.zeros(), HostArrayPosingAsCuda(grid.zeros())])


def test_cuda_arrays_of_other_types_are_refused(setup):
    decomp, grid = setup
    if not halox.cuda_built:
        pytest.skip("halox was built without CUDA: every CUDA array is refused for that")
    with pytest.raises(ValueError, match="expected a CUDA array of float32 or float64"):
        halox.HaloExchange(decomp, grid, [HostArrayPosingAsCuda(np.zeros(grid.shape, dtype=np.int32))])
