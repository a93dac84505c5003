"""`halox sweep`: the exact command lines of a dry run, a real small sweep that appends
records, and bad specs that fail with one clear line before anything is launched."""
import json
import re
import shlex
import subprocess
import sys
import textwrap
import tomllib

import pytest

from conftest import ROOT, build_dir, list_transports, mpi_flavor

# Its result does not depend on the MPI library (CI runs it under one: docs/testing.md).
pytestmark = pytest.mark.any_mpi

EXAMPLES = ROOT / "examples" / "sweeps"


def halox(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "halox.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def write_spec(tmp_path, text, name="spec.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


SPEC = f"""
    [sweep]
    ranks = 2
    repeat = 2
    mpi = "{mpi_flavor()}"

    [[sweep.run]]
    name = "mpicart"
    args = ["--mpicart", "2", "1", "1"]

    [[sweep.run]]
    name = "slots"
    args = ["--slot", "2", "1", "1", "--order", "ZYX"]

    [matrix]
    halo = [1, 2]
    nfields = [1, 2]
    transport = ["all"]
    algorithm = ["standard", "staged"]
    grouping = ["compact", "sequence"]

    [bench]
    domain = [8, 8, 8]
    nrep = 5
    warmup = 1
    no_check = false
"""


def scratch(out, run, repeat, sweep="spec"):
    """Each run appends to a file of its own beside OUT; the sweep moves the records over."""
    return out.parent / "sweep.sweep" / f"{sweep}.{mpi_flavor()}.{run}.{repeat}.jsonl"


def expected_line(json_path, run_args):
    argv = [str(ROOT / "scripts" / "mpirun.sh"), "2", str(build_dir() / "halox-bench"),
            "--halo", "1,2", "--nfields", "1,2", "--transport", "all",
            "--algorithm", "standard,staged", "--grouping", "compact,sequence",
            "--domain", "8", "8", "8", "--nrep", "5", "--warmup", "1", *run_args,
            "--json", str(json_path)]
    return f"HALOX_MPI={mpi_flavor()} " + shlex.join(argv)


def test_dry_run_prints_the_exact_command_lines(tmp_path):
    spec = write_spec(tmp_path, SPEC)
    out = tmp_path / "results" / "sweep.jsonl"
    done = halox("sweep", spec, "--dry-run", "--output", out, "--build-dir", build_dir())
    assert done.returncode == 0, done.stderr
    commands = [l for l in done.stdout.splitlines() if not l.startswith("#")]
    mpicart = ["--mpicart", "2", "1", "1"]
    slots = ["--slot", "2", "1", "1", "--order", "ZYX"]
    # repeat = 2, interleaved: every entry once, then again.
    assert commands == [expected_line(scratch(out, "mpicart", 1), mpicart),
                        expected_line(scratch(out, "slots", 1), slots),
                        expected_line(scratch(out, "mpicart", 2), mpicart),
                        expected_line(scratch(out, "slots", 2), slots)]
    assert f"# records are appended to {out}" in done.stdout
    configurations = 16 * len(list_transports())  # 2 halos x 2 nfields x 4 variants each
    assert f"4 invocation(s) x {configurations} configurations" in done.stdout
    assert not out.exists() and not out.parent.exists()  # nothing launched, nothing created


def test_dry_run_uses_the_spec_defaults_for_build_and_output(tmp_path):
    spec = write_spec(tmp_path, """
        [sweep]
        ranks = 3
        mpi = "mpich"
        output = "results/fixed-name.jsonl"
        [bench]
        nrep = 7
    """)
    done = halox("sweep", spec, "--dry-run")
    assert done.returncode == 0, done.stderr
    commands = [l for l in done.stdout.splitlines() if not l.startswith("#")]
    assert commands == [
        "HALOX_MPI=mpich " + shlex.join([str(ROOT / "scripts" / "mpirun.sh"), "3",
                                         str(ROOT / "build" / "mpich" / "halox-bench"),
                                         "--nrep", "7", "--json",
                                         str(ROOT / "results" / "fixed-name.sweep" /
                                             "spec.mpich.default.1.jsonl")])]
    assert f"# records are appended to {ROOT / 'results' / 'fixed-name.jsonl'}" in done.stdout


def test_every_timing_of_halox_bench_is_a_valid_spec_value(tmp_path):
    for timing in ("throughput", "latency", "compute"):
        spec = write_spec(tmp_path, f"""
            [sweep]
            ranks = 2
            [bench]
            timing = "{timing}"
        """)
        done = halox("sweep", spec, "--dry-run", "--output", tmp_path / "x.jsonl",
                     "--build-dir", build_dir())
        assert done.returncode == 0, done.stderr
        assert f"--timing {timing}" in done.stdout


def test_example_specs_are_valid(tmp_path):
    names = sorted(p.name for p in EXAMPLES.glob("*.toml"))
    assert names == ["betzy-allcores-1node.toml", "betzy-allcores-27nodes.toml",
                     "betzy-halfcores-1node.toml", "betzy-halfcores-27nodes.toml",
                     "betzy-peers.toml", "calibrate-node.toml", "default.toml", "fidelity.toml",
                     "halo2d.toml", "ipc.toml"]
    for name in names:
        done = halox("sweep", EXAMPLES / name, "--dry-run", "--output", tmp_path / "x.jsonl")
        assert done.returncode == 0, done.stderr
    default = halox("sweep", EXAMPLES / "default.toml", "--dry-run", "--output",
                    tmp_path / "x.jsonl")
    lines = [l for l in default.stdout.splitlines() if not l.startswith("#")]
    assert len(lines) == 2
    assert "--mpicart 0 0 0" in lines[0] and "--mpicart 1 1 2" in lines[1]
    # scripts/bench.sh (make bench) runs this very spec.
    bench_sh = (ROOT / "scripts" / "bench.sh").read_text()
    assert '"$halox" sweep "$here/examples/sweeps/default.toml"' in bench_sh
    for fragment in ("--domain 64 64 64", "--halo 1,5", "--nfields 1,8", "--type double",
                     "--transport all", "--algorithm standard,staged", "--grouping all",
                     "--time 0.1", "--rounds auto", "--warmup 3", "--quiet"):
        assert all(fragment in line for line in lines)
    seeds = tomllib.loads((EXAMPLES / "betzy-halfcores-27nodes.toml").read_text())
    assert seeds["matrix"]["halo"] == [1, 2, 4, 5]
    assert seeds["matrix"]["nfields"] == [1, 2, 4, 8]
    assert seeds["matrix"]["algorithm"] == ["standard", "staged"]


def test_real_sweep_appends_records(tmp_path):
    spec = write_spec(tmp_path, f"""
        [sweep]
        ranks = 2
        mpi = "{mpi_flavor()}"
        [[sweep.run]]
        name = "mpicart"
        args = ["--mpicart", "2", "1", "1"]
        [[sweep.run]]
        name = "slots"
        args = ["--slot", "2", "1", "1"]
        [matrix]
        halo = [1]
        nfields = [1, 2]
        transport = ["all"]
        algorithm = ["standard", "staged"]
        grouping = ["compact"]
        [bench]
        domain = [8, 8, 8]
        nrep = 5
        warmup = 1
        quiet = true
    """)
    out = tmp_path / "deep" / "sweep.jsonl"
    done = halox("sweep", spec, "--output", out, "--build-dir", build_dir())
    assert done.returncode == 0, done.stdout + done.stderr
    per_run = len(list_transports()) * 2 * 2  # transports x nfields x algorithms
    first = out.read_text().splitlines()
    objects = [json.loads(l) for l in first]
    records = [r for r in objects if r["tool"] == "halox-bench"]
    marks = [r for r in objects if r["tool"] == "halox-sweep"]
    assert len(records) == 2 * per_run
    assert f"{2 * per_run} records appended to {out}" in done.stdout
    runs = {}
    for r in records:
        runs.setdefault(r["run_id"], []).append(r)
    assert len(runs) == 2 and all(len(v) == per_run for v in runs.values())
    assert sorted(r["decomposition"]["kind"] for r in records[::per_run]) == ["cart", "hw"]
    assert all(r["verification"] == "passed" and r["ranks"] == 2 for r in records)
    # Every record names its sweep, run entry, repetition and launch line; every run that
    # finished is marked complete after its records.
    for r in records:
        coords = r["sweep"]
        assert (coords["name"], coords["mpi"], coords["repeat"]) == ("spec", mpi_flavor(), 1)
        assert coords["run"] == ("mpicart" if r["decomposition"]["kind"] == "cart" else "slots")
        assert coords["launch"].endswith(f"--json {scratch(out, coords['run'], 1)}")
        assert "--mpicart 2 1 1" in coords["launch"] or "--slot 2 1 1" in coords["launch"]
    assert [(m["event"], m["sweep"]["run"], m["records"]) for m in marks] == [
        ("complete", "mpicart", per_run), ("complete", "slots", per_run)]
    assert objects.index(marks[0]) == per_run and objects.index(marks[1]) == 2 * per_run + 1
    assert not list((out.parent / "sweep.sweep").glob("*.jsonl"))  # scratch files moved
    # The same sweep into the same output again: everything is recorded, nothing runs.
    done = halox("sweep", spec, "--output", out, "--build-dir", build_dir())
    assert done.returncode == 0, done.stderr
    assert f"0 records appended to {out} (2 of 2 runs were recorded already)" in done.stdout
    assert out.read_text().splitlines() == first
    # And the report reads them.
    report = halox("report", out, "--run-id", records[0]["run_id"])
    assert report.returncode == 0, report.stderr
    assert "h1f1 (xN)" not in report.stdout  # baseline (sequence) not measured
    assert "mpi-p2p/staged/compact" in report.stdout


def test_failing_benchmark_is_recorded_and_the_sweep_goes_on(tmp_path):
    spec = write_spec(tmp_path, f"""
        [sweep]
        ranks = 2
        mpi = "{mpi_flavor()}"
        [[sweep.run]]
        name = "too-big"
        args = ["--mpicart", "3", "1", "1"]
        [[sweep.run]]
        name = "after"
        [bench]
        domain = [8, 8, 8]
        nrep = 5
    """)
    out = tmp_path / "out.jsonl"
    done = halox("sweep", spec, "--output", out, "--build-dir", build_dir())
    assert done.returncode == 1
    errors = [l for l in done.stderr.splitlines() if l.startswith("halox sweep: error:")]
    assert len(errors) == 1, done.stderr
    assert re.fullmatch(r"halox sweep: error: run 'too-big' \(1/2\) failed with exit code "
                        r"[1-9]\d*: "
                        r"halox-bench: error: rank grid 3x1x1 does not fit 2 ranks", errors[0])
    objects = [json.loads(l) for l in out.read_text().splitlines()]
    failure, record, mark = objects
    assert failure["tool"] == "halox-sweep" and failure["event"] == "failure"
    assert failure["sweep"]["run"] == "too-big" and failure["exit_status"] > 0
    assert failure["signal"] is None and failure["timed_out"] is False
    assert "--mpicart 3 1 1" in failure["sweep"]["launch"]
    assert any("rank grid 3x1x1 does not fit 2 ranks" in l for l in failure["stderr_tail"])
    # The sweep went on.
    assert record["tool"] == "halox-bench" and record["sweep"]["run"] == "after"
    assert (mark["event"], mark["sweep"]["run"]) == ("complete", "after")
    assert "1 records appended" in done.stdout


def test_automatic_choices_sweep_and_resume_like_named_variants(tmp_path):
    spec = write_spec(tmp_path, f"""
        [sweep]
        ranks = 2
        mpi = "{mpi_flavor()}"
        [[sweep.run]]
        name = "auto"
        args = ["--mpicart", "2", "1", "1"]
        [matrix]
        halo = [1]
        nfields = [2]
        transport = ["mpi-p2p", "auto"]
        algorithm = ["staged", "auto"]
        grouping = ["auto"]
        [bench]
        domain = [8, 8, 8]
        nrep = 5
        warmup = 1
        quiet = true
    """)
    out = tmp_path / "auto.jsonl"
    done = halox("sweep", spec, "--output", out, "--build-dir", build_dir())
    assert done.returncode == 0, done.stdout + done.stderr
    first = out.read_text().splitlines()
    records = [json.loads(l) for l in first]
    records = [r for r in records if r["tool"] == "halox-bench"]
    assert sorted((r["config"]["transport"], r["config"]["algorithm"]) for r in records) == [
        ("auto", "auto"), ("auto", "staged"), ("mpi-p2p", "auto"), ("mpi-p2p", "staged")]
    for r in records:
        assert r["config"]["grouping"] == "auto" and r["config"]["chosen"].startswith("chose ")
        assert r["verification"] == "passed"
    # Their records name them as asked, so the sweep knows they are done.
    done = halox("sweep", spec, "--output", out, "--build-dir", build_dir())
    assert done.returncode == 0, done.stderr
    assert "0 records appended" in done.stdout
    assert out.read_text().splitlines() == first


BAD_SPECS = [
    ("[sweep]\nranks = 2\n[sweeps]\nx = 1\n", "unknown table 'sweeps'"),
    ("[sweep]\nranks = 2\nrepeats = 2\n", "unknown key 'sweep.repeats'"),
    ("[sweep]\nranks = 2\n[matrix]\nhalos = [1]\n", "unknown key 'matrix.halos'"),
    ("[sweep]\nranks = 2\n[bench]\ndomian = [8, 8, 8]\n", "unknown key 'bench.domian'"),
    ("[sweep]\nranks = 2\n[[sweep.run]]\nname = 'a'\nargv = []\n",
     "unknown key 'sweep.run[1].argv'"),
    ("[sweep]\nranks = '2'\n", "sweep.ranks must be an integer, not a string ('2')"),
    ("[sweep]\nranks = true\n", "sweep.ranks must be an integer, not a boolean"),
    ("[sweep]\nranks = 0\n", "sweep.ranks must be positive, got 0"),
    ("[sweep]\nrepeat = 2\n", "sweep.ranks is missing"),
    ("[matrix]\nhalo = [1]\n", "missing table [sweep]"),
    ("[sweep]\nranks = 2\nmpi = 'intel'\n", "sweep.mpi must be one of openmpi, mpich, got 'intel'"),
    ("[sweep]\nranks = 2\n[matrix]\nhalo = ['1']\n",
     "matrix.halo must be an integer, not a string"),
    ("[sweep]\nranks = 2\n[matrix]\nhalo = [-1]\n", "matrix.halo must not be negative, got -1"),
    ("[sweep]\nranks = 2\n[matrix]\nnfields = [0]\n", "matrix.nfields must be positive, got 0"),
    ("[sweep]\nranks = 2\n[matrix]\nalgorithm = ['diagonal']\n",
     "matrix.algorithm: unknown value 'diagonal'"),
    ("[sweep]\nranks = 2\n[matrix]\ntransport = ['carrier-pigeon']\n",
     "matrix.transport: unknown transport 'carrier-pigeon'"),
    ("[sweep]\nranks = 2\n[matrix]\ngrouping = ['compact,sequence']\n",
     "matrix.grouping: write lists as TOML lists"),
    ("[sweep]\nranks = 2\n[matrix]\ntime = [0.1]\n", "matrix.time is not a list option"),
    ("[sweep]\nranks = 2\n[bench]\ndomain = [8, 8]\n", "bench.domain must be a list of 3 integers"),
    ("[sweep]\nranks = 2\n[bench]\ntime = 'fast'\n", "bench.time must be a number, not a string"),
    ("[sweep]\nranks = 2\n[bench]\nno_check = 1\n", "bench.no_check must be true or false"),
    ("[sweep]\nranks = 2\n[bench]\ntiming = 'sometimes'\n", "bench.timing must be one of"),
    ("[sweep]\nranks = 2\n[bench]\njson = 'x.jsonl'\n", "bench.json cannot be set"),
    ("[sweep]\nranks = 2\n[bench]\nhalo = [1]\n",
     "bench.halo is a list option; put it in [matrix]"),
    ("[sweep]\nranks = 2\n[[sweep.run]]\nargs = []\n", "sweep.run[1].name is missing"),
    ("[sweep]\nranks = 2\n[[sweep.run]]\nname = 'a'\n[[sweep.run]]\nname = 'a'\n",
     "sweep.run[2].name 'a' is used twice"),
    ("[sweep]\nranks = 2\n[[sweep.run]]\nname = 'a'\nargs = '--mpicart 2 1 1'\n",
     "sweep.run[1].args must be a list of strings"),
    ("[sweep]\nranks = 2\n[[sweep.run]]\nname = 'a'\nargs = ['--json', 'x']\n",
     "sweep.run[1].args cannot contain --json"),
    ("[sweep]\nranks = 2\nenv = { 'A B' = '1' }\n", "'A B' is not an environment variable name"),
    ("[sweep\nranks = 2\n", "not valid TOML"),
]


@pytest.mark.parametrize("text, fragment", BAD_SPECS)
def test_bad_spec_is_one_line_before_anything_runs(tmp_path, text, fragment):
    spec = tmp_path / "bad.toml"
    spec.write_text(text)
    out = tmp_path / "never.jsonl"
    done = halox("sweep", spec, "--output", out, "--build-dir", build_dir(), timeout=60)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"halox sweep: error: {spec}: ")
    assert fragment in lines[0]
    assert not out.exists()


def test_missing_build_fails_before_launching(tmp_path):
    spec = write_spec(tmp_path, SPEC)
    out = tmp_path / "never.jsonl"
    done = halox("sweep", spec, "--output", out, "--build-dir", tmp_path / "no-build")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"halox sweep: error: {spec}: {tmp_path / 'no-build' / 'halox-bench'} is not built "
        f"(run `make build MPI={mpi_flavor()}`)"]
    assert not out.exists()


def test_missing_spec_file(tmp_path):
    done = halox("sweep", tmp_path / "nope.toml")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"halox sweep: error: {tmp_path / 'nope.toml'}: no such file"]


def test_unwritable_output_fails_before_launching(tmp_path):
    spec = write_spec(tmp_path, SPEC)
    blocker = tmp_path / "file"
    blocker.write_text("")
    done = halox("sweep", spec, "--output", blocker / "out.jsonl", "--build-dir", build_dir())
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert line.startswith("halox sweep: error:") and "cannot append to" in line


def test_a_run_is_the_same_whatever_the_order_of_its_options():
    from halox import identity, peers
    from halox.identity import settings_identity
    words = ["ranks=2", "halox-bench", "--domain", "64", "64", "64", "--timing", "latency",
             "--quiet", "--field-pages", "system", "--periodic", "-1"]
    moved = ["ranks=2", "halox-bench", "--field-pages", "system", "--quiet", "--periodic", "-1",
             "--timing", "latency", "--domain", "64", "64", "64"]
    assert settings_identity(words) == settings_identity(moved)
    coords = {"name": "fidelity", "mpi": "openmpi", "run": "x-split", "repeat": 1}
    assert identity.identity({**coords, "settings": words}) == \
        identity.identity({**coords, "settings": moved})
    assert peers.identity({**coords, "peer": "cartex-mpi", "settings": words}) == \
        peers.identity({**coords, "peer": "cartex-mpi", "settings": moved})
    # what differs still differs: a value, the words before the options, an option given twice
    # (the last one wins, so its order decides)
    assert settings_identity(words) != settings_identity([*words[:-1], "1"])
    assert settings_identity(words) != settings_identity(["ranks=4", *words[1:]])
    twice = ["halox-bench", "--field-pages", "huge", "--field-pages", "system"]
    assert settings_identity(twice) != settings_identity(
        ["halox-bench", "--field-pages", "system", "--field-pages", "huge"])
