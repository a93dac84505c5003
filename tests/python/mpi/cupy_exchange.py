"""Run under mpiexec (tests/python/test_cupy.py does): CuPy fields exchanged
on the GPU by every device transport and algorithm, verified against the
numpy exchange of the same values."""
import cupy
import numpy as np
import pytest
from mpi4py import MPI

import halox

comm = MPI.COMM_WORLD


def node_rank() -> int:
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    rank = node.rank
    node.Free()
    return rank


cupy.cuda.Device(node_rank() % cupy.cuda.runtime.getDeviceCount()).use()


@pytest.mark.parametrize("transport", ["mpi-p2p", "cuda-ipc"])
@pytest.mark.parametrize("algorithm", ["standard", "staged", "faces"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cupy_fields_match_numpy_fields(transport, algorithm, dtype):
    decomp = halox.Decomposition(comm, dims=(0, 0, 0), periodic=(True, False, True))
    grid = halox.Grid(decomp.subdomain(per_rank=(6, 5, 4)).extent, halo=2)
    rng = np.random.default_rng(comm.rank)
    host = [rng.standard_normal(grid.shape).astype(dtype) for _ in range(3)]
    device = [cupy.asarray(a) for a in host]
    halox.HaloExchange(decomp, grid, host, algorithm=algorithm).exchange()
    ex = halox.HaloExchange(decomp, grid, device, algorithm=algorithm, transport=transport)
    ex.start()
    ex.wait()
    for h, d in zip(host, device):
        assert np.array_equal(h, cupy.asnumpy(d))
