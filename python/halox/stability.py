"""Whether a cell of halox-bench records can be trusted, as halox-bench judged it when it wrote
them (apps/bench/stability.hpp; docs/bench.md, "Stability"): each record carries its per-round
`(xN)` against the baseline of its launch (ratio_to_baseline), its verdict (stable, and
stability's reasons and causes), and every record of a launch the closing summaries the run
ended with (launch_stability) and the spread of the launch's probes (launch_probe.spread). This
module reads them; the rules of reports across launches are its own:

- Launches ran in different modes when their probes' median round trips (or copy bandwidths)
  differ by more than MODE_FACTOR.
"""
from __future__ import annotations

import json
import math
import pathlib
import statistics
from dataclasses import dataclass, field
from typing import Sequence

from .records import grouping_key

# The thresholds, shared with halox-bench (which builds them into a header): stability.json.
_THRESHOLDS = json.loads((pathlib.Path(__file__).with_name("stability.json")).read_text())
MODE_FACTOR = float(_THRESHOLDS["mode_factor"])
RUN_WAIT_ABOVE = float(_THRESHOLDS["run_wait_above"])
STEAL_ABOVE = float(_THRESHOLDS["steal_above"])
# halox-bench's ping-pong gives up on a partner that has not answered for this long (it had
# lost its core); the time waited then stands for the round trip.
PING_PONG_CAP_NS = float(_THRESHOLDS["ping_pong_cap_s"]) * 1e9
# --rounds auto runs at least this many rounds.
SETTLE_MIN_ROUNDS = int(_THRESHOLDS["settle_min_rounds"])


@dataclass
class RoundRatios:
    per_round: list[float]
    median: float
    min: float
    max: float

    @classmethod
    def of(cls, per_round: Sequence[float]) -> RoundRatios | None:
        per_round = [float(x) for x in per_round]
        if not per_round:
            return None
        return cls(per_round, float(statistics.median(per_round)), min(per_round), max(per_round))


def round_medians(raw: dict) -> list[float]:
    """A record's per-round median times [s]; one "round" (its median) for records written
    before they were kept."""
    rounds = raw.get("round_medians_s")
    if rounds:
        return [float(x) for x in rounds]
    return [float(raw["time_per_exchange_s"]["median"])]


def recorded_ratios(raw: dict) -> RoundRatios | None:
    """The record's per-round (xN) against the baseline of its launch, as halox-bench took them
    (None where the baseline did not run)."""
    r = raw.get("ratio_to_baseline")
    if not r or not r.get("per_round"):
        return None
    return RoundRatios([float(x) for x in r["per_round"]], float(r["median"]), float(r["min"]),
                       float(r["max"]))


def rebased(ratios: RoundRatios | None, baseline: RoundRatios | None) -> RoundRatios | None:
    """(xN) against another variant of the launch from both one's (xN) against the launch's
    baseline, round by round: the launch's baseline divides out."""
    if ratios is None or baseline is None:
        return None
    return RoundRatios.of([x / b for b, x in zip(baseline.per_round, ratios.per_round)
                           if b > 0 and x > 0])


def record_ratios(baseline: dict, variant: dict) -> RoundRatios | None:
    """The per-round ratios of two records of one launch, baseline / variant."""
    own = recorded_ratios(variant)
    if (variant.get("config") or {}).get("baseline") == _variant_of(baseline):
        return own
    return rebased(own, recorded_ratios(baseline))


def _variant_of(raw: dict) -> str:
    c = raw.get("config") or {}
    return f"{c.get('transport')}/{c.get('algorithm')}/{c.get(grouping_key(c))}"


@dataclass
class Stability:
    stable: bool
    rounds_disagree: float = 0.0
    reasons: list[str] = field(default_factory=list)
    causes: list[str] = field(default_factory=list)  # one per reason
    # Of its causes the one that marked most cells of its launch (None when stable).
    leading_cause: str | None = None


def recorded_verdict(raw: dict) -> Stability:
    """The verdict halox-bench wrote into the record (stable where it wrote none)."""
    s = raw.get("stability") or {}
    return Stability(bool(raw.get("stable", True)), float(s.get("rounds_disagree") or 0.0),
                     list(s.get("reasons") or []), list(s.get("causes") or []),
                     s.get("leading_cause"))


def launch_summary(raws: Sequence[dict], brief: bool = False) -> list[str]:
    """The closing summary one launch's run ended with ([] when its cells were all stable);
    `brief`: the short one, a line per cause."""
    for raw in raws:
        lines = (raw.get("launch_stability") or {}).get("brief" if brief else "summary")
        if lines is not None:
            return list(lines)
    return []


# ---------------------------------------------------------------------------------------------
# Launches


@dataclass
class ProbeSpread:
    """How far apart a launch's probes were (launch_probe.spread): the worst disturbance."""
    worst_run_wait: float = 0.0
    worst_steal: float = 0.0


@dataclass
class LaunchProbe:
    """A launch's machine, as its probes saw it: per pair the median, lowest and highest round
    trip [ns], the median copy bandwidth, the worst disturbance."""
    run_id: str
    pairs: list[dict]
    round_trip_ns: list[tuple[float, float, float]]
    copy_GBps: float
    spread: ProbeSpread
    load1: float | None

    def text(self) -> str:
        trips = ", ".join(
            f"{p.get('role', 'pair')} ranks {'-'.join(map(str, p.get('ranks', [])))} "
            + (f"{m:.0f} ns ({lo:.0f}-{hi:.0f})" if hi < PING_PONG_CAP_NS else
               f"{m:.0f} ns ({lo:.0f} ns to more than {PING_PONG_CAP_NS / 1e6:.0f} ms)")
            for p, (m, lo, hi) in zip(self.pairs, self.round_trip_ns))
        parts = [f"round trip {trips}" if trips else "no on-node pair",
                 f"copy {self.copy_GBps:.1f} GB/s"]
        if self.spread.worst_run_wait > 0:
            parts.append(f"run-queue wait up to {100 * self.spread.worst_run_wait:.0f} %")
        if self.spread.worst_steal > 0:
            parts.append(f"steal up to {100 * self.spread.worst_steal:.0f} %")
        if self.load1 is not None:
            parts.append(f"load {self.load1:.2f}")
        return "; ".join(parts)


def launch_probe(raws: Sequence[dict]) -> LaunchProbe | None:
    """The probe of one launch from its records (None for records without one)."""
    turns = [t for r in raws for t in (r.get("machine_probe") or [])]
    launch = next((r["launch_probe"] for r in raws if r.get("launch_probe")), None)
    if launch is None:
        return None
    samples = [launch["start"], launch["end"]] + [s for t in turns for s in (t["before"],
                                                                             t["after"])]
    pairs = launch.get("pairs") or []
    trips = []
    for p in range(len(pairs)):
        values = [s["round_trip_ns"][p] for s in samples if len(s.get("round_trip_ns") or []) > p]
        trips.append((float(statistics.median(values)), min(values), max(values)))
    copies = [s.get("copy_GBps") or 0.0 for s in samples]
    loads = [s["load1"] for s in samples if s.get("load1") is not None]
    spread = launch.get("spread") or {}
    return LaunchProbe(str(raws[0].get("run_id")), pairs, trips,
                       float(statistics.median(copies)),
                       ProbeSpread(float(spread.get("worst_run_wait") or 0.0),
                                   float(spread.get("worst_steal") or 0.0)),
                       max(loads) if loads else None)


def modes_differ(a: LaunchProbe, b: LaunchProbe) -> bool:
    """Whether two launches ran on machines in different modes (see the module's rules)."""
    for (ma, _, _), (mb, _, _) in zip(a.round_trip_ns, b.round_trip_ns):
        if min(ma, mb) > 0 and max(ma, mb) / min(ma, mb) > MODE_FACTOR:
            return True
    return min(a.copy_GBps, b.copy_GBps) > 0 and \
        max(a.copy_GBps, b.copy_GBps) / min(a.copy_GBps, b.copy_GBps) > MODE_FACTOR


# The tie rule of the summary and of the tables' notes (docs/bench.md): a variant within this
# share of the fastest in its median (xN) and its median round ties with it; at most this
# many are named.
TIE_WITHIN = 0.02
MAX_TIES = 2


def paired_ratios(winner: RoundRatios, other: RoundRatios) -> float:
    """The median over the rounds of the other's per-round (xN) over the winner's, from two
    cells' per-round (xN) against the same baseline: the baseline divides out, round by round."""
    paired = rebased(other, winner)
    return paired.median if paired else math.nan
