"""CuPy fields (__cuda_array_interface__) under mpiexec with 1, 2 and 4 ranks
sharing the GPUs. Skipped without CuPy, without a GPU, or where halox was
built without CUDA (tests/python/mpi/bad_arrays.py checks the refusal)."""
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import launcher

cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
try:
    GPUS, WHY = cupy.cuda.runtime.getDeviceCount(), "no CUDA device"
except Exception as error:  # no driver
    GPUS, WHY = 0, f"no GPU ({error})"
if GPUS == 0:
    pytest.skip(WHY, allow_module_level=True)

import halox  # noqa: E402

if not halox.cuda_built:
    pytest.skip("halox was built without CUDA", allow_module_level=True)

MPI_TESTS = pathlib.Path(__file__).resolve().parent / "mpi"


@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_cupy_fields_under_mpiexec(ranks):
    done = subprocess.run(launcher(ranks) + [sys.executable, "-m", "pytest", "-q", "--color=no",
                                             "-p", "no:cacheprovider",
                                             str(MPI_TESTS / "cupy_exchange.py")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert len(re.findall(r"\d+ passed", done.stdout)) == ranks, done.stdout[-3000:]
