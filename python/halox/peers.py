"""Peer programs in a sweep: the public halo-exchange benchmarks halox is compared with (the
ghexbench `cartex` programs: `benchmark_mpi_comm`, `benchmark_ghex_comm`, ...), run beside
halox-bench under the same launcher, binding, ranks and rank grid, their text output parsed into
records of the halox-bench schema.

A spec lists them as `[[peers]]` tables:

    [[peers]]
    name = "cartex-mpi"                 # the row of the report
    command = ["/opt/ghexbench/build/cartex/src/bin/benchmark", "{grid}", "{domain}",
               "--halo", "{halo}", "--nfields", "{nfields}", "--nrep", "1000", "--check"]
    format = "cartex"                   # how its output reads
    type = "float"                      # the element type it was built for (CARTEX_FLOAT)

After each halox-bench invocation (a [[sweep.run]] entry, one repetition) the sweep runs every
peer once per (halo, nfields) of the matrix, with {halo} and {nfields} set, {domain} the
`--domain X Y Z` (or `--global-domain`) of the halox run, and {grid} its rank grid in the
program's own options (--MPICart, or the hwcart levels --node .. --core and --order).  Each run
gives one `halox-peer` record; a sweep run again skips the ones recorded, as for halox-bench.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
import re
import shlex
import shutil
import sys
from typing import Any, Callable

from .identity import PEER_TOOL, settings_identity, timestamp
from .spec_values import check_scalar, env_table

SCHEMA_VERSION = 1
FORMATS = ("cartex",)
PEER_KEYS = {"name", "command", "format", "type", "env", "timeout"}
PLACEHOLDERS = ("{halo}", "{nfields}", "{domain}", "{grid}")


class PeerError(Exception):
    """A peer setting or a peer's output that cannot be used; the message is one line."""


# ---------------------------------------------------------------------------------------------
# Output formats


# cartex's summary (ghexbench cartex/src/runtime/runtime.cpp, runtime::exchange): rank 0 prints
# "repetitions" and then one `name value` line per statistic of the per-exchange times (each
# exchange timed alone, after a barrier), in seconds, and the throughput in GB/s.
_CARTEX_TIMES = {"mean (s)": "mean", "stddev (s)": "stddev", "median (s)": "median",
                 "5% centile (s)": "p5", "25% centile (s)": "p25", "75% centile (s)": "p75",
                 "95% centile (s)": "p95", "min (s)": "min", "max (s)": "max"}
_CARTEX_THROUGHPUT = {"tp. median (GB/s)": "median", "tp. 5% c. (GB/s)": "p5",
                      "tp. 25% c. (GB/s)": "p25", "tp. 75% c. (GB/s)": "p75",
                      "tp. 95% c. (GB/s)": "p95", "tp. min (GB/s)": "min",
                      "tp. max (GB/s)": "max"}
_CARTEX_LINE = re.compile(r"^(?P<name>[A-Za-z.%(/) 0-9]+?)\s+(?P<value>[-+0-9.eE]+|nan|inf)\s*$")


def parse_cartex(text: str) -> dict[str, Any]:
    """The statistics of a cartex run: times in seconds per exchange, throughput in GB/s, the
    runtime's name, ranks, repetitions and load; PeerError when the run did not measure (a
    failed check, a decomposition it could not build, output cut short)."""
    if "check failed" in text:
        line = next(l for l in text.splitlines() if "check failed" in l)
        raise PeerError(f"the program's own check failed: {line.strip()}")
    if "could not create decomposition" in text:
        raise PeerError("the program could not create the decomposition (rank grid and ranks "
                        "do not match, or the hwcart levels do not fit the machine)")
    values: dict[str, float] = {}
    runtime = None
    ranks = None
    for line in text.splitlines():
        stripped = line.strip()
        m = re.fullmatch(r"running on (\d+) ranks", stripped)
        if m:
            ranks = int(m.group(1))
            continue
        if ranks is None and re.fullmatch(r"[a-z]+_comm", stripped):
            runtime = stripped
            continue
        m = _CARTEX_LINE.match(stripped)
        if m:
            values.setdefault(m.group("name").strip(), float(m.group("value")))
    if "median (s)" not in values:
        raise PeerError("no cartex summary in the output (no 'median (s)' line)")
    missing = [k for k in (*_CARTEX_TIMES, "repetitions", "load (bytes)") if k not in values]
    if missing:
        raise PeerError(f"the cartex summary is cut short (no '{missing[0]}' line)")
    return {
        "runtime": runtime,
        "ranks": ranks,
        "repetitions": int(values["repetitions"]),
        "load_bytes": values["load (bytes)"],
        "elapsed_s": values.get("elapsed (s)", math.nan),
        "time_per_exchange_s": {v: values[k] for k, v in _CARTEX_TIMES.items()},
        "throughput_GBps": {v: values[k] for k, v in _CARTEX_THROUGHPUT.items() if k in values},
    }


PARSERS: dict[str, Callable[[str], dict[str, Any]]] = {"cartex": parse_cartex}


# ---------------------------------------------------------------------------------------------
# Rank grids: halox-bench's decomposition options in the program's words


_GRID_LEVELS = ("node", "socket", "numa", "l3", "core", "hwthread")
_HALOX_ONLY = {"--l2": "an L2-cache grid", "--l1": "an L1-cache grid",
               "--slot": "a grid of ranks by slot", "--reorder": "reordered ranks"}


def dims_create(ranks: int, dims: list[int]) -> list[int]:
    """MPI_Dims_create: the zero entries filled so that the product is `ranks`, as balanced as
    possible, in non-increasing order."""
    fixed = math.prod(d for d in dims if d > 0)
    free = [i for i, d in enumerate(dims) if d == 0]
    if ranks % fixed:
        raise PeerError(f"{ranks} ranks do not fit the grid {dims}")
    rest = ranks // fixed
    if not free:
        return list(dims)
    factors, n, p = [], rest, 2
    while n > 1:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    parts = [1] * len(free)
    for f in sorted(factors, reverse=True):
        parts[parts.index(min(parts))] *= f
    parts.sort(reverse=True)
    out = list(dims)
    for i, v in zip(free, parts):
        out[i] = v
    return out


@dataclasses.dataclass
class Grid:
    kind: str               # "cart" (MPI_Cart_create) or "hw" (hwcart levels)
    dims: list[int]         # the rank grid
    words: list[str]        # the cartex options that build it
    order: str = "XYZ"


def grid_of(words: list[str], ranks: int) -> Grid:
    """The rank grid that halox-bench options (the [bench] decomposition keys and a run's args)
    ask for, as cartex options; the later of two settings wins, as on halox-bench's command
    line."""
    mpicart: list[int] | None = None
    levels: dict[str, list[int]] = {}
    order = None
    decomposition = None
    i = 0
    while i < len(words):
        word = words[i]
        name = word.split("=", 1)[0]
        if name in _HALOX_ONLY:
            raise PeerError(f"the peers cannot take {name} ({_HALOX_ONLY[name]}); cartex knows "
                            "--MPICart and the hwcart levels --node .. --hwthread")
        if name == "--mpicart":
            mpicart = [int(x) for x in words[i + 1:i + 4]]
            i += 4
        elif name.lstrip("-") in _GRID_LEVELS:
            levels[name.lstrip("-")] = [int(x) for x in words[i + 1:i + 4]]
            i += 4
        elif name == "--periodic":
            if words[i + 1:i + 4] != ["1", "1", "1"]:
                raise PeerError("the peers run periodic grids only (cartex has no --periodic)")
            i += 4
        elif name == "--order":
            order = words[i + 1]
            i += 2
        elif name == "--decomposition":
            decomposition = words[i + 1]
            if decomposition == "auto":
                raise PeerError("--decomposition auto chooses a grid the peers cannot follow; "
                                "name the grid (--mpicart, or the levels --node .. --core)")
            i += 2
        else:
            i += 1
    if levels and decomposition != "cart":
        levels.setdefault("node", [1, 1, 1])  # hwcart's top level must be the node
        dims = [1, 1, 1]
        out = []
        for level in _GRID_LEVELS:
            if level in levels:
                dims = [a * b for a, b in zip(dims, levels[level])]
                out += [f"--{level}", *map(str, levels[level])]
        if math.prod(dims) != ranks:
            raise PeerError(f"the hwcart levels make a {'x'.join(map(str, dims))} grid, not "
                            f"{ranks} ranks")
        return Grid("hw", dims, out + ["--order", order or "XYZ"], order or "XYZ")
    dims = dims_create(ranks, mpicart or [0, 0, 0])
    if math.prod(dims) != ranks:
        raise PeerError(f"the grid {'x'.join(map(str, dims))} is not {ranks} ranks")
    # MPI_Cart_create numbers ranks x slowest; cartex's --MPICart ignores --order.
    return Grid("cart", dims, ["--MPICart", *map(str, dims)], "ZYX")


def domain_words(words: list[str]) -> tuple[list[str], list[int], list[int]]:
    """--domain X Y Z or --global-domain X Y Z from halox-bench options (default 64^3)."""
    domain, global_domain = [64, 64, 64], []
    for i, word in enumerate(words):
        if word == "--domain":
            domain = [int(x) for x in words[i + 1:i + 4]]
        elif word == "--global-domain":
            global_domain = [int(x) for x in words[i + 1:i + 4]]
    if global_domain:
        return ["--global-domain", *map(str, global_domain)], [], global_domain
    return ["--domain", *map(str, domain)], domain, []


# ---------------------------------------------------------------------------------------------
# The [[peers]] tables


@dataclasses.dataclass(frozen=True)
class Peer:
    name: str
    command: tuple[str, ...]
    format: str
    type: str
    env: tuple[tuple[str, str], ...] = ()
    timeout: float | None = None

    @property
    def program(self) -> str:
        return pathlib.Path(self.command[0]).name


def parse_peers(value: Any, spec_dir: pathlib.Path, types: list[str],
                require_program: bool) -> list[Peer]:
    """Checks the [[peers]] tables; raises PeerError (one line) when one is bad."""
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list) or not value:
        raise PeerError("peers must be an array of tables ([[peers]])")
    out: list[Peer] = []
    for i, table in enumerate(value, start=1):
        out.append(_peer(f"peers[{i}]", table, out, spec_dir, types, require_program))
    return out


def _peer(where: str, table: Any, before: list[Peer], spec_dir: pathlib.Path, types: list[str],
          require_program: bool) -> Peer:
    """One [[peers]] table; `before`: the peers of the tables above it."""
    if not isinstance(table, dict):
        raise PeerError(f"{where} must be a table")
    table = {k.replace("-", "_"): v for k, v in table.items()}
    for key in table:
        if key not in PEER_KEYS:
            raise PeerError(f"unknown key '{where}.{key}' (known: {', '.join(sorted(PEER_KEYS))})")
    for key in ("name", "command", "format"):
        if key not in table:
            raise PeerError(f"{where}.{key} is missing")
    name = _peer_name(where, table["name"], before)
    command = _peer_command(where, table["command"])
    fmt = table["format"]
    check_scalar(f"{where}.format", "str", fmt)
    if fmt not in FORMATS:
        raise PeerError(f"{where}.format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    element = _peer_type(where, table.get("type", "double"), types)
    program = command[0]
    if not _find_program(command, spec_dir) and require_program:
        raise PeerError(f"{where}.command: {program} is not an executable program")
    env = env_table(f"{where}.env", table["env"]) if "env" in table else {}
    timeout = None
    if "timeout" in table:
        check_scalar(f"{where}.timeout", "pos_number", table["timeout"])
        timeout = float(table["timeout"])
    return Peer(name, tuple(command), fmt, element, tuple(env.items()), timeout)


def _peer_name(where: str, name: Any, before: list[Peer]) -> str:
    check_scalar(f"{where}.name", "str", name)
    if not re.fullmatch(r"[A-Za-z0-9._+-]+", name):
        raise PeerError(f"{where}.name may hold only letters, digits, '.', '_', '+' and '-', "
                        f"got {name!r}")
    if name.count("/") or any(p.name == name for p in before):
        raise PeerError(f"{where}.name '{name}' is used twice")
    return name


def _peer_command(where: str, command: Any) -> list[str]:
    if isinstance(command, str):
        command = shlex.split(command)
    if not isinstance(command, list) or not command or \
            any(not isinstance(w, (str, int)) or isinstance(w, bool) for w in command):
        raise PeerError(f"{where}.command must be a non-empty list of words")
    command = [str(w) for w in command]
    for word in command:
        for ph in re.findall(r"\{[^}]*\}", word):
            if ph not in PLACEHOLDERS:
                raise PeerError(f"{where}.command: unknown placeholder {ph} (known: "
                                f"{', '.join(PLACEHOLDERS)})")
    if "{halo}" not in command or "{nfields}" not in command:
        raise PeerError(f"{where}.command must pass {{halo}} and {{nfields}} (the program "
                        "measures one of each per run)")
    return command


def _peer_type(where: str, element: Any, types: list[str]) -> str:
    check_scalar(f"{where}.type", "str", element)
    if element not in ("float", "double"):
        raise PeerError(f"{where}.type must be float or double, got {element!r}")
    if element not in types:
        raise PeerError(f"{where}.type {element} is not in matrix.type "
                        f"({', '.join(types)}): the peer would have nothing to stand beside")
    return element


def _find_program(command: list[str], spec_dir: pathlib.Path) -> bool:
    """Puts the program's full path into command[0] (a relative path is the spec's folder's,
    a bare name is looked up on PATH); whether it is an executable program."""
    program = command[0]
    if "/" in program:
        path = pathlib.Path(program).expanduser()
        if not path.is_absolute():
            path = (spec_dir / path).resolve()
        command[0] = str(path)
        return path.is_file() and os.access(path, os.X_OK)
    found = shutil.which(program)
    if found:
        command[0] = found
    return found is not None


# ---------------------------------------------------------------------------------------------
# The real cartex programs from HALOX_CARTEX


CARTEX_VARIABLE = "HALOX_CARTEX"
# cartex's mpi_comm runtime by element type (CARTEX_FLOAT): the file names HALOX_CARTEX's folder
# holds them under; float is the build of the Betzy results.
CARTEX_PROGRAMS = {"float": "benchmark_mpi_comm", "double": "benchmark_mpi_comm_double"}
# The peers HALOX_CARTEX adds, by the halox baseline each one's output stands beside.
CARTEX_PEERS = (("cartex-mpi", []), ("cartex-mpi-datatypes", ["--MPI-datatypes"]))


def cartex_programs(value: str, flavor: str) -> dict[str, pathlib.Path]:
    """The cartex mpi_comm programs HALOX_CARTEX names, by element type: a program (float, or
    double when its name ends in _double), or a folder holding benchmark_mpi_comm and/or
    benchmark_mpi_comm_double, directly or under a folder named after the MPI library
    (openmpi/, mpich/: each build runs under its own MPI only)."""
    path = pathlib.Path(value).expanduser()
    def runnable(p: pathlib.Path) -> bool:
        return p.is_file() and os.access(p, os.X_OK)
    if not path.is_dir():
        if not runnable(path):
            raise PeerError(f"{CARTEX_VARIABLE}={value} is neither a program nor a folder")
        return {"double" if path.name.endswith("_double") else "float": path.resolve()}
    found = {}
    for folder in (path / flavor, path):
        for element, name in CARTEX_PROGRAMS.items():
            if element not in found and runnable(folder / name):
                found[element] = (folder / name).resolve()
    if not found:
        raise PeerError(f"{CARTEX_VARIABLE}={value} holds no {' or '.join(CARTEX_PROGRAMS.values())}"
                        f" (nor under {flavor}/); docs/peers.md says how to build them")
    return found


def cartex_tables(flavor: str, types: list[str], nrep: int,
                  environ: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """[[peers]] tables for the real programs the two baselines follow, from HALOX_CARTEX (none
    when it is unset, or when no program has an element type of the sweep): benchmark_mpi_comm (beside mpi-cartex/staged/sequence) and
    benchmark_mpi_comm --MPI-datatypes (beside mpi-types/staged/sequence), for each element type
    of the sweep that a program was built for."""
    value = (os.environ if environ is None else environ).get(CARTEX_VARIABLE, "")
    if not value:
        return []
    programs = cartex_programs(value, flavor)
    usable = [t for t in types if t in programs]
    if not usable:
        # The sweep itself is fine: say why nothing runs beside it rather than refuse it.
        print(f"halox sweep: note: {CARTEX_VARIABLE}: no program for the sweep's type "
              f"({', '.join(types)}), only for {', '.join(sorted(programs))}: the baselines run "
              f"alone (cartex built with -DCARTEX_FLOAT=double is {CARTEX_PROGRAMS['double']})",
              file=sys.stderr)
        return []
    tables = []
    for element in usable:
        for name, extra in CARTEX_PEERS:
            tables.append({
                "name": name if element == "float" else f"{name}-{element}",
                "command": [str(programs[element]), "{grid}", "{domain}", "--halo", "{halo}",
                            "--nfields", "{nfields}", "--nrep", str(nrep), "--check", *extra],
                "format": "cartex", "type": element})
    return tables


@dataclasses.dataclass
class PeerRun:
    """One run of a peer program: one (halo, nfields) beside one halox-bench invocation."""
    peer: Peer
    run: str                      # the [[sweep.run]] entry
    repeat: int                   # 0-based
    ranks: int
    halo: int
    nfields: int
    argv: list[str]
    env: dict[str, str]
    timeout: float | None
    grid: Grid
    domain: list[int]
    global_domain: list[int]
    log_stem: pathlib.Path

    @property
    def label(self) -> str:
        return f"{self.peer.name} h{self.halo}f{self.nfields} beside {self.run} #{self.repeat + 1}"

    def shell_line(self) -> str:
        prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        return (prefix + " " if prefix else "") + shlex.join(self.argv)

    def coordinates(self, sweep_name: str, mpi: str) -> dict[str, Any]:
        return {"name": sweep_name, "mpi": mpi, "run": self.run, "repeat": self.repeat + 1,
                "peer": self.peer.name, "point": {"halo": self.halo, "nfields": self.nfields},
                "settings": [f"ranks={self.ranks}", *self.argv[self.argv.index(
                    self.peer.command[0]):]]}


def identity(coords: dict) -> tuple:
    return (coords.get("name"), coords.get("mpi"), coords.get("run"), coords.get("repeat"),
            coords.get("peer"), json.dumps(coords.get("point") or {}, sort_keys=True),
            settings_identity(coords.get("settings") or ()))


def plan_runs(peers: list[Peer], *, run: str, repeat: int, ranks: int, launcher: list[str],
              option_words: list[str], halos: list[str], nfields: list[str],
              env: dict[str, str], timeout: float | None, work_dir: pathlib.Path,
              stem: str) -> list[PeerRun]:
    """The peer runs beside one halox-bench invocation, in the order of the peers, then fields,
    then halo (the Betzy tables' columns)."""
    if not peers:
        return []
    grid = grid_of(option_words, ranks)
    domain_option, domain, global_domain = domain_words(option_words)
    out = []
    for peer in peers:
        for nf in nfields:
            for h in halos:
                argv = []
                for word in peer.command:
                    if word == "{grid}":
                        argv += grid.words
                    elif word == "{domain}":
                        argv += domain_option
                    else:
                        argv.append(word.replace("{halo}", h).replace("{nfields}", nf))
                out.append(PeerRun(
                    peer, run, repeat, ranks, int(h), int(nf), [*launcher, *argv],
                    {**env, **dict(peer.env)}, peer.timeout or timeout, grid, domain,
                    global_domain,
                    work_dir / f"{stem}.{run}.{repeat + 1}.{peer.name}.h{h}f{nf}"))
    return out


# ---------------------------------------------------------------------------------------------
# Records


def make_record(run: PeerRun, parsed: dict[str, Any], *, sweep_name: str, mpi: str,
                launch_line: str, launcher: str, spec: str,
                beside: dict | None, mpi_library: str) -> dict[str, Any]:
    """A halox-peer record: the halox-bench schema's coordinates (config, decomposition,
    time_per_exchange_s, seconds_per_10000), the program's own figures beside them. `beside` is
    a record of the halox-bench run it ran beside, whose run id, decomposition and machine it
    shares."""
    times = parsed["time_per_exchange_s"]
    stamp = timestamp()
    if beside:
        decomposition = dict(beside.get("decomposition") or {})
    else:
        decomposition = {"kind": run.grid.kind, "dims": run.grid.dims,
                         "periodic": [True, True, True], "order": run.grid.order}
    record = {
        "tool": PEER_TOOL, "schema_version": SCHEMA_VERSION, "timestamp": stamp,
        "peer": run.peer.name, "program": run.peer.program, "format": run.peer.format,
        "runtime": parsed.get("runtime"),
        "run_id": f"{stamp}-{run.peer.name}-h{run.halo}f{run.nfields}-{os.getpid()}",
        "beside_run_id": beside.get("run_id") if beside else None,
        "mpi_library": mpi_library, "ranks": run.ranks,
        "config": {"transport": run.peer.name, "algorithm": "-", "grouping": "-",
                   "type": run.peer.type, "halo": run.halo, "nfields": run.nfields,
                   "halo_lo": [run.halo] * 3, "halo_hi": [run.halo] * 3,
                   "domain": run.domain, "global_domain": run.global_domain,
                   # cartex times every exchange alone after a barrier: halox's latency timing
                   "timing": "latency"},
        "decomposition": decomposition,
        "time_per_exchange_s": times,
        "time_statistic_of": "rank 0",
        "seconds_per_10000": times["mean"] * 1e4,
        "repetitions": parsed["repetitions"], "load_bytes": parsed["load_bytes"],
        "throughput_GBps": parsed["throughput_GBps"],
        # cartex --check compares every halo cell and prints "check failed" (refused above)
        "verification": "passed" if "--check" in run.argv else "not checked",
        "command": run.argv,
        "sweep": {**run.coordinates(sweep_name, mpi), "launch": launch_line,
                  "launcher": launcher, "spec": spec},
    }
    if beside:
        for key in ("machine", "rank_map", "environment"):
            if key in beside:
                record[key] = beside[key]
    return record


def library_text(flavor: str) -> str:
    return {"openmpi": "Open MPI", "mpich": "MPICH"}.get(flavor, flavor)
