"""Fixtures to run the halox programs under the MPI launcher of the build."""
import functools
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


@functools.cache
def transport_table() -> list[dict]:
    """The transports `halox-bench --list-transports` reports: name, available, reach, and whether
    it moves host memory (cuda-ipc moves device fields only: the tests here exchange host fields)."""
    exe = build_dir() / "halox-bench"
    out = subprocess.run(launcher(1) + [str(exe), "--list-transports"], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    rows = []
    for line in out.splitlines():
        name, availability, reach, *_ = line.split()
        rows.append({"name": name, "available": availability == "available", "reach": reach,
                     "host_memory": "device fields only" not in line})
    return rows


def list_transports() -> list[str]:
    """Every available transport, alone (an on-node one routes the rest by mpi-p2p)."""
    return [t["name"] for t in transport_table() if t["available"] and t["host_memory"]]


def list_routings() -> list[str]:
    """Every available LOCAL+REMOTE pair: an on-node transport with a message transport."""
    table = [t for t in transport_table() if t["available"] and t["host_memory"]]
    return [f"{l['name']}+{r['name']}" for l in table if l["reach"] == "same-node"
            for r in table if r["reach"] == "any-peer"]


def pytest_addoption(parser):
    parser.addoption("--random-configs", type=int,
                     default=int(os.environ.get("HALOX_RANDOM_CONFIGS", "120")),
                     help="random halox-bench configurations to verify (HALOX_RANDOM_CONFIGS)")
    parser.addoption("--random-seed", default=os.environ.get("HALOX_RANDOM_SEED", "20261123"),
                     help="seed of the random configurations, or 'random' (HALOX_RANDOM_SEED)")


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


class RecordedRun:
    def __init__(self, completed: subprocess.CompletedProcess, codes: list[int]):
        self.codes = codes
        self.output = completed.stdout + completed.stderr

    def error_lines(self, prog: str) -> list[str]:
        return [l for l in self.output.splitlines() if l.startswith(f"{prog}: error:")]


def run_recording_exit_codes(ranks: int, program: str, args: list[str], tmp_path,
                             timeout: float = 60) -> RecordedRun:
    """Runs program on `ranks` ranks, each under a shell that records the program's own exit
    code and then exits 0, so that the launcher does not end the other ranks before they have
    recorded theirs. A hang fails the test."""
    exe = build_dir() / program
    if not exe.exists():
        pytest.fail(f"{exe} is not built")
    record = 'exe="$1"; dir="$2"; shift 2; "$exe" "$@"; echo $? > "$dir/rank.$$"'
    try:
        completed = subprocess.run(
            launcher(ranks) + ["sh", "-c", record, "sh", str(exe), str(tmp_path), *args],
            capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{program} {' '.join(args)} hung for {timeout} s")
    codes = [int(p.read_text()) for p in tmp_path.glob("rank.*")]
    return RecordedRun(completed, codes)


@pytest.fixture(autouse=True)
def _no_cartex_peers_unless_asked(monkeypatch):
    """HALOX_CARTEX adds the real cartex programs to every sweep; the tests that want them set
    it themselves (test_peers.py reads the test run's value at import)."""
    monkeypatch.delenv("HALOX_CARTEX", raising=False)


# Shared-memory files of the MPI libraries' on-node transports (Open MPI's vader BTL). A job
# killed with SIGKILL cannot remove its own.
MPI_SEGMENT_PREFIXES = ("vader_segment.",)


def files_mapped_by_processes(directory: str) -> set[str]:
    mapped = set()
    for maps in pathlib.Path("/proc").glob("[0-9]*/maps"):
        try:
            text = maps.read_text()
        except OSError:  # the process ended, or is not ours to read
            continue
        mapped.update(line.split(maxsplit=5)[5] for line in text.splitlines()
                      if directory in line and len(line.split(maxsplit=5)) == 6)
    return mapped


@pytest.fixture
def killed_jobs_segments_removed():
    """For a test that kills MPI jobs: the segments that appeared in /dev/shm while it ran and
    that no process maps any more are removed afterwards (those of jobs still running, and any
    that were there before, are left alone). Yields the function that removes them, which
    returns what it removed."""
    shm = pathlib.Path("/dev/shm")
    before = set(shm.iterdir())

    def remove() -> list[pathlib.Path]:
        mapped = files_mapped_by_processes(str(shm))
        stale = [p for p in set(shm.iterdir()) - before
                 if p.name.startswith(MPI_SEGMENT_PREFIXES) and str(p) not in mapped]
        for path in stale:
            path.unlink(missing_ok=True)
        return stale

    yield remove
    remove()
