"""No wait spins forever: a peer that never arrives is a timeout error naming it, and a rank
killed with kill -9 in the middle of exchanges ends the job."""
import os
import pathlib
import signal
import subprocess
import time

import pytest

from conftest import build_dir, launcher, list_routings, list_transports

PROBE = "halox-test-peer-timeout"

# Each case waits for a timeout or a kill on purpose (4 to 6 s each, 45 s in all).
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("transport", list_transports() + list_routings()[:1])
def test_a_peer_that_never_arrives_is_a_timeout_naming_it(transport):
    exe = build_dir() / PROBE
    start = time.monotonic()
    run = subprocess.run(launcher(2) + [str(exe), transport, "2", "20"], capture_output=True,
                         text=True, timeout=120)
    elapsed = time.monotonic() - start
    output = run.stdout + run.stderr
    assert run.returncode != 0, output
    lines = [l for l in output.splitlines() if l.startswith(f"{PROBE}: error:")]
    assert lines, output
    assert "rank 0: nothing arrived for 2 s while waiting for" in lines[0], lines[0]
    assert "rank 1" in lines[0], lines[0]
    # The job ended at the timeout, not when the sleeping rank woke up.
    assert elapsed < 18, (elapsed, output)


def descendants(pid: int) -> list[int]:
    children = []
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        children += [int(c) for c in text]
    out = list(children)
    for c in children:
        try:
            out += descendants(c)
        except FileNotFoundError:
            pass
    return out


def shm_entries() -> set[str]:
    # Open MPI's own transport segments are its business, not halox's.
    return {p.name for p in pathlib.Path("/dev/shm").iterdir()
            if not p.name.startswith("vader_segment")}


@pytest.mark.parametrize("transport", [t for t in list_transports() if t in ("shm", "mpi-p2p")])
def test_kill_9_of_one_rank_ends_the_job(transport):
    before = shm_entries()
    exe = build_dir() / "halox-bench"
    job = subprocess.Popen(
        launcher(2) + [str(exe), "--transport", transport, "--memory", "shared", "--no-check",
                       "--nrep", "100000000", "--timeout", "30", "--domain", "16", "16", "16"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        time.sleep(3)  # well inside the exchanges
        ranks = []
        for pid in descendants(job.pid):
            try:
                if "halox-bench" in pathlib.Path(f"/proc/{pid}/cmdline").read_text():
                    ranks.append(pid)
            except FileNotFoundError:
                pass
        assert len(ranks) == 2, ranks
        os.kill(ranks[-1], signal.SIGKILL)
        job.wait(timeout=60)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
            pytest.fail("the job outlived the killed rank by 60 s")
    assert job.returncode != 0
    for pid in ranks:
        assert not pathlib.Path(f"/proc/{pid}").exists() or \
            "zombie" in pathlib.Path(f"/proc/{pid}/status").read_text(), f"rank {pid} survives"
    time.sleep(1)
    assert shm_entries() <= before, shm_entries() - before
