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
import math
import pathlib
import statistics
import textwrap
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
    # Its highest below the ping-pong's cap: a round trip at the cap was a rank without its core
    # (busy), not a move of the vCPUs.
    round_trip_answered_high_ns: float = 0.0
    copy_factor: float = 1.0
    worst_run_wait: float = 0.0
    worst_steal: float = 0.0
    worst_run_wait_cpu: int | None = None  # the CPU that waited most, where recorded
    highest_load: float = 0.0

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
    turns = list(turns)
    for t in turns:
        samples += [t["before"], t["after"]]
        # The after-probe's shares cover the turn itself (at most all of it: the kernel books
        # a wait when it ends, so a wait begun before the turn can exceed it).
        waited = min(1.0, t["after"].get("run_wait_share") or 0.0)
        if waited > out.worst_run_wait:
            out.worst_run_wait, out.worst_run_wait_cpu = waited, t["after"].get("run_wait_cpu")
        out.highest_load = max([out.highest_load] + [x for x in (t["before"].get("load1"),
                                                                t["after"].get("load1"))
                                                     if x is not None])
        out.worst_steal = max(out.worst_steal, min(1.0, t["after"].get("steal_share") or 0.0))
    # The CPU that waited most in the most disturbed turns (a rank that waited all of a turn
    # ties with any other that did: the count decides).
    disturbed: dict[int, int] = {}
    for t in turns:
        cpu = t["after"].get("run_wait_cpu")
        if cpu is not None and (t["after"].get("run_wait_share") or 0.0) > RUN_WAIT_ABOVE:
            disturbed[cpu] = disturbed.get(cpu, 0) + 1
    if disturbed:
        out.worst_run_wait_cpu = max(sorted(disturbed), key=lambda c: disturbed[c])
    if not samples:
        return out
    pairs = len(samples[0].get("round_trip_ns") or [])
    for p in range(pairs):
        values = [s["round_trip_ns"][p] for s in samples]
        low, high = min(values), max(values)
        answered = max((v for v in values if v < PING_PONG_CAP_NS), default=high)
        if low > 0 and high / low > out.round_trip_factor:
            out.round_trip_factor, out.round_trip_low_ns, out.round_trip_high_ns = \
                high / low, low, high
            out.round_trip_answered_high_ns = answered
        elif out.round_trip_high_ns == 0:
            out.round_trip_low_ns, out.round_trip_high_ns = low, high
            out.round_trip_answered_high_ns = answered
    copies = [s.get("copy_GBps") or 0.0 for s in samples]
    if min(copies) > 0:
        out.copy_factor = max(copies) / min(copies)
    return out


# What made a cell unstable, in the order the closing summary prefers between causes of as many
# cells (apps/bench/stability.hpp's `cause`).
CAUSES = ("busy", "steal", "moved", "bandwidth", "launch_moved", "rounds")


@dataclass
class Stability:
    stable: bool
    rounds_disagree: float = 0.0
    reasons: list[str] = field(default_factory=list)
    causes: list[str] = field(default_factory=list)  # one per reason


def judge(per_round: Sequence[float], turns: Sequence[dict],
          launch: ProbeSpread | None = None) -> Stability:
    """The rules above for one cell: its per-round ratios (or medians), the probes around its
    turns and its baseline's, and the spread of every probe of its launch (a launch that moved
    a mode outside the cell's turns measured the cell in one of the machine's modes only)."""
    out = Stability(True)

    def add(cause: str, text: str) -> None:
        out.causes.append(cause)
        out.reasons.append(text)

    if len(per_round) > 1 and min(per_round) > 0:
        out.rounds_disagree = max(per_round) / min(per_round) - 1
        if out.rounds_disagree > ROUNDS_DISAGREE_ABOVE:
            # Past 2x, a factor reads better than thousands of percent.
            add("rounds", f"rounds disagree by {100 * out.rounds_disagree:.0f} %"
                if out.rounds_disagree <= 1 else f"rounds disagree {1 + out.rounds_disagree:.0f}x")
    s = probe_spread(turns)
    if s.round_trip_factor > MODE_FACTOR:
        # A round trip at the ping-pong's cap was a partner without its core: busy, not moved.
        add("busy" if s.round_trip_high_ns >= PING_PONG_CAP_NS else "moved",
            f"round trip moved {s.round_trip_low_ns:.0f}-{s.round_trip_high_ns:.0f} ns")
    if s.copy_factor > MODE_FACTOR:
        add("bandwidth", f"copy bandwidth moved x{s.copy_factor:.1f}")
    if s.worst_run_wait > RUN_WAIT_ABOVE:
        add("busy", f"ranks waited {100 * s.worst_run_wait:.0f} % of a turn for their cores")
    if s.worst_steal > STEAL_ABOVE:
        add("steal", f"{100 * s.worst_steal:.0f} % of a turn stolen")
    if launch is not None and launch.round_trip_factor > MODE_FACTOR and \
            s.round_trip_factor <= MODE_FACTOR:
        add("launch_moved", f"measured in one mode: the launch's round trip moved "
                            f"{launch.round_trip_low_ns:.0f}-{launch.round_trip_high_ns:.0f} ns "
                            "outside its turns")
    out.stable = not out.reasons
    return out


def judge_record(raw: dict, baseline: dict | None, launch: ProbeSpread | None = None
                 ) -> tuple[RoundRatios | None, Stability]:
    """A record's per-round ratios against the baseline record of its launch, and its verdict
    (on its turns and the baseline's: the ratio depends on both)."""
    ratios = record_ratios(baseline, raw) if baseline is not None else None
    per_round = ratios.per_round if ratios else round_medians(raw)
    turns = list(raw.get("machine_probe") or [])
    if baseline is not None and baseline is not raw:
        turns += baseline.get("machine_probe") or []
    return ratios, judge(per_round, turns, launch)


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


SUMMARY_WIDTH = 150


def wrap(text: str, width: int = SUMMARY_WIDTH, indent: str = "    ") -> list[str]:
    """Lines of at most `width` characters, broken at spaces, the later ones indented."""
    lead = text[:len(text) - len(text.lstrip(" "))]
    return textwrap.wrap(text.lstrip(" "), width, initial_indent=lead, subsequent_indent=indent,
                         break_long_words=False, break_on_hyphens=False)


def cause_text(cause: str, s: ProbeSpread, disagree: float, cpus: int | None) -> str:
    """What a cause was in these probes, and what helps against it."""
    if cause == "busy":
        where = f"CPU {s.worst_run_wait_cpu}" if s.worst_run_wait_cpu is not None else \
            "the ranks' cores"
        on = f" on {cpus} CPUs" if cpus else ""
        waited = (f"the ranks waited up to {100 * s.worst_run_wait:.0f} % of a turn for their cores"
                  if s.worst_run_wait > RUN_WAIT_ABOVE else
                  f"a rank did not answer the probe for {round_trip_text(s.round_trip_high_ns)}")
        return (f"the machine was busy: another process ran on {where}, {waited} (load average "
                f"up to {s.highest_load:.1f}{on}); rerun when the machine is quiet")
    if cause == "steal":
        return (f"the hypervisor stole up to {100 * s.worst_steal:.0f} % of a turn: the host is "
                "oversubscribed, nothing inside the VM helps; rerun at a quieter time or on "
                "another host")
    if cause in ("moved", "launch_moved"):
        high = s.round_trip_answered_high_ns or s.round_trip_high_ns
        return (f"the vCPUs moved between host cores (round trip {s.round_trip_low_ns:.0f} ns to "
                f"{round_trip_text(high)}); rerun with --rounds auto, or pin the "
                "VM's vCPUs to host cores")
    if cause == "bandwidth":
        return (f"the copy bandwidth moved x{s.copy_factor:.1f} (memory shared with other work); "
                "rerun with --rounds auto, or when the machine is quiet")
    return (f"rounds disagreed by up to {100 * disagree:.0f} % while the probe stayed steady; "
            "rerun with --rounds auto or a longer --time")


def rank_causes(verdicts: Iterable[Stability]) -> tuple[list[str], dict[str, int], float]:
    """The causes ordered by the cells they marked (ties in the order of CAUSES), the cells each
    marked, and the most the rounds disagreed where that was the only cause."""
    marked = {c: 0 for c in CAUSES}
    disagree = 0.0
    for st in verdicts:
        seen = {"moved" if c == "launch_moved" else c for c in st.causes}
        # Rounds that disagree are a cause of their own only where the probe saw nothing else.
        if st.causes != ["rounds"]:
            seen.discard("rounds")
        else:
            disagree = max(disagree, st.rounds_disagree)
        for c in seen:
            marked[c] += 1
    return sorted((c for c in CAUSES if marked[c]), key=lambda c: -marked[c]), marked, disagree


def closing_summary(unstable: Sequence[tuple[str, Stability]], cells: int, s: ProbeSpread,
                    cpus: int | None = None, during: str = "", width: int = SUMMARY_WIDTH,
                    brief: bool = False) -> list[str]:
    """The summary a run or report ends with when cells are unstable ([] when none): the causes
    ranked by the cells they marked, each with what helps against it, the three worst cells, and
    where every cell's reasons are (`brief`: the causes only); no line longer than `width`. `s`
    is the spread of the probes of the launch that moved most (`during` names it)."""
    if not unstable:
        return []
    ranked, marked, disagree = rank_causes(st for _, st in unstable)
    out = [f"{len(unstable)} of {cells} cells unstable{during}; the causes, most cells first:"]
    for i, c in enumerate(ranked, 1):
        out += wrap(f"  {i}. {marked[c]} cells: {cause_text(c, s, disagree, cpus)}", width,
                    indent=" " * 7)
    if brief:
        return out
    worst = sorted(unstable, key=lambda u: -(len(u[1].causes) + u[1].rounds_disagree))[:3]
    out += wrap("  worst: " + "; ".join(f"{name} ({st.reasons[0]})" for name, st in worst), width)
    out.append("  every cell's reasons: the records (stability.reasons) and the Markdown report of halox report")
    return out


# The tie rule of the summary and of the tables' notes (docs/bench.md): a variant within this
# share of the fastest in its median (xN) and its median round ties with it; at most this
# many are named.
TIE_WITHIN = 0.02
MAX_TIES = 2


def paired_ratios(winner: RoundRatios, other: RoundRatios) -> float:
    """The median over the rounds of the other's per-round (xN) over the winner's, from two
    cells' per-round (xN) against the same baseline: the baseline divides out, round by round."""
    ratios = [o / w for w, o in zip(winner.per_round, other.per_round) if w > 0 and o > 0]
    return float(statistics.median(ratios)) if ratios else math.nan
