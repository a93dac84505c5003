"""Tables in the layouts of the GHEX benchmark results on Betzy (chosen and full results, two
toolchains, mpicart vs hwcart), as fixed-width text or GitHub markdown; the halox-halo2d and
halox-ipc tables (report_halo2d.py, report_ipc.py) render through the same classes."""
from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from . import records as rec
from . import stability
from .records import Record

LAYOUTS = ("chosen", "full", "decomposition")
# The programs the plain-MPI variants follow (docs/peers.md), named beside their ratios.
BASELINE_ALGORITHMS = {
    "mpi-types/staged/sequence": "the algorithm of cartex mpi_comm --MPI-datatypes",
    "mpi-cartex/staged/sequence": "the algorithm of cartex mpi_comm, the Betzy results' "
                                  "benchmark_mpi_comm",
}


@dataclass
class Table:
    title: str                        # line above the table ("ompi", "mpi-p2p/compact", ...)
    row_header: str                   # what the rows are (markdown header of the first column)
    columns: list[str]
    kinds: list[str]                  # per column: how to print it (see format_value)
    rows: list[tuple[str, list[float | None]]]
    notes: list[str] = field(default_factory=list)
    groups: list[tuple[str, int]] = field(default_factory=list)  # titles over column spans
    label_header: bool = False        # print row_header over the labels in text too
    # Text after a cell's value, by (row, column): "*" (unstable), " [1.65-1.74]" (range).
    suffixes: dict[tuple[int, int], str] = field(default_factory=dict)
    # Notes too long for a terminal (every unstable cell's reasons): markdown only.
    details: list[str] = field(default_factory=list)
    gap: int = 4                      # spaces before each column in text

    def cell_texts(self, row: int) -> list[str]:
        _, values = self.rows[row]
        return [format_value(v, k) + self.suffixes.get((row, i), "")
                for i, (v, k) in enumerate(zip(values, self.kinds))]


@dataclass
class Section:
    heading: str
    details: list[str]
    tables: list[Table]


@dataclass
class Report:
    preamble: list[str]
    sections: list[Section]


def context_line(raw_records: Sequence[dict], ranks: Iterable[int], statistic: str,
                 labels: dict[tuple[str, str], str] | None = None) -> str:
    """What every table states: machine, MPI library, ranks and statistic."""
    machines = list(dict.fromkeys(rec.machine_text(r) for r in raw_records))
    if labels is not None and len(labels) > 1:
        mpi = library_legend(labels)
    else:
        libraries = list(dict.fromkeys(" ".join(str(r.get("mpi_library", "?")).split(",")[0]
                                                .split()) for r in raw_records))
        mpi = "; ".join(libraries)
    counts = sorted(set(ranks))
    rank_text = (f"{counts[0]} ranks" if len(counts) == 1 else
                 f"{', '.join(map(str, counts))} ranks")
    return f"machine: {'; '.join(machines)}; MPI: {mpi}; {rank_text}; statistic: {statistic}"


# ---------------------------------------------------------------------------------------------
# Helpers


def context_key(r: Record, *, decomposition: bool = True) -> tuple:
    """What must be equal for records to share a table (besides toolchain and variant)."""
    key = (r.ranks, r.domain, r.global_domain, r.timing)
    if decomposition:
        key = (rec.decomposition_key(r), r.periodic) + key
    return key


def context_details(r: Record, *, decomposition: bool = True) -> str:
    parts = [f"{r.ranks} ranks"]
    if decomposition:
        parts.append(rec.decomposition_text(r))
    parts.append(rec.domain_text(r))
    parts.append(f"{r.timing} timing")
    return ", ".join(parts)


def ordered_groups(records: Iterable[Record], key: Callable[[Record], object]) -> dict:
    """Groups in order of first appearance."""
    out: dict = {}
    for r in records:
        out.setdefault(key(r), []).append(r)
    return out


def library_legend(labels: dict[tuple[str, str], str]) -> str:
    parts = []
    for (library, settings), label in labels.items():
        text = " ".join(library.split(",")[0].split())
        parts.append(f"{label} = {text}" + (f" ({settings})" if settings else ""))
    return "; ".join(parts)


def _shape_labels(records: Sequence[Record]) -> tuple[list[tuple], dict[tuple, str]]:
    shapes: dict[tuple, Record] = {}
    for r in records:
        shapes.setdefault(rec.shape_key(r), r)
    keys = sorted(shapes)
    several_types = len({k[0] for k in keys}) > 1
    labels = {k: (f"{shapes[k].type} " if several_types else "") + shapes[k].shape_label
              for k in keys}
    return keys, labels


def _combined_note(cells: dict) -> list[str]:
    if any(len(v) > 1 for v in cells.values()):
        return ["cells with records from several runs show the median of their values"]
    return []


# ---------------------------------------------------------------------------------------------
# Layouts


EFFICIENCY_NOTE = ("eff = the floor of the lines / median exchange time: every rank copying at "
                   "once the bytes of the distinct cache lines its exchange reads and writes, "
                   "measured around the same exchanges; memcpy = the same against a copy of the "
                   "halo's bytes alone, which a strided face cannot reach (docs/bench.md)")


CROSSING_NOTE = ("cross = the floor of the lines and the crossing together / median exchange time: "
                 "the crossing is every rank writing the bytes it sends into lines its neighbour "
                 "core read and reading what it receives from lines that core wrote, what no "
                 "exchange between ranks of a node avoids (docs/bench.md)")


SELF_COPY_NOTE = ("self = time of every rank filling the same halos from its own cells (nothing "
                  "crossing ranks), measured in the same run / median exchange time: the "
                  "fraction of the self-copy reference reached")


def chosen(records: Sequence[Record], metric: str = "median",
           baseline: str | None = None, efficiency: bool = False,
           self_copy: bool = False, crossing: bool = False) -> Report:
    """Per numbering order / decomposition and toolchain: a table of times (a row per variant,
    a column per (halo, nfields)), one of "(xN)" = baseline / variant when the records are one
    run, and with `efficiency` or `self_copy` one of "eff" (against the floor of the lines),
    "memcpy" (against the floor of the halo's bytes), "self" (the self-copy reference) and with
    `crossing` "cross" (the floor of the lines and the crossing), so
    that each fits a terminal. The ratios are the median of per-round ratios (each round against
    the baseline of the same round) with their range; "*" marks an unstable cell
    (stability.py)."""
    baseline = baseline or rec.baseline_of(records)
    labels = rec.toolchain_labels(records)
    sections = []
    for _, srecs in rec.group(records, context_key).items():
        first = srecs[0]
        tables = []
        for toolchain, trecs in ordered_groups(srecs, rec.toolchain_id).items():
            tables += _chosen_tables(trecs, labels[toolchain], metric, baseline,
                                     _Yardsticks(efficiency, self_copy, crossing))
        sections.append(Section(_order_heading(first), [
            context_details(first), _records_context(srecs, metric, labels)], tables))
    return Report(_preamble(records, metric, labels), sections)


def _ratio_notes(trecs: Sequence[Record], baseline: str, variants: Sequence[str]
                 ) -> tuple[bool, list[str]]:
    """Whether the table takes (xN) ratios, and the notes that say against what."""
    run_ids = list(dict.fromkeys(r.ratio_run for r in trecs))
    peers_beside = sorted({r.peer for r in trecs if r.peer})
    notes = []
    with_ratios = False
    if len(run_ids) > 1:
        notes.append(f"no (xN) ratios: the records come from {len(run_ids)} runs and ratios are "
                     "only taken within one run (select one with --run-id; launches compared "
                     "below)")
    elif baseline not in variants:
        notes.append(f"no (xN) ratios: the baseline {baseline} is not in these records")
    else:
        with_ratios = True
        named = f" ({BASELINE_ALGORITHMS[baseline]})" if baseline in BASELINE_ALGORITHMS else ""
        notes.append(f"(xN) = {baseline}{named} / variant, measured in one run ({run_ids[0]})"
                     + (f" with the peer programs run beside it in the same job "
                        f"({', '.join(peers_beside)})" if peers_beside else "")
                     + ("; each round against the baseline of the same round: the median of "
                        "the rounds' ratios, [their range]"
                        if any(len(stability.round_medians(r.raw)) > 1 for r in trecs
                               if not r.peer) else ""))
    if peers_beside:
        notes.append("peer programs: the statistic of their own timing (each exchange timed "
                     "alone after a barrier, on rank 0), parsed from their output")
    return with_ratios, notes


def _ratio_row(v: str, shape_keys: Sequence, cells: dict, verdicts: dict, baseline: str,
               times: Sequence[float], metric: str) -> tuple[list[float], dict[int, str]]:
    """A row of the (xN) table: each cell's median per-round ratio, and its range as suffix."""
    values, suffixes = [], {}
    for col, k in enumerate(shape_keys):
        ratios = (verdicts.get((v, k)) or (None, None))[0]
        if ratios is None:  # a peer program's cell or baseline: no rounds
            base = rec.cell_value(cells.get((baseline, k), []), metric)
            values.append(base / times[col] if times[col] > 0 else math.nan)
            continue
        values.append(ratios.median)
        if len(ratios.per_round) > 1:
            suffixes[col] = f" [{ratios.min:.2f}-{ratios.max:.2f}]"
    return values, suffixes


@dataclass(frozen=True)
class _Yardsticks:
    """Which groups the efficiency table has."""
    efficiency: bool = False
    self_copy: bool = False
    crossing: bool = False

    def groups(self, n: int) -> list[tuple[str, int]]:
        return ([("eff", n), ("memcpy eff", n)] if self.efficiency else []) + \
            ([("self", n)] if self.self_copy else []) + ([("cross", n)] if self.crossing else [])

    def notes(self) -> list[str]:
        return ([EFFICIENCY_NOTE] if self.efficiency else []) + \
            ([SELF_COPY_NOTE] if self.self_copy else []) + ([CROSSING_NOTE] if self.crossing else [])


def _yard_row(cells: dict, v: str, shape_keys: Sequence, sticks: _Yardsticks) -> list[float]:
    """A row of the efficiency table: eff and memcpy eff, the self-copy share, the crossing."""
    yard = []
    if sticks.efficiency:
        yard += [_median_positive([r.efficiency for r in cells.get((v, k), [])])
                 for k in shape_keys]
        yard += [_median_positive([r.memcpy_efficiency for r in cells.get((v, k), [])])
                 for k in shape_keys]
    if sticks.self_copy:
        yard += [_median_positive([r.self_copy_share for r in cells.get((v, k), [])])
                 for k in shape_keys]
    if sticks.crossing:
        yard += [_median_positive([r.crossing_efficiency for r in cells.get((v, k), [])])
                 for k in shape_keys]
    return yard


def _unsettled_notes(cells: dict) -> list[str]:
    """--rounds auto: the cells that did not settle before the budget ran out."""
    unsettled = [f"{r.variant} {r.shape_label}" for cell in cells.values() for r in cell
                 if (r.raw.get("stability") or {}).get("settled") is False]
    if not unsettled:
        return []
    return [f"--rounds auto: {len(unsettled)} cells did not settle within 5 % before the "
            f"budget ran out: {', '.join(unsettled[:3])}"
            + (" (every one in the records' stability.settled)" if len(unsettled) > 3 else "")]


def _chosen_rows(trecs: Sequence[Record], cells: dict, verdicts: dict, shape_keys: Sequence,
                 metric: str, baseline: str, with_ratios: bool, yard: Callable) -> dict:
    """The rows (times, ratios, efficiency) of the chosen tables and their suffixes."""
    out = {"times": [], "ratios": [], "yard": [], "time_suffixes": {}, "ratio_suffixes": {}}
    for row, v in enumerate(rec.sort_variants(r.variant for r in trecs)):
        values = [rec.cell_value(cells.get((v, k), []), metric) for k in shape_keys]
        for col, k in enumerate(shape_keys):
            verdict = verdicts.get((v, k))
            if verdict and not verdict[1].stable:
                out["time_suffixes"][(row, col)] = "*"
        out["times"].append((v, values))
        if with_ratios:
            ratios, suffixes = _ratio_row(v, shape_keys, cells, verdicts, baseline, values, metric)
            out["ratios"].append((v, ratios))
            out["ratio_suffixes"].update({(row, col): text for col, text in suffixes.items()})
        out["yard"].append((v, yard(v)))
    return out


def _chosen_tables(trecs: Sequence[Record], label: str, metric: str, baseline: str,
                   sticks: _Yardsticks) -> list[Table]:
    shape_keys, shape_labels = _shape_labels(trecs)
    variants = rec.sort_variants(r.variant for r in trecs)
    cells: dict[tuple, list[Record]] = {}
    for r in trecs:
        cells.setdefault((r.variant, rec.shape_key(r)), []).append(r)
    with_ratios, notes = _ratio_notes(trecs, baseline, variants)
    notes += _combined_note(cells)
    columns = [shape_labels[k] for k in shape_keys]
    verdicts = cell_verdicts(cells, baseline if with_ratios else None)
    rows = _chosen_rows(trecs, cells, verdicts, shape_keys, metric, baseline, with_ratios,
                        lambda v: _yard_row(cells, v, shape_keys, sticks))
    tables = [Table(label, "transport/algorithm/grouping", columns, ["value"] * len(columns),
                    rows["times"], suffixes=rows["time_suffixes"])]
    if with_ratios:
        tables.append(Table(f"{label}: (xN)", "transport/algorithm/grouping",
                            [f"{c} (xN)" for c in columns], ["ratio"] * len(columns),
                            rows["ratios"], suffixes=rows["ratio_suffixes"], gap=2))
        notes += fastest_notes(cells, verdicts, shape_keys, shape_labels)
    if groups := sticks.groups(len(columns)):
        names = [c for _ in groups for c in columns]
        tables.append(Table(f"{label}: efficiency", "transport/algorithm/grouping", names,
                            ["ratio"] * len(names), rows["yard"], groups=groups, gap=2))
        notes += sticks.notes()
    short, details = stability_notes(cells, verdicts)
    notes += short + _unsettled_notes(cells)
    tables[-1].notes = notes
    tables[-1].details = details
    return tables


def cell_verdicts(cells: dict[tuple, list[Record]], baseline: str | None
                  ) -> dict[tuple, tuple[stability.RoundRatios | None, stability.Stability]]:
    """Per (variant, shape) cell of one run: its per-round ratios against the baseline of the
    same run (None without one) and the stability halox-bench recorded; cells combining runs
    are left out."""
    out = {}
    for (v, k), cell in cells.items():
        if len(cell) != 1 or cell[0].peer:
            continue
        base = cells.get((baseline, k), []) if baseline else []
        base_raw = base[0].raw if len(base) == 1 and not base[0].peer and \
            base[0].run_id == cell[0].run_id else None
        out[(v, k)] = (stability.record_ratios(base_raw, cell[0].raw) if base_raw else None,
                       stability.recorded_verdict(cell[0].raw))
    return out


def record_verdicts(records: Sequence[Record], baseline: str | None = None) -> dict[str, tuple]:
    """Per record (by its source): its per-round ratios against the baseline record of its run
    and shape (None without one) and the stability halox-bench recorded."""
    baseline = baseline or rec.baseline_of(records)
    bases = {(r.run_id, rec.shape_key(r)): r for r in records if r.variant == baseline}
    out = {}
    for r in records:
        if r.peer:
            continue
        base = bases.get((r.run_id, rec.shape_key(r)))
        out[r.source] = (stability.record_ratios(base.raw, r.raw) if base else None,
                         stability.recorded_verdict(r.raw))
    return out


def closing_lines(records: Sequence[Record], brief: bool = False) -> list[str]:
    """The summary each launch's run ended with where cells of these records are unstable ([]
    otherwise), as halox-bench wrote it into the records (`brief`: its short form); each
    launch named when there are several."""
    launches = ordered_groups((r for r in records if not r.peer), lambda r: r.run_id)
    summaries = [(run, stability.launch_summary([r.raw for r in rs], brief))
                 for run, rs in launches.items()
                 if any(not stability.recorded_verdict(r.raw).stable for r in rs)]
    summaries = [(run, lines) for run, lines in summaries if lines]
    if len(summaries) == 1:
        return summaries[0][1]
    return [f"run {run}: {line}" if i == 0 else line
            for run, lines in summaries for i, line in enumerate(lines)]


def fastest_notes(cells: dict[tuple, list[Record]], verdicts: dict, shape_keys: Sequence,
                  shape_labels: dict) -> list[str]:
    """Per shape, the named variant with the highest (xN) and those it does not beat: a variant
    within 2 % of the fastest in its median (xN) and in the median round (the median over the
    rounds of the two's per-round ratios: report_summary.TIE_WITHIN) ties with it; at most two
    are named, the others counted."""
    summ = stability
    parts = []
    for k in shape_keys:
        ratios = {v: verdicts[(v, kk)][0] for (v, kk) in cells
                  if kk == k and (v, kk) in verdicts and verdicts[(v, kk)][0] is not None
                  and not v.startswith("auto/")}
        if not ratios:
            continue
        best = max(ratios, key=lambda v: ratios[v].median)
        top = ratios[best]
        tied = sorted((v for v in ratios if v != best and
                       summ.paired_ratios(top, ratios[v]) >= 1 - summ.TIE_WITHIN and
                       ratios[v].median >= (1 - summ.TIE_WITHIN) * top.median),
                      key=lambda v: -ratios[v].median)
        text = f"{shape_labels[k]} {best} x{top.median:.2f}"
        if tied:
            text += " tied with " + ", ".join(f"{v} x{ratios[v].median:.2f}"
                                              for v in tied[:summ.MAX_TIES])
            if len(tied) > summ.MAX_TIES:
                text += f" and {len(tied) - summ.MAX_TIES} more"
        parts.append(text)
    if not parts:
        return []
    return ["fastest named variant per column (a variant ties when it is within 2 % of the "
            "fastest in its median (xN) and in the median round, each round against the same "
            "round): " + "; ".join(parts)]


def stability_notes(cells: dict[tuple, list[Record]], verdicts: dict
                    ) -> tuple[list[str], list[str]]:
    """"* = unstable" with the count (the causes are ranked at the end of the report), and every
    unstable cell with its reasons, for the markdown report."""
    unstable = [key for key, (_, s) in verdicts.items() if not s.stable]
    if not unstable:
        return [], []
    short = [f"* = unstable: {len(unstable)} of {len(verdicts)} cells; the causes are ranked at "
             "the end, every cell's reasons are in the records and in the Markdown report"]
    details = ["unstable cells: " + "; ".join(
        f"{v} {cells[(v, k)][0].shape_label}: {', '.join(verdicts[(v, k)][1].reasons)}"
        for v, k in unstable)]
    return short, details


def _median_positive(values: Sequence[float]) -> float:
    values = [v for v in values if v > 0]
    if not values:
        return math.nan
    return values[0] if len(values) == 1 else float(sorted(values)[len(values) // 2])


def _records_context(records: Sequence[Record], metric: str,
                     labels: dict[tuple[str, str], str]) -> str:
    description, unit, _ = rec.METRICS[metric]
    used = {k: v for k, v in labels.items() if any(rec.toolchain_id(r) == k for r in records)}
    return context_line([r.raw for r in records], (r.ranks for r in records),
                        f"{description} [{unit}]", used)


def full(records: Sequence[Record], metric: str = "median") -> Report:
    """Per variant: rows = halo width, columns = number of fields; extra column groups for a
    second toolchain ("1 (mpich)") and/or the other algorithms ("1 (staged)")."""
    labels = rec.toolchain_labels(records)
    toolchains = list(labels)
    split_tc = len(toolchains) > 1
    own = sorted({r.algorithm for r in records if not r.peer},
                 key=lambda a: rec.order_rank(a, rec.ALGORITHM_ORDER))
    split_alg = len(own) > 1

    def algorithm(r: Record) -> str:
        """A peer program's columns are those of the first algorithm (it has none of halox's)."""
        return (own[0] if own else r.algorithm) if r.peer else r.algorithm

    def section_key(r: Record):
        return context_key(r) + (() if split_tc else (toolchains.index(rec.toolchain_id(r)),))

    def group_of(r: Record) -> tuple:
        return ((rec.order_rank(algorithm(r), rec.ALGORITHM_ORDER),) if split_alg else ()) + \
               ((toolchains.index(rec.toolchain_id(r)),) if split_tc else ())

    def suffix(r: Record) -> str:
        parts = [algorithm(r)] if split_alg else []
        if split_tc:
            parts.append(labels[rec.toolchain_id(r)])
        return ", ".join(parts)

    sections = []
    for _, srecs in rec.group(records, section_key).items():
        first = srecs[0]
        group_recs = rec.group(srecs, group_of)
        groups = list(group_recs)
        suffixes = {g: suffix(rs[0]) for g, rs in group_recs.items()}
        nfields = sorted({r.nfields for r in srecs})
        halos = {rec.halo_key(r): r.halo_label for r in srecs}
        halo_keys = sorted(halos)
        several_types = len({r.type for r in srecs}) > 1

        def table_key(r: Record) -> tuple:
            return (r.transport, rec.order_rank(r.grouping, rec.GROUPING_ORDER),
                    rec.order_rank(r.algorithm, rec.ALGORITHM_ORDER) if not split_alg else (0, ""),
                    r.type)

        tables = []
        for _, trecs in rec.group(srecs, table_key).items():
            t = trecs[0]
            title = f"{t.transport}/{t.grouping}" if split_alg and not t.peer else t.variant
            if several_types:
                title += f" ({t.type})"
            cells: dict[tuple, list[Record]] = {}
            for r in trecs:
                cells.setdefault((rec.halo_key(r), group_of(r), r.nfields), []).append(r)
            columns = []
            for i, g in enumerate(groups):
                for nf in nfields:
                    columns.append(str(nf) if i == 0 else f"{nf} ({suffixes[g]})")
            rows = []
            for hk in halo_keys:
                values = [rec.cell_value(cells.get((hk, g, nf), []), metric)
                          for g in groups for nf in nfields]
                rows.append((halos[hk], values))
            tables.append(Table(title, "halo \\ fields", columns, ["value"] * len(columns), rows,
                                _combined_note(cells)))
        details = [context_details(first), _records_context(srecs, metric, labels)]
        if len(groups) > 1:
            details.append(f"columns without a suffix: {suffixes[groups[0]]}")
        if not split_tc:
            details.append(f"toolchain: {labels[rec.toolchain_id(first)]}")
        sections.append(Section(_order_heading(first), details, tables))
    return Report(_preamble(records, metric, labels), sections)


def decomposition(records: Sequence[Record], metric: str = "median") -> Report:
    """Per (halo, nfields): rows = variants, columns = decomposition x toolchain
    ("mpicart ompi", "hwcart ompi", ...)."""
    labels = rec.toolchain_labels(records)
    toolchains = list(labels)
    dims_per_kind: dict[str, set] = {}
    orders_per_kind: dict[str, set] = {}
    periodic_per_kind: dict[str, set] = {}
    for r in records:
        dims_per_kind.setdefault(r.decomposition_kind, set()).add(r.dims)
        orders_per_kind.setdefault(r.decomposition_kind, set()).add(r.order)
        periodic_per_kind.setdefault(r.decomposition_kind, set()).add(r.periodic)

    def decomp_label(r: Record) -> str:
        parts = [rec.DECOMPOSITION_NAMES.get(r.decomposition_kind, r.decomposition_kind)]
        if len(dims_per_kind[r.decomposition_kind]) > 1:
            parts.append("x".join(map(str, r.dims)))
        if len(orders_per_kind[r.decomposition_kind]) > 1:
            parts.append(r.order)
        if len(periodic_per_kind[r.decomposition_kind]) > 1:
            parts.append("p" + "".join("1" if p else "0" for p in r.periodic))
        return " ".join(parts)

    def column_of(r: Record) -> tuple:
        return (rec.decomposition_key(r), r.periodic, toolchains.index(rec.toolchain_id(r)))

    def section_key(r: Record) -> tuple:
        return (rec.shape_key(r),) + context_key(r, decomposition=False)

    several_types = len({r.type for r in records}) > 1
    sections = []
    for _, srecs in rec.group(records, section_key).items():
        first = srecs[0]
        column_recs = rec.group(srecs, column_of)
        columns = [f"{decomp_label(rs[0])} {labels[rec.toolchain_id(rs[0])]}"
                   for rs in column_recs.values()]
        column_keys = list(column_recs)
        cells: dict[tuple, list[Record]] = {}
        for r in srecs:
            cells.setdefault((r.variant, column_of(r)), []).append(r)
        rows = []
        for v in rec.sort_variants(r.variant for r in srecs):
            rows.append((v, [rec.cell_value(cells.get((v, c), []), metric) for c in column_keys]))
        heading = f"halo width: {first.halo_label}, number of fields: {first.nfields}"
        if several_types:
            heading += f", type: {first.type}"
        details = [context_details(first, decomposition=False),
                   _records_context(srecs, metric, labels)]
        described = {}
        for rs in column_recs.values():
            described.setdefault(decomp_label(rs[0]), rec.decomposition_text(rs[0]) +
                                 f" order {rs[0].order}")
        details.append("; ".join(f"{k} = {v}" for k, v in described.items()))
        sections.append(Section(heading, details, [Table("", "transport/algorithm/grouping", columns,
                                                         ["value"] * len(columns), rows,
                                                         _combined_note(cells))]))
    return Report(_preamble(records, metric, labels), sections)


def _order_heading(r: Record) -> str:
    return f"Cartesian communicator numbering order: {r.order} ({rec.decomposition_text(r)})"


def build(records: Sequence[Record], layout: str = "chosen", metric: str = "median",
          baseline: str | None = None, efficiency: bool = False,
          self_copy: bool = False, crossing: bool = False) -> Report:
    if layout == "chosen":
        return chosen(records, metric, baseline, efficiency, self_copy, crossing)
    if layout == "full":
        return full(records, metric)
    if layout == "decomposition":
        return decomposition(records, metric)
    raise ValueError(f"unknown layout {layout!r}")


def _preamble(records: Sequence[Record], metric: str, labels: dict[str, str]) -> list[str]:
    description, unit, _ = rec.METRICS[metric]
    runs = list(dict.fromkeys(r.ratio_run for r in records))
    peer_records = sum(1 for r in records if r.peer)
    what = f"{description} [{unit}]"
    lines = [f"Tables present the {what}.",
             f"{len(records)} records from {len(runs)} run{'s' if len(runs) != 1 else ''}"
             + (f" ({runs[0]})" if len(runs) == 1 else "")
             + (f", {peer_records} of them of peer programs run beside halox-bench"
                if peer_records else "") + f"; {library_legend(labels)}."]
    lines += launch_probe_lines(records)
    skipped = sum(1 for r in records if r.verification != "passed" and not r.peer)
    if skipped:
        lines.append(f"{skipped} records were not verified (--no-check).")
    unchecked = sum(1 for r in records if r.verification != "passed" and r.peer)
    if unchecked:
        lines.append(f"{unchecked} peer records were not checked (their command has no --check).")
    return lines


def launch_probe_lines(records: Sequence[Record]) -> list[str]:
    """Each launch's machine probe, and a warning when launches ran in different modes."""
    probes = []
    for run_id, rs in ordered_groups((r for r in records if not r.peer), lambda r: r.run_id
                                     ).items():
        probe = stability.launch_probe([r.raw for r in rs])
        if probe is not None:
            probes.append((run_id, probe))
    lines = [f"Machine probe of run {run_id}: {probe.text()}." for run_id, probe in probes]
    differ = [(a, b) for i, (a, pa) in enumerate(probes) for b, pb in probes[i + 1:]
              if stability.modes_differ(pa, pb)]
    if differ:
        lines.append("WARNING: launches ran with the machine in different modes (median round "
                     "trip or copy bandwidth more than "
                     f"{stability.MODE_FACTOR}x apart): "
                     + ", ".join(f"{a} and {b}" for a, b in differ)
                     + "; compare their cells within each launch, not across them.")
    return lines


# ---------------------------------------------------------------------------------------------
# Rendering


FORMATS = {"ratio": "{:.2f}", "us3": "{:.3f}", "us2": "{:.2f}", "eff3": "{:.3f}",
           "count": "{:.0f}"}


def format_value(value: float | None, kind: str = "value") -> str:
    """None: not available (a mechanism this machine lacks); NaN: not measured."""
    if value is None:
        return "n/a"
    if math.isnan(value):
        return "NaN"
    if kind in FORMATS:
        return FORMATS[kind].format(value)
    if abs(value) >= 1e5:
        return f"{value:.0f}"
    return f"{value:.5g}"


def _group_header(table: Table, widths: list[int]) -> str:
    """Titles centred over their columns; a title wider than its columns widens the last."""
    line, i = "", 0
    for title, span in table.groups:
        width = sum(widths[i:i + span])
        if len(title) + 2 > width:
            widths[i + span - 1] += len(title) + 2 - width
            width = len(title) + 2
        line += title.center(width)
        i += span
    return line


def render_table_text(table: Table) -> list[str]:
    cells = [table.cell_texts(i) for i in range(len(table.rows))]
    label_width = max([len(label) for label, _ in table.rows] +
                      [len(table.row_header) if table.label_header else 0]) + 4
    widths = []
    for i, name in enumerate(table.columns):
        widest = max([len(name), 6] + [len(row[i]) for row in cells])
        widths.append(widest + table.gap)
    groups = _group_header(table, widths) if table.groups else ""
    lines = []
    if table.title:
        lines.append(table.title)
    indent = " " * (4 + label_width)
    if groups:
        lines.append((indent + groups).rstrip())
    # A named row column holds numbers (bytes, IOV_size): right-aligned like the others.
    def label_cell(text: str) -> str:
        return text.rjust(label_width - 4) + " " * 4 if table.label_header else \
            text.ljust(label_width)

    first = "    " + (label_cell(table.row_header) if table.label_header else " " * label_width)
    lines.append((first + "".join(n.rjust(w) for n, w in zip(table.columns, widths))).rstrip())
    rule = ("    " + label_cell("_" * len(table.row_header))) if table.label_header else indent
    lines.append((rule + "".join(("_" * max(len(n), 6)).rjust(w)
                                 for n, w in zip(table.columns, widths))).rstrip())
    lines.append("")
    for (label, _), row in zip(table.rows, cells):
        lines.append(("    " + label_cell(label) +
                      "".join(c.rjust(w) for c, w in zip(row, widths))).rstrip())
    for note in table.notes:
        lines += wrap(f"  note: {note}", NOTE_WIDTH, " " * 8)
    return lines


# Notes and the preamble wrap at this width: the default tables fit a 120-column terminal.
NOTE_WIDTH = 118


def wrap(text: str, width: int = NOTE_WIDTH, indent: str = "    ") -> list[str]:
    """Lines of at most `width` characters, broken at spaces, the later ones indented."""
    lead = text[:len(text) - len(text.lstrip(" "))]
    return textwrap.wrap(text.lstrip(" "), width, initial_indent=lead, subsequent_indent=indent,
                         break_long_words=False, break_on_hyphens=False)


def render_text(report: Report) -> str:
    lines = [part for line in report.preamble for part in wrap(line, NOTE_WIDTH, "  ")]
    for section in report.sections:
        lines += ["", section.heading]
        lines += [part for d in section.details
                  for part in wrap(f"  {d}", NOTE_WIDTH, " " * 6)]
        for table in section.tables:
            lines.append("")
            lines += render_table_text(table)
    return "\n".join(lines) + "\n"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("*", "\\*")


def render_table_markdown(table: Table) -> list[str]:
    lines = []
    if table.title:
        lines += [f"**{_md_escape(table.title)}**", ""]
    columns = list(table.columns)
    if table.groups:  # markdown has one header row: the group goes into each column's name
        i = 0
        for title, span in table.groups:
            for j in range(i, i + span):
                columns[j] = f"{title}, {columns[j]}" if title else columns[j]
            i += span
    header = [table.row_header] + columns
    lines.append("| " + " | ".join(_md_escape(h) for h in header) + " |")
    lines.append("|" + "|".join([":---"] + ["---:"] * len(table.columns)) + "|")
    for row, (label, _) in enumerate(table.rows):
        cells = [_md_escape(c) for c in table.cell_texts(row)]
        lines.append("| " + " | ".join([_md_escape(label)] + cells) + " |")
    for note in table.notes + table.details:
        lines += ["", f"_{_md_escape(note)}_"]
    return lines


def render_markdown(report: Report, level: int = 3, images: dict[int, list[str]] | None = None
                    ) -> str:
    """GitHub markdown; `images` adds figures (relative paths) after the given sections."""
    lines = [" ".join(report.preamble)]
    for number, section in enumerate(report.sections):
        lines += ["", f"{'#' * level} {section.heading}", ""]
        lines += [f"{d}  " for d in section.details]
        for table in section.tables:
            lines.append("")
            lines += render_table_markdown(table)
        for image in (images or {}).get(number, []):
            lines += ["", f"![{section.heading}]({image})"]
    return "\n".join(lines) + "\n"
