"""A stencil code using halox from Python: heat3d.cpp in numpy.

Explicit 7-point heat diffusion on a periodic global grid, the exchange
overlapped with the interior update. Prints the same checksum as heat3d.cpp
for the same size, steps and number of ranks (the same arithmetic in the same
order, and the same reductions).

    mpiexec -n 4 python heat3d.py [global N] [steps]
"""
import math
import sys

import numpy as np
from mpi4py import MPI

import halox


def main(argv: list[str]) -> int:
    n = int(argv[1]) if len(argv) > 1 else 24
    steps = int(argv[2]) if len(argv) > 2 else 20
    decomp = halox.Decomposition(MPI.COMM_WORLD, dims=(0, 0, 0), periodic=(True, True, True))
    sub = decomp.subdomain(global_domain=(n, n, n))
    grid = halox.Grid(sub.extent, halo=1)
    u, nxt = grid.zeros(np.float64), grid.zeros(np.float64)

    # A smooth initial condition, a function of the global cell only (libm's
    # sin/cos through math, as in C++).
    (ox, oy, oz), (nx, ny, nz) = sub.offset, sub.extent
    sx = np.array([math.sin(2 * math.pi * (ox + x) / n) for x in range(nx)])
    cy = np.array([math.cos(2 * math.pi * (oy + y) / n) for y in range(ny)])
    sz = np.array([0.5 * math.sin(4 * math.pi * (oz + z) / n) for z in range(nz)])
    u[grid.interior] = sx[None, None, :] * cy[None, :, None] + sz[:, None, None]

    # Faces are all a 7-point stencil needs; two exchangers swap roles each step.
    options = dict(algorithm="faces", grouping="compact", transport="mpi-p2p")
    exchanges = {id(u): halox.HaloExchange(decomp, grid, [u], **options),
                 id(nxt): halox.HaloExchange(decomp, grid, [nxt], **options)}

    alpha = 0.1

    def update(a, out, z0, z1, y0, y1, x0, x1):
        """out = a + alpha * laplacian(a) on interior cells [z0, z1) x [y0, y1) x [x0, x1)."""
        if z0 >= z1 or y0 >= y1 or x0 >= x1:
            return
        c = (slice(z0 + 1, z1 + 1), slice(y0 + 1, y1 + 1), slice(x0 + 1, x1 + 1))

        def at(dx, dy, dz):
            return a[c[0].start + dz:c[0].stop + dz, c[1].start + dy:c[1].stop + dy,
                     c[2].start + dx:c[2].stop + dx]

        out[c] = at(0, 0, 0) + alpha * (at(1, 0, 0) + at(-1, 0, 0) + at(0, 1, 0) + at(0, -1, 0)
                                        + at(0, 0, 1) + at(0, 0, -1) - 6 * at(0, 0, 0))

    for step in range(steps):
        a, out = (u, nxt) if step % 2 == 0 else (nxt, u)
        exchange = exchanges[id(a)]
        exchange.start()
        update(a, out, 1, nz - 1, 1, ny - 1, 1, nx - 1)  # cells that need no halo
        exchange.wait()
        # The boundary shell: z planes, then y rows, then x columns of what is left
        # (an update of an empty range does nothing).
        update(a, out, 0, 1, 0, ny, 0, nx)
        update(a, out, max(nz - 1, 1), nz, 0, ny, 0, nx)
        update(a, out, 1, nz - 1, 0, 1, 0, nx)
        update(a, out, 1, nz - 1, max(ny - 1, 1), ny, 0, nx)
        update(a, out, 1, nz - 1, 1, ny - 1, 0, 1)
        update(a, out, 1, nz - 1, 1, ny - 1, max(nx - 1, 1), nx)

    final = (u if steps % 2 == 0 else nxt)[grid.interior].ravel()
    # Sequential sums in the C++ loop order (cumsum, not numpy's pairwise sum).
    local = np.array([np.cumsum(final)[-1], np.cumsum(final * final)[-1]])
    total = np.empty(2)
    for i in range(2):  # two reductions of one double each, as heat3d.cpp
        MPI.COMM_WORLD.Allreduce(local[i:i + 1], total[i:i + 1], op=MPI.SUM)
    if decomp.rank == 0:
        print(f"heat3d n={n} steps={steps} sum={total[0]:.10e} norm2={total[1]:.10e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
