"""The Fortran and C stencil codes (examples/stencil/heat3d.f90, heat3d.c) give
the same answer on any number of ranks, bit for bit, with several transports."""
import pytest

from conftest import build_dir, list_transports

N, STEPS = 12, 6
# (transport, rank counts): every transport against the 1-rank run.
FORTRAN_RUNS = [("mpi-p2p", [2, 4, 8]), ("shm", [2, 4]), ("mpi-neighbor", [2]), ("cma", [4])]


def built(program: str):
    if not (build_dir() / program).exists():
        pytest.skip(f"{program} is not built (no Fortran compiler or HALOX_FORTRAN=OFF)")


def final_field(run_mpi, tmp_path, ranks: int, transport: str) -> bytes:
    out = tmp_path / f"field-{transport}-{ranks}.bin"
    run = run_mpi(ranks, "halox-example-heat3d-fortran", str(N), str(STEPS), transport, str(out))
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"heat3d n={N} steps={STEPS} sum=" in run.stdout
    field = out.read_bytes()
    assert len(field) == 8 * N**3
    return field


@pytest.mark.parametrize("transport,rank_counts", FORTRAN_RUNS, ids=[t for t, _ in FORTRAN_RUNS])
def test_fortran_heat3d_field_is_the_one_rank_field_bit_for_bit(run_mpi, tmp_path, transport,
                                                                 rank_counts):
    built("halox-example-heat3d-fortran")
    if transport not in list_transports():
        pytest.skip(f"{transport} is not available here")
    serial = final_field(run_mpi, tmp_path, 1, "mpi-p2p")
    assert len(set(serial)) > 16  # not a trivial field
    for ranks in rank_counts:
        assert final_field(run_mpi, tmp_path, ranks, transport) == serial, f"{ranks} ranks"


@pytest.mark.parametrize("transport", ["mpi-p2p", "shm"])
def test_c_heat3d_checksum_is_the_one_rank_checksum(run_mpi, transport):
    built("halox-example-heat3d-c")
    runs = [run_mpi(ranks, "halox-example-heat3d-c", str(N), str(STEPS), transport)
            for ranks in (1, 2)]
    for run in runs:
        assert run.returncode == 0, run.stdout + run.stderr
    lines = [next(l for l in run.stdout.splitlines() if l.startswith("heat3d")) for run in runs]
    assert lines[0] == lines[1]
    assert "sum=0.00000000000000000e+00 norm2=0.0" not in lines[0]
