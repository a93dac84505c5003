"""Whether a cell of halox-bench records can be trusted, by the rules halox-bench applies when
it writes them (apps/bench/stability.hpp; docs/bench.md, "Stability"):

- `(xN)` ratios are taken round by round: each variant's median of one round against the
  baseline's median of the same round; a cell shows the median of its per-round ratios and their
  range.
- A cell is unstable when its rounds disagree (largest per-round ratio — or median, without a
  baseline — more than 10 % above the smallest), when the machine probe around its turns changed
  mode (a pair's cache-line round trip, or the copy bandwidth, differing by more than 1.5x), or
  when a turn was disturbed (the ranks waited more than 20 % of it for their cores, or the
  hypervisor stole more than 10 % of their CPUs' time).
- Launches ran in different modes when their probes' median round trips (or copy bandwidths)
  differ by more than 1.5x.

The functions take plain lists and record dicts, so that other tables (the peers' fidelity
ratios) can take ratios round by round the same way.
"""
from __future__ import annotations

import json
import pathlib
import statistics
from dataclasses import dataclass, field
from typing import Iterable, Sequence

# The thresholds, shared with halox-bench (which builds them into a header): stability.json.
_THRESHOLDS = json.loads((pathlib.Path(__file__).with_name("stability.json")).read_text())
ROUNDS_DISAGREE_ABOVE = float(_THRESHOLDS["rounds_disagree_above"])
MODE_FACTOR = float(_THRESHOLDS["mode_factor"])
RUN_WAIT_ABOVE = float(_THRESHOLDS["run_wait_above"])
# halox-bench's ping-pong gives up on a partner that has not answered for this long (it had
# lost its core); the time waited then stands for the round trip.
PING_PONG_CAP_NS = float(_THRESHOLDS["ping_pong_cap_s"]) * 1e9
STEAL_ABOVE = float(_THRESHOLDS["steal_above"])
# --rounds auto: a cell has settled when, after at least SETTLE_MIN_ROUNDS rounds, its per-round
# ratios lie within SETTLE_WITHIN of their median.
SETTLE_MIN_ROUNDS = int(_THRESHOLDS["settle_min_rounds"])
SETTLE_WITHIN = float(_THRESHOLDS["settle_within"])


@dataclass
class RoundRatios:
    per_round: list[float]
    median: float
    min: float
    max: float


def per_round_ratios(baseline_rounds: Sequence[float], rounds: Sequence[float]
                     ) -> RoundRatios | None:
    """baseline[k] / variant[k] for every round k both have (times > 0)."""
    ratios = [b / x for b, x in zip(baseline_rounds, rounds) if b > 0 and x > 0]
    if not ratios:
        return None
    return RoundRatios(ratios, float(statistics.median(ratios)), min(ratios), max(ratios))


def round_medians(raw: dict) -> list[float]:
    """A record's per-round median times [s]; one "round" (its median) for records written
    before they were kept."""
    rounds = raw.get("round_medians_s")
    if rounds:
        return [float(x) for x in rounds]
    return [float(raw["time_per_exchange_s"]["median"])]


def record_ratios(baseline: dict, variant: dict) -> RoundRatios | None:
    """The per-round ratios of two records of one launch."""
    return per_round_ratios(round_medians(baseline), round_medians(variant))


@dataclass
class ProbeSpread:
    round_trip_factor: float = 1.0
    round_trip_low_ns: float = 0.0
    round_trip_high_ns: float = 0.0
    copy_factor: float = 1.0
    worst_run_wait: float = 0.0
    worst_steal: float = 0.0

    @property
    def moved_mode(self) -> bool:
        return self.round_trip_factor > MODE_FACTOR or self.copy_factor > MODE_FACTOR

    @property
    def disturbed(self) -> bool:
        return self.worst_run_wait > RUN_WAIT_ABOVE or self.worst_steal > STEAL_ABOVE


def probe_spread(turns: Iterable[dict]) -> ProbeSpread:
    """How far apart the probes around a list of turns ({"before": ..., "after": ...}) are."""
    out = ProbeSpread()
    samples = []
    for t in turns:
        samples += [t["before"], t["after"]]
        # The after-probe's shares cover the turn itself (at most all of it: the kernel books
        # a wait when it ends, so a wait begun before the turn can exceed it).
        out.worst_run_wait = max(out.worst_run_wait,
                                 min(1.0, t["after"].get("run_wait_share") or 0.0))
        out.worst_steal = max(out.worst_steal, min(1.0, t["after"].get("steal_share") or 0.0))
    if not samples:
        return out
    pairs = len(samples[0].get("round_trip_ns") or [])
    for p in range(pairs):
        values = [s["round_trip_ns"][p] for s in samples]
        low, high = min(values), max(values)
        if low > 0 and high / low > out.round_trip_factor:
            out.round_trip_factor, out.round_trip_low_ns, out.round_trip_high_ns = \
                high / low, low, high
        elif out.round_trip_high_ns == 0:
            out.round_trip_low_ns, out.round_trip_high_ns = low, high
    copies = [s.get("copy_GBps") or 0.0 for s in samples]
    if min(copies) > 0:
        out.copy_factor = max(copies) / min(copies)
    return out


@dataclass
class Stability:
    stable: bool
    rounds_disagree: float = 0.0
    reasons: list[str] = field(default_factory=list)


def judge(per_round: Sequence[float], turns: Sequence[dict]) -> Stability:
    """The rules above for one cell: its per-round ratios (or medians) and its turns' probes."""
    reasons = []
    disagree = 0.0
    if len(per_round) > 1 and min(per_round) > 0:
        disagree = max(per_round) / min(per_round) - 1
        if disagree > ROUNDS_DISAGREE_ABOVE:
            reasons.append(f"rounds disagree by {100 * disagree:.0f} %")
    s = probe_spread(turns)
    if s.round_trip_factor > MODE_FACTOR:
        reasons.append(f"round trip moved {s.round_trip_low_ns:.0f}-{s.round_trip_high_ns:.0f} ns")
    if s.copy_factor > MODE_FACTOR:
        reasons.append(f"copy bandwidth moved x{s.copy_factor:.1f}")
    if s.worst_run_wait > RUN_WAIT_ABOVE:
        reasons.append(f"ranks waited {100 * s.worst_run_wait:.0f} % of a turn for their cores")
    if s.worst_steal > STEAL_ABOVE:
        reasons.append(f"{100 * s.worst_steal:.0f} % of a turn stolen")
    return Stability(not reasons, disagree, reasons)


def judge_record(raw: dict, baseline: dict | None) -> tuple[RoundRatios | None, Stability]:
    """A record's per-round ratios against the baseline record of its launch, and its verdict."""
    ratios = record_ratios(baseline, raw) if baseline is not None else None
    per_round = ratios.per_round if ratios else round_medians(raw)
    return ratios, judge(per_round, raw.get("machine_probe") or [])


# ---------------------------------------------------------------------------------------------
# Launches


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
            f"{m:.0f} ns ({lo:.0f}-{hi:.0f})"
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
    return LaunchProbe(str(raws[0].get("run_id")), pairs, trips,
                       float(statistics.median(copies)),
                       probe_spread(turns + [{"before": launch["start"], "after": launch["end"]}]),
                       max(loads) if loads else None)


def modes_differ(a: LaunchProbe, b: LaunchProbe) -> bool:
    """Whether two launches ran on machines in different modes (see the module's rules)."""
    for (ma, _, _), (mb, _, _) in zip(a.round_trip_ns, b.round_trip_ns):
        if min(ma, mb) > 0 and max(ma, mb) / min(ma, mb) > MODE_FACTOR:
            return True
    return min(a.copy_GBps, b.copy_GBps) > 0 and \
        max(a.copy_GBps, b.copy_GBps) / min(a.copy_GBps, b.copy_GBps) > MODE_FACTOR


def widest_spread(turns_by_launch: dict[str, list[dict]]) -> tuple[str, ProbeSpread]:
    """The launch whose probes moved most (round trip first), and how far they moved."""
    spreads = {run: probe_spread(turns) for run, turns in turns_by_launch.items()}
    if not spreads:
        return "", ProbeSpread()
    run = max(spreads, key=lambda k: (spreads[k].round_trip_factor, spreads[k].copy_factor))
    worst = spreads[run]
    worst.worst_run_wait = max(s.worst_run_wait for s in spreads.values())
    worst.worst_steal = max(s.worst_steal for s in spreads.values())
    return run, worst


def round_trip_text(ns: float) -> str:
    if ns >= PING_PONG_CAP_NS:
        return f"more than {PING_PONG_CAP_NS / 1e6:.0f} ms (a rank had lost its core)"
    return f"{ns:.0f} ns"


def instability_line(unstable: int, cells: int, s: ProbeSpread, worst_disagree: float,
                     rounds: int, during: str = "during the run") -> str:
    """The one closing line: how many cells are unstable and what moved ("" when none); `s` is
    the spread of the probes of one launch (`during` names it)."""
    if unstable == 0:
        return ""
    why = []
    if s.round_trip_factor > MODE_FACTOR:
        why.append(f"the inter-core round trip moved between {s.round_trip_low_ns:.0f} and "
                   f"{round_trip_text(s.round_trip_high_ns)} {during}")
    if s.copy_factor > MODE_FACTOR:
        why.append(f"the copy bandwidth moved x{s.copy_factor:.1f}")
    if s.worst_run_wait > RUN_WAIT_ABOVE:
        why.append(f"the ranks waited up to {100 * s.worst_run_wait:.0f} % of a turn for their "
                   "cores (another process ran there)")
    if s.worst_steal > STEAL_ABOVE:
        why.append(f"the hypervisor stole up to {100 * s.worst_steal:.0f} % of a turn")
    if worst_disagree > ROUNDS_DISAGREE_ABOVE:
        why.append(f"rounds disagreed by up to {100 * worst_disagree:.0f} %")
    return (f"{unstable} of {cells} cells unstable: {'; '.join(why)}; compare within a launch, "
            f"or rerun with --rounds {rounds}")
