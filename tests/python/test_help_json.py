"""--help-json: every program lists its options as JSON, and `halox sweep` checks specs by it."""
import json
import re

import pytest

from conftest import build_dir
from halox import spec

# Its result does not depend on the MPI library (CI runs it under one: docs/testing.md).
pytestmark = pytest.mark.any_mpi

PROGRAMS = ["halox-bench", "halox-halo2d", "halox-ipc", "halox-topo"]


def schema(run_mpi, program, *extra, ranks=1):
    run = run_mpi(ranks, program, "--help-json", *extra, timeout=60)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def by_name(listing):
    return {o["name"]: o for o in listing["options"]}


@pytest.mark.parametrize("program", PROGRAMS)
def test_every_option_of_the_help_is_listed_once(run_mpi, program):
    listing = schema(run_mpi, program)
    assert listing["program"] in (program, "")
    helped = run_mpi(1, program, "--help", timeout=60)
    assert helped.returncode == 0
    in_help = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", helped.stdout)) - {"--help",
                                                                               "--help-json"}
    listed = {n for o in listing["options"] for n in o["names"] + o.get("negations", [])}
    assert in_help <= listed, in_help - listed
    names = [o["name"] for o in listing["options"]]
    assert len(names) == len(set(names))
    assert "--help" not in names and "--help-json" not in names
    for o in listing["options"]:
        assert o["help"] and isinstance(o["flag"], bool)
        assert o["flag"] == (o["expected"] == 0) and ("type" in o) != o["flag"]


def test_types_counts_defaults_choices_and_ranges(run_mpi):
    bench = by_name(schema(run_mpi, "halox-bench"))
    assert bench["--domain"]["expected"] == 3 and bench["--domain"]["type"] == "INT"
    assert bench["--decomposition"]["choices"] == ["cart", "hw", "auto"]
    assert bench["--memory"]["choices"] == ["auto", "private", "shared", "device"]
    assert bench["--field-pages"]["choices"] == ["system", "huge"]
    assert bench["--field-pages"]["default"] == "system"
    assert bench["--no-check"]["flag"] is True
    assert bench["--halo"]["delimiter"] == "," and bench["--halo"]["expected"] == -1
    ipc = by_name(schema(run_mpi, "halox-ipc"))
    assert ipc["--bufsize"] == {**ipc["--bufsize"], "type": "SIZE", "default": "4194304"}
    assert ipc["--nrep"]["default"] == "50" and ipc["--nrep"]["type"] == "INT"
    halo2d = by_name(schema(run_mpi, "halox-halo2d"))
    assert halo2d["--periodic"]["negations"] == ["--no-periodic"]
    assert halo2d["--neighbors"]["names"] == ["--neighbors", "--neighbours"]
    assert halo2d["--trials"]["range"] == [1, 100000]
    assert halo2d["--inject-fault"]["hidden"] is True
    assert halo2d["--mesh"]["hidden"] is False and halo2d["--mesh"]["expected"] == 2
    topo = by_name(schema(run_mpi, "halox-topo"))
    assert topo["--nodes"]["range"] == [1, 1 << 30] and topo["--nodes"]["default"] == "1"


def test_rank_zero_prints_it_and_it_wins_over_other_arguments(run_mpi):
    run = run_mpi(2, "halox-ipc", "--nrep", "0", "--bogus", "--help-json", timeout=60)
    assert run.returncode == 0, run.stderr
    listing = json.loads(run.stdout)  # one document: rank 1 printed nothing
    assert "--bufsize" in by_name(listing)


@pytest.mark.parametrize("program", [spec.BENCH, spec.HALO2D, spec.IPC], ids=lambda p: p.name)
def test_every_key_the_sweep_knows_is_an_option_of_the_program(program):
    options = spec.program_options(program, build_dir() / program.name)
    for key in [*program.list_keys, *program.expand_keys, *program.values]:
        assert key in options, f"{program.name} has no option for '{key}'"
    for key in program.reserved:
        assert key in options or key.startswith("help"), key


def test_spec_keys_follow_the_programs_options():
    ipc = spec.program_options(spec.IPC, build_dir() / "halox-ipc")
    assert ipc["no_populate"] == spec.Option("--no-populate", "bool")
    assert ipc["cell_time"].kind == "nonneg_number"  # a value rule of the sweep
    assert ipc["min_block"].kind == "size"           # from the program's type name
    halo2d = spec.program_options(spec.HALO2D, build_dir() / "halox-halo2d")
    assert halo2d["periodic"] == spec.Option("--periodic", "negatable")
    assert halo2d["no_check"] == spec.Option("--no-check", "bool")
    assert halo2d["trials"].kind == "pos_int"        # from the program's range check
    bench = spec.program_options(spec.BENCH, build_dir() / "halox-bench")
    assert bench["assume_binding"].choices == ("real", "spread", "core", "hwthread")
    assert bench["periodic"] == spec.Option("--periodic", "xyz_int", ("0", "1"))


def plan_of(tmp_path, text):
    path = tmp_path / "spec.toml"
    path.write_text(text)
    return spec.make_plan(path, build_dir=str(build_dir()), output=str(tmp_path / "out.jsonl"))


@pytest.mark.parametrize("program, bench, words", [
    ("halox-ipc", "no_populate = true\ncell_time = 0.25", ["--no-populate", "--cell-time", "0.25"]),
    ("halox-halo2d", "periodic = false\ntrials = 2", ["--no-periodic", "--trials", "2"]),
    ("halox-bench", "timeout = 30\nassume_binding = 'core'",
     ["--timeout", "30", "--assume-binding", "core"]),
])
def test_bench_keys_become_the_programs_options(tmp_path, program, bench, words):
    plan = plan_of(tmp_path, f"[sweep]\nranks = 2\nexecutable = '{program}'\n[bench]\n{bench}\n")
    assert plan.invocations[0].other_args == words


@pytest.mark.parametrize("program, bench, message", [
    ("halox-ipc", "cell_time = -1", "bench.cell_time must not be negative, got -1"),
    ("halox-ipc", "populate = true", "unknown key 'bench.populate' (did you mean 'no_populate'?)"),
    ("halox-halo2d", "trials = 0", "bench.trials must be positive, got 0"),
    ("halox-bench", "assume_binding = 'magic'",
     "bench.assume_binding must be one of real, spread, core, hwthread, got 'magic'"),
    ("halox-bench", "periodic = [1, 2, 1]", "bench.periodic entries must be one of 0, 1"),
    ("halox-bench", "list_transports = true", "bench.list_transports cannot be set"),
])
def test_bad_bench_keys_are_one_line_from_the_programs_options(tmp_path, program, bench, message):
    with pytest.raises(spec.SpecError) as error:
        plan_of(tmp_path, f"[sweep]\nranks = 2\nexecutable = '{program}'\n[bench]\n{bench}\n")
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_the_option_list_is_kept_per_build_and_asked_again_when_unreadable(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    exe = build_dir() / "halox-ipc"
    spec._help_json.cache_clear()
    first = spec.program_options(spec.IPC, exe)
    [kept] = (tmp_path / "halox" / "options").glob("halox-ipc-*.json")
    assert json.loads(kept.read_text())["options"]
    kept.write_text("{not json")
    spec._help_json.cache_clear()
    assert spec.program_options(spec.IPC, exe) == first
    assert json.loads(kept.read_text())["options"]  # asked the program again, kept again
    spec._help_json.cache_clear()
