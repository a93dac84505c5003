"""Fixtures to run the halox programs under the MPI launcher of the build."""
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def build_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("HALOX_BUILD_DIR", ROOT / "build" / "openmpi"))


def mpi_flavor() -> str:
    return os.environ.get("HALOX_MPI", "openmpi")


def launcher(ranks: int, bind: bool = False) -> list[str]:
    """The mpiexec prefix for `ranks` processes (oversubscribed when needed)."""
    if mpi_flavor() == "openmpi":
        exe = shutil.which("mpiexec.openmpi") or "mpiexec"
        cmd = [exe, "--allow-run-as-root", "--oversubscribe", "--mca", "mpi_yield_when_idle", "1"]
        cmd += ["--bind-to", "core"] if bind else ["--bind-to", "none"]
    else:
        exe = shutil.which("mpiexec.mpich") or "mpiexec"
        cmd = [exe] + (["-bind-to", "core"] if bind else [])
    return cmd + ["-n", str(ranks)]


class MpiRun:
    def __init__(self, completed: subprocess.CompletedProcess):
        self.returncode = completed.returncode
        self.stdout = completed.stdout
        self.stderr = completed.stderr

    def error_lines(self, prog: str) -> list[str]:
        """The lines the program itself printed as errors (launcher noise excluded)."""
        return [l for l in (self.stdout + self.stderr).splitlines() if l.startswith(f"{prog}: error:")]


@pytest.fixture
def run_mpi():
    """run_mpi(ranks, program, *args, timeout=120) -> MpiRun."""

    def run(ranks: int, program: str, *args: str, timeout: float = 120, env=None) -> MpiRun:
        exe = build_dir() / program
        if not exe.exists():
            pytest.fail(f"{exe} is not built")
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        completed = subprocess.run(
            launcher(ranks) + [str(exe), *args],
            capture_output=True, text=True, timeout=timeout, env=full_env,
        )
        return MpiRun(completed)

    return run
