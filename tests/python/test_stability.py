"""How halox report shows what halox-bench recorded of the stability of its cells (the rules
themselves are halox-bench's: tests/unit/closing_summary_test.cpp) on synthetic records: marked
cells, ranges, the closing lines, each launch's probe and the warning when launches ran in
different modes, the ties, and the cells that differ between launches."""
import copy
import statistics

import pytest

from halox import records, report, stability
from planted import plant

# Its result does not depend on the MPI library (CI runs it under one: docs/testing.md).
pytestmark = pytest.mark.any_mpi


def sample(round_trip_ns=(60.0,), copy_GBps=10.0, run_wait=0.0, steal=0.0):
    return {"at_s": 0.0, "round_trip_ns": list(round_trip_ns), "copy_GBps": copy_GBps,
            "steal_share": steal, "run_wait_share": run_wait, "load1": 0.5, "cost_s": 1e-4}


def turn(**after):
    return {"before": sample(), "after": sample(**after)}


def bench_raw(variant, rounds, probes, run_id="run-1", halo=1, baseline=None):
    transport, algorithm, grouping = variant.split("/")
    raw = {
        "schema_version": 1, "tool": "halox-bench", "run_id": run_id, "ranks": 2,
        "mpi_library": "Open MPI v4.1.4", "machine": {"cpu_model": "Intel Xeon", "cpus": 2},
        "host": "vm",
        "config": {"transport": transport, "algorithm": algorithm, "grouping": grouping,
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
    return raw


def parsed(raws):
    return [records.parse_record(raw, f"synthetic:{raw['run_id']}:{i}") for i, raw in enumerate(raws)]


BASE = "mpi-types/staged/sequence"


# What halox-bench writes of the launch below whose shm turn was disturbed.
DISTURBED = {"shm/staged/sequence": (["busy"], ["ranks waited 60 % of a turn for their cores"],
                                     "busy"),
             "mpi-p2p/staged/sequence": (["rounds"], ["rounds disagree by 33 %"], "rounds")}
DISTURBED_SUMMARY = [
    "2 of 3 cells unstable; the causes, most cells first:",
    "  1. 1 cells: the machine was busy: another process ran on the ranks' cores, the ranks "
    "waited up to 60 % of a turn for their cores (load average up to 0.5 on 2",
    "       CPUs); rerun when the machine is quiet",
    "  2. 1 cells: rounds disagreed by up to 33 % while the probe stayed steady; rerun with "
    "--rounds auto or a longer --time",
    "  worst: shm/staged/sequence [double h1f1] (ranks waited 60 % of a turn for their cores); "
    "mpi-p2p/staged/sequence [double h1f1] (rounds disagree by 33 %)",
    "  every cell's reasons: the records (stability.reasons) and the Markdown report of halox "
    "report"]


def launch(run_id, round_trip_ns, disturbed_shm=False):
    calm = [turn(round_trip_ns=(round_trip_ns,)), turn(round_trip_ns=(round_trip_ns,))]
    for t in calm:
        t["before"]["round_trip_ns"] = [round_trip_ns]
    shm_turns = copy.deepcopy(calm)
    if disturbed_shm:
        shm_turns[1]["after"]["run_wait_share"] = 0.6
    raws = [bench_raw(BASE, [100e-6, 50e-6], calm, run_id),
            bench_raw("shm/staged/sequence", [50e-6, 25e-6], shm_turns, run_id),
            bench_raw("mpi-p2p/staged/sequence", [80e-6, 30e-6], calm, run_id)]
    if not disturbed_shm:
        return parsed(plant(raws))
    for raw in raws:
        raw["launch_probe"]["spread"] = {"worst_run_wait": 0.6, "worst_steal": 0.0}
    return parsed(plant(raws, DISTURBED, DISTURBED_SUMMARY))


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
    assert "run-queue wait up to 60 %" in text  # the launch's probe, as halox-bench spread it
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
    other = parsed(plant([bench_raw(r.variant, records_rounds(r), r.raw["machine_probe"], "run-1",
                                    baseline="mpi-p2p/staged/sequence") for r in recs]))
    assert records.baseline_of(other) == "mpi-p2p/staged/sequence"
    text = report.render_text(report.build(other, "chosen"))
    assert "(xN) = mpi-p2p/staged/sequence" in text


def records_rounds(r):
    return r.raw["round_medians_s"]


def test_the_fastest_per_column_and_what_ties_with_it():
    def ratios(*per_round):
        return (stability.RoundRatios(list(per_round), statistics.median(per_round),
                                      min(per_round), max(per_round)), stability.Stability(True))

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
        return parsed(plant([
            bench_raw(BASE, [32e-6, 32e-6, 32e-6], calm, run_id),
            bench_raw("mpi-p2p/staged/sequence", [x * 1e-6 for x in p2p_us], calm, run_id),
            bench_raw("shm/staged/sequence", [20e-6, 20.5e-6, 20e-6], calm, run_id)]))

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
