"""halox: halo exchange on numpy fields over MPI, and sweeps and reports over the
results of the halox benchmarks.

    from mpi4py import MPI
    import numpy as np
    import halox

    decomp = halox.Decomposition(MPI.COMM_WORLD, dims=(0, 0, 0), periodic=(True, False, True))
    sub = decomp.subdomain(global_domain=(200, 180, 160))
    grid = halox.Grid(sub.extent, halo=2)
    u = grid.zeros(np.float64)                  # shape (z, y, x), halo included
    ex = halox.HaloExchange(decomp, grid, [u], algorithm="staged")
    ex.exchange()

The compiled bindings (halox._core) load on first use, so the sweep and report
tools do not load MPI.
"""

_BINDINGS = (
    "Decomposition", "Subdomain", "Grid", "Field", "HaloExchange", "UsageError", "RunError",
    "transports", "algorithms", "field_groupings", "default_transport", "mpi_library_version",
    "cuda_built", "cuda_unavailable",
)

__all__ = list(_BINDINGS)


def __getattr__(name: str):
    if name in _BINDINGS:
        from . import _core

        return getattr(_core, name)
    raise AttributeError(f"module 'halox' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_BINDINGS))
