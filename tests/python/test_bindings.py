"""The Python bindings (halox._core) under mpiexec with 1 to 4 ranks, and the
numpy heat example against the C++ one."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import ROOT, build_dir, launcher, mpi_flavor

MPI_TESTS = pathlib.Path(__file__).resolve().parent / "mpi"


def run(ranks: int, args: list[str], timeout: float) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    # MPICH busy-polls: oversubscribed runs take a reduced matrix.
    if mpi_flavor() == "mpich" and ranks > (os.cpu_count() or 1):
        env["HALOX_TEST_MATRIX"] = "reduced"
    return subprocess.run(launcher(ranks) + args, capture_output=True, text=True,
                          timeout=timeout, env=env)


# 16 s at 2 ranks, 38 s at 3 and 4 (2 cores): the quick tier takes one rank.
@pytest.mark.parametrize("ranks", [1, *(pytest.param(r, marks=pytest.mark.slow) for r in (2, 3, 4))])
def test_bindings_under_mpiexec(ranks):
    # Every rank runs the same tests in the same order; their checks are agreed on.
    done = run(ranks, [sys.executable, "-m", "pytest", "-q", "--color=no", "-p", "no:cacheprovider",
                       str(MPI_TESTS / "halo_bindings.py"), str(MPI_TESTS / "bad_arrays.py")],
               timeout=600)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert len(re.findall(r"\d+ passed", done.stdout)) == ranks, done.stdout[-3000:]


# Fields at their own locations, halos and dtypes; a few seconds at each size.
@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_staggered_fields_under_mpiexec(ranks, script="staggered_fields.py"):
    done = run(ranks, [sys.executable, "-m", "pytest", "-q", "--color=no", "-p", "no:cacheprovider",
                       str(MPI_TESTS / script)], timeout=300)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert len(re.findall(r"\d+ passed", done.stdout)) == ranks, done.stdout[-3000:]


# Reverse calls on fields of every location; a few seconds at each size.
@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_reverse_fields_under_mpiexec(ranks):
    test_staggered_fields_under_mpiexec(ranks, "reverse_fields.py")


def heat3d_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [l for l in done.stdout.splitlines() if l.startswith("heat3d ")]
    assert len(lines) == 1, done.stdout
    return lines[0]


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_heat3d_py_prints_the_checksum_of_heat3d_cpp(ranks):
    cpp = build_dir() / "halox-example-heat3d"
    if not cpp.exists():
        pytest.fail(f"{cpp} is not built")
    expected = heat3d_line(run(ranks, [str(cpp), "20", "12"], timeout=120))
    found = heat3d_line(run(ranks, [sys.executable, str(ROOT / "examples/stencil/heat3d.py"),
                                    "20", "12"], timeout=120))
    assert found == expected
