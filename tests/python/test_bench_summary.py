"""The screen `make bench` ends with (`halox report --summary`, halox.report_summary) on synthetic
records: one variant per rank grid and shape with its time, speed-up and range, efficiency and
trust word; ties within 2 % in the median round, at most two named; a noisy machine said in one
line, not by listing every variant; the whole screen within 40 lines of 120 columns."""
import copy
import json
import re

import pytest

from halox import cli, records, report, report_summary as summ
from planted import plant, variant_of

# Its result does not depend on the MPI library (CI runs it under one: docs/testing.md).
pytestmark = pytest.mark.any_mpi

BASE = "mpi-types/staged/sequence"


def sample(round_trip_ns=60.0, copy_GBps=10.0, run_wait=0.0):
    return {"at_s": 0.0, "round_trip_ns": [round_trip_ns], "copy_GBps": copy_GBps,
            "steal_share": 0.0, "run_wait_share": run_wait, "load1": 0.5, "cost_s": 1e-4}


def calm(rounds):
    return [{"before": sample(), "after": sample()} for _ in rounds]


def moved(rounds):
    """The vCPUs moved during every turn (60 to 300 ns)."""
    return [{"before": sample(), "after": sample(round_trip_ns=300.0)} for _ in rounds]


def raw(variant, rounds, probes=None, dims=(2, 1, 1), halo=1, nfields=1, run_id="run-1",
        efficiency=0.5, chosen=""):
    transport, algorithm, grouping = variant.split("/")
    probes = probes if probes is not None else calm(rounds)
    return {
        "schema_version": 1, "tool": "halox-bench", "run_id": run_id, "ranks": 2,
        "mpi_library": "Open MPI v4.1.4, package: Debian",
        "rank_map": [{"rank": 0, "host": "vm"}, {"rank": 1, "host": "vm"}],
        "machine": {"cpu_model": "AMD EPYC", "cpus": 2},
        "config": {"transport": transport, "algorithm": algorithm, "grouping": grouping,
                   "type": "double", "halo": halo, "halo_lo": [halo] * 3, "halo_hi": [halo] * 3,
                   "nfields": nfields, "domain": [64, 64, 64], "global_domain": [],
                   "timing": "throughput", "baseline": BASE, "chosen": chosen},
        "decomposition": {"kind": "cart", "dims": list(dims), "periodic": [True] * 3,
                          "order": "ZYX"},
        "time_per_exchange_s": {"median": sorted(rounds)[len(rounds) // 2], "mean": rounds[0]},
        "seconds_per_10000": 1.0, "efficiency": efficiency, "line_floor_s": 1e-5,
        "memcpy_efficiency": efficiency / 2, "verification": "passed",
        "round_medians_s": list(rounds), "machine_probe": probes,
        "launch_probe": {"pairs": [{"role": "nearest", "ranks": [0, 1], "cpus": [0, 1]}],
                         "start": probes[0]["before"], "end": probes[-1]["after"],
                         "samples": 2 * len(probes), "cost_s": 1e-3, "wall_s": 1.0},
    }


def moved_verdicts(raws):
    """What halox-bench writes of a launch whose vCPUs moved in every turn: every cell marked,
    and the brief summary the screen ends with."""
    verdicts = {variant_of(r): (["moved"], ["round trip moved 60-300 ns"], "moved") for r in raws}
    brief = [f"{len(raws)} of {len(raws)} cells unstable; the causes, most cells first:",
             f"  1. {len(raws)} cells: the vCPUs moved between host cores (round trip 60 ns to "
             "300 ns): --rounds auto, or pin the VM's vCPUs"]
    return verdicts, (), brief


def parse(raws, moved_launch=False):
    """The records, each launch's with what halox-bench writes beside the times."""
    launches = {}
    for r in raws:
        launches.setdefault(r["run_id"], []).append(r)
    for launch in launches.values():
        plant(launch, *(moved_verdicts(launch) if moved_launch else ()))
    return [records.parse_record(r, f"synthetic:{i}") for i, r in enumerate(raws)]


def row_of(lines, shape):
    return next(l for l in lines if shape in l.split()[:2])


def test_one_variant_per_shape_with_speed_up_range_efficiency_and_trust():
    recs = parse([raw(BASE, [100e-6, 100e-6, 100e-6]),
                  raw("shm/staged/sequence", [25e-6, 26e-6, 25e-6], efficiency=0.48),
                  raw("mpi-p2p/staged/sequence", [50e-6, 50e-6, 51e-6])])
    lines = summ.summary_lines(recs)
    row = row_of(lines, "h1f1")
    assert row.split()[2] == "shm/staged/sequence"
    assert row.split()[3] == "25"                   # µs, the median
    assert "4.00 [3.85-4.00]" in row and "48 %" in row and row.endswith("stable")
    assert "mpi-p2p" not in "\n".join(lines)        # 2x slower: not a runner-up
    assert lines[0].startswith("What to use on vm (AMD EPYC, 2 CPUs), Open MPI v4.1.4, 2 ranks, "
                               "64x64x64 cells per rank, double: the fastest")
    assert row.startswith("  2x1x1  h1f1")
    assert "every one of the 3 cells is stable" in lines
    assert "trust:" not in "\n".join(lines)         # the legend comes with a row not stable


def test_ties_are_within_two_percent_in_the_median_round_and_at_most_two_are_named():
    variants = {BASE: 100e-6, "shm/staged/sequence": 25.0e-6, "shm/staged/compact": 25.2e-6,
                "cma/staged/sequence": 25.3e-6, "cma/staged/compact": 25.4e-6,
                "shm/standard/sequence": 26.0e-6}      # 4 % behind: not tied
    recs = parse([raw(v, [t, t * 1.01, t]) for v, t in variants.items()])
    lines = summ.summary_lines(recs)
    tied = next(l for l in lines if "tied:" in l)
    assert tied.strip() == "tied: shm/staged/compact x3.97, cma/staged/sequence x3.95, 1 more"
    assert "shm/standard" not in tied
    # The full tables' note follows the same rule.
    verdicts = report.cell_verdicts({(r.variant, records.shape_key(r)): [r] for r in recs}, BASE)
    cells = {key: [] for key in verdicts}
    key = records.shape_key(recs[0])
    (note,) = report.fastest_notes(cells, verdicts, [key], {key: "h1f1"})
    assert note.endswith("h1f1 shm/staged/sequence x4.00 tied with shm/staged/compact x3.97, "
                         "cma/staged/sequence x3.95 and 1 more")


def noisy_launch(spread):
    """25 variants whose rounds all overlap (the vCPUs moved in every turn); the fastest's
    rounds `spread` apart."""
    out = [raw(BASE, [100e-6, 100e-6, 100e-6], moved([0] * 3))]
    out.append(raw("shm/staged/sequence", [20e-6, 20e-6 * spread, 21e-6], moved([0] * 3)))
    for i in range(24):
        t = 22e-6 + i * 0.2e-6
        out.append(raw(f"t{i}/staged/sequence", [t * 1.6, t, t * 1.1], moved([0] * 3)))
    return parse(out, moved_launch=True)


def test_a_noisy_machine_is_said_in_one_line_not_by_listing_the_variants():
    lines = summ.summary_lines(noisy_launch(1.2))
    row = row_of(lines, "h1f1")
    assert row.split()[2] == "shm/staged/sequence" and row.endswith("noisy: vCPUs moved")
    text = "\n".join(lines)
    assert "too noisy to rank 11 others" in text   # their best rounds reach its worst
    assert text.count("t1/staged") == 0            # nothing listed one by one
    assert "trust: stable = rounds within 10 %" in text
    assert "26 of 26 cells unstable" in text and "the vCPUs moved between host cores" in text


def test_rounds_further_apart_than_one_and_a_half_are_unreliable():
    row = row_of(summ.summary_lines(noisy_launch(2.0)), "h1f1")
    assert row.endswith("unreliable: vCPUs moved")


def test_auto_is_measured_against_the_variant_to_use():
    recs = parse([raw(BASE, [100e-6] * 3), raw("shm/staged/sequence", [25e-6] * 3),
                  raw("auto/staged/sequence", [40e-6] * 3,
                      chosen="chose mpi-p2p/staged/sequence of 9 candidates (40 us per exchange)")])
    text = "\n".join(summ.summary_lines(recs))
    assert ("auto: within 2 % of the variant to use in 0 of 1 rows, at worst 0.62 of it "
            "(2x1x1 h1f1: chose mpi-p2p/staged/sequence)") in " ".join(text.split())
    assert row_of(text.splitlines(), "h1f1").split()[2] == "shm/staged/sequence"


def full_launch():
    """Two rank grids, four shapes, 40 variants each, a noisy machine: the make bench sweep."""
    transports = ["mpi-types", "mpi-p2p", "mpi-cartex", "mpi-neighbor", "mpi-rma",
                  "mpi-rma-fence", "shm", "ucx", "cma", "auto"]
    out = []
    for dims in ((2, 1, 1), (1, 1, 2)):
        for halo, nfields in ((1, 1), (5, 1), (1, 8), (5, 8)):
            for i, t in enumerate(transports):
                for algorithm in ("standard", "staged"):
                    for fields in ("compact", "sequence"):
                        base = (1 + i / 10) * 1e-5 * halo * nfields
                        rounds = [base, base * 1.3, base * 0.9]
                        out.append(raw(f"{t}/{algorithm}/{fields}", rounds, moved(rounds),
                                       dims, halo, nfields, run_id=f"run-{dims[0]}"))
    return out


def test_the_make_bench_screen_fits_forty_lines_of_120_columns(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # paths below it are shown relative to it
    path = tmp_path / "bench.jsonl"
    launch = full_launch()
    parse(launch, moved_launch=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in launch))
    # (--save, which make bench adds, writes the plots: seconds; the line it adds is checked below)
    assert cli.main(["report", str(path), "--summary"]) == 0
    out = capsys.readouterr().out.rstrip("\n").splitlines() + ["one more line"]
    assert len(out) <= 40, "\n".join(out)
    assert max(len(l) for l in out) <= 120, max(out, key=len)
    rows = [l for l in out if {"h1f1", "h5f1", "h1f8", "h5f8"} & set(l.split()[:2])]
    assert len(rows) == 8
    assert all(re.search(r"  (stable|noisy: \w+|unreliable: \w+)", l) for l in rows)
    assert out[-2] == "the tables in the terminal: halox report bench.jsonl --efficiency"
    assert summ._where(str(tmp_path / "report" / "report.md"), str(path)) == [
        "every variant and cell, with plots: report/report.md",
        "the tables in the terminal: halox report bench.jsonl --efficiency"]
    # Without --summary, halox report prints today's tables.
    assert cli.main(["report", str(path), "--efficiency"]) == 0
    tables = capsys.readouterr().out
    assert "ompi: (xN)" in tables and "ompi: efficiency" in tables
    assert len(tables.splitlines()) > 100


def test_summary_needs_bench_records(tmp_path, capsys):
    path = tmp_path / "halo2d.jsonl"
    path.write_text((pytest.importorskip("pathlib").Path(__file__).parent / "data" /
                     "halo2d.jsonl").read_text())
    assert cli.main(["report", str(path), "--summary"]) == 2
    assert "--summary needs halox-bench records" in capsys.readouterr().err


def test_without_a_baseline_the_fastest_median_is_used():
    recs = parse([raw("shm/staged/sequence", [25e-6] * 3), raw("cma/staged/sequence", [30e-6] * 3)])
    for r in recs:
        r.raw["config"]["baseline"] = "none/staged/sequence"
    row = row_of(summ.summary_lines(copy.deepcopy(recs)), "h1f1")
    assert row.split()[2] == "shm/staged/sequence" and " - " in row


def test_a_record_written_before_grouping_had_its_name_reads_its_fields_as_the_grouping():
    older = raw("shm/staged/sequence", [25e-6, 26e-6, 25e-6])
    older["config"]["fields"] = older["config"].pop("grouping")
    recs = parse([raw(BASE, [100e-6, 100e-6, 100e-6]), older])
    assert recs[1].grouping == "sequence" and recs[1].variant == "shm/staged/sequence"
    current = parse([raw(BASE, [100e-6, 100e-6, 100e-6]),
                     raw("shm/staged/sequence", [25e-6, 26e-6, 25e-6])])
    assert summ.summary_lines(recs) == summ.summary_lines(current)
