"""Sweep specifications: the TOML file of `halox sweep`, checked completely, turned into a plan.

A spec names one program (`sweep.executable`: halox-bench, halox-halo2d or halox-ipc).  Each
`[[sweep.run]]` entry is one invocation of it over the whole `[matrix]`: the matrix keys the
program takes as comma lists (halox-bench: halo, nfields, type, transport, algorithm, fields)
are measured in that one job, so ratios between them come from one run; matrix keys the
program takes one value of (halox-ipc: bufsize, layout, ...) give one invocation per value.
Entries are repeated `repeat` times, interleaved (run1, run2, run1, run2, ...).  Everything -
keys, types, values, launcher settings, the build and the output file - is checked before
anything is launched; a problem is one line.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json
import os
import pathlib
import re
import shlex
import subprocess
import tomllib
from typing import Any

from . import launch, peers, stability
from . import spec_values
from .spec_values import SpecError, check_scalar

MPI_FLAVORS = ("openmpi", "mpich")
DEFAULT_EXECUTABLE = "halox-bench"


@dataclasses.dataclass(frozen=True)
class Program:
    """What a sweep needs to know about one halox program beyond its options, which the built
    program lists itself (`--help-json`: names, values expected, type, choices and what "all"
    stands for)."""
    name: str
    list_keys: dict[str, str]    # [matrix] keys it takes as comma lists: one invocation
    expand_keys: dict[str, str]  # [matrix] keys it takes one value of: one invocation per value
    values: dict[str, str]       # [bench] keys whose values the program checks in its own code
    per_configuration: bool      # one record per matrix configuration (else one per run)
    reserved: dict[str, str]


_RESERVED = {"json": "the output file is set by halox sweep (use --output or sweep.output)",
             "help": "not a benchmark option", "help_json": "not a benchmark option"}

# The value rules below are those no CLI11 check states (signs, formats): the programs check
# them after parsing; the sweep checks them before anything is launched.
BENCH = Program(
    name="halox-bench",
    list_keys={"halo": "nonneg_int", "nfields": "pos_int", "type": "str", "transport": "str",
               "algorithm": "str", "grouping": "str"},
    expand_keys={},
    values={
        "domain": "xyz_pos", "global_domain": "xyz_pos", "halo_lo": "xyz_nonneg",
        "halo_hi": "xyz_nonneg", "nrep": "pos_int", "time": "pos_number", "warmup": "nonneg_int",
        "rounds": "rounds", "rounds_budget": "pos_number", "timing": "timing",
        "baseline": "variant",
        "fields_per_block": "nonneg_int", "mpicart": "xyz_nonneg", "node": "xyz_pos",
        "socket": "xyz_pos", "numa": "xyz_pos", "l3": "xyz_pos", "l2": "xyz_pos",
        "l1": "xyz_pos", "core": "xyz_pos", "hwthread": "xyz_pos", "slot": "xyz_pos",
        "order": "order", "ranks_per_node": "nonneg_int",
    },
    per_configuration=True,
    reserved={**_RESERVED, "print": "it runs no benchmark",
              "list_transports": "it runs no benchmark"},
)

HALO2D = Program(
    name="halox-halo2d",
    list_keys={"tests": "str", "neighbors": "pos_int", "sizes": "size"},
    expand_keys={},
    values={"mesh": "xy_nonneg", "nrep": "pos_int", "warmup": "nonneg_int", "trials": "pos_int",
            "digits": "pos_int"},
    per_configuration=False,
    reserved={**_RESERVED, "inject_fault": "a debugging aid, not a measurement"},
)

IPC = Program(
    name="halox-ipc",
    list_keys={"mechanisms": "str"},
    expand_keys={"bufsize": "size", "layout": "layout", "stride_factor": "pos_int",
                 "chunk": "size"},
    values={"nrep": "pos_int", "warmup": "nonneg_int", "cell_time": "nonneg_number"},
    per_configuration=False,
    reserved=_RESERVED,
)

PROGRAMS = {p.name: p for p in (BENCH, HALO2D, IPC)}

SWEEP_KEYS = {"ranks", "repeat", "mpi", "run", "name", "description", "output", "build_dir",
              "env", "executable", "timeout", "launcher", "nodes", "ranks_per_node",
              "ranks_per_socket", "cpus_per_rank", "bind", "launcher_args", "srun_mpi"}
RUN_KEYS = {"name", "args", "ranks", "env", "timeout"}
SLURM_KEYS = {"time", "partition", "account", "qos", "constraint", "job_name", "extra"}
TOP_KEYS = {"sweep", "matrix", "bench", "slurm", "peers"}


@dataclasses.dataclass
class Invocation:
    name: str                     # the [[sweep.run]] entry
    repeat: int                   # 0-based repetition
    point: dict[str, str]         # values of the expanded matrix keys, {} if none
    ranks: int
    launcher: list[str]           # the words before the program
    program: pathlib.Path
    lists: dict[str, list[str]]   # matrix list key -> values, in spec order
    other_args: list[str]         # [bench] options, expanded values, run args
    env: dict[str, str]           # environment settings added to the caller's
    timeout: float | None
    scratch: pathlib.Path         # where the program appends its records

    def program_args(self, lists: dict[str, list[str]] | None = None) -> list[str]:
        words = []
        for key, values in (self.lists if lists is None else lists).items():
            words += [f"--{key.replace('_', '-')}", ",".join(values)]
        return words + self.other_args

    def argv(self, lists: dict[str, list[str]] | None = None) -> list[str]:
        return [*self.launcher, str(self.program), *self.program_args(lists),
                "--json", str(self.scratch)]

    def shell_line(self, lists: dict[str, list[str]] | None = None) -> str:
        prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        return (prefix + " " if prefix else "") + shlex.join(self.argv(lists))

    @property
    def label(self) -> str:
        point = ",".join(f"{k}={v}" for k, v in self.point.items())
        return self.name + (f"[{point}]" if point else "") + f" #{self.repeat + 1}"


@dataclasses.dataclass
class Plan:
    spec_path: pathlib.Path
    name: str
    mpi: str
    program: Program
    build_dir: pathlib.Path
    executable: pathlib.Path
    output: pathlib.Path
    work_dir: pathlib.Path        # scratch files, logs and the sweep's lock, beside the output
    launch: launch.LaunchSettings
    slurm: dict[str, Any]
    configurations: int           # per invocation (halox-bench), 0 when unknown
    invocations: list[Invocation]
    estimate_s: float | None      # per invocation, from --time x rounds, when known
    known: dict[str, tuple[str, ...]]  # what "all" stands for, per list key, where known
    # The peer programs' runs beside each invocation, by its position in `invocations`.
    peer_runs: dict[int, list] = dataclasses.field(default_factory=dict)

    @property
    def max_ranks(self) -> int:
        return max(inv.ranks for inv in self.invocations)


# ---------------------------------------------------------------------------------------------
# The checkout and the built programs


def repo_root() -> pathlib.Path:
    """The halox checkout: HALOX_ROOT, else the one this package lives in, else the cwd."""
    candidates = []
    if os.environ.get("HALOX_ROOT"):
        candidates.append(pathlib.Path(os.environ["HALOX_ROOT"]))
    candidates.append(pathlib.Path(__file__).resolve().parents[2])
    candidates.append(pathlib.Path.cwd())
    for c in candidates:
        if (c / "scripts" / "mpirun.sh").is_file():
            return c.resolve()
    raise SpecError("cannot find the halox checkout (scripts/mpirun.sh); set HALOX_ROOT")


def _names_in(text: str) -> tuple[str, ...]:
    """Transport names from `halox-bench --list-transports`: the first word of each line that
    looks like a name (headers, rules and blank lines are passed over)."""
    names = []
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        word = words[0].rstrip(":,")
        if re.fullmatch(r"[a-z][a-z0-9_]*(-[a-z0-9_]+)*(\+[a-z][a-z0-9_-]*)?", word) and \
                word not in ("name", "transport", "transports", "available"):
            names.append(word)
    return tuple(dict.fromkeys(names))


def _all_in(text: str) -> tuple[str, ...]:
    """What `--transport all` stands for in a `--list-transports` listing: the available
    transports that move host fields (a device-only one says "device fields only")."""
    runs = []
    for line in text.splitlines():
        words = line.split()
        if len(words) > 1 and words[1] == "available" and "device fields only" not in line:
            runs.append(words[0])
    return tuple(runs)


def bench_transports(bench: pathlib.Path) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The transports the built halox-bench knows and those `--transport all` runs: from
    `--list-transports`, or for a build without that option from its --help (which does not
    tell them apart); None when neither says."""
    def run(*args):
        try:
            return subprocess.run([str(bench), *args], capture_output=True, text=True,
                                  timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
    listed = run("--list-transports")
    if listed is not None and listed.returncode == 0:
        names = _names_in(listed.stdout)
        if names:
            return names, _all_in(listed.stdout) or names
    helped = run("--help")
    if helped is None:
        return None
    match = re.search(r"Transport\(s\):\s*(.*?),?\s+or all", helped.stdout, re.S)
    if not match:
        return None
    names = tuple(t.strip() for t in match.group(1).split(",") if t.strip())
    return names, names


def load_spec(path: str | pathlib.Path) -> dict:
    path = pathlib.Path(path)
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file") from None
    except OSError as e:
        raise SpecError(f"{path}: cannot read: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{path}: not valid TOML: {e}") from None


def default_output(root: pathlib.Path, name: str, flavor: str) -> pathlib.Path:
    """Stable, so that running the same command again resumes the sweep."""
    return root / "results" / f"sweep-{name}-{flavor}.jsonl"


def work_dir_of(output: pathlib.Path) -> pathlib.Path:
    return output.with_name(output.name.removesuffix(".jsonl") + ".sweep")


# ---------------------------------------------------------------------------------------------
# Spec -> plan


def apply_overrides(spec: dict, overrides: list[str]) -> dict:
    """`--set TABLE.KEY=VALUE`: VALUE is read as TOML (0.05, [1, 5], true, "text"), or taken
    as text when it is not TOML (ZYX)."""
    for item in overrides:
        path, sep, text = item.partition("=")
        keys = path.strip().split(".")
        if not sep or len(keys) != 2 or not all(keys):
            raise SpecError(f"--set {item}: expected TABLE.KEY=VALUE, e.g. bench.time=0.05")
        try:
            value = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            value = text
        table = spec.setdefault(keys[0], {})
        if not isinstance(table, dict):
            raise SpecError(f"--set {item}: '{keys[0]}' is not a table")
        table[keys[1]] = value
    return spec


def make_plan(spec_path: str | pathlib.Path, *, output: str | None = None,
              build_dir: str | None = None, mpi: str | None = None,
              launcher: str | None = None, timeout: float | None = None,
              require_build: bool = True, overrides: list[str] | None = None) -> Plan:
    """Checks the spec and returns the invocations; raises SpecError (one line) when bad."""
    spec_path = pathlib.Path(spec_path)
    try:
        spec = apply_overrides(load_spec(spec_path), overrides or [])
        return _make_plan(spec_path, spec, output, build_dir, mpi, launcher, timeout,
                          require_build)
    except (SpecError, launch.LaunchError) as e:
        message = str(e)
        if not message.startswith(str(spec_path)):
            message = f"{spec_path}: {message}"
        raise SpecError(message) from None


# How srun starts ranks of each library unless the spec says (sweep.srun_mpi): MPICH speaks
# PMI-2; Open MPI takes the cluster's MpiDefault (pmix where Slurm has it).
SRUN_MPI_DEFAULTS = {"openmpi": None, "mpich": "pmi2"}


def _launch_settings(sweep: dict, launcher: str | None, flavor: str) -> launch.LaunchSettings:
    name = launcher or sweep.get("launcher", "local")
    check_scalar("sweep.launcher", "launcher", name)
    for key in ("nodes", "ranks_per_node", "ranks_per_socket", "cpus_per_rank"):
        if key in sweep:
            check_scalar(f"sweep.{key}", "pos_int", sweep[key])
    bind = sweep.get("bind", "core")
    check_scalar("sweep.bind", "bind", bind)
    if "srun_mpi" in sweep:
        check_scalar("sweep.srun_mpi", "str", sweep["srun_mpi"])
    extra = spec_values.string_list("sweep.launcher_args", sweep.get("launcher_args", []))
    return launch.LaunchSettings(
        launcher=name, nodes=sweep.get("nodes"), ranks_per_node=sweep.get("ranks_per_node"),
        ranks_per_socket=sweep.get("ranks_per_socket"),
        cpus_per_rank=sweep.get("cpus_per_rank"), bind=bind,
        srun_mpi=sweep.get("srun_mpi", SRUN_MPI_DEFAULTS[flavor]),
        extra=tuple(extra))


def _slurm_table(spec: dict) -> dict[str, Any]:
    slurm = spec_values.normalise_keys(spec_values.need_table("[slurm]", spec.get("slurm", {})), "[slurm]")
    for key, value in slurm.items():
        if key not in SLURM_KEYS:
            raise spec_values.unknown_key("slurm", key, SLURM_KEYS)
        if key == "extra":
            spec_values.string_list("slurm.extra", value)
        else:
            check_scalar(f"slurm.{key}", "str", value)
    return slurm


# ---------------------------------------------------------------------------------------------
# The programs' own option lists


@dataclasses.dataclass(frozen=True)
class Option:
    """One [bench] key: the option it sets and how its value is checked."""
    word: str                         # "--halo", or "--no-periodic" for a negation
    kind: str                         # a kind of check_scalar/option_words
    choices: tuple[str, ...] = ()     # the values the program accepts, where it lists them
    counts: bool = False              # a count is accepted besides the choices
    every: tuple[str, ...] = ()       # what "all" stands for, where the program says


_TYPE_KINDS = {"INT": "int", "UINT": "nonneg_int", "FLOAT": "number", "SIZE": "size"}


def _options_cache(exe: pathlib.Path) -> pathlib.Path:
    """Where the option list of this build of exe is kept: starting an MPI program to ask
    costs about half a second, and every `halox sweep` asks."""
    stat = exe.stat()
    key = hashlib.sha1(f"{exe.resolve()}:{stat.st_mtime_ns}:{stat.st_size}".encode())
    cache = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache")
    return cache / "halox" / "options" / f"{exe.name}-{key.hexdigest()[:16]}.json"


@functools.lru_cache(maxsize=None)
def _help_json(exe: pathlib.Path) -> tuple[dict, ...]:
    """The options `exe --help-json` lists (kept per build of exe)."""
    cached = _options_cache(exe)
    try:
        schema = json.loads(cached.read_text())
    except (OSError, json.JSONDecodeError):
        schema = None
    if not isinstance(schema, dict):
        try:
            done = subprocess.run([str(exe), "--help-json"], capture_output=True, text=True,
                                  timeout=60)
            schema = json.loads(done.stdout) if done.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError):
            schema = None
        if isinstance(schema, dict):
            try:
                cached.parent.mkdir(parents=True, exist_ok=True)
                cached.write_text(json.dumps(schema))
            except OSError:
                pass  # asked again next time
    if not isinstance(schema, dict) or not isinstance(schema.get("options"), list):
        raise SpecError(f"{exe} --help-json did not list its options; rebuild it")
    return tuple(schema["options"])


def _kind_of(entry: dict) -> str:
    """A value's check from the option's type, values expected and range."""
    if entry["flag"]:
        return "negatable" if entry.get("negations") else "bool"
    kind = _TYPE_KINDS.get(entry.get("type", ""), "str")
    low = entry.get("range", [None])[0]
    if kind in ("int", "number") and low is not None and low >= 0:
        kind = ("pos_" if low > 0 else "nonneg_") + kind
    if entry["expected"] in (2, 3) and kind.endswith("int"):
        sign = kind.split("_")[0] if "_" in kind else "int"
        return ("xyz_" if entry["expected"] == 3 else "xy_") + sign
    return kind


def program_options(program: Program, exe: pathlib.Path) -> dict[str, Option]:
    """The [bench] keys of the built program: each option it lists under its long name (dashes
    as underscores), negations ("--no-x") as flags of their own."""
    options = {}
    for entry in _help_json(exe):
        key = entry["name"].lstrip("-").replace("-", "_")
        kind = program.values.get(key) or _kind_of(entry)
        options[key] = Option(entry["name"], kind, tuple(str(c) for c in entry.get("choices", ())),
                              bool(entry.get("counts")), tuple(entry.get("all", ())))
        for negation in entry.get("negations", ()):
            options[negation.lstrip("-").replace("-", "_")] = Option(negation, "bool")
    return options


def _unlisted_options(program: Program, table: dict) -> dict[str, Option]:
    """Without a built program (a dry run): its value rules, and any other key as its value's
    TOML type says (the program checks it when it runs)."""
    options = {}
    for key, value in table.items():
        kind = program.values.get(key)
        if kind is None:
            kind = "bool" if isinstance(value, bool) else "int" if spec_values.is_int(value) else \
                "number" if isinstance(value, float) else \
                "xyz_int" if isinstance(value, list) and len(value) == 3 else \
                "xy_int" if isinstance(value, list) and len(value) == 2 else "str"
        options[key] = Option("--" + key.replace("_", "-"), kind)
    return options


def _option_table(program: Program, options: dict[str, Option], table: dict) -> list[str]:
    """[bench]: the program's other options, passed through as --key value."""
    words: list[str] = []
    for key, value in table.items():
        if key in program.reserved:
            raise SpecError(f"bench.{key} cannot be set: {program.reserved[key]}")
        if key in program.list_keys or key in program.expand_keys:
            raise SpecError(f"bench.{key} is a list option; put it in [matrix]")
        if key not in options:
            raise spec_values.unknown_key("bench", key, [k for k in options if k not in program.reserved])
        option = options[key]
        option_words = spec_values.option_words(f"bench.{key}", option.kind, value, option.choices)
        if option.kind == "bool":
            if value:
                words.append(option.word)
        elif option.kind == "negatable":
            words.append(option.word if value else "--no-" + option.word.removeprefix("--"))
        else:
            words += [option.word, *option_words]
    return words


# ---------------------------------------------------------------------------------------------
# Spec -> plan, part by part


def _top_tables(spec: dict) -> tuple[dict, dict, dict]:
    for key in spec:
        if key not in TOP_KEYS:
            raise spec_values.unknown_key("", key, TOP_KEYS)
    if "sweep" not in spec:
        raise SpecError("missing table [sweep]")
    sweep = spec_values.normalise_keys(spec_values.need_table("[sweep]", spec["sweep"]), "[sweep]")
    matrix = spec_values.normalise_keys(spec_values.need_table("[matrix]", spec.get("matrix", {})), "[matrix]")
    bench_opts = spec_values.normalise_keys(spec_values.need_table("[bench]", spec.get("bench", {})), "[bench]")
    for key in sweep:
        if key not in SWEEP_KEYS:
            raise spec_values.unknown_key("sweep", key, SWEEP_KEYS)
    return sweep, matrix, bench_opts


def _sweep_basics(spec_path: pathlib.Path, sweep: dict, mpi: str | None):
    """The program, the MPI flavour, the name, repeat and the environment of every run."""
    executable = sweep.get("executable", DEFAULT_EXECUTABLE)
    check_scalar("sweep.executable", "str", executable)
    if executable not in PROGRAMS:
        raise SpecError(f"sweep.executable must be one of {', '.join(PROGRAMS)}, "
                        f"got {executable!r}")
    if "ranks" not in sweep:
        raise SpecError("sweep.ranks is missing (the number of MPI ranks)")
    check_scalar("sweep.ranks", "pos_int", sweep["ranks"])
    repeat = sweep.get("repeat", 1)
    check_scalar("sweep.repeat", "pos_int", repeat)
    flavor = mpi or sweep.get("mpi", "openmpi")
    check_scalar("sweep.mpi", "str", flavor)
    if flavor not in MPI_FLAVORS:
        raise SpecError(f"sweep.mpi must be one of {', '.join(MPI_FLAVORS)}, got {flavor!r}")
    name = sweep.get("name", spec_path.stem)
    check_scalar("sweep.name", "str", name)
    if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
        raise SpecError(f"sweep.name may hold only letters, digits, '.', '_' and '-', got {name!r}")
    if "description" in sweep:
        check_scalar("sweep.description", "str", sweep["description"])
    sweep_env = spec_values.env_table("sweep.env", sweep["env"]) if "env" in sweep else {}
    if "timeout" in sweep:
        check_scalar("sweep.timeout", "pos_number", sweep["timeout"])
    return PROGRAMS[executable], flavor, name, repeat, sweep_env


def _build_of(sweep: dict, build_dir: str | None, flavor: str, root: pathlib.Path):
    if build_dir is not None:  # from the command line: relative to the current folder
        return pathlib.Path(build_dir).resolve()
    if "build_dir" in sweep:  # from the spec: relative to the checkout
        check_scalar("sweep.build_dir", "str", sweep["build_dir"])
        return (root / sweep["build_dir"]).resolve()
    return root / "build" / flavor


def _matrix_words(program: Program, options: dict[str, Option], matrix: dict):
    """Matrix: comma lists within one invocation, expanded keys across invocations."""
    lists: dict[str, list[str]] = {}
    expanded: dict[str, list[str]] = {}
    for key, value in matrix.items():
        kind = program.list_keys.get(key) or program.expand_keys.get(key)
        if kind is None:
            if key in options:
                raise SpecError(f"matrix.{key} is not a list option of {program.name}; "
                                "put it in [bench]")
            raise spec_values.unknown_key("matrix", key, {**program.list_keys, **program.expand_keys})
        words = spec_values.list_words(f"matrix.{key}", kind, value)
        option = options.get(key)
        allowed = (option.choices if option else ()) or spec_values.CHOICES.get(kind)
        for w in words if allowed else ():
            if w not in allowed and not (option and option.counts and w.isdigit() and int(w) > 0):
                raise SpecError(f"matrix.{key}: unknown value '{w}' "
                                f"(expected {', '.join(allowed)})")
        (lists if key in program.list_keys else expanded)[key] = words
    return lists, expanded


def _run_entry(where: str, run: Any, sweep: dict, timeout: float | None, sweep_env: dict):
    run = spec_values.normalise_keys(spec_values.need_table(where, run), where)
    for key in run:
        if key not in RUN_KEYS:
            raise spec_values.unknown_key(where, key, RUN_KEYS)
    if "name" not in run:
        raise SpecError(f"{where}.name is missing")
    check_scalar(f"{where}.name", "str", run["name"])
    if not re.fullmatch(r"[A-Za-z0-9._+-]+", run["name"]):
        raise SpecError(f"{where}.name may hold only letters, digits, '.', '_', '+' and "
                        f"'-', got {run['name']!r}")
    args = spec_values.string_list(f"{where}.args", run.get("args", []))
    for a in args:
        if a in ("--json", "--help", "-h", "--print") or a.startswith("--json="):
            raise SpecError(f"{where}.args cannot contain {a}")
    ranks = run.get("ranks", sweep["ranks"])
    check_scalar(f"{where}.ranks", "pos_int", ranks)
    run_timeout = timeout
    if run_timeout is None and "timeout" in run:
        check_scalar(f"{where}.timeout", "pos_number", run["timeout"])
        run_timeout = run["timeout"]
    if run_timeout is None:
        run_timeout = sweep.get("timeout")
    env = dict(sweep_env)
    if "env" in run:
        env.update(spec_values.env_table(f"{where}.env", run["env"]))
    return run["name"], ranks, args, env, run_timeout


def _runs(sweep: dict, timeout: float | None, sweep_env: dict) -> list[tuple]:
    runs_raw = sweep.get("run", [{"name": "default"}])
    if not isinstance(runs_raw, list) or not runs_raw:
        raise SpecError("sweep.run must be a non-empty array of tables ([[sweep.run]])")
    runs = []
    names = set()
    for i, run in enumerate(runs_raw, start=1):
        entry = _run_entry(f"sweep.run[{i}]", run, sweep, timeout, sweep_env)
        if entry[0] in names:
            raise SpecError(f"sweep.run[{i}].name '{entry[0]}' is used twice")
        names.add(entry[0])
        runs.append(entry)
    return runs


def _known_values(program: Program, options: dict[str, Option], exe: pathlib.Path, built: bool,
                  lists: dict):
    """What "all" stands for (as the program lists it); halox-bench's transports from the
    build."""
    known = {key: option.every for key, option in options.items() if option.every}
    if program is BENCH and built:
        listing = bench_transports(exe)
        if listing is not None:
            # "all" counts what it runs; a name is checked against every transport.
            transports, known["transport"] = listing
            for t in lists.get("transport", []):
                if t not in ("all", "auto") and t not in transports:
                    raise SpecError(f"matrix.transport: unknown transport '{t}' "
                                    f"({program.name} knows {', '.join(transports)}, auto, all)")
    return known


def _output_of(sweep: dict, output: str | None, root: pathlib.Path, name: str, flavor: str):
    if output is None and "output" in sweep:
        check_scalar("sweep.output", "str", sweep["output"])
        output = str(root / sweep["output"]) if not pathlib.Path(sweep["output"]).is_absolute() \
            else sweep["output"]
    return pathlib.Path(output).resolve() if output else default_output(root, name, flavor)


def _estimate(program: Program, lists: dict, known: dict, bench_opts: dict):
    """Configurations per invocation and a duration estimate, for the progress display."""
    configurations = 0
    if program.per_configuration:
        configurations = 1
        for key, words in lists.items():
            if "all" in words:
                configurations *= len(known[key]) if key in known else 0
            else:
                configurations *= len(words)
    estimate = None
    if "time" in bench_opts and configurations:
        rounds = bench_opts.get("rounds", 1)
        # --rounds auto: at least SETTLE_MIN_ROUNDS (more where cells have not settled).
        least = stability.SETTLE_MIN_ROUNDS if rounds == "auto" else int(rounds)
        estimate = configurations * float(bench_opts["time"]) * least
    return configurations, estimate


def _make_plan(spec_path, spec, output, build_dir, mpi, launcher_name, timeout,
               require_build) -> Plan:
    sweep, matrix, bench_opts = _top_tables(spec)
    program, flavor, name, repeat, sweep_env = _sweep_basics(spec_path, sweep, mpi)
    settings = _launch_settings(sweep, launcher_name, flavor)
    slurm = _slurm_table(spec)

    root = repo_root()
    build = _build_of(sweep, build_dir, flavor, root)
    exe = build / program.name
    built = exe.is_file() and os.access(exe, os.X_OK)
    options = program_options(program, exe) if built else \
        _unlisted_options(program, bench_opts)
    lists, expanded = _matrix_words(program, options, matrix)
    bench_words = _option_table(program, options, bench_opts)
    runs = _runs(sweep, timeout, sweep_env)
    if require_build and not built:
        raise SpecError(f"{exe} is not built (run `make build MPI={flavor}`)")
    known = _known_values(program, options, exe, built, lists)
    out = _output_of(sweep, output, root, name, flavor)
    work = work_dir_of(out)
    configurations, estimate = _estimate(program, lists, known, bench_opts)

    points = [dict(zip(expanded, values)) for values in itertools.product(*expanded.values())]
    invocations = []
    for r in range(repeat):
        for run_name, ranks, args, env, run_timeout in runs:
            for point in points:
                point_words = []
                for key, value in point.items():
                    point_words += [f"--{key.replace('_', '-')}", value]
                tag = "".join(f".{k}-{v}" for k, v in point.items())
                scratch = work / f"{name}.{flavor}.{run_name}.{r + 1}{tag}.jsonl"
                invocations.append(Invocation(
                    run_name, r, point, ranks, launch.command(settings, flavor, ranks, root), exe,
                    lists, [*bench_words, *point_words, *args], {"HALOX_MPI": flavor, **env},
                    run_timeout, scratch))
    peer_runs = _peer_runs(spec, spec_path, program, lists, bench_words, invocations, work,
                           name, flavor, require_build)
    return Plan(spec_path.resolve(), name, flavor, program, build, exe, out, work, settings,
                slurm, configurations, invocations, estimate, known, peer_runs)


def _nrep_of(bench_words: list[str]) -> int:
    """The exchanges halox-bench times (--nrep), for the peer programs; 1000 when timed by
    --time."""
    if "--nrep" in bench_words:
        return int(bench_words[bench_words.index("--nrep") + 1])
    return 1000


def _peer_runs(spec, spec_path, program, lists, bench_words, invocations, work, name, flavor,
               require_build) -> dict[int, list]:
    """[[peers]]: their runs beside each halox-bench invocation (see peers.py)."""
    try:
        # A spec's own [[peers]] win; else HALOX_CARTEX's programs beside the baselines.
        tables = spec["peers"] if "peers" in spec else (peers.cartex_tables(
            flavor, lists.get("type", ["double"]), _nrep_of(bench_words))
            if program is BENCH else [])
    except peers.PeerError as e:
        raise SpecError(str(e)) from None
    if "peers" not in spec and not tables:
        return {}
    if program is not BENCH:
        raise SpecError(f"[[peers]] run beside halox-bench only, not {program.name}")
    try:
        listed = peers.parse_peers(tables, spec_path.resolve().parent,
                                   lists.get("type", ["double"]), require_build)
        out = {}
        for i, inv in enumerate(invocations):
            out[i] = peers.plan_runs(
                listed, run=inv.name, repeat=inv.repeat, ranks=inv.ranks,
                launcher=inv.launcher, option_words=inv.other_args,
                halos=lists.get("halo", ["1"]), nfields=lists.get("nfields", ["1"]),
                env=inv.env, timeout=inv.timeout, work_dir=work, stem=f"{name}.{flavor}")
        return out
    except peers.PeerError as e:
        raise SpecError(str(e)) from None
