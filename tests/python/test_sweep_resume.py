"""`halox sweep` when things go wrong: a sweep killed with kill -9 (its whole process group)
resumes without losing or repeating a record; a run that fails or hangs is recorded and the
sweep goes on; records left by a killed run are kept and only the missing configurations run."""
import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from conftest import MPI_SEGMENT_PREFIXES, ROOT, build_dir, mpi_flavor
from halox import execution
from halox import sweep as swp

# Its result does not depend on the MPI library (CI runs it under one: docs/testing.md).
pytestmark = pytest.mark.any_mpi

MATRIX = """
    [matrix]
    halo = [1]
    nfields = [1, 2]
    transport = ["mpi-p2p", "mpi-types"]
    algorithm = ["staged"]
    grouping = ["compact"]
"""


def halox_argv(*args):
    return [sys.executable, "-m", "halox.cli", *map(str, args)]


def halox(*args, timeout=600):
    return subprocess.run(halox_argv(*args), capture_output=True, text=True, timeout=timeout)


def write_spec(tmp_path, text, name="spec.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def lines_of(path):
    text = path.read_text()
    assert text == "" or text.endswith("\n"), "a partial last line"
    return text.splitlines()


def config(record):
    c = record["config"]
    return (c["transport"], c["algorithm"], c["grouping"], c["halo"], c["nfields"])


def measurements(lines):
    return [r for r in map(json.loads, lines) if r["tool"] == "halox-bench"]


def marks(lines):
    return [r for r in map(json.loads, lines) if r["tool"] == "halox-sweep"
            and r["event"] == "complete"]


def session_processes(sid):
    alive = []
    for p in psutil.process_iter(["pid", "status"]):
        try:
            if os.getsid(p.pid) == sid and p.info["status"] != psutil.STATUS_ZOMBIE:
                alive.append(p)
        except (ProcessLookupError, PermissionError):
            pass
    return alive


def benchmarks_writing(scratch):
    """halox-bench processes started with --json SCRATCH (the scratch file; MPICH's launcher starts its ranks in
    sessions of their own)."""
    found = []
    for p in psutil.process_iter(["name", "cmdline"]):
        if p.info["name"] == "halox-bench" and scratch in (p.info["cmdline"] or []):
            found.append(p)
    return found


def wait_for(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


@pytest.mark.slow
def test_kill_9_of_the_process_group_then_resume(tmp_path, killed_jobs_segments_removed):
    spec = write_spec(tmp_path, f"""
        [sweep]
        name = "killed"
        ranks = 2
        mpi = "{mpi_flavor()}"
        [[sweep.run]]
        name = "a"
        args = ["--mpicart", "2", "1", "1", "--nrep", "20"]
        [[sweep.run]]
        name = "b"                  # 4 configurations x 1.5 s: killed in flight
        args = ["--mpicart", "1", "1", "2", "--time", "1.5"]
        [[sweep.run]]
        name = "c"
        args = ["--mpicart", "2", "1", "1", "--nrep", "20", "--timing", "latency"]
        {MATRIX}
        [bench]
        domain = [16, 16, 16]
        warmup = 1
        quiet = true
    """)
    shm_before = set(pathlib.Path("/dev/shm").iterdir())
    out = tmp_path / "results" / "killed.jsonl"
    work = out.parent / "killed.sweep"
    log = (tmp_path / "sweep.log").open("w")
    sweep = subprocess.Popen(halox_argv("sweep", spec, "--output", out, "--build-dir",
                                        build_dir()),
                             stdout=log, stderr=log, start_new_session=True)
    try:
        # Run "a" recorded and "b" under way: kill everything, as a batch system does.
        wait_for(lambda: out.exists() and marks(lines_of(out)), 180, "run a to finish")
        launch_b = work / f"killed.{mpi_flavor()}.b.1.launch"
        wait_for(launch_b.exists, 60, "run b to start")
        # Its benchmark processes started: they write their records only at the end, seconds
        # from now.
        scratch_b = str(launch_b.with_suffix(".jsonl"))
        wait_for(lambda: benchmarks_writing(scratch_b), 60, "run b's halox-bench processes")
        time.sleep(0.5)
        os.killpg(sweep.pid, signal.SIGKILL)
        sweep.wait(timeout=30)
    finally:
        if sweep.poll() is None:
            os.killpg(sweep.pid, signal.SIGKILL)
    wait_for(lambda: not session_processes(sweep.pid), 10,
             "every process of the killed sweep to be gone")

    before = lines_of(out)  # whole lines only
    recorded = [(r["sweep"]["run"], config(r)) for r in measurements(before)]
    assert len(recorded) == len(set(recorded))
    done = [m["sweep"]["run"] for m in marks(before)]
    assert "a" in done and "c" not in done  # killed in flight

    again = halox("sweep", spec, "--output", out, "--build-dir", build_dir())
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"({len(done)} of 3 runs were recorded already)" in again.stdout
    after = lines_of(out)
    assert after[:len(before)] == before  # nothing rewritten
    final = [(r["sweep"]["run"], config(r)) for r in measurements(after)]
    assert sorted(final) == sorted({(run, c) for run in "abc" for c in [
        (t, "staged", "compact", 1, n) for t in ("mpi-p2p", "mpi-types") for n in (1, 2)]})
    assert sorted(m["sweep"]["run"] for m in marks(after)) == ["a", "b", "c"]
    # A third time: nothing left to do.
    third = halox("sweep", spec, "--output", out, "--build-dir", build_dir())
    assert third.returncode == 0 and "0 records appended" in third.stdout
    assert lines_of(out) == after
    # The killed job's shared memory does not outlive the test.
    killed_jobs_segments_removed()
    assert not [p for p in pathlib.Path("/dev/shm").iterdir()
                if p.name.startswith(MPI_SEGMENT_PREFIXES) and p not in shm_before]


def test_records_of_a_killed_run_are_kept_and_only_the_rest_runs(tmp_path):
    spec = write_spec(tmp_path, f"""
        [sweep]
        name = "partial"
        ranks = 2
        mpi = "{mpi_flavor()}"
        {MATRIX}
        [bench]
        domain = [8, 8, 8]
        nrep = 5
        warmup = 1
        quiet = true
    """)
    out = tmp_path / "partial.jsonl"
    plan = swp.make_plan(spec, output=str(out), build_dir=str(build_dir()))
    [inv] = plan.invocations
    # What a run killed while writing leaves: two whole records and a cut one.
    whole = tmp_path / "whole.jsonl"
    run = subprocess.run([str(ROOT / "scripts" / "mpirun.sh"), "2", str(plan.executable),
                          *inv.program_args(), "--json", str(whole)],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "HALOX_MPI": mpi_flavor()})
    assert run.returncode == 0, run.stderr
    records = whole.read_text().splitlines()
    kept = [l for l in records if json.loads(l)["config"]["nfields"] == 1]
    cut = next(l for l in records if json.loads(l)["config"]["nfields"] == 2)
    assert len(kept) == 2
    inv.scratch.parent.mkdir(parents=True)
    inv.scratch.write_text("\n".join(kept) + "\n" + cut[:len(cut) // 2])

    done = halox("sweep", spec, "--output", out, "--build-dir", build_dir())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "resuming, 2 configuration(s) missing" in done.stderr
    final = measurements(lines_of(out))
    assert sorted(config(r) for r in final) == sorted(
        (t, "staged", "compact", 1, n) for t in ("mpi-p2p", "mpi-types") for n in (1, 2))
    old = [r for r in final if r["config"]["nfields"] == 1]
    new = [r for r in final if r["config"]["nfields"] == 2]
    assert {r["run_id"] for r in old} == {json.loads(kept[0])["run_id"]}
    # The missing configurations ran as one narrower job.
    assert len({r["run_id"] for r in new}) == 1
    assert "--nfields 2 " in new[0]["sweep"]["launch"]
    assert "--transport mpi-p2p,mpi-types " in new[0]["sweep"]["launch"]
    assert not inv.scratch.exists()


@pytest.mark.slow
def test_failing_and_hanging_runs_are_recorded_and_the_sweep_goes_on(tmp_path):
    spec = write_spec(tmp_path, f"""
        [sweep]
        name = "trouble"
        ranks = 2
        mpi = "{mpi_flavor()}"
        [[sweep.run]]
        name = "fails"
        args = ["--mpicart", "3", "1", "1"]
        [[sweep.run]]
        name = "hangs"
        args = ["--nrep", "1000000000"]
        timeout = 4
        [[sweep.run]]
        name = "works"
        [bench]
        domain = [8, 8, 8]
        nrep = 5
        quiet = true
    """)
    out = tmp_path / "trouble.jsonl"
    started = time.monotonic()
    done = halox("sweep", spec, "--output", out, "--build-dir", build_dir())
    elapsed = time.monotonic() - started
    assert done.returncode == 1, done.stdout + done.stderr
    errors = [l for l in done.stderr.splitlines() if l.startswith("halox sweep: error:")]
    assert len(errors) == 2, done.stderr
    assert errors[0].startswith("halox sweep: error: run 'fails' (1/3) failed with exit code")
    assert errors[1].startswith("halox sweep: error: run 'hangs' (2/3) timed out after 4 s")
    assert "2 run(s) failed; they are recorded in" in done.stderr
    objects = [json.loads(l) for l in lines_of(out)]
    failures = [o for o in objects if o.get("event") == "failure"]
    assert [f["sweep"]["run"] for f in failures] == ["fails", "hangs"]
    fails, hangs = failures
    assert fails["exit_status"] > 0 and not fails["timed_out"]
    assert "rank grid 3x1x1 does not fit 2 ranks" in fails["error"]
    assert hangs["timed_out"] and hangs["timeout_s"] == 4
    assert 4 <= hangs["duration_s"] < 4 + 2 * execution.KILL_GRACE_S
    assert "--nrep 1000000000" in hangs["sweep"]["launch"]
    assert elapsed < 120
    # The run after them measured and finished.
    assert [r["sweep"]["run"] for r in measurements(lines_of(out))] == ["works"]
    assert [m["sweep"]["run"] for m in marks(lines_of(out))] == ["works"]
    # The hanging job is gone, launcher and ranks.
    scratch = str(out.parent / "trouble.sweep" / f"trouble.{mpi_flavor()}.hangs.1.jsonl")
    leftovers = [p for p in psutil.process_iter(["cmdline"])
                 if scratch in " ".join(p.info["cmdline"] or [])]
    assert leftovers == []
    # Running it again retries the failed runs only.
    again = halox("sweep", spec, "--output", out, "--build-dir", build_dir(), "--timeout", "3")
    assert again.returncode == 1
    assert "(1 of 3 runs were recorded already)" in again.stdout
    assert len([o for o in map(json.loads, lines_of(out)) if o.get("event") == "failure"]) == 4


def test_product_cover_is_exact():
    points = {(t, n, h) for t in "ab" for n in (1, 2) for h in (1, 5)} - {("a", 1, 1),
                                                                        ("b", 2, 5)}
    blocks = swp.product_cover(sorted(points))
    covered = [(t, n, h) for ts, ns, hs in blocks for t in ts for n in ns for h in hs]
    assert sorted(covered) == sorted(points)  # every point once, nothing else
    assert len(blocks) < len(points)
    assert swp.product_cover([]) == []
    assert swp.product_cover([("x", 1), ("y", 1)]) == [(["x", "y"], [1])]


def test_failure_summary_names_the_crash_not_the_ranks_killed_after_it(tmp_path):
    err = tmp_path / "run.err"
    err.write_text("some warning\n"
                   "srun: error: hosta: tasks 0-1: Segmentation fault (core dumped)\n"
                   "srun: error: hostb: tasks 2-3: Killed\n")
    out = tmp_path / "run.out"
    out.write_text("")
    outcome = execution.Outcome(139, False, 1.5, out, err)
    assert execution.error_summary("halox-bench", outcome) == \
        "srun: error: hosta: tasks 0-1: Segmentation fault (core dumped)"
    err.write_text("halox-bench: error: rank grid 3x1x1 does not fit 2 ranks\n"
                   "srun: error: hosta: task 0: Exited with exit code 1\n")
    assert execution.error_summary("halox-bench", outcome) == \
        "halox-bench: error: rank grid 3x1x1 does not fit 2 ranks"
    err.write_text("last words\n")
    assert execution.error_summary("halox-bench", outcome) == "last words"
