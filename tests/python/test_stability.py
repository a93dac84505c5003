"""The stability rules and the per-round ratios (halox.stability, as halox-bench applies them) on
synthetic records, and how halox report shows them: marked cells, ranges, the closing line,
each launch's probe and the warning when launches ran in different modes."""
import copy

import pytest

from halox import records, report, stability

# Its result does not depend on the MPI library (CI runs it under one: docs/testing.md).
pytestmark = pytest.mark.any_mpi


def sample(round_trip_ns=(60.0,), copy_GBps=10.0, run_wait=0.0, steal=0.0):
    return {"at_s": 0.0, "round_trip_ns": list(round_trip_ns), "copy_GBps": copy_GBps,
            "steal_share": steal, "run_wait_share": run_wait, "load1": 0.5, "cost_s": 1e-4}


def turn(**after):
    return {"before": sample(), "after": sample(**after)}


def test_ratios_are_taken_round_by_round_against_the_same_round():
    # The machine doubled its speed between the rounds: the times halve, the ratio stays.
    r = stability.per_round_ratios([100e-6, 50e-6, 100e-6], [50e-6, 25e-6, 52e-6])
    assert r.per_round == pytest.approx([2.0, 2.0, 100 / 52])
    assert r.median == pytest.approx(2.0)
    assert (r.min, r.max) == pytest.approx((100 / 52, 2.0))
    # Ratios of whole medians would mix rounds of different machines.
    assert stability.per_round_ratios([1.0], [0.0]) is None
    assert stability.per_round_ratios([2.0, 1.0], [1.0]).per_round == [2.0]


def test_rounds_that_disagree_by_more_than_ten_percent_are_unstable():
    assert stability.judge([2.0, 2.1, 2.05], []).stable
    verdict = stability.judge([2.0, 2.3], [])
    assert not verdict.stable
    assert verdict.rounds_disagree == pytest.approx(0.15)
    assert verdict.reasons == ["rounds disagree by 15 %"]
    assert stability.judge([2.0], []).stable  # one round: nothing to disagree with
    assert stability.judge([1.0, 30.0], []).reasons == ["rounds disagree 30x"]


@pytest.mark.parametrize("after, reason", [
    ({"round_trip_ns": (95.0,)}, "round trip moved 60-95 ns"),
    ({"copy_GBps": 5.0}, "copy bandwidth moved x2.0"),
    ({"run_wait": 0.5}, "ranks waited 50 % of a turn for their cores"),
    ({"steal": 0.3}, "30 % of a turn stolen"),
])
def test_a_probe_that_moved_a_mode_or_a_disturbed_turn_makes_a_cell_unstable(after, reason):
    verdict = stability.judge([2.0, 2.0], [turn(), turn(**after)])
    assert not verdict.stable
    assert verdict.reasons == [reason]


def test_a_partner_that_did_not_answer_at_all_counts_as_a_busy_machine():
    verdict = stability.judge([1.0], [turn(round_trip_ns=(2.0e6,))])
    assert verdict.causes == ["busy"]
    spread = stability.probe_spread([turn(round_trip_ns=(2.0e6,))])
    lines = stability.closing_summary([("a [h1f1]", verdict)], 4, spread)
    assert lines[0] == "1 of 4 cells unstable; the causes, most cells first:"
    text = " ".join(line.strip() for line in lines)
    assert ("1. 1 cells: the machine was busy: another process ran on the ranks' cores, a rank "
            "did not answer the probe for more than 2 ms (a rank had lost its core)") in text
    assert "rerun when the machine is quiet" in text


def test_a_move_of_the_vcpus_is_told_by_the_round_trips_that_were_answered():
    # A launch whose vCPUs moved (60 to 400 ns) and in which a rank once lost its core (the cap):
    # the move is told with the answered round trips, the lost core is the busy cause's.
    spread = stability.probe_spread([turn(), turn(round_trip_ns=(400.0,)),
                                     turn(round_trip_ns=(2.0e6,))])
    assert spread.round_trip_high_ns == 2.0e6 and spread.round_trip_answered_high_ns == 400.0
    text = stability.cause_text("moved", spread, 0.0, 2)
    assert "round trip 60 ns to 400 ns" in text and "lost its core" not in text


def cause_turns(cause):
    return {"busy": [turn(run_wait=0.5)], "moved": [turn(round_trip_ns=(250.0,))],
            "steal": [turn(steal=0.4)], "bandwidth": [turn(copy_GBps=4.0)]}[cause]


def test_the_closing_summary_ranks_the_causes_and_says_what_helps():
    cells = ([(f"busy{i} [h1f1]", stability.judge([1.0, 1.3], cause_turns("busy")))
              for i in range(280)]
             + [(f"moved{i} [h5f8]", stability.judge([1.0], cause_turns("moved")))
                for i in range(30)]
             + [("steal [h1f8]", stability.judge([1.0], cause_turns("steal")))]
             + [(f"rounds{i} [h1f8]", stability.judge([1.0, 1.2], [turn()])) for i in range(9)])
    busy = turn(run_wait=0.5)
    busy["after"]["run_wait_cpu"] = 1
    busy["after"]["load1"] = 2.9
    spread = stability.probe_spread([busy, turn(round_trip_ns=(250.0,)), turn(steal=0.4)])
    lines = stability.closing_summary(cells, 320, spread, cpus=2)
    assert lines[0] == "320 of 320 cells unstable; the causes, most cells first:"
    text = " ".join(line.strip() for line in lines)
    assert all(len(line) <= 160 for line in lines)
    assert len(lines) <= 10
    # Ranked by the cells each marked; the disagreeing rounds of busy cells are its symptom.
    order = [text.index(k) for k in ("280 cells: the machine was busy: another process ran on "
                                     "CPU 1", "30 cells: the vCPUs moved",
                                     "9 cells: rounds disagreed by up to 20 %",
                                     "1 cells: the hypervisor stole up to 40 %")]
    assert order == sorted(order)
    assert "load average up to 2.9 on 2 CPUs); rerun when the machine is quiet" in text
    assert "--rounds auto, or pin the VM's vCPUs to host cores" in text
    assert "nothing inside the VM helps" in text
    # A few worst cells, not all of them.
    assert text.count("busy") <= 4 and "busy279" not in text
    assert stability.closing_summary([], 4, spread) == []


def test_the_baselines_turns_count_for_a_ratio():
    calm = [turn(), turn()]
    base = bench_record(BASE, [100e-6, 100e-6], [turn(), turn(run_wait=0.6)])
    variant = bench_record("shm/staged/sequence", [50e-6, 50e-6], calm)
    _, verdict = stability.judge_record(variant.raw, base.raw)
    assert not verdict.stable and verdict.causes == ["busy"]
    _, alone = stability.judge_record(variant.raw, None)
    assert alone.stable


def test_a_launch_that_moved_outside_a_cells_turns_marks_it():
    moved = stability.probe_spread([turn(), turn(round_trip_ns=(250.0,))])
    verdict = stability.judge([2.0, 2.0], [turn(), turn()], moved)
    assert not verdict.stable and verdict.causes == ["launch_moved"]
    assert verdict.reasons == ["measured in one mode: the launch's round trip moved 60-250 ns "
                               "outside its turns"]
    steady = stability.probe_spread([turn(), turn(round_trip_ns=(70.0,))])
    assert stability.judge([2.0, 2.0], [turn(), turn()], steady).stable


def test_a_probe_within_one_mode_leaves_a_cell_stable():
    # 1.4x apart, 15 % waited, 5 % stolen: below every threshold.
    turns = [turn(round_trip_ns=(84.0,), copy_GBps=7.5, run_wait=0.15, steal=0.05), turn()]
    assert stability.judge([2.0, 2.0], turns).stable
    # A pair beside the one that moved is measured on its own.
    two = [{"before": sample((60.0, 300.0)), "after": sample((61.0, 310.0))}]
    assert stability.judge([1.0], two).stable


def bench_record(variant, rounds, probes, run_id="run-1", halo=1, baseline=None):
    transport, algorithm, fields = variant.split("/")
    raw = {
        "schema_version": 1, "tool": "halox-bench", "run_id": run_id, "ranks": 2,
        "mpi_library": "Open MPI v4.1.4", "machine": {"cpu_model": "Intel Xeon", "cpus": 2},
        "host": "vm",
        "config": {"transport": transport, "algorithm": algorithm, "fields": fields,
                   "type": "double", "halo": halo, "halo_lo": [halo] * 3, "halo_hi": [halo] * 3,
                   "nfields": 1, "domain": [64, 64, 64], "global_domain": [],
                   "timing": "throughput", "baseline": baseline or "mpi-types/staged/sequence"},
        "decomposition": {"kind": "cart", "dims": [2, 1, 1], "periodic": [True] * 3,
                          "order": "ZYX"},
        "time_per_exchange_s": {"median": sorted(rounds)[len(rounds) // 2], "mean": rounds[0]},
        "seconds_per_10000": 1.0, "efficiency": 0.5, "verification": "passed",
        "round_medians_s": rounds, "machine_probe": probes,
        "launch_probe": {"pairs": [{"role": "nearest", "ranks": [0, 1], "cpus": [0, 1]}],
                         "start": probes[0]["before"], "end": probes[-1]["after"],
                         "samples": 2 * len(probes), "cost_s": 1e-3, "wall_s": 1.0},
    }
    return records.parse_record(raw, f"synthetic:{run_id}:{variant}:{halo}")


BASE = "mpi-types/staged/sequence"


def launch(run_id, round_trip_ns, disturbed_shm=False):
    calm = [turn(round_trip_ns=(round_trip_ns,)), turn(round_trip_ns=(round_trip_ns,))]
    for t in calm:
        t["before"]["round_trip_ns"] = [round_trip_ns]
    shm_turns = copy.deepcopy(calm)
    if disturbed_shm:
        shm_turns[1]["after"]["run_wait_share"] = 0.6
    return [bench_record(BASE, [100e-6, 50e-6], calm, run_id),
            bench_record("shm/staged/sequence", [50e-6, 25e-6], shm_turns, run_id),
            bench_record("mpi-p2p/staged/sequence", [80e-6, 30e-6], calm, run_id)]


def test_report_shows_median_ratio_with_range_and_marks_unstable_cells():
    recs = launch("run-1", 60.0, disturbed_shm=True)
    built = report.build(recs, "chosen")
    text = report.render_text(built)
    rows = {}
    for line in text.splitlines():
        if line.startswith("    ") and "/" in line:
            rows[line.split()[0]] = rows.get(line.split()[0], "") + line
    assert "2.00" in rows["shm/staged/sequence"]
    assert "*" in rows["shm/staged/sequence"]  # its second turn was disturbed
    assert "*" in rows["mpi-p2p/staged/sequence"]  # 1.25 then 1.67: rounds disagree
    assert "*" not in rows[BASE]
    assert "[1.25-1.67]" in rows["mpi-p2p/staged/sequence"]
    # Every cell's reasons in the markdown report; the terminal gets the count and the summary.
    assert "* = unstable: 2 of 3 cells" in text
    assert "ranks waited 60 % of a turn for their cores" not in text
    assert "ranks waited 60 % of a turn for their cores" in report.render_markdown(built)
    closing = "\n".join(report.closing_lines(recs))
    assert closing.startswith("2 of 3 cells unstable; the causes, most cells first:")
    assert "1 cells: the machine was busy" in closing
    assert "1 cells: rounds disagreed by up to 33 %" in closing
    assert report.closing_lines(launch("run-2", 60.0)[:2]) == []
    assert "did not settle" not in text
    recs[2].raw["stability"] = {"settled": False}
    assert ("--rounds auto: 1 cells did not settle within 5 % before the budget ran out: "
            "mpi-p2p/staged/sequence h1f1") in report.render_text(report.build(recs, "chosen"))


def test_launches_in_different_modes_are_shown_and_warned_about():
    recs = launch("fast", 60.0) + launch("slow", 300.0)
    lines = report.launch_probe_lines(recs)
    assert any(l.startswith("Machine probe of run fast: round trip nearest ranks 0-1 60 ns")
               for l in lines)
    assert any("slow" in l and "300 ns" in l for l in lines)
    assert "WARNING: launches ran with the machine in different modes" in lines[-1]
    # Each launch's probe held still: the closing summary does not mix the two launches.
    assert "vCPUs moved" not in "\n".join(report.closing_lines(recs))
    assert not any("WARNING" in l for l in report.launch_probe_lines(
        launch("a", 60.0) + launch("b", 80.0)))


def test_the_baseline_comes_from_the_records():
    recs = launch("run-1", 60.0)
    assert records.baseline_of(recs) == BASE
    other = [bench_record(r.variant, records_rounds(r), r.raw["machine_probe"], "run-1",
                          baseline="mpi-p2p/staged/sequence") for r in recs]
    assert records.baseline_of(other) == "mpi-p2p/staged/sequence"
    text = report.render_text(report.build(other, "chosen"))
    assert "(xN) = mpi-p2p/staged/sequence" in text


def records_rounds(r):
    return r.raw["round_medians_s"]


def test_the_fastest_per_column_and_what_ties_with_it():
    def ratios(*per_round):
        return (stability.per_round_ratios([1.0] * len(per_round), [1 / x for x in per_round]),
                stability.Stability(True))

    h1, h5 = ("double", 1, 1), ("double", 5, 1)
    verdicts = {
        # h1f1: compact and sequence overlap (a tie either way round); standard stays behind
        ("shm/staged/compact", h1): ratios(2.70, 2.74, 2.66),
        ("shm/staged/sequence", h1): ratios(2.72, 2.69, 2.71),
        ("shm/standard/compact", h1): ratios(2.40, 2.38, 2.43),
        ("auto/staged/compact", h1): ratios(2.90, 2.91, 2.92),  # compared in its own note
        # h5f1, one round each: 2 % decides
        ("shm/staged/compact", h5): ratios(1.10),
        ("shm/staged/sequence", h5): ratios(1.085),
        ("mpi-p2p/staged/sequence", h5): ratios(1.05),
    }
    cells = {key: [] for key in verdicts}
    (note,) = report.fastest_notes(cells, verdicts, [h1, h5], {h1: "h1f1", h5: "h5f1"})
    assert "h1f1 shm/staged/sequence x2.71 tied with shm/staged/compact x2.70;" in note
    assert "shm/standard" not in note and "auto/" not in note
    assert note.endswith("h5f1 shm/staged/compact x1.10 tied with shm/staged/sequence x1.08")
    assert report.fastest_notes({}, {}, [h1], {h1: "h1f1"}) == []


def test_a_report_over_two_launches_flags_every_cell_apart_beyond_their_spread():
    from halox import report_launches

    def one_launch(run_id, p2p_us, round_trip_ns, load):
        calm = [turn(round_trip_ns=(round_trip_ns,)) for _ in range(3)]
        for t in calm:
            t["before"]["round_trip_ns"] = [round_trip_ns]
            t["before"]["load1"] = t["after"]["load1"] = load
        return [bench_record(BASE, [32e-6, 32e-6, 32e-6], calm, run_id),
                bench_record("mpi-p2p/staged/sequence", [x * 1e-6 for x in p2p_us], calm, run_id),
                bench_record("shm/staged/sequence", [20e-6, 20.5e-6, 20e-6], calm, run_id)]

    # Each launch's rounds agree among themselves (both stable), the launches do not: 0.56 / 0.43.
    recs = one_launch("a", [57, 57, 56], 60.0, 0.2) + one_launch("b", [74, 75, 75], 230.0, 1.9)
    verdicts = report.record_verdicts(recs)
    assert all(v[1].stable for v in verdicts.values())
    assert report_launches.flagged_cells(recs) == 1
    text = report.render_text(report_launches.compare(recs))
    [row] = [l for l in text.splitlines() if l.startswith("    mpi-p2p")]
    assert row.split()[:4] == ["mpi-p2p/staged/sequence", "double", "h1f1", "(1"]
    assert [float(x) for x in row.split()[-4:-2]] == pytest.approx([32 / 57, 32 / 75], abs=0.006)
    assert "shm/staged" not in text.split("note:")[0]
    assert "1 of 3 cells measured in two launches differ beyond the launches' own spread" in text
    assert "launches 1 and 2 (1 cells): round trip (nearest) 60 vs 230 ns; load 0.2 vs 1.9" in text
    # Apart by less than a launch's own spread: not flagged (the launch marks such a cell).
    wide = one_launch("c", [50, 57, 66], 60.0, 0.2) + one_launch("d", [60, 61, 62], 60.0, 0.2)
    assert report_launches.flagged_cells(wide) == 0


def test_the_busy_cpu_is_the_one_that_waited_most_in_the_most_turns():
    def waited(cpu, share):
        t = turn(run_wait=share)
        t["after"]["run_wait_cpu"] = cpu
        return t
    # CPU 0 waited all of one turn; CPU 1, where the other process ran, most of three.
    turns = [waited(0, 1.0), waited(1, 0.6), waited(1, 0.7), waited(1, 0.5), waited(0, 0.1)]
    assert stability.probe_spread(turns).worst_run_wait_cpu == 1
    assert stability.probe_spread(iter(turns)).worst_run_wait_cpu == 1
