"""The screen `make bench` ends with (`halox report --summary`): per rank grid and shape, the
variant to use on this machine, its time, its speed-up over the plain-MPI baseline with the
range over rounds, its efficiency against the floor of the lines and one trust word; then the
causes of the instability, how the automatic choice fared, and where the full tables are.

The rules (docs/bench.md, "What to use here"):

- The variant to use is the named variant (not `auto`, not a peer program) with the highest
  median per-round `(xN)`; without a baseline in the records, the lowest median time.
- Another variant ties with it when the two are within TIE_WITHIN of each other in the median
  round (the median over rounds of the winner's time over the other's, each round against the
  same round): at most MAX_TIES are named, the others counted. The band does not widen with
  the machine's noise, so a noisy machine does not make every variant equal; it makes the row
  less trustworthy instead.
- Trust: `stable` when halox-bench did not mark the cell unstable (its rounds agree within
  10 % and the machine probe around its and its baseline's turns held still: stability.py);
  `noisy` when it is marked but its per-round speed-ups lie within MODE_FACTOR of each other
  and it was faster than the next variant (the fastest it does not tie with) in most rounds;
  `unreliable` otherwise. A row that is not stable names the cause of its cell that marked
  most cells of its launch.
"""
from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field
from typing import Sequence

from . import records as rec
from . import stability
from .records import Record
from .report import wrap

# Within 2 % in the median round: the measurement cannot tell the two apart on any machine.
TIE_WITHIN = stability.TIE_WITHIN
MAX_TIES = stability.MAX_TIES
WIDTH = 118

CAUSE_WORDS = {"busy": "machine busy", "steal": "time stolen", "moved": "vCPUs moved",
               "launch_moved": "vCPUs moved", "bandwidth": "bandwidth moved",
               "rounds": "rounds disagree"}


def _rounds(r: Record) -> list[float]:
    return stability.round_medians(r.raw)


def paired(winner: Record, other: Record) -> float:
    """The median over the rounds both ran of the winner's time over the other's (1.0 = as fast,
    below 1 = the other is slower); NaN without a common round."""
    ratios = [w / o for w, o in zip(_rounds(winner), _rounds(other)) if w > 0 and o > 0]
    return float(statistics.median(ratios)) if ratios else math.nan


paired_ratios = stability.paired_ratios


def ties_with(winner: Record, winner_ratios: stability.RoundRatios | None, other: Record,
              other_ratios: stability.RoundRatios | None) -> bool:
    """The tie rule: within TIE_WITHIN of the winner in the median round (paired) and, with a
    baseline, in the median (xN) too."""
    if paired(winner, other) < 1 - TIE_WITHIN:
        return False
    if winner_ratios is None or other_ratios is None:
        return True
    return other_ratios.median >= (1 - TIE_WITHIN) * winner_ratios.median


def _wins(winner: Record, other: Record) -> tuple[int, int]:
    """Rounds in which the winner was faster than `other`, and rounds compared."""
    pairs = [(w, o) for w, o in zip(_rounds(winner), _rounds(other)) if w > 0 and o > 0]
    return sum(1 for w, o in pairs if w < o), len(pairs)


@dataclass
class Row:
    """One shape of one rank grid: the variant to use and how far to trust it."""
    shape: str
    use: Record
    ratios: stability.RoundRatios | None
    verdict: stability.Stability
    ties: list[tuple[str, float]] = field(default_factory=list)   # (variant, its xN)
    more_ties: int = 0
    overlapping: int = 0         # variants whose rounds' (xN) reach the winner's lowest round
    trust: str = "stable"
    auto: tuple[Record, float] | None = None   # the best auto variant, paired against `use`


def _ranked(cell: dict[str, Record], verdicts: dict[str, tuple]) -> list[str]:
    """The named variants of a shape, fastest first."""
    named = [v for v in cell if not v.startswith("auto/") and not cell[v].peer]

    def speed(v: str) -> float:
        ratios = verdicts[v][0]
        if ratios is not None:
            return ratios.median
        t = cell[v].times.get("median", math.nan)
        return 1.0 / t if t > 0 else -math.inf
    return sorted(named, key=lambda v: -speed(v))


def _trust(row: Row, cell: dict[str, Record], ranked: Sequence[str], tied: set[str]) -> str:
    if row.verdict.stable:
        return "stable"
    spread_ok = True
    if row.ratios is not None and len(row.ratios.per_round) > 1 and row.ratios.min > 0:
        spread_ok = row.ratios.max / row.ratios.min <= stability.MODE_FACTOR
    elif row.ratios is None:
        medians = _rounds(row.use)
        spread_ok = len(medians) < 2 or max(medians) <= stability.MODE_FACTOR * min(medians)
    nxt = next((v for v in ranked[1:] if v not in tied), None)
    ahead = True
    if nxt is not None:
        won, compared = _wins(row.use, cell[nxt])
        ahead = compared == 0 or won * 2 > compared
    return "noisy" if spread_ok and ahead else "unreliable"


def shape_row(label: str, cell: dict[str, Record], verdicts: dict[str, tuple]) -> Row | None:
    """The row of one shape: `cell` maps each variant to its record, `verdicts` each variant to
    (its per-round ratios against the baseline or None, its stability)."""
    ranked = _ranked(cell, verdicts)
    if not ranked:
        return None
    use = cell[ranked[0]]
    ratios, verdict = verdicts[ranked[0]]
    row = Row(label, use, ratios, verdict)
    tied = [v for v in ranked[1:] if ties_with(use, ratios, cell[v], verdicts[v][0])]
    row.ties = [(v, verdicts[v][0].median if verdicts[v][0] else math.nan)
                for v in tied[:MAX_TIES]]
    row.more_ties = max(0, len(tied) - MAX_TIES)
    if ratios is not None and len(ratios.per_round) > 1:
        row.overlapping = sum(1 for v in ranked[1:] if verdicts[v][0] is not None
                              and verdicts[v][0].max >= ratios.min)
    row.trust = _trust(row, cell, ranked, set(tied))
    autos = [(cell[v], paired(use, cell[v])) for v in cell if v.startswith("auto/")]
    autos = [a for a in autos if not math.isnan(a[1])]
    if autos:
        row.auto = max(autos, key=lambda a: a[1])
    return row


# ---------------------------------------------------------------------------------------------
# Grouping: one block per rank grid (and toolchain and launch)


@dataclass
class Block:
    """One rank grid (of one toolchain and launch): its label and context, and its rows."""
    grid: str
    context: str
    rows: list[Row]


def _context(r: Record, several_toolchains: bool, labels: dict) -> str:
    return (f"{r.ranks} ranks, {rec.domain_text(r)}, {r.type}"
            + (f", {labels[rec.toolchain_id(r)]}" if several_toolchains else ""))


def _grid(r: Record) -> str:
    name = rec.decomposition_text(r)
    return name.removeprefix("mpicart ")


def blocks(records: Sequence[Record], baseline: str) -> tuple[list[Block], list]:
    """The rank grids of the screen, and every cell's verdict (for the closing summary)."""
    from . import report as rep
    labels = rec.toolchain_labels(records)
    several = len(labels) > 1
    out, every = [], []
    key = lambda r: rep.context_key(r) + (rec.toolchain_id(r), r.ratio_run)  # noqa: E731
    for grecs in rep.ordered_groups((r for r in records if not r.peer), key).values():
        cells: dict[tuple, dict[str, Record]] = {}
        for r in grecs:
            cells.setdefault(rec.shape_key(r), {})[r.variant] = r
        rows = []
        for k in sorted(cells):
            cell = cells[k]
            base = cell.get(baseline)
            verdicts = {v: (stability.record_ratios(base.raw, r.raw) if base else None,
                            stability.recorded_verdict(r.raw))
                        for v, r in cell.items()}
            every += [(f"{v} [{r.shape_label}]", verdicts[v][1]) for v, r in cell.items()]
            row = shape_row(next(iter(cell.values())).shape_label, cell, verdicts)
            if row:
                rows.append(row)
        out.append(Block(_grid(grecs[0]), _context(grecs[0], several, labels), rows))
    return out, every


# ---------------------------------------------------------------------------------------------
# Text


def _trust_text(row: Row) -> str:
    if row.trust == "stable":
        return "stable"
    cause = row.verdict.leading_cause
    return f"{row.trust}: {CAUSE_WORDS.get(cause, cause)}" if cause else row.trust


def _ratio_text(row: Row) -> str:
    r = row.ratios
    if r is None:
        return "-"
    text = f"{r.median:.2f}"
    if len(r.per_round) > 1:
        text += f" [{r.min:.2f}-{r.max:.2f}]"
    return text


def _efficiency_text(r: Record) -> str:
    eff = r.efficiency if not math.isnan(r.efficiency) else r.memcpy_efficiency
    return "-" if math.isnan(eff) or eff <= 0 else f"{100 * eff:.0f} %"


def _extra_line(row: Row) -> str | None:
    """Under a row: its ties, and (when the machine was noisy) how many variants it could not
    be told apart from."""
    parts = []
    if row.ties:
        parts.append("tied: " + ", ".join(
            f"{v} x{x:.2f}" if not math.isnan(x) else v for v, x in row.ties)
            + (f", {row.more_ties} more" if row.more_ties else ""))
    if row.trust != "stable" and row.overlapping > len(row.ties) + row.more_ties:
        parts.append(f"too noisy to rank {row.overlapping} other"
                     + ("s" if row.overlapping != 1 else ""))
    return "; ".join(parts) if parts else None


def table_lines(built: Sequence[Block]) -> list[str]:
    """One table: a row per rank grid and shape, its ties and noise under it."""
    rows = [(b, r) for b in built for r in b.rows]
    if not rows:
        return []
    same = len({b.context for b in built}) == 1
    grids = {id(b): b.grid if same else f"{b.grid} ({b.context})" for b in built}
    grid_w = max([len("grid")] + [len(g) for g in grids.values()])
    shape_w = max([len("shape")] + [len(r.shape) for _, r in rows])
    use_w = max([len("use here")] + [len(r.use.variant) for _, r in rows])
    ratio_w = max([len("xN [rounds]")] + [len(_ratio_text(r)) for _, r in rows])
    lines = [(f"  {'grid'.ljust(grid_w)}  {'shape'.ljust(shape_w)}  {'use here'.ljust(use_w)}  "
              f"{'µs':>8}  {'xN [rounds]'.ljust(ratio_w)}  {'eff':>5}  trust")]
    previous = None
    for block, row in rows:
        grid = grids[id(block)] if block is not previous else ""
        previous = block
        time = row.use.times.get("median", math.nan) * 1e6
        lines.append(f"  {grid.ljust(grid_w)}  {row.shape.ljust(shape_w)}  "
                     f"{row.use.variant.ljust(use_w)}  {rec_format(time):>8}  "
                     f"{_ratio_text(row).ljust(ratio_w)}  {_efficiency_text(row.use):>5}  "
                     f"{_trust_text(row)}")
        extra = _extra_line(row)
        if extra:
            indent = " " * (2 + grid_w + 2 + shape_w + 4)
            lines += wrap(indent + extra, WIDTH, indent + "  ")
    return lines


def rec_format(value: float) -> str:
    from .report import format_value
    return format_value(value)


def _chosen(r: Record) -> str:
    """The transport/algorithm/grouping an automatic choice took (config.chosen names it)."""
    text = str((r.raw.get("config") or {}).get("chosen") or "")
    match = re.search(r"chose (\S+)", text)
    return match.group(1) if match else (text.split()[0] if text else r.variant)


def auto_line(all_rows: Sequence[tuple[str, Row]]) -> list[str]:
    """How the automatic choice fared against the variant to use, in a line."""
    measured = [(grid, row) for grid, row in all_rows if row.auto is not None]
    if not measured:
        return []
    close = sum(1 for _, row in measured if row.auto[1] >= 1 - TIE_WITHIN)
    grid, worst = min(measured, key=lambda gr: gr[1].auto[1])
    text = f"auto: within 2 % of the variant to use in {close} of {len(measured)} rows"
    if worst.auto[1] < 1 - TIE_WITHIN:
        text += (f", at worst {worst.auto[1]:.2f} of it ({grid} {worst.shape}: chose "
                 f"{_chosen(worst.auto[0])})")
    return wrap(text, WIDTH, "  ")


TRUST_LEGEND = ("trust: stable = rounds within 10 %, machine probe steady; noisy = unstable, "
                "but its speed-ups within 1.5x over the rounds and ahead of the next variant in "
                "most; unreliable = neither: rerun (docs/bench.md)")


def summary_lines(records: Sequence[Record], baseline: str | None = None,
                  report_path: str | None = None, records_path: str | None = None
                  ) -> list[str]:
    """The whole screen; every line at most WIDTH characters."""
    from . import report as rep
    baseline = baseline or rec.baseline_of(records)
    built, every = blocks(records, baseline)
    unstable = [(name, st) for name, st in every if not st.stable]
    first = records[0]
    plain = " (plain MPI)" if baseline in rep.BASELINE_ALGORITHMS else ""
    contexts = list(dict.fromkeys(b.context for b in built))
    lines = wrap(
        f"What to use on {rec.machine_text(first.raw)}, {first.mpi_library.split(',')[0]}"
        + (f", {contexts[0]}" if len(contexts) == 1 else "") + ": the fastest variant per rank "
        f"grid and shape hXfY (halo X, Y fields); µs: median per exchange; xN: speed-up over "
        f"{baseline}{plain}, median of the rounds [range]; eff: the floor of the lines / time",
        WIDTH, "  ")
    lines += [""] + table_lines(built) + [""]
    all_rows = [(b.grid, row) for b in built for row in b.rows]
    if any(row.trust != "stable" for _, row in all_rows):
        lines += wrap(TRUST_LEGEND, WIDTH, "  ")
    lines += closing_lines(records, unstable, len(every))
    lines += auto_line(all_rows)
    lines += _where(report_path, records_path)
    return lines


def closing_lines(records: Sequence[Record], unstable: list, cells: int) -> list[str]:
    """The causes of the instability, ranked by the cells they marked, a line each (as each
    launch's run wrote them into its records)."""
    from . import report as rep
    if not unstable:
        return [f"every one of the {cells} cells is stable"] if cells else []
    return rep.closing_lines(records, brief=True)


def _where(report_path: str | None, records_path: str | None) -> list[str]:
    lines = [f"every variant and cell, with plots: {_short(report_path)}"] if report_path else []
    return lines + [f"the tables in the terminal: halox report {_short(records_path) or 'FILE.jsonl'}"
                    " --efficiency"]


def _short(path: str | None) -> str | None:
    """A path below the working directory relative to it (what a terminal's user types)."""
    if not path:
        return path
    import os
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative
