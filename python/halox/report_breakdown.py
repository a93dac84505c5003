"""Where halox-bench's exchanges spend their time: the per-stage split of every record
(`stage_breakdown`: packing, other copies, waiting for neighbours' data, waiting for neighbours
to finish reading, the rest) as the slowest and the median rank saw it, the busiest rank (the
one with the most work, whom the others wait for), and the exchange's setup time (`setup`), as
tables of `halox report --breakdown` and as the bars of its plot (`--save`)."""
from __future__ import annotations

import math
from typing import Sequence

from . import records as rec
from .records import Record
from .report import Report, Section, Table, context_details, context_key

PARTS = (("pack_s", "pack"), ("copy_s", "copy"), ("wait_peers_s", "wpeers"),
         ("wait_readers_s", "wreaders"), ("other_s", "other"))
RANKS = (("slowest_rank", "slowest rank"), ("median_rank", "median rank"))
NOTE = ("µs per exchange, the mean over the middle half of each rank's recorded exchanges "
        "(halox-bench: a pass of its own after the timed ones, unless --stage-times timed); pack = "
        "copying what the rank sends into an outbox or message, copy = every other copy "
        "(landing, unpacking, copies within the rank), wpeers = waiting for neighbours' data, "
        "wreaders = waiting for neighbours to finish reading what the rank publishes, other = the rest; "
        "slowest / median rank by their whole exchange time; busiest rank = the rank with the "
        "most work (pack, copy and other: its total less its waits), whom the others wait for; "
        "work/median = its work over the median work of all ranks (1: balanced; the whole "
        "exchange's, on every row); setup = building the exchange "
        "(ms, slowest rank; auto's trials included), neighbours = the most peers of a rank")
BUSIEST = ("busiest_rank", "busiest rank")


def _median(values: Sequence[float]) -> float:
    values = sorted(v for v in values if not math.isnan(v))
    return float(values[len(values) // 2]) if values else math.nan


def _stages(r: Record, which: str) -> list[dict]:
    b = r.raw.get("stage_breakdown") or {}
    return list((b.get(which) or {}).get("stages") or [])


def _busiest(cell: Sequence[Record], stage: int | None) -> list[float]:
    """The busiest rank's number, its work and total in the stage (all stages: None), and the
    record's work imbalance; NaN for records from before the busiest rank was recorded."""
    def value(r: Record) -> tuple[float, float, float, float]:
        b = r.raw.get("stage_breakdown") or {}
        busiest = b.get(BUSIEST[0])
        if not busiest:
            return (math.nan,) * 4
        stages = busiest.get("stages") or []
        picked = stages if stage is None else stages[stage:stage + 1]
        work = sum(float(x.get(k, 0.0)) for x in picked for k in ("pack_s", "copy_s", "other_s"))
        total = sum(float(x.get("total_s", 0.0)) for x in picked)
        return (float(busiest.get("rank", math.nan)), work * 1e6, total * 1e6,
                float(b.get("work_imbalance", math.nan)))
    values = [value(r) for r in cell]
    return [_median([v[i] for v in values]) for i in range(4)]


def has_breakdown(records: Sequence[Record]) -> bool:
    return any(r.raw.get("stage_breakdown") for r in records)


def contexts(records: Sequence[Record]) -> list[list[Record]]:
    """The records that carry a breakdown, a list per context (a section of the tables)."""
    out = []
    for _, srecs in rec.group(records, context_key).items():
        srecs = [r for r in srecs if r.raw.get("stage_breakdown")]
        if srecs:
            out.append(srecs)
    return out


def _part(r: Record, which: str, key: str, stage: int | None) -> float:
    """One part of a rank's split in µs per exchange: a stage's, or all stages' (None)."""
    stages = _stages(r, which)
    picked = stages if stage is None else stages[stage:stage + 1]
    return sum(float(x.get(key, 0.0)) for x in picked) * 1e6 if picked else math.nan


def bars(records: Sequence[Record]) -> dict[str, list[tuple[str, dict[str, list[float]], float]]]:
    """What the breakdown plot draws, for records of one context: per shape (type hXfY), per
    variant, the slowest and the median rank's parts summed over the stages (µs per
    exchange, in PARTS order) and the self-copy reference (µs; NaN where not recorded).
    Several records of one cell: the median of each value."""
    out: dict[str, list[tuple[str, dict[str, list[float]], float]]] = {}
    for _, shape_recs in rec.group(records, rec.shape_key).items():
        first = shape_recs[0]
        rows = []
        by_variant = rec.group(shape_recs, lambda r: r.variant)
        for variant in rec.sort_variants(by_variant):
            cell = by_variant[variant]
            parts = {which: [_median([_part(r, which, key, None) for r in cell])
                             for key, _ in PARTS] for which, _ in RANKS}
            reference = _median([float(r.raw.get("self_copy_reference_s") or math.nan) * 1e6
                                 for r in cell])
            rows.append((variant, parts, reference))
        out[f"{first.type} {first.shape_label}"] = rows
    return out


def breakdown(records: Sequence[Record]) -> Report:
    """A section per context (as the chosen layout), a table per shape: a row per variant and
    stage (and the stages' sum), columns = the parts for the slowest and the median rank, then
    the setup time. Several records of one cell: the median of each value."""
    sections = []
    for srecs in contexts(records):
        tables = []
        for _, shape_recs in rec.group(srecs, rec.shape_key).items():
            first = shape_recs[0]
            columns, kinds = [], []
            for _, title in RANKS:
                columns += [name for _, name in PARTS] + ["total"]
                kinds += ["us2"] * (len(PARTS) + 1)
            columns += ["rank", "work", "total", "work/median", "setup ms", "neighbours"]
            kinds += ["count", "us2", "us2", "ratio", "us2", "count"]
            rows = []
            by_variant = rec.group(shape_recs, lambda r: r.variant)
            for variant in rec.sort_variants(by_variant):
                cell = by_variant[variant]
                nstages = max(len(_stages(r, RANKS[0][0])) for r in cell)
                for s in list(range(nstages)) + ([None] if nstages > 1 else []):
                    values: list[float | None] = []
                    for which, _ in RANKS:
                        values += [_median([_part(r, which, key, s) for r in cell])
                                   for key, _ in PARTS]
                        values.append(_median([_part(r, which, "total_s", s) for r in cell]))
                    values += _busiest(cell, s)
                    setup = [r.raw.get("setup") or {} for r in cell]
                    values.append(_median([float(x.get("total_s", math.nan)) * 1e3
                                           for x in setup]))
                    values.append(_median([float(x.get("neighbours", math.nan)) for x in setup]))
                    label = f"{variant} " + ("all stages" if s is None else f"stage {s}")
                    rows.append((label, values))
            title = f"{first.type} {first.shape_label}"
            tables.append(Table(title, "transport/algorithm/grouping stage", columns, kinds, rows,
                                [NOTE], groups=[(RANKS[0][1], len(PARTS) + 1),
                                                (RANKS[1][1], len(PARTS) + 1),
                                                (BUSIEST[1], 3), ("", 3)]))
        sections.append(Section("Where the time goes: " + context_details(srecs[0]),
                                [f"{len(srecs)} records"], tables))
    return Report([], sections)
