"""`halox sweep` under a real Slurm: the batch script of --emit-sbatch run by `sbatch --wait`,
and `--launcher srun` inside `salloc`. scripts/slurm-local.sh starts a one-node cluster on this
host (munged, slurmctld, slurmd as root); where it cannot, the tests are skipped with its
reason (HALOX_REQUIRE_SLURM=1 turns that into a failure)."""
import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, build_dir, mpi_flavor

EXAMPLES = ROOT / "examples" / "sweeps"

# slurm-local.sh starts munged, slurmctld and slurmd as root.
pytestmark = [pytest.mark.slurm, pytest.mark.root]


SLURM_LOCAL = ROOT / "scripts" / "slurm-local.sh"


def daemon_pids(folder: pathlib.Path, daemons: list[str]) -> dict[str, int]:
    """The pids of the named daemons of slurm-local.sh's cluster (from its pid files)."""
    pids = {}
    for daemon in daemons:
        pidfile = folder / f"{daemon}.pid"
        text = pidfile.read_text().strip() if pidfile.exists() else ""
        if text.isdigit():
            pids[daemon] = int(text)
    return pids


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@pytest.fixture(scope="module")
def slurm_env():
    """The one-node cluster, for this module; the daemons it had to start are stopped when the
    module ends, passed or failed, and only those (a cluster or a munged that was running
    already is left running)."""
    started = subprocess.run([str(SLURM_LOCAL), "start"], capture_output=True, text=True,
                             timeout=180)
    if started.returncode != 0:
        lines = started.stderr.strip().splitlines()
        reason = lines[-1] if lines else f"exit status {started.returncode}"
        if os.environ.get("HALOX_REQUIRE_SLURM") == "1":
            pytest.fail(f"Slurm did not start: {reason}")
        pytest.skip(f"Slurm cannot start here: {reason}")
    *lines, conf = started.stdout.strip().splitlines()
    daemons = [line.split(":", 1)[1].split() for line in lines if line.startswith("started:")]
    assert daemons, f"slurm-local.sh start did not say what it started: {started.stdout!r}"
    pids = daemon_pids(pathlib.Path(conf).parent, daemons[0])
    assert set(pids) == set(daemons[0]), f"no pid file for some of {daemons[0]}: {pids}"
    yield {**os.environ, "SLURM_CONF": conf}
    if daemons[0]:
        stopped = subprocess.run([str(SLURM_LOCAL), "stop", *daemons[0]], capture_output=True,
                                 text=True, timeout=60)
        assert stopped.returncode == 0, stopped.stderr
        left = {daemon: pid for daemon, pid in pids.items() if running(pid)}
        assert not left, f"still running after slurm-local.sh stop: {left}"


def write_spec(tmp_path, name):
    spec = tmp_path / f"{name}.toml"
    spec.write_text(textwrap.dedent(f"""
        [sweep]
        name = "{name}"
        ranks = 2
        mpi = "{mpi_flavor()}"
        timeout = 300
        [slurm]
        time = "00:15:00"
        job_name = "halox-test-{name}"
        [[sweep.run]]
        name = "x-split"
        args = ["--mpicart", "2", "1", "1"]
        [[sweep.run]]
        name = "z-split"
        args = ["--mpicart", "1", "1", "2"]
        [matrix]
        halo = [1]
        nfields = [1, 2]
        transport = ["mpi-p2p", "mpi-types"]
        algorithm = ["staged"]
        grouping = ["compact"]
        [bench]
        domain = [8, 8, 8]
        nrep = 20
        warmup = 1
        quiet = true
    """))
    return spec


def halox(*args, env=None, timeout=600):
    return subprocess.run([sys.executable, "-m", "halox.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env)


def check_records(out, name):
    objects = [json.loads(l) for l in out.read_text().splitlines()]
    records = [r for r in objects if r["tool"] == "halox-bench"]
    assert len(records) == 2 * 4
    assert sorted(m["sweep"]["run"] for m in objects if m.get("event") == "complete") == [
        "x-split", "z-split"]
    for r in records:
        assert r["sweep"]["name"] == name and r["sweep"]["launcher"] == "srun"
        assert re.match(rf"HALOX_MPI={mpi_flavor()} srun -n 2 --cpu-bind=cores ",
                        r["sweep"]["launch"]), r["sweep"]["launch"]
        assert r["ranks"] == 2 and r["verification"] == "passed"
        # srun --cpu-bind=cores: each rank on a core of its own.
        cpus = [entry["cpus"] for entry in r["rank_map"]]
        assert len(set(cpus)) == 2 and all(re.fullmatch(r"\d+", c) for c in cpus), cpus
    return records


def test_emitted_batch_script_runs_under_sbatch_wait_and_resumes(tmp_path, slurm_env):
    spec = write_spec(tmp_path, "batch")
    out = tmp_path / "results" / "batch.jsonl"
    script = tmp_path / "batch.sh"
    emitted = halox("sweep", spec, "--emit-sbatch", script, "--output", out,
                    "--build-dir", build_dir(), env=slurm_env)
    assert emitted.returncode == 0, emitted.stderr
    assert f"batch script written to {script}" in emitted.stdout

    job = subprocess.run(["sbatch", "--wait", "--parsable", str(script)], capture_output=True,
                         text=True, timeout=900, env=slurm_env, cwd=tmp_path)
    job_id = job.stdout.strip().split(";")[0]
    log = out.parent / f"batch-slurm-{job_id}.out"
    assert job.returncode == 0, job.stderr + (log.read_text() if log.exists() else "")
    assert "8 records appended to" in log.read_text()
    check_records(out, "batch")
    print(f"sbatch --wait job {job_id}:\n{log.read_text()}")

    # Submitted again (as after a job that hit its time limit): nothing left to run.
    before = out.read_text()
    again = subprocess.run(["sbatch", "--wait", "--parsable", str(script)], capture_output=True,
                           text=True, timeout=900, env=slurm_env, cwd=tmp_path)
    second = out.parent / f"batch-slurm-{again.stdout.strip().split(';')[0]}.out"
    assert again.returncode == 0, second.read_text()
    assert "0 records appended" in second.read_text()
    assert "(2 of 2 runs were recorded already)" in second.read_text()
    assert out.read_text() == before


def test_launcher_srun_inside_salloc(tmp_path, slurm_env):
    spec = write_spec(tmp_path, "alloc")
    out = tmp_path / "alloc.jsonl"
    done = subprocess.run(["salloc", "-n", "2", "--time", "15", "-J", "halox-test-salloc",
                           sys.executable, "-m", "halox.cli", "sweep", str(spec),
                           "--launcher", "srun", "--output", str(out),
                           "--build-dir", str(build_dir())],
                          capture_output=True, text=True, timeout=900, env=slurm_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "salloc: Granted job allocation" in done.stderr
    assert f"8 records appended to {out}" in done.stdout
    check_records(out, "alloc")
    print(f"salloc ... halox sweep --launcher srun:\n{done.stderr}{done.stdout}")


def test_batch_script_of_the_27_node_example(tmp_path):
    """No cluster needed: the #SBATCH lines and the command of the halfcores study."""
    script = tmp_path / "halfcores.sh"
    out = tmp_path / "halfcores.jsonl"
    done = halox("sweep", EXAMPLES / "betzy-halfcores-27nodes.toml", "--emit-sbatch", script,
                 "--output", out, "--build-dir", build_dir())
    assert done.returncode == 0, done.stderr
    text = script.read_text()
    directives = re.findall(r"^#SBATCH (.*)$", text, re.M)
    assert directives == ["--job-name=halox-halfcores", "--nodes=27", "--ntasks=1728",
                          "--ntasks-per-node=64", "--cpus-per-task=2", "--time=04:00:00",
                          f"--output={tmp_path / 'halfcores-slurm-%j.out'}"]
    command = text.strip().splitlines()[-1]
    assert command.startswith(f"exec {sys.executable} -m halox.cli sweep "
                              f"{EXAMPLES / 'betzy-halfcores-27nodes.toml'} --launcher srun "
                              f"--output {out} --build-dir {build_dir()}")
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    # Inside the job, each run starts with srun and the placement of the study.
    dry = halox("sweep", EXAMPLES / "betzy-halfcores-27nodes.toml", "--dry-run",
                "--launcher", "srun", "--output", out)
    lines = [l for l in dry.stdout.splitlines() if not l.startswith("#")]
    assert len(lines) == 3
    assert all(l.startswith("HALOX_MPI=openmpi srun -n 1728 -N 27 --ntasks-per-node=64 "
                            "--cpus-per-task=2 --cpu-bind=cores ") for l in lines), lines


def test_a_launch_that_is_not_one_mpi_job_is_a_failure(tmp_path, slurm_env):
    """srun --mpi=none: Open MPI refuses to start; MPICH starts two 1-rank jobs, whose records
    must not pass for a 2-rank measurement."""
    spec = write_spec(tmp_path, "nopmi")
    text = spec.read_text().replace('timeout = 300\n', 'timeout = 300\nsrun_mpi = "none"\n')
    # One run on the grid of MPI_Dims_create, which a 1-rank job can run too.
    text = re.sub(r"\[\[sweep\.run\]\].*?(?=\[matrix\])", "", text, flags=re.S)
    spec.write_text(text)
    out = tmp_path / "nopmi.jsonl"
    done = subprocess.run(["salloc", "-n", "2", "--time", "15", sys.executable, "-m",
                           "halox.cli", "sweep", str(spec), "--launcher", "srun",
                           "--output", str(out), "--build-dir", str(build_dir())],
                          capture_output=True, text=True, timeout=900, env=slurm_env)
    assert done.returncode == 1, done.stdout + done.stderr
    objects = [json.loads(l) for l in out.read_text().splitlines()]
    [failure] = objects  # and no measurement
    assert failure["tool"] == "halox-sweep" and failure["event"] == "failure"
    assert "srun -n 2 --cpu-bind=cores --mpi=none " in failure["sweep"]["launch"]
    errors = [l for l in done.stderr.splitlines() if l.startswith("halox sweep: error:")]
    assert len(errors) == 1
    if mpi_flavor() == "mpich":
        assert failure["what"] == "ran as separate processes"
        assert "its records say 1 rank(s) instead of 2" in failure["error"]
        assert "ran as separate processes: its records say 1 rank(s)" in errors[0]
    else:
        assert failure["what"].startswith("failed with exit code")
