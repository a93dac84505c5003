"""halox-bench as a user meets it: good runs, JSON records, and every class of bad input."""
import json
import re

import pytest

from conftest import list_transports
from halox import records as rec, report

BENCH = "halox-bench"
SMALL = ["--nrep", "5", "--warmup", "1", "--domain", "8", "8", "8"]
SMALL_NO_DOMAIN = SMALL[:4]




def test_bad_input_with_three_ranks_exits_on_every_rank(run_mpi):
    run = run_mpi(3, BENCH, *SMALL, "--mpicart", "2", "2", "1", timeout=60)
    assert run.returncode != 0
    assert run.error_lines(BENCH) == [f"{BENCH}: error: rank grid 2x2x1 does not fit 3 ranks"]


def test_help_exits_zero_and_documents_every_option(run_mpi):
    run = run_mpi(1, BENCH, "--help")
    assert run.returncode == 0
    for option in ["--domain", "--global-domain", "--halo", "--halo-lo", "--nfields", "--type",
                   "--nrep", "--time", "--warmup", "--algorithm", "--grouping", "--transport",
                   "--mpicart", "--periodic", "--no-check", "--timing", "--json", "--quiet"]:
        assert option in run.stdout


def test_matrix_run_writes_one_complete_json_record_per_configuration(run_mpi, tmp_path):
    out = tmp_path / "results.jsonl"
    run = run_mpi(2, BENCH, *SMALL, "--transport", "all", "--algorithm", "standard,staged",
                  "--grouping", "compact", "--halo", "1,2", "--json", str(out))
    assert run.returncode == 0, run.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == len(list_transports()) * 2 * 2  # transports x algorithms x halos
    assert len({r["run_id"] for r in records}) == 1
    for r in records:
        assert r["schema_version"] == 1
        assert r["verification"] == "passed"
        assert r["ranks"] == 2 and len(r["rank_map"]) == 2
        assert r["mpi_library"]
        assert r["time_per_exchange_s"]["median"] > 0
        assert r["plan"]["bytes_sent"] > 0
        assert 0 < r["efficiency"] and 0 < r["memcpy_efficiency"]
        # The lines the plan writes hold every halo byte it fills; a memcpy moves the larger of
        # the lines read and written, and is timed beside the memcpy of the halo's bytes.
        lines, halo = r["line_bytes"], r["plan"]["bytes_sent"] + r["plan"]["bytes_copied"]
        assert lines["written"] >= halo and lines["written"] % 64 == 0
        assert lines["copied"] == max(lines["read"], lines["written"])
        assert r["line_floor_s"] > 0 and len(r["round_line_floors_s"]) == 1
        # Both ranks on one node send each other bytes: the crossing between their cores.
        assert r["crossing_s"] > 0 and 0 < r["crossing_efficiency"]
    assert "Summary" in run.stdout
    assert "(x1.00)" not in run.stdout  # the default baseline is not in this matrix


def test_summary_reports_ratios_against_the_baseline(run_mpi):
    run = run_mpi(2, BENCH, *SMALL, "--transport", "mpi-p2p,mpi-types", "--algorithm", "staged",
                  "--grouping", "sequence,compact", "--quiet")
    assert run.returncode == 0, run.stderr
    baseline_row = [l for l in run.stdout.splitlines() if l.startswith("mpi-types/staged/sequence")]
    assert baseline_row and "(x1.00)" in baseline_row[0]


def test_rounds_auto_records_the_rounds_their_ratios_and_the_probe(run_mpi, tmp_path):
    out = tmp_path / "auto.jsonl"
    run = run_mpi(2, BENCH, *SMALL, "--transport", "mpi-p2p,mpi-types", "--algorithm", "staged",
                  "--grouping", "sequence", "--rounds", "auto", "--rounds-budget", "0.5",
                  "--quiet", "--json", str(out))
    assert run.returncode == 0, run.stderr
    records = {r["config"]["transport"]: r for r in map(json.loads, out.read_text().splitlines())}
    base, p2p = records["mpi-types"], records["mpi-p2p"]
    assert base["config"]["baseline"] == "mpi-types/staged/sequence"
    assert base["config"]["rounds_asked"] == "auto"
    rounds = len(p2p["round_medians_s"])
    assert 3 <= rounds <= 12 and p2p["config"]["rounds"] == rounds
    # Each round's ratio is that round's baseline over that round's variant.
    assert p2p["ratio_to_baseline"]["per_round"] == pytest.approx(
        [b / v for b, v in zip(base["round_medians_s"], p2p["round_medians_s"])])
    assert base["ratio_to_baseline"]["per_round"] == [1.0] * rounds
    assert len(p2p["machine_probe"]) == rounds
    turn = p2p["machine_probe"][0]
    assert turn["before"]["unix_s"] <= turn["after"]["unix_s"]
    assert len(turn["after"]["round_trip_ns"]) == 1 and turn["after"]["round_trip_ns"][0] > 0
    assert turn["after"]["copy_GBps"] > 0
    assert p2p["launch_probe"]["pairs"][0]["ranks"] == [0, 1]
    assert p2p["launch_probe"]["samples"] == 2 + 2 * rounds
    assert isinstance(p2p["stable"], bool) and "settled" in p2p["stability"]
    assert "machine probe: " in run.stdout and "rounds auto: " in run.stdout
    assert max(len(line) for line in run.stdout.splitlines()) <= 160
    unstable = sum(not r["stable"] for r in records.values())
    assert (f"{unstable} of 2 cells unstable; the causes" in run.stdout) == (unstable > 0)
    # What halox report prints of the run, written into each record: every verdict's causes,
    # the launch's closing summaries and the spread of its probes.
    for r in records.values():
        assert len(r["stability"]["causes"]) == len(r["stability"]["reasons"])
        assert (r["stability"]["leading_cause"] is None) == r["stable"]
        assert {"worst_run_wait", "worst_steal", "round_trip_factor"} <= set(
            r["launch_probe"]["spread"])
    assert base["launch_stability"] == p2p["launch_stability"]
    summary, brief = base["launch_stability"]["summary"], base["launch_stability"]["brief"]
    assert (summary != []) == (brief != []) == (unstable > 0)
    assert "\n".join(summary) in run.stdout
    parsed = [rec.parse_record(r, f"run:{i}") for i, r in enumerate(records.values())]
    assert report.closing_lines(parsed) == summary
    assert report.closing_lines(parsed, brief=True) == brief


def test_latency_timing_time_budget_and_per_side_halos(run_mpi):
    run = run_mpi(3, BENCH, "--global-domain", "10", "7", "9", "--halo-lo", "1", "0", "2",
                  "--halo-hi", "2", "1", "0", "--timing", "latency", "--time", "0.05",
                  "--type", "float", "--nfields", "3", "--algorithm", "all", "--periodic", "1", "0", "1")
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("verification: passed") == 3


def test_compute_timing_writes_the_fields_between_exchanges(run_mpi, tmp_path):
    out = tmp_path / "compute.jsonl"
    common = ("--domain", "32", "32", "32", "--halo", "2", "--nfields", "2", "--nrep", "20",
              "--transport", "mpi-p2p,shm", "--algorithm", "staged", "--grouping", "sequence",
              "--json", str(out))
    run = run_mpi(2, BENCH, *common, "--timing", "compute")
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("verification: passed") == 2
    assert run.stdout.count("compute step between exchanges (untimed): ") == 2
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["config"]["timing"] for r in records] == ["compute", "compute"]
    for r in records:
        # Each step reads and writes 2 fields x 32^3 doubles (512 KiB): not under 2 us
        # (256 GB/s) unless the step was skipped.
        assert r["compute_timestep_s"] > 2e-6
        assert r["exchanges"] == 20 and r["efficiency"] > 0
    # Back-to-back exchanges have no compute step.
    out.unlink()
    run = run_mpi(2, BENCH, *common)
    assert run.returncode == 0, run.stderr
    assert "compute step" not in run.stdout
    assert all("compute_timestep_s" not in json.loads(line) for line in out.read_text().splitlines())


def test_self_copy_reference_is_measured_beside_every_variant(run_mpi, tmp_path):
    out = tmp_path / "reference.jsonl"
    run = run_mpi(2, BENCH, "--domain", "32", "32", "32", "--halo", "2", "--nfields", "2",
                  "--nrep", "20", "--transport", "mpi-p2p,shm", "--algorithm", "standard,staged",
                  "--grouping", "sequence", "--json", str(out))
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("verification: passed") == 4
    assert run.stdout.count("self-copy reference ") == 4
    assert run.stdout.count("    by rank: fastest ") == 4
    records = [json.loads(line) for line in out.read_text().splitlines()]
    for r in records:
        # Each rank fills the halos of 2 fields, 2 cells wide around 32^3 doubles (222 KB):
        # not in 1 us (222 GB/s) unless nothing was copied.
        assert r["self_copy_reference_s"] > 1e-6
        # One round: the share is the reference over the median exchange of that round.
        assert r["self_copy_share"] == pytest.approx(
            r["self_copy_reference_s"] / r["time_per_exchange_s"]["median"], rel=1e-9)
        # Rank by rank: each rank's lower of the two measurements around the timed exchanges;
        # the record's reference is the lower of the two slowest ranks' times, so no rank is
        # above it. Of two ranks the median is the faster one.
        ranks = r["self_copy_reference_ranks"]
        assert {ranks["fastest_rank"], ranks["slowest_rank"]} == {0, 1}
        assert 1e-6 < ranks["fastest_s"] == ranks["median_s"] <= ranks["slowest_s"]
        assert ranks["slowest_s"] <= r["self_copy_reference_s"] * (1 + 1e-12)


def test_records_carry_where_each_stage_spends_its_time_and_the_setup(run_mpi, tmp_path):
    out = tmp_path / "breakdown.jsonl"
    run = run_mpi(2, BENCH, *SMALL, "--mpicart", "2", "1", "1", "--transport", "shm,mpi-p2p",
                  "--algorithm", "standard,staged", "--grouping", "sequence", "--json", str(out),
                  "--quiet", "--breakdown")
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("  slowest rank ") == 4 and run.stdout.count("  median  rank ") == 4
    assert run.stdout.count("  busiest rank ") == 4
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 4
    parts = ("pack_s", "copy_s", "wait_peers_s", "wait_readers_s", "other_s")
    for r in records:
        stages = 3 if r["config"]["algorithm"] == "staged" else 1
        b = r["stage_breakdown"]
        assert b["exchanges"] == 5
        for which in ("slowest_rank", "median_rank", "busiest_rank"):
            split = b[which]
            assert split["rank"] in (0, 1)
            assert len(split["stages"]) == stages
            for s in split["stages"]:
                assert all(s[p] >= 0 for p in parts)
                assert s["total_s"] == pytest.approx(sum(s[p] for p in parts), rel=1e-9)
            assert split["total_s"] == pytest.approx(
                sum(s["total_s"] for s in split["stages"]), rel=1e-9)
            assert split["work_s"] == pytest.approx(
                sum(s["pack_s"] + s["copy_s"] + s["other_s"] for s in split["stages"]), rel=1e-9)
            # Both ranks copy halo cells in every exchange.
            assert sum(s["pack_s"] + s["copy_s"] for s in split["stages"]) > 0
        assert b["slowest_rank"]["rank"] != b["median_rank"]["rank"]
        assert b["slowest_rank"]["total_s"] >= b["median_rank"]["total_s"]
        # Of two ranks, the busiest has the more work, and the lower median is the other one.
        works = sorted(b[w]["work_s"] for w in ("slowest_rank", "median_rank"))
        assert b["busiest_rank"]["work_s"] == works[1]
        assert b["work_imbalance"] == pytest.approx(works[1] / works[0], rel=1e-9)
        setup = r["setup"]
        assert setup["neighbours"] == 1  # 2x1x1, periodic: the other rank on both sides
        assert setup["transports_s"] > 0 and setup["plan_s"] > 0
        # Each part is its slowest rank's: the whole is at least any part.
        assert setup["total_s"] >= max(setup["plan_s"], setup["transports_s"])
        assert setup["measured_choice_s"] >= 0

    quiet = tmp_path / "off.jsonl"
    run = run_mpi(2, BENCH, *SMALL, "--transport", "shm", "--algorithm", "staged",
                  "--json", str(quiet), "--stage-times", "off")
    assert run.returncode == 0, run.stderr
    [r] = [json.loads(line) for line in quiet.read_text().splitlines()]
    assert r["stage_breakdown"] is None
    assert r["setup"]["total_s"] > 0
    assert "per stage" not in run.stdout

    # Recorded on the timed exchanges themselves: as many as were timed.
    timed = tmp_path / "timed.jsonl"
    run = run_mpi(2, BENCH, *SMALL, "--transport", "shm", "--algorithm", "staged",
                  "--json", str(timed), "--stage-times", "timed")
    assert run.returncode == 0, run.stderr
    [r] = [json.loads(line) for line in timed.read_text().splitlines()]
    assert r["stage_breakdown"]["exchanges"] == r["exchanges"] == 5


def test_automatic_variant_records_its_choice_against_the_named_ones(run_mpi, tmp_path):
    out = tmp_path / "auto.jsonl"
    run = run_mpi(2, BENCH, *SMALL, "--transport", "mpi-p2p,shm", "--algorithm", "staged",
                  "--grouping", "sequence", "--nfields", "2", "--variants", "auto/auto/auto",
                  "--rounds", "2", "--json", str(out))
    assert run.returncode == 0, run.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    [auto] = [r for r in records if r["config"]["chosen"]]
    # Named as asked, not as the transport it ran by: reports keep it apart from mpi-p2p.
    assert (auto["config"]["transport"], auto["config"]["algorithm"],
            auto["config"]["grouping"]) == ("auto", "auto", "auto")
    assert auto["config"]["chosen"].startswith("chose ")
    assert auto["config"]["memory"] == "shared"  # so that shm competes copying in place
    assert auto["verification"] == "passed"
    # Measured once, in the first round: the second builds the same choice, verified again
    # (once when built in the first round, once in the summary) - unless the machine probe
    # moved during its trials: then the second round measures it again, and says so.
    first = auto["machine_probe"][0]
    moved = first["moved"] or first["disturbed"]
    assert auto["config"]["rechecked"] == moved
    assert auto["auto_trials_probe"]["rechecked"] == moved
    assert auto["auto_trials_probe"]["before_trials"] == first["before"]
    assert run.stdout.count("auto/auto/auto [double h1f2]: chose ") == (3 if moved else 2)
    # A choice's line wraps at 150 characters, its later parts indented by 4: joined back.
    unwrapped = re.sub(r"\n    (?=\S)", " ", run.stdout)
    assert ("measured again in round 2, the probe having moved during its trials: chose "
            in unwrapped) == moved
    assert sum(1 for r in records if r["config"]["transport"] == "mpi-p2p") == 1
    [line] = [l for l in unwrapped.splitlines()
              if l.startswith("auto/auto/auto [") and " against " in l]
    # shm ran on shared memory as the choice did; mpi-p2p on private memory.
    assert "against the fastest named variant, " in line
    assert "of shm/staged/sequence on shared memory: x" in line and " in efficiency" in line
