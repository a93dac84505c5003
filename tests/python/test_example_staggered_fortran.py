"""The Fortran staggered mini-app (examples/staggered/hydro3d.f90: CloverLeaf's
field extents and update_halo subsets at depths 1 and 2) gives the 1-rank
digest of every owned point on 2 and 4 ranks, open and periodic, with its
exchanges through halox and written as CloverLeaf writes them."""
import re

import pytest

from conftest import build_dir

PROGRAM = "halox-example-hydro3d-fortran"
N, STEPS = 12, 4


def digest(run_mpi, ranks: int, boundary: str, way: str) -> str:
    run = run_mpi(ranks, PROGRAM, str(N), str(STEPS), boundary, way)
    assert run.returncode == 0, run.stdout + run.stderr
    line = next(l for l in run.stdout.splitlines() if l.startswith("hydro3d "))
    assert f"n={N} steps={STEPS} boundary={boundary}" in line
    # the ranks' own grid, then the sums
    return re.sub(r" dims=\S+", "", line)


@pytest.mark.parametrize("boundary", ["open", "periodic"])
def test_hydro3d_digest_is_the_one_rank_digest_either_way(run_mpi, boundary):
    if not (build_dir() / PROGRAM).exists():
        pytest.skip(f"{PROGRAM} is not built (no Fortran compiler or HALOX_FORTRAN=OFF)")
    serial = digest(run_mpi, 1, boundary, "halox")
    assert "xvel=0:0" not in serial  # the nodes moved
    for ranks in (1, 2, 4):
        for way in ("halox", "cloverleaf"):
            if (ranks, way) != (1, "halox"):
                assert digest(run_mpi, ranks, boundary, way) == serial, f"{ranks} ranks, {way}"
