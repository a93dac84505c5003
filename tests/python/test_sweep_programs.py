"""`halox sweep` of halox-halo2d and halox-ipc end to end, and the launchers' command lines."""
import json
import os
import shlex
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, build_dir, mpi_flavor


def halox(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "halox.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def write_spec(tmp_path, text, name="spec.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_halo2d_sweep_records_and_report(tmp_path):
    spec = write_spec(tmp_path, f"""
        [sweep]
        name = "h2"
        executable = "halox-halo2d"
        ranks = 4
        mpi = "{mpi_flavor()}"
        [matrix]
        tests = ["single", "all", "phased"]
        neighbors = [2, 4]
        sizes = [0, 8, 4096]
        [bench]
        trials = 2
        nrep = 5
        warmup = 1
    """)
    out = tmp_path / "h2.jsonl"
    done = halox("sweep", spec, "--output", out, "--build-dir", build_dir())
    assert done.returncode == 0, done.stdout + done.stderr
    objects = [json.loads(l) for l in out.read_text().splitlines()]
    [record, mark] = objects
    assert record["tool"] == "halox-halo2d" and record["ranks"] == 4
    assert record["sweep"]["name"] == "h2" and record["sweep"]["run"] == "default"
    assert "--tests single,all,phased --neighbors 2,4 --sizes 0,8,4096" in \
        record["sweep"]["launch"]
    assert len(record["results"]) == 3 * 2 * 3
    assert mark["event"] == "complete"
    report = halox("report", out)
    assert report.returncode == 0, report.stderr
    assert "halox-halo2d: mesh 2x2 (periodic), 4 ranks" in report.stdout
    assert "single sender" in report.stdout and "phased send/receive" in report.stdout
    for cell in record["results"]:
        assert f"{cell['seconds_per_message'] * 1e6:.3f}" in report.stdout
    again = halox("sweep", spec, "--output", out, "--build-dir", build_dir())
    assert again.returncode == 0 and "(1 of 1 runs were recorded already)" in again.stdout


def test_ipc_sweep_expands_scalar_matrix_keys_into_runs(tmp_path):
    spec = write_spec(tmp_path, f"""
        [sweep]
        name = "copies"
        executable = "halox-ipc"
        ranks = 2
        mpi = "{mpi_flavor()}"
        [matrix]
        layout = ["contiguous", "strided"]
        mechanisms = ["SHMEM_P", "CMA"]
        [bench]
        bufsize = 16384
        min_block = 4096
        nrep = 5
        warmup = 1
        cell_time = 0.05
    """.replace("bufsize = 16384\n        ", ""))
    spec.write_text(spec.read_text().replace("[matrix]\n", "[matrix]\nbufsize = [16384]\n"))
    out = tmp_path / "copies.jsonl"
    dry = halox("sweep", spec, "--dry-run", "--output", out, "--build-dir", build_dir())
    lines = [l for l in dry.stdout.splitlines() if not l.startswith("#")]
    assert len(lines) == 2
    assert all("--mechanisms SHMEM_P,CMA" in l and "--bufsize 16384" in l for l in lines)
    assert "--layout contiguous" in lines[0] and "--layout strided" in lines[1]
    done = halox("sweep", spec, "--output", out, "--build-dir", build_dir())
    assert done.returncode == 0, done.stdout + done.stderr
    records = [r for r in map(json.loads, out.read_text().splitlines())
               if r["tool"] == "halox-ipc"]
    assert [r["sweep"]["point"] for r in records] == [
        {"bufsize": "16384", "layout": "contiguous"}, {"bufsize": "16384", "layout": "strided"}]
    assert [r["options"]["layout"] for r in records] == ["contiguous", "strided"]
    report = halox("report", out)
    assert report.returncode == 0, report.stderr
    assert "halox-ipc: buffer size: 16384 bytes, layout contiguous" in report.stdout
    assert "halox-ipc: buffer size: 16384 bytes, layout strided (stride 2 x IOV_size)" in \
        report.stdout


SPEC_2 = """
    [sweep]
    ranks = 4
    launcher = "{launcher}"
    {placement}
    [bench]
    domain = [8, 8, 8]
    nrep = 5
"""


@pytest.mark.parametrize("launcher, placement, flavor, prefix", [
    ("mpirun", "", "openmpi", "mpirun.openmpi -n 4 {root}--map-by core --bind-to core"),
    ("mpirun", "ranks_per_socket = 2\ncpus_per_rank = 2", "openmpi",
     "mpirun.openmpi -n 4 {root}--map-by ppr:2:socket:pe=2 --bind-to core"),
    ("mpiexec", "ranks_per_node = 2\nbind = 'none'", "openmpi",
     "mpiexec.openmpi -n 4 {root}--map-by ppr:2:node --bind-to none"),
    ("mpiexec", "ranks_per_node = 2", "mpich", "mpiexec.mpich -n 4 -ppn 2 -bind-to core"),
    ("mpirun", "cpus_per_rank = 2", "mpich", "mpirun.mpich -n 4 -bind-to core:2"),
    ("srun", "nodes = 2\nranks_per_node = 2\ncpus_per_rank = 3", "openmpi",
     "srun -n 4 -N 2 --ntasks-per-node=2 --cpus-per-task=3 --cpu-bind=cores"),
    ("srun", "bind = 'hwthread'\nlauncher_args = ['--exclusive']", "mpich",
     "srun -n 4 --cpu-bind=threads --mpi=pmi2 --exclusive"),
])
def test_launcher_command_lines(tmp_path, launcher, placement, flavor, prefix):
    spec = write_spec(tmp_path, SPEC_2.format(launcher=launcher, placement=placement))
    done = halox("sweep", spec, "--dry-run", "--mpi", flavor, "--output", tmp_path / "o.jsonl")
    assert done.returncode == 0, done.stderr
    [line] = [l for l in done.stdout.splitlines() if not l.startswith("#")]
    root = "--allow-run-as-root " if os.geteuid() == 0 else ""
    assert line.startswith(f"HALOX_MPI={flavor} {prefix.format(root=root)} "
                           f"{ROOT / 'build' / flavor / 'halox-bench'} --domain 8 8 8"), line


@pytest.mark.parametrize("text, fragment", [
    ("[sweep]\nranks = 2\nranks_per_node = 2\n",
     "the local launcher (scripts/mpirun.sh) takes no placement settings"),
    ("[sweep]\nranks = 2\nlauncher = 'qsub'\n",
     "sweep.launcher must be one of local, mpirun, mpiexec, srun, got 'qsub'"),
    ("[sweep]\nranks = 2\nexecutable = 'halox-topo'\n",
     "sweep.executable must be one of halox-bench, halox-halo2d, halox-ipc"),
    ("[sweep]\nranks = 2\ntimeout = -1\n", "sweep.timeout must be positive, got -1"),
    ("[sweep]\nranks = 2\nlauncher = 'mpiexec'\nranks_per_socket = 2\nmpi = 'mpich'\n",
     "sweep.ranks_per_socket: MPICH's mpiexec maps per node only"),
    ("[sweep]\nranks = 2\n[slurm]\nnodes = 2\n", "unknown key 'slurm.nodes'"),
    ("[sweep]\nranks = 2\nexecutable = 'halox-ipc'\n[matrix]\nhalo = [1]\n",
     "unknown key 'matrix.halo'"),
    ("[sweep]\nranks = 2\nexecutable = 'halox-halo2d'\n[matrix]\ntests = ['diagonal']\n",
     "matrix.tests: unknown value 'diagonal'"),
    ("[sweep]\nranks = 2\nexecutable = 'halox-halo2d'\n[matrix]\nneighbors = [3]\n",
     "matrix.neighbors: unknown value '3' (expected 2, 4, 8)"),
    ("[sweep]\nranks = 2\nexecutable = 'halox-ipc'\n[matrix]\nlayout = ['zigzag']\n",
     "matrix.layout must be one of contiguous, strided, got 'zigzag'"),
    ("[sweep]\nranks = 2\nexecutable = 'halox-ipc'\n[bench]\nbufsize = '4 MB x'\n",
     "bench.bufsize is a list option; put it in [matrix]"),
    ("[sweep]\nranks = 2\nexecutable = 'halox-ipc'\n[matrix]\nbufsize = ['lots']\n",
     "matrix.bufsize must be a size in bytes"),
    ("[sweep]\nranks = 2\n[[sweep.run]]\nname = 'a b'\n",
     "sweep.run[1].name may hold only letters"),
])
def test_bad_launch_and_program_settings_are_one_line(tmp_path, text, fragment):
    spec = tmp_path / "bad.toml"
    spec.write_text(text)
    done = halox("sweep", spec, "--output", tmp_path / "never.jsonl", "--build-dir", build_dir())
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(f"halox sweep: error: {spec}: ") and fragment in line, line
    assert not (tmp_path / "never.jsonl").exists()


def test_set_changes_one_value_of_the_spec(tmp_path):
    spec = write_spec(tmp_path, SPEC_2.format(launcher="local", placement=""))
    done = halox("sweep", spec, "--dry-run", "--set", "bench.nrep=7", "--set",
                 "matrix.halo=[1, 2]", "--set", "bench.order=ZYX", "--output", tmp_path / "o")
    assert done.returncode == 0, done.stderr
    [line] = [l for l in done.stdout.splitlines() if not l.startswith("#")]
    assert "--halo 1,2 --domain 8 8 8 --nrep 7 --order ZYX" in line
    bad = halox("sweep", spec, "--dry-run", "--set", "nrep=7")
    assert bad.returncode == 2
    assert "--set nrep=7: expected TABLE.KEY=VALUE" in bad.stderr


def test_real_run_with_the_mpi_launcher(tmp_path):
    launcher = "mpirun" if mpi_flavor() == "openmpi" else "mpiexec"
    spec = write_spec(tmp_path, f"""
        [sweep]
        ranks = 2
        mpi = "{mpi_flavor()}"
        launcher = "{launcher}"
        [matrix]
        transport = ["mpi-p2p", "mpi-types"]
        [bench]
        domain = [8, 8, 8]
        nrep = 5
        quiet = true
    """)
    out = tmp_path / "o.jsonl"
    done = halox("sweep", spec, "--output", out, "--build-dir", build_dir())
    assert done.returncode == 0, done.stdout + done.stderr
    records = [r for r in map(json.loads, out.read_text().splitlines())
               if r["tool"] == "halox-bench"]
    assert len(records) == 2
    for r in records:
        argv = shlex.split(r["sweep"]["launch"])
        assert argv[1].startswith(launcher) and "--json" in argv
        cpus = [e["cpus"] for e in r["rank_map"]]
        assert len(set(cpus)) == 2  # bound to a core each
