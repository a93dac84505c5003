"""A small /dev/shm (a container's 64 MiB default) gets a clear error or a
fallback, never an abort: run under a private 64 MiB tmpfs (unshare -m)."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import build_dir, launcher

pytestmark = [
    pytest.mark.root,
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="mounting a private /dev/shm needs root"),
    pytest.mark.skipif(shutil.which("unshare") is None, reason="unshare (util-linux) is missing"),
]

# 4 ranks x 8 fields of 74^3 doubles: about 104 MB of node-shared fields.
BIG = ["--halo", "5", "--nfields", "8", "--nrep", "3", "--warmup", "1", "--quiet"]


def run_in_small_shm(*args: str, ranks: int = 4) -> subprocess.CompletedProcess:
    exe = build_dir() / "halox-bench"
    command = " ".join(launcher(ranks) + [str(exe), *args])
    script = f"mount -t tmpfs -o size=64m tmpfs /dev/shm && exec {command}"
    completed = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True,
                               text=True, timeout=300)
    if "mount:" in completed.stderr and "permission denied" in completed.stderr.lower():
        pytest.skip("this machine does not allow mounting a tmpfs in a mount namespace")
    return completed


def test_explicit_shared_memory_that_does_not_fit_is_one_clear_error():
    run = run_in_small_shm("--transport", "shm", "--memory", "shared", *BIG)
    errors = [l for l in (run.stdout + run.stderr).splitlines()
              if l.startswith("halox-bench: error:")]
    assert run.returncode != 0
    assert len(errors) == 1, run.stdout + run.stderr
    line = errors[0]
    for part in ("/dev/shm", "MB free", "need", "--memory private", "enlarge /dev/shm"):
        assert part in line, line
    assert "MPI_ERR" not in run.stdout + run.stderr and "Bus error" not in run.stderr


@pytest.mark.parametrize("transport", ["shm", "auto"])
def test_automatic_memory_falls_back_to_private_and_says_so(transport, tmp_path):
    record = tmp_path / "r.jsonl"
    run = run_in_small_shm("--transport", transport, *BIG, "--json", str(record))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "--memory auto takes private memory instead" in run.stdout
    rows = [json.loads(l) for l in record.read_text().splitlines()]
    assert rows and all(r["config"]["memory"] == "private" for r in rows)
    assert all("/dev/shm" in r["config"]["memory_fallback"] for r in rows)
