"""`halox sweep SPEC.toml`: runs a matrix of halox-bench configurations described in TOML.

Each `[[sweep.run]]` entry is one invocation of halox-bench under scripts/mpirun.sh, with the
whole `[matrix]` passed as comma lists, so that every variant of an entry is measured in one
run (one run_id) and ratios between them are meaningful.  Entries are repeated `repeat` times,
interleaved (run1, run2, run1, run2, ...).  The spec is checked completely - keys, types,
values, the build and the output file - before anything is launched.
"""
from __future__ import annotations

import dataclasses
import datetime
import difflib
import os
import pathlib
import re
import shlex
import subprocess
import time
import tomllib
from typing import Any

PROGRAM = "halox-bench"
MPI_FLAVORS = ("openmpi", "mpich")

# [matrix]: halox-bench options that take comma lists.
MATRIX_KEYS: dict[str, str] = {  # key: element kind
    "halo": "nonneg_int", "nfields": "pos_int", "type": "str", "transport": "str",
    "algorithm": "str", "fields": "str",
}
CHOICES: dict[str, tuple[str, ...]] = {
    "type": ("float", "double"),
    "algorithm": ("standard", "staged", "faces", "all"),
    "fields": ("compact", "sequence", "all"),
}

# [bench]: every other halox-bench option, passed through as --key (underscores -> dashes).
BENCH_KEYS: dict[str, str] = {
    "domain": "xyz_pos", "global_domain": "xyz_pos", "halo_lo": "xyz_nonneg",
    "halo_hi": "xyz_nonneg", "nrep": "pos_int", "time": "pos_number", "warmup": "nonneg_int",
    "rounds": "pos_int", "timing": "timing", "baseline": "variant", "no_check": "bool",
    "quiet": "bool",
    # decomposition (usually per run, in [[sweep.run]] args, but allowed for all runs here)
    "decomposition": "decomposition", "mpicart": "xyz_nonneg", "periodic": "xyz_01",
    "reorder": "bool", "node": "xyz_pos", "socket": "xyz_pos", "numa": "xyz_pos", "l3": "xyz_pos",
    "l2": "xyz_pos", "l1": "xyz_pos", "core": "xyz_pos", "hwthread": "xyz_pos",
    "slot": "xyz_pos", "order": "order", "ranks_per_node": "nonneg_int", "topology": "str",
    "assume_binding": "binding",
}
RESERVED_BENCH_KEYS = {"json": "the output file is set by halox sweep (use --output or "
                               "sweep.output)",
                       "help": "not a benchmark option", "print": "it runs no benchmark"}
SWEEP_KEYS = {"ranks", "repeat", "mpi", "run", "name", "description", "output", "build_dir", "env"}
RUN_KEYS = {"name", "args", "ranks", "env"}
TOP_KEYS = {"sweep", "matrix", "bench"}


class SpecError(Exception):
    """A bad spec; the message is one line."""


@dataclasses.dataclass
class Invocation:
    name: str
    repeat: int          # 0-based repetition
    ranks: int
    argv: list[str]      # the full command line
    env: dict[str, str]  # environment settings added to the caller's

    def shell_line(self) -> str:
        prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        return (prefix + " " if prefix else "") + shlex.join(self.argv)


@dataclasses.dataclass
class Plan:
    spec_path: pathlib.Path
    name: str
    mpi: str
    build_dir: pathlib.Path
    bench: pathlib.Path
    output: pathlib.Path
    configurations: int           # per invocation
    invocations: list[Invocation]
    estimate_s: float | None      # per invocation, from --time x rounds, when known


# ---------------------------------------------------------------------------------------------
# Value checks


def _type_name(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "a table"}.get(type(value), type(value).__name__)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_scalar(where: str, kind: str, v: Any) -> None:
    if kind in ("pos_int", "nonneg_int"):
        if not _is_int(v):
            raise SpecError(f"{where} must be an integer, not {_type_name(v)} ({v!r})")
        if kind == "pos_int" and v <= 0:
            raise SpecError(f"{where} must be positive, got {v}")
        if v < 0:
            raise SpecError(f"{where} must not be negative, got {v}")
    elif kind == "pos_number":
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise SpecError(f"{where} must be a number, not {_type_name(v)} ({v!r})")
        if v <= 0:
            raise SpecError(f"{where} must be positive, got {v}")
    elif kind == "bool":
        if not isinstance(v, bool):
            raise SpecError(f"{where} must be true or false, not {_type_name(v)} ({v!r})")
    else:
        if not isinstance(v, str):
            raise SpecError(f"{where} must be a string, not {_type_name(v)} ({v!r})")
        if not v:
            raise SpecError(f"{where} must not be empty")
        allowed = {"timing": ("throughput", "latency"),
                   "decomposition": ("cart", "hw", "auto"),
                   "order": ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"),
                   "binding": ("real", "spread", "core", "hwthread")}.get(kind)
        if allowed and v not in allowed:
            raise SpecError(f"{where} must be one of {', '.join(allowed)}, got {v!r}")
        if kind == "variant" and v.count("/") != 2:
            raise SpecError(f"{where} must be transport/algorithm/fields, got {v!r}")


def _check_bench_value(where: str, kind: str, v: Any) -> list[str]:
    """Checks a [bench] value and returns its command-line words (after the option)."""
    if kind.startswith("xyz_"):
        if not isinstance(v, list) or len(v) != 3:
            raise SpecError(f"{where} must be a list of 3 integers [X, Y, Z], got {v!r}")
        for x in v:
            if not _is_int(x):
                raise SpecError(f"{where} must be a list of 3 integers [X, Y, Z], got {v!r}")
            if kind == "xyz_pos" and x <= 0:
                raise SpecError(f"{where} entries must be positive, got {v!r}")
            if kind in ("xyz_nonneg", "xyz_01") and x < 0:
                raise SpecError(f"{where} entries must not be negative, got {v!r}")
            if kind == "xyz_01" and x > 1:
                raise SpecError(f"{where} entries must be 0 or 1, got {v!r}")
        return [str(x) for x in v]
    _check_scalar(where, kind, v)
    if kind == "bool":
        return []
    return [repr(v) if isinstance(v, float) else str(v)]


def _normalise_keys(table: dict, where: str) -> dict:
    out = {}
    for key, value in table.items():
        norm = key.replace("-", "_")
        if norm in out:
            raise SpecError(f"{where}: key '{key}' is given twice")
        out[norm] = value
    return out


def _unknown(where: str, key: str, known: set | dict) -> SpecError:
    what = f"key '{where}.{key}'" if where else f"table '{key}'"
    close = difflib.get_close_matches(key, list(known), n=1)
    hint = f"did you mean '{close[0]}'?" if close else f"known: {', '.join(sorted(known))}"
    return SpecError(f"unknown {what} ({hint})")


def _need_table(where: str, value: Any) -> dict:
    if not isinstance(value, dict):
        raise SpecError(f"{where} must be a table, not {_type_name(value)}")
    return value


def _env_table(where: str, value: Any) -> dict[str, str]:
    table = _need_table(where, value)
    env = {}
    for k, v in table.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
            raise SpecError(f"{where}: '{k}' is not an environment variable name")
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise SpecError(f"{where}.{k} must be a string, not {_type_name(v)}")
        env[k] = str(v)
    return env


# ---------------------------------------------------------------------------------------------
# Spec -> plan


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


def bench_transports(bench: pathlib.Path) -> tuple[str, ...] | None:
    """The transport names the built halox-bench knows (from its --help), or None."""
    try:
        out = subprocess.run([str(bench), "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"Transport\(s\):\s*(.*?),?\s+or all", out.stdout, re.S)
    if not match:
        return None
    return tuple(t.strip() for t in match.group(1).split(",") if t.strip())


def _list_words(where: str, kind: str, value: Any) -> list[str]:
    values = value if isinstance(value, list) else [value]
    if not values:
        raise SpecError(f"{where} must not be empty")
    words = []
    for v in values:
        if kind == "str":
            _check_scalar(where, "str", v)
            if "," in v:
                raise SpecError(f"{where}: write lists as TOML lists, not '{v}'")
        else:
            _check_scalar(where, kind, v)
        words.append(str(v))
    return words


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


def make_plan(spec_path: str | pathlib.Path, *, output: str | None = None,
              build_dir: str | None = None, mpi: str | None = None,
              require_build: bool = True, now: datetime.datetime | None = None) -> Plan:
    """Checks the spec and returns the invocations; raises SpecError (one line) when bad."""
    spec_path = pathlib.Path(spec_path)
    try:
        return _make_plan(spec_path, load_spec(spec_path), output, build_dir, mpi, require_build,
                          now)
    except SpecError as e:
        message = str(e)
        if not message.startswith(str(spec_path)):
            message = f"{spec_path}: {message}"
        raise SpecError(message) from None


def _make_plan(spec_path, spec, output, build_dir, mpi, require_build, now) -> Plan:
    for key in spec:
        if key not in TOP_KEYS:
            raise _unknown("", key, TOP_KEYS)
    if "sweep" not in spec:
        raise SpecError("missing table [sweep]")
    sweep = _normalise_keys(_need_table("[sweep]", spec["sweep"]), "[sweep]")
    matrix = _normalise_keys(_need_table("[matrix]", spec.get("matrix", {})), "[matrix]")
    bench_opts = _normalise_keys(_need_table("[bench]", spec.get("bench", {})), "[bench]")

    for key in sweep:
        if key not in SWEEP_KEYS:
            raise _unknown("sweep", key, SWEEP_KEYS)
    if "ranks" not in sweep:
        raise SpecError("sweep.ranks is missing (the number of MPI ranks)")
    _check_scalar("sweep.ranks", "pos_int", sweep["ranks"])
    repeat = sweep.get("repeat", 1)
    _check_scalar("sweep.repeat", "pos_int", repeat)
    flavor = mpi or sweep.get("mpi", "openmpi")
    _check_scalar("sweep.mpi", "str", flavor)
    if flavor not in MPI_FLAVORS:
        raise SpecError(f"sweep.mpi must be one of {', '.join(MPI_FLAVORS)}, got {flavor!r}")
    name = sweep.get("name", spec_path.stem)
    _check_scalar("sweep.name", "str", name)
    if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
        raise SpecError(f"sweep.name may hold only letters, digits, '.', '_' and '-', got {name!r}")
    for key in ("description",):
        if key in sweep:
            _check_scalar(f"sweep.{key}", "str", sweep[key])
    sweep_env = _env_table("sweep.env", sweep["env"]) if "env" in sweep else {}

    # Matrix: comma lists.
    matrix_words: list[str] = []
    configurations = 1
    for key, value in matrix.items():
        if key not in MATRIX_KEYS:
            if key in BENCH_KEYS:
                raise SpecError(f"matrix.{key} is not a list option of {PROGRAM}; "
                                "put it in [bench]")
            raise _unknown("matrix", key, MATRIX_KEYS)
        words = _list_words(f"matrix.{key}", MATRIX_KEYS[key], value)
        if key in CHOICES:
            for w in words:
                if w not in CHOICES[key]:
                    raise SpecError(f"matrix.{key}: unknown value '{w}' "
                                    f"(expected {', '.join(CHOICES[key])})")
        matrix_words += [f"--{key}", ",".join(words)]

    # Bench: everything else, passed through.
    bench_words: list[str] = []
    for key, value in bench_opts.items():
        if key in RESERVED_BENCH_KEYS:
            raise SpecError(f"bench.{key} cannot be set: {RESERVED_BENCH_KEYS[key]}")
        if key in MATRIX_KEYS:
            raise SpecError(f"bench.{key} is a list option; put it in [matrix]")
        if key not in BENCH_KEYS:
            raise _unknown("bench", key, BENCH_KEYS)
        words = _check_bench_value(f"bench.{key}", BENCH_KEYS[key], value)
        option = "--" + key.replace("_", "-")
        if BENCH_KEYS[key] == "bool":
            if value:
                bench_words.append(option)
        else:
            bench_words += [option, *words]

    # Runs.
    runs_raw = sweep.get("run", [{"name": "default"}])
    if not isinstance(runs_raw, list) or not runs_raw:
        raise SpecError("sweep.run must be a non-empty array of tables ([[sweep.run]])")
    runs = []
    names = set()
    for i, run in enumerate(runs_raw, start=1):
        where = f"sweep.run[{i}]"
        run = _normalise_keys(_need_table(where, run), where)
        for key in run:
            if key not in RUN_KEYS:
                raise _unknown(where, key, RUN_KEYS)
        if "name" not in run:
            raise SpecError(f"{where}.name is missing")
        _check_scalar(f"{where}.name", "str", run["name"])
        if run["name"] in names:
            raise SpecError(f"{where}.name '{run['name']}' is used twice")
        names.add(run["name"])
        args = run.get("args", [])
        if not isinstance(args, list) or any(not isinstance(a, (str, int, float)) or
                                             isinstance(a, bool) for a in args):
            raise SpecError(f"{where}.args must be a list of strings, got {args!r}")
        args = [str(a) for a in args]
        for a in args:
            if a in ("--json", "--help", "-h", "--print") or a.startswith("--json="):
                raise SpecError(f"{where}.args cannot contain {a}")
        ranks = run.get("ranks", sweep["ranks"])
        _check_scalar(f"{where}.ranks", "pos_int", ranks)
        env = dict(sweep_env)
        if "env" in run:
            env.update(_env_table(f"{where}.env", run["env"]))
        runs.append((run["name"], ranks, args, env))

    # Build, launcher, output.
    root = repo_root()
    launcher = root / "scripts" / "mpirun.sh"
    if build_dir is not None:  # from the command line: relative to the current folder
        build = pathlib.Path(build_dir).resolve()
    elif "build_dir" in sweep:  # from the spec: relative to the checkout
        _check_scalar("sweep.build_dir", "str", sweep["build_dir"])
        build = (root / sweep["build_dir"]).resolve()
    else:
        build = root / "build" / flavor
    bench = build / PROGRAM
    built = bench.is_file() and os.access(bench, os.X_OK)
    if require_build and not built:
        raise SpecError(f"{bench} is not built (run `make build MPI={flavor}`)")
    known = bench_transports(bench) if built else None
    if known is not None and "transport" in matrix:
        for t in _list_words("matrix.transport", "str", matrix["transport"]):
            if t != "all" and t not in known:
                raise SpecError(f"matrix.transport: unknown transport '{t}' "
                                f"({PROGRAM} knows {', '.join(known)}, all)")

    if output is None and "output" in sweep:
        _check_scalar("sweep.output", "str", sweep["output"])
        output = str(root / sweep["output"]) if not pathlib.Path(sweep["output"]).is_absolute() \
            else sweep["output"]
    if output is None:
        stamp = (now or datetime.datetime.now()).strftime("%Y%m%d-%H%M%S")
        output = str(root / "results" / f"sweep-{name}-{flavor}-{stamp}.jsonl")
    out = pathlib.Path(output).resolve()

    # Number of configurations and a duration estimate, for the progress display.
    for key in MATRIX_KEYS:
        if key not in matrix:
            continue
        words = _list_words(f"matrix.{key}", MATRIX_KEYS[key], matrix[key])
        count = len(words)
        if "all" in words:
            every = {"algorithm": 3, "fields": 2}
            count = every[key] if key in every else (len(known) if known else 0)
        configurations *= count
    estimate = None
    if "time" in bench_opts and configurations:
        estimate = configurations * float(bench_opts["time"]) * int(bench_opts.get("rounds", 1))

    invocations = []
    for r in range(repeat):
        for run_name, ranks, args, env in runs:
            argv = [str(launcher), str(ranks), str(bench), *matrix_words, *bench_words, *args,
                    "--json", str(out)]
            invocations.append(Invocation(run_name, r, ranks, argv,
                                          {"HALOX_MPI": flavor, **env}))
    return Plan(spec_path, name, flavor, build, bench, out, configurations, invocations, estimate)


def prepare_output(path: pathlib.Path) -> None:
    """Creates the output's folder and checks that the file can be appended to."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a"):
            pass
    except OSError as e:
        raise SpecError(f"cannot append to {path}: {e.strerror}") from None


# ---------------------------------------------------------------------------------------------
# Running


def describe(plan: Plan) -> list[str]:
    """The dry-run text: comment lines, then one exact command line per invocation."""
    lines = [f"# sweep '{plan.name}' from {plan.spec_path}: {len(plan.invocations)} invocation(s)"
             + (f" x {plan.configurations} configurations" if plan.configurations else "")
             + (f", ~{plan.estimate_s:.0f} s of timed exchanges each" if plan.estimate_s else ""),
             f"# records are appended to {plan.output}"]
    if not plan.bench.is_file():
        lines.append(f"# note: {plan.bench} is not built yet")
    lines += [inv.shell_line() for inv in plan.invocations]
    return lines


def _count_lines(path: pathlib.Path) -> int:
    try:
        with path.open("rb") as f:
            return sum(1 for line in f if line.strip())
    except FileNotFoundError:
        return 0


def _error_summary(prog: str, stdout: str, stderr: str) -> str:
    for line in (stdout + "\n" + stderr).splitlines():
        if line.startswith(f"{prog}: error:"):
            return line
    tail = [l for l in stderr.splitlines() if l.strip()]
    return tail[-1].strip() if tail else "no error message"


def run(plan: Plan, *, console=None, log=None, verbose: bool = False) -> int:
    """Runs every invocation with a rich progress display; returns the records written."""
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn,
                               TextColumn, TimeElapsedColumn)

    console = console or Console(stderr=True)
    prepare_output(plan.output)
    before = _count_lines(plan.output)
    columns = [SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(),
               MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task(f"sweep {plan.name}", total=len(plan.invocations))
        for i, inv in enumerate(plan.invocations, start=1):
            label = f"{inv.name} (repeat {inv.repeat + 1})" if any(
                j.repeat for j in plan.invocations) else inv.name
            progress.update(task, description=f"sweep {plan.name}: {label}")
            env = dict(os.environ)
            env.update(inv.env)
            if log is not None:
                log.write(f"$ {inv.shell_line()}\n")
            started = time.monotonic()
            done = subprocess.run(inv.argv, capture_output=True, text=True, env=env)
            if log is not None:
                log.write(done.stdout)
                log.write(done.stderr)
            if done.returncode != 0:
                progress.stop()
                raise RunError(f"run '{inv.name}' ({i}/{len(plan.invocations)}) failed with exit "
                               f"code {done.returncode}: "
                               f"{_error_summary(PROGRAM, done.stdout, done.stderr)}")
            if verbose:
                progress.console.print(done.stdout.rstrip(), markup=False, highlight=False,
                                       soft_wrap=True)
            progress.console.print(f"  {label}: done in {time.monotonic() - started:.1f} s",
                                   markup=False, highlight=False)
            progress.advance(task)
    return _count_lines(plan.output) - before


class RunError(Exception):
    """A launched benchmark failed; the message is one line."""


def main(args) -> int:
    plan = make_plan(args.spec, output=args.output, build_dir=args.build_dir, mpi=args.mpi,
                     require_build=not args.dry_run)
    if args.dry_run:
        print("\n".join(describe(plan)))
        return 0
    written = run(plan, verbose=args.verbose)
    print(f"{written} records appended to {plan.output}")
    print(f"tables: halox report {shlex.quote(str(plan.output))}")
    return 0
