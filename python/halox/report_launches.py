"""Cells measured in several launches: every cell whose `(xN)` differs between two launches
beyond the launches' own spread (the range of each launch's per-round ratios), with the probes
of the two launches that differ. A launch can only see a move of the machine that happens while
it runs; three short rounds may all fall in one state, and the next launch in another."""
from __future__ import annotations

import itertools
from typing import Sequence

from . import records as rec
from . import stability
from .records import Record
from .report import Report, Section, Table, context_key, ordered_groups

# Launches measured in one round have no spread of their own: closer than this is agreement.
LEAST_SPREAD = 0.02
# A probe's figure differs between launches when the larger is this much above the smaller.
PROBE_DIFFERS = 1.2


def launch_ratios(records: Sequence[Record], baseline: str
                  ) -> dict[tuple, dict[str, stability.RoundRatios]]:
    """Per cell (context, toolchain, variant, shape label): its per-round ratios in each
    launch."""
    bases = {(r.run_id, rec.shape_key(r)): r for r in records
             if r.variant == baseline and not r.peer}
    out: dict[tuple, dict[str, stability.RoundRatios]] = {}
    for r in records:
        base = bases.get((r.run_id, rec.shape_key(r)))
        if r.peer or base is None:
            continue
        ratios = stability.record_ratios(base.raw, r.raw)
        if ratios is not None:
            key = (context_key(r), rec.toolchain_id(r), r.variant, f"{r.type} {r.shape_label}")
            out.setdefault(key, {})[r.run_id] = ratios
    return out


def own_spread(r: stability.RoundRatios) -> float:
    return r.max / r.min - 1 if r.min > 0 else 0.0


def apart(a: stability.RoundRatios, b: stability.RoundRatios) -> float:
    """How far two launches' medians are apart, over the smaller."""
    low, high = sorted((a.median, b.median))
    return high / low - 1 if low > 0 else 0.0


def differs(a: stability.RoundRatios, b: stability.RoundRatios) -> bool:
    """Apart by more than either launch's own spread (and than LEAST_SPREAD)."""
    return apart(a, b) > max(own_spread(a), own_spread(b), LEAST_SPREAD)


def probe_differences(a: stability.LaunchProbe, b: stability.LaunchProbe) -> list[str]:
    """The probe figures of two launches that differ (PROBE_DIFFERS; a run-queue wait or steal
    above its threshold in one launch only)."""
    out = []
    for pair, (ma, _, _), (mb, _, _) in zip(a.pairs, a.round_trip_ns, b.round_trip_ns):
        if min(ma, mb) > 0 and max(ma, mb) / min(ma, mb) > PROBE_DIFFERS:
            out.append(f"round trip ({pair.get('role', 'pair')}) {ma:.0f} vs {mb:.0f} ns")
    if min(a.copy_GBps, b.copy_GBps) > 0 and \
            max(a.copy_GBps, b.copy_GBps) / min(a.copy_GBps, b.copy_GBps) > PROBE_DIFFERS:
        out.append(f"copy {a.copy_GBps:.1f} vs {b.copy_GBps:.1f} GB/s")
    for name, x, y, above in (("run-queue wait", a.spread.worst_run_wait,
                               b.spread.worst_run_wait, stability.RUN_WAIT_ABOVE),
                              ("steal", a.spread.worst_steal, b.spread.worst_steal,
                               stability.STEAL_ABOVE)):
        if (x > above) != (y > above):
            out.append(f"{name} up to {100 * x:.0f} vs {100 * y:.0f} %")
    if a.load1 is not None and b.load1 is not None and abs(a.load1 - b.load1) >= 0.5:
        out.append(f"load {a.load1:.1f} vs {b.load1:.1f}")
    return out


def several_launches(records: Sequence[Record], baseline: str | None = None) -> bool:
    """Whether some cell was measured, with its baseline, in more than one launch."""
    baseline = baseline or rec.baseline_of(records)
    return any(len(by_run) > 1 for by_run in launch_ratios(records, baseline).values())


def compare(records: Sequence[Record], baseline: str | None = None) -> Report:
    """A table of every cell whose (xN) differs between two launches beyond their own spread,
    and per pair of launches the probes that differ."""
    baseline = baseline or rec.baseline_of(records)
    runs = list(dict.fromkeys(r.run_id for r in records if not r.peer))
    number = {run: i + 1 for i, run in enumerate(runs)}
    probes = {run: stability.launch_probe([r.raw for r in rs]) for run, rs in
              ordered_groups((r for r in records if not r.peer), lambda r: r.run_id).items()}
    rows, pairs_seen, compared = [], {}, 0
    for (_, _, variant, shape), by_run in launch_ratios(records, baseline).items():
        for a, b in itertools.combinations([run for run in runs if run in by_run], 2):
            compared += 1
            ra, rb = by_run[a], by_run[b]
            if not differs(ra, rb):
                continue
            label = f"{variant} {shape} ({number[a]} vs {number[b]})"
            rows.append((label, [ra.median, rb.median, 100 * apart(ra, rb),
                                 100 * max(own_spread(ra), own_spread(rb))]))
            pairs_seen[(a, b)] = pairs_seen.get((a, b), 0) + 1
    notes = [f"launch {number[run]} = {run}" for run in runs]
    notes.append(f"{len(rows)} of {compared} cells measured in two launches differ beyond the "
                 "launches' own spread (the range of their rounds' ratios, at least "
                 f"{100 * LEAST_SPREAD:.0f} %)")
    for (a, b), count in pairs_seen.items():
        if probes.get(a) and probes.get(b):
            differ = probe_differences(probes[a], probes[b])
            notes.append(f"launches {number[a]} and {number[b]} ({count} cells): "
                         + ("; ".join(differ) if differ else
                            "their probes agree: the machine moved in a way the probe does not "
                            "see, or between the cells' turns"))
    table = Table("cells whose (xN) differs between launches", "variant shape (launches)",
                  ["first", "second", "apart %", "spread %"],
                  ["ratio", "ratio", "count", "count"], rows, notes, gap=2)
    return Report([], [Section(f"Launches compared ({baseline} as the baseline of each)",
                               [], [table])])


def flagged_cells(records: Sequence[Record], baseline: str | None = None) -> int:
    """How many cells differ between launches beyond their own spread."""
    baseline = baseline or rec.baseline_of(records)
    return sum(1 for by_run in launch_ratios(records, baseline).values()
               for a, b in itertools.combinations(list(by_run), 2)
               if differs(by_run[a], by_run[b]))
