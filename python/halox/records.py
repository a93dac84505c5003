"""Loading, validating and grouping the JSON Lines records of the halox programs.

A `halox-bench` record is one configuration (transport x algorithm x grouping x type x halo x
nfields) of one run; all records of one invocation share a `run_id` (written by
`to_json_record` in apps/bench/main.cpp, schema_version 1).  `halox-halo2d` and `halox-ipc`
write one record per run, holding all its cells.  `halox sweep` adds `failure` records for runs
that failed and `complete` marks for runs that finished.
"""
from __future__ import annotations

import json
import math
import pathlib
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .identity import PEER_TOOL, SWEEP_TOOL

SUPPORTED_SCHEMA_VERSIONS = {1}
BENCH_TOOL = "halox-bench"

# Metrics a report can show: where the value lives in a record, its unit and how to scale it.
METRICS: dict[str, tuple[str, str, float]] = {
    # name: (description, unit, factor applied to the stored seconds)
    "median": ("median time per exchange of the slowest rank", "µs", 1e6),
    "mean": ("mean time per exchange of the slowest rank", "µs", 1e6),
    "min": ("minimum time per exchange of the slowest rank", "µs", 1e6),
    "p5": ("5th percentile of the time per exchange of the slowest rank", "µs", 1e6),
    "p95": ("95th percentile of the time per exchange of the slowest rank", "µs", 1e6),
    "seconds_per_10000": ("execution time of 10000 exchange calls (timed loop, slowest rank)",
                          "s", 1.0),
}

# Records name the baseline of their (xN) ratios (config.baseline, from halox-bench's
# --baseline); those written before they did used this one.
BASELINE_BEFORE_RECORDED = "mpi-types/staged/sequence"

ALGORITHM_ORDER = ["standard", "staged", "faces", "auto"]
GROUPING_ORDER = ["compact", "sequence", "cache", "whole", "auto"]
DECOMPOSITION_NAMES = {"cart": "mpicart", "hw": "hwcart"}
DECOMPOSITION_ORDER = ["cart", "hw", "auto"]


class RecordError(Exception):
    """A file or record that cannot be used; the message is one line."""


@dataclass(frozen=True)
class Record:
    source: str              # "file:line"
    run_id: str
    mpi_library: str
    ranks: int
    transport: str
    algorithm: str
    grouping: str            # how the fields are grouped into messages
    type: str
    halo: int                # uniform width, or -1 for per-side widths
    halo_lo: tuple[int, ...]
    halo_hi: tuple[int, ...]
    nfields: int
    domain: tuple[int, ...]
    global_domain: tuple[int, ...]
    timing: str
    decomposition_kind: str
    dims: tuple[int, ...]
    periodic: tuple[bool, ...]
    order: str
    times: dict[str, float]  # time_per_exchange_s
    seconds_per_10000: float
    efficiency: float
    verification: str
    raw: dict = field(repr=False, compare=False, hash=False)
    self_copy_share: float = math.nan  # of the self-copy reference (records since it exists)
    # Against the floor of the lines and the crossing together (records since it exists; NaN
    # where /dev/shm had no room to measure the crossing).
    crossing_efficiency: float = math.nan
    # Against a memcpy of the halo's bytes; `efficiency` is against the floor of the lines
    # (records since it exists: NaN before, whose "efficiency" was this one).
    memcpy_efficiency: float = math.nan
    peer: str = ""           # a peer program's name (halox-peer records), else ""

    @property
    def variant(self) -> str:
        """transport/algorithm/grouping, or the peer program's name."""
        return self.peer or f"{self.transport}/{self.algorithm}/{self.grouping}"

    @property
    def ratio_run(self) -> str:
        """The run whose ratios this record takes part in: its own, or for a peer program the
        halox-bench run it ran beside in the same sweep."""
        return str(self.raw.get("beside_run_id") or self.run_id) if self.peer else self.run_id

    @property
    def halo_label(self) -> str:
        if self.halo >= 0:
            return str(self.halo)
        lo = ":".join(map(str, self.halo_lo))
        hi = ":".join(map(str, self.halo_hi))
        return f"lo{lo}/hi{hi}"  # per-side widths, e.g. lo1:0:1/hi2:1:0

    @property
    def shape_label(self) -> str:
        """The Betzy results' hXfY label (h(lo1:0:1/hi2:1:0)fY for per-side widths)."""
        halo = self.halo_label if self.halo >= 0 else f"({self.halo_label})"
        return f"h{halo}f{self.nfields}"

    def metric(self, name: str) -> float:
        """The value of a metric in its report unit (µs per exchange, or seconds per 10000)."""
        _, _, factor = METRICS[name]
        if name == "seconds_per_10000":
            return self.seconds_per_10000 * factor
        return self.times[name] * factor


def _need(obj: dict, key: str, kind: type | tuple, where: str) -> Any:
    if key not in obj:
        raise RecordError(f"{where}: record has no '{key}'")
    value = obj[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        raise RecordError(f"{where}: '{key}' must be {kinds[0].__name__}, got {value!r}")
    if not isinstance(value, kinds):
        raise RecordError(f"{where}: '{key}' must be {kinds[0].__name__}, got {value!r}")
    return value


def grouping_key(config: dict) -> str:
    """The key of a record's config that holds the grouping: "grouping", or in a record written
    before the grouping had its own word, "fields" where it is a string (the one compatibility
    rule; halox-bench writes only "grouping")."""
    older = "grouping" not in config and isinstance(config.get("fields"), str)
    return "fields" if older else "grouping"


def parse_record(obj: Any, where: str) -> Record:
    """Validates one decoded JSON object and returns it as a Record."""
    if not isinstance(obj, dict):
        raise RecordError(f"{where}: a record must be a JSON object")
    _check_version(obj, where)
    config = _need(obj, "config", dict, where)
    decomp = _need(obj, "decomposition", dict, where)
    times = _need(obj, "time_per_exchange_s", dict, where)
    for key in ("median", "mean"):
        _need(times, key, (int, float), f"{where}: time_per_exchange_s")
    halo = _need(config, "halo", int, f"{where}: config")
    return Record(
        source=where,
        run_id=_need(obj, "run_id", str, where),
        mpi_library=_need(obj, "mpi_library", str, where).strip(),
        ranks=_need(obj, "ranks", int, where),
        transport=_need(config, "transport", str, f"{where}: config"),
        algorithm=_need(config, "algorithm", str, f"{where}: config"),
        grouping=_need(config, grouping_key(config), str, f"{where}: config"),
        type=_need(config, "type", str, f"{where}: config"),
        halo=halo,
        halo_lo=tuple(config.get("halo_lo") or ()),
        halo_hi=tuple(config.get("halo_hi") or ()),
        nfields=_need(config, "nfields", int, f"{where}: config"),
        domain=tuple(config.get("domain") or ()),
        global_domain=tuple(config.get("global_domain") or ()),
        timing=str(config.get("timing", "throughput")),
        decomposition_kind=_need(decomp, "kind", str, f"{where}: decomposition"),
        dims=tuple(_need(decomp, "dims", list, f"{where}: decomposition")),
        periodic=tuple(bool(p) for p in decomp.get("periodic", ())),
        order=str(decomp.get("order", "")),
        times={k: float(v) for k, v in times.items() if isinstance(v, (int, float))},
        seconds_per_10000=float(_need(obj, "seconds_per_10000", (int, float), where)),
        efficiency=float(obj.get("efficiency", math.nan)) if "line_floor_s" in obj else math.nan,
        verification=str(obj.get("verification", "")),
        raw=obj,
        self_copy_share=float(obj.get("self_copy_share", math.nan)),
        crossing_efficiency=float(obj.get("crossing_efficiency") or math.nan),
        memcpy_efficiency=float(obj.get("memcpy_efficiency", obj.get("efficiency", math.nan))),
    )


def parse_peer(obj: Any, where: str) -> Record:
    """A peer program's record (peers.py): the halox-bench schema, named by the peer."""
    import dataclasses
    record = parse_record(obj, where)
    return dataclasses.replace(record, peer=_need(obj, "peer", str, where))


@dataclass(frozen=True)
class Halo2dRun:
    """One run of halox-halo2d: a cell per (test, neighbours, message size)."""
    source: str
    run_id: str
    mpi_library: str
    ranks: int
    mesh: tuple[int, ...]
    periodic: bool
    reorder: bool
    trials: int
    repetitions: str              # "auto" or a number
    cells: dict[tuple[str, int, int], float]  # (test, neighbours, bytes) -> seconds per message
    tests: tuple[str, ...]        # in the order of the run
    raw: dict = field(repr=False, compare=False, hash=False)


@dataclass(frozen=True)
class IpcRun:
    """One run of halox-ipc: a row per block size, a cell per mechanism."""
    source: str
    run_id: str
    mpi_library: str
    ranks: int
    bufsize: int
    layout: str
    stride_factor: int
    mode: str                     # one-to-many, pairs
    mechanisms: tuple[str, ...]
    unavailable: dict[str, str]
    rows: tuple[dict, ...]        # iov_size, iov_count, memcpy_us, mechanisms {name: cell|None}
    raw: dict = field(repr=False, compare=False, hash=False)


HALO2D_TOOL = "halox-halo2d"
IPC_TOOL = "halox-ipc"


def parse_halo2d(obj: dict, where: str) -> Halo2dRun:
    _check_version(obj, where)
    mesh = _need(obj, "mesh", dict, where)
    options = _need(obj, "options", dict, where)
    results = _need(obj, "results", list, where)
    cells: dict[tuple[str, int, int], float] = {}
    tests: list[str] = []
    for i, r in enumerate(results):
        at = f"{where}: results[{i}]"
        if not isinstance(r, dict):
            raise RecordError(f"{at} must be an object")
        test = _need(r, "test", str, at)
        cells[(test, _need(r, "neighbors", int, at), _need(r, "bytes", int, at))] = float(
            _need(r, "seconds_per_message", (int, float), at))
        if test not in tests:
            tests.append(test)
    return Halo2dRun(
        source=where, run_id=str(obj.get("run_id") or obj.get("timestamp", where)),
        mpi_library=_need(obj, "mpi_library", str, where).strip(),
        ranks=_need(obj, "ranks", int, where),
        mesh=tuple(_need(mesh, "dims", list, f"{where}: mesh")),
        periodic=bool(mesh.get("periodic", True)), reorder=bool(mesh.get("reorder", False)),
        trials=int(options.get("trials", 0)), repetitions=str(options.get("repetitions", "")),
        cells=cells, tests=tuple(tests), raw=obj)


def parse_ipc(obj: dict, where: str) -> IpcRun:
    _check_version(obj, where)
    options = _need(obj, "options", dict, where)
    rows = _need(obj, "rows", list, where)
    for i, row in enumerate(rows):
        at = f"{where}: rows[{i}]"
        if not isinstance(row, dict):
            raise RecordError(f"{at} must be an object")
        _need(row, "iov_size", int, at)
        _need(row, "mechanisms", dict, at)
    return IpcRun(
        source=where, run_id=str(obj.get("run_id") or obj.get("timestamp", where)),
        mpi_library=_need(obj, "mpi_library", str, where).strip(),
        ranks=_need(obj, "ranks", int, where),
        bufsize=_need(options, "bufsize", int, f"{where}: options"),
        layout=str(options.get("layout", "contiguous")),
        stride_factor=int(options.get("stride_factor", 1)),
        mode=str(options.get("mode", "one-to-many")),
        mechanisms=tuple(options.get("mechanisms") or ()),
        unavailable=dict(obj.get("unavailable") or {}), rows=tuple(rows), raw=obj)


def _check_version(obj: dict, where: str) -> None:
    version = _need(obj, "schema_version", int, where)
    if version not in SUPPORTED_SCHEMA_VERSIONS:
        raise RecordError(f"{where}: schema_version {version} is not supported (this halox reads "
                          f"{', '.join(map(str, sorted(SUPPORTED_SCHEMA_VERSIONS)))})")


@dataclass
class LoadResult:
    records: list[Record]                   # halox-bench, one per configuration
    skipped_tools: dict[str, int]           # records of programs this halox does not know
    halo2d: list[Halo2dRun] = field(default_factory=list)
    ipc: list[IpcRun] = field(default_factory=list)
    failures: list[dict] = field(default_factory=list)  # runs of a sweep that failed
    duplicates: int = 0                     # records read twice (the same run and configuration)
    partial: list[str] = field(default_factory=list)    # files whose last line was cut short

    @property
    def count(self) -> int:
        return len(self.records) + len(self.halo2d) + len(self.ipc)


def _bench_identity(r: Record) -> tuple:
    return (BENCH_TOOL, r.run_id, r.variant, r.type, r.halo, r.halo_lo, r.halo_hi, r.nfields,
            r.decomposition_kind, r.dims, r.order)


def load(paths: Sequence[str | pathlib.Path]) -> LoadResult:
    """Reads JSON Lines files; an unreadable file or a malformed line is an error, except an
    unterminated last line (a writer killed mid-line), which is left out with a note. A record
    read twice (the same run and configuration, e.g. a file given twice or concatenated into
    another) counts once."""
    from . import resultfile
    result = LoadResult([], {})
    seen: set[tuple] = set()

    def keep(identity: tuple) -> bool:
        if identity in seen:
            result.duplicates += 1
            return False
        seen.add(identity)
        return True

    for path in paths:
        path = pathlib.Path(path)
        try:
            lines, partial = resultfile.read_lines(path)
        except FileNotFoundError:
            raise RecordError(f"{path}: no such file") from None
        except IsADirectoryError:
            raise RecordError(f"{path}: is a folder") from None
        except OSError as e:
            raise RecordError(f"{path}: cannot read: {e.strerror}") from None
        if partial:
            result.partial.append(str(path))
        for line in lines:
            where = f"{path}:{line.number}"
            try:
                obj = json.loads(line.text)
            except json.JSONDecodeError as e:
                raise RecordError(f"{where}: not a JSON record ({e.msg} at column {e.colno})") \
                    from None
            # Records written before `tool` existed name their `program`.
            tool = (obj.get("tool") or obj.get("program")) if isinstance(obj, dict) else None
            if tool == BENCH_TOOL:
                r = parse_record(obj, where)
                if keep(_bench_identity(r)):
                    result.records.append(r)
            elif tool == PEER_TOOL:
                r = parse_peer(obj, where)
                if keep(_bench_identity(r)):
                    result.records.append(r)
            elif tool == HALO2D_TOOL:
                h = parse_halo2d(obj, where)
                if keep((tool, h.run_id)):
                    result.halo2d.append(h)
            elif tool == IPC_TOOL:
                i = parse_ipc(obj, where)
                if keep((tool, i.run_id)):
                    result.ipc.append(i)
            elif tool == SWEEP_TOOL:
                if obj.get("event") == "failure" and keep(
                        (tool, obj.get("timestamp"), json.dumps(obj.get("sweep"), sort_keys=True))):
                    result.failures.append(obj)
            else:
                result.skipped_tools[str(tool)] = result.skipped_tools.get(str(tool), 0) + 1
    return result


def machine_text(raw: dict) -> str:
    """Which machine a record comes from: its hosts, and the CPU model where recorded."""
    hosts = list(dict.fromkeys(str(r.get("host", "?")) for r in raw.get("rank_map") or []))
    machine = raw.get("machine") or {}
    cpu = machine.get("cpu_model")
    cpus = machine.get("cpus")
    hardware = ", ".join(x for x in (cpu, f"{cpus} CPUs" + (" per node" if len(hosts) > 1
                                                               else "") if cpus else None) if x)
    if not hosts:
        where = "unknown host"
    elif len(hosts) == 1:
        where = hosts[0]
    else:
        where = f"{len(hosts)} nodes ({', '.join(hosts[:3])}{', ...' if len(hosts) > 3 else ''})"
    return where + (f" ({hardware})" if hardware else "")


# ---------------------------------------------------------------------------------------------
# Names and orderings


def toolchain_short(library: str) -> str:
    """A short toolchain name from the MPI library string ("ompi", "mpich", "impi", ...)."""
    low = library.lower()
    if "open mpi" in low or low.startswith("openmpi"):
        return "ompi"
    if "intel" in low:
        return "impi"
    if "mvapich" in low:
        return "mvapich"
    if "cray" in low:
        return "cray-mpich"
    if "mpich" in low:
        return "mpich"
    word = re.split(r"[\s,:]+", library.strip())[0] if library.strip() else "mpi"
    return word.lower() or "mpi"


def _library_version(library: str) -> str:
    match = re.search(r"\d+\.\d+(?:\.\d+)?", library)
    return match.group(0) if match else library


# Environment settings that change the MPI library's data path (halox-bench records them):
# records that differ in them are different toolchains for a report.
_SETTING_PREFIXES = ("OMPI_MCA_btl", "OMPI_MCA_pml", "OMPI_MCA_mtl", "OMPI_MCA_osc",
                     "OMPI_MCA_coll", "OMPI_MCA_mpi_yield", "UCX_", "FI_", "MPIR_CVAR_")


def settings(r: Record) -> str:
    """The recorded data-path settings, e.g. "btl_vader_single_copy_mechanism=none"."""
    env = r.raw.get("environment") or {}
    items = []
    for key in sorted(env):
        if key.startswith(_SETTING_PREFIXES) and "HOSTNAME" not in key:
            items.append(f"{key.removeprefix('OMPI_MCA_')}={env[key]}")
    return " ".join(items)


def toolchain_id(r: Record) -> tuple[str, str]:
    return (r.mpi_library, settings(r))


def toolchain_labels(records: Iterable[Record]) -> dict[tuple[str, str], str]:
    """Maps every toolchain (MPI library string, settings) to a unique short label: "ompi";
    "ompi-4.1.4" when two versions of a library are present; "ompi[settings]" when one
    library ran with different settings."""
    return _labels(list(dict.fromkeys(toolchain_id(r) for r in records)))


def toolchain_labels_of(libraries: Iterable[str]) -> dict[str, str]:
    """Short labels for MPI library strings (records that carry no data-path settings)."""
    return {lib: label for (lib, _), label in
            _labels([(lib, "") for lib in dict.fromkeys(libraries)]).items()}


def _labels(ids: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    libraries = list(dict.fromkeys(lib for lib, _ in ids))
    by_short: dict[str, list[str]] = {}
    for lib in libraries:
        by_short.setdefault(toolchain_short(lib), []).append(lib)
    library_label: dict[str, str] = {}
    for short, libs in by_short.items():
        for lib in libs:
            library_label[lib] = short if len(libs) == 1 else f"{short}-{_library_version(lib)}"
    labels: dict[tuple[str, str], str] = {}
    for lib, sets in ids:
        several = sum(1 for other, _ in ids if other == lib) > 1
        labels[(lib, sets)] = library_label[lib] + (f"[{sets or 'default'}]" if several else "")
    # Still equal (two library strings with the same version): number them.
    seen: dict[str, int] = {}
    for key in ids:
        label = labels[key]
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            labels[key] = f"{label}#{seen[label]}"
    return labels


def order_rank(value: str, order: list[str]) -> tuple[int, str]:
    return (order.index(value), "") if value in order else (len(order), value)


def sort_variants(variants: Iterable[str]) -> list[str]:
    def key(v: str):
        t, a, g = (v.split("/") + ["", "", ""])[:3]
        return (t, order_rank(a, ALGORITHM_ORDER), order_rank(g, GROUPING_ORDER))
    return sorted(set(variants), key=key)


def baseline_of(records: Iterable[Record]) -> str:
    """The baseline the records' halox-bench runs took (the first one named)."""
    for r in records:
        named = (r.raw.get("config") or {}).get("baseline")
        if named and not r.peer:
            return str(named)
    return BASELINE_BEFORE_RECORDED


def shape_key(r: Record) -> tuple:
    """Columns in the Betzy results' order: h1f1 h5f1 h1f8 h5f8 (fields, then halo)."""
    return (r.type, r.nfields, r.halo, r.halo_lo, r.halo_hi)


def halo_key(r: Record) -> tuple:
    return (r.halo, r.halo_lo, r.halo_hi)


def decomposition_key(r: Record) -> tuple:
    return (order_rank(r.decomposition_kind, DECOMPOSITION_ORDER), r.dims, r.order)


def domain_text(r: Record) -> str:
    if r.global_domain:
        return "global domain " + "x".join(map(str, r.global_domain))
    return "x".join(map(str, r.domain)) + " cells per rank"


def decomposition_text(r: Record) -> str:
    name = DECOMPOSITION_NAMES.get(r.decomposition_kind, r.decomposition_kind)
    periodic = "".join("1" if p else "0" for p in r.periodic)
    text = f"{name} {'x'.join(map(str, r.dims))}"
    if periodic and periodic != "111":
        text += f" periodic {periodic}"
    return text


def group(records: Iterable[Record], key: Callable[[Record], Any]) -> dict[Any, list[Record]]:
    """Groups records by key, groups in sorted key order, records in input order."""
    out: dict[Any, list[Record]] = {}
    for r in records:
        out.setdefault(key(r), []).append(r)
    return dict(sorted(out.items(), key=lambda kv: kv[0]))


def cell_value(records: Sequence[Record], metric: str) -> float:
    """The value of one table cell: its record's metric, or the median over several records
    (the same configuration from several runs)."""
    if not records:
        return math.nan
    values = [r.metric(metric) for r in records]
    return values[0] if len(values) == 1 else float(np.median(values))


def parse_list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [v.strip() for v in text.split(",") if v.strip()]


def select(records: Iterable[Record], *, run_id: list[str] | None = None,
           halo: list[str] | None = None, nfields: list[str] | None = None,
           transport: list[str] | None = None, algorithm: list[str] | None = None,
           grouping: list[str] | None = None, type: list[str] | None = None) -> list[Record]:
    """Keeps the records that match every given list (None = no filter)."""
    def keep(r: Record) -> bool:
        return ((run_id is None or r.run_id in run_id or (r.peer and r.ratio_run in run_id))
                and (halo is None or r.halo_label in halo)
                and (nfields is None or str(r.nfields) in nfields)
                and (transport is None or r.transport in transport)
                and (algorithm is None or r.algorithm in algorithm)
                and (grouping is None or r.grouping in grouping)
                and (type is None or r.type in type))
    return [r for r in records if keep(r)]
