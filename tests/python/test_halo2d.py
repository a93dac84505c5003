"""halox-halo2d end to end: bad inputs fail cleanly, verification catches faults,
the tables and the JSON record come out whole."""
import json

import pytest

PROG = "halox-halo2d"
QUICK = ["--nrep", "3", "--warmup", "1", "--trials", "1"]



@pytest.mark.parametrize("fault,expected", [("corrupt", "expected 0x"), ("stale", "stale message")])
def test_verification_catches_injected_faults(run_mpi, fault, expected):
    run = run_mpi(4, PROG, "--inject-fault", fault, "--max-size", "64", *QUICK, timeout=120)
    lines = run.error_lines(PROG)
    assert run.returncode == 1, run.stdout + run.stderr
    assert len(lines) == 1, run.stdout + run.stderr
    assert "verification failed" in lines[0] and expected in lines[0]
    assert "seconds per message" not in run.stdout


def test_without_check_an_injected_fault_is_refused(run_mpi):
    run = run_mpi(2, PROG, "--inject-fault", "corrupt", "--no-check", *QUICK, timeout=60)
    assert run.returncode != 0
    assert "needs verification on" in run.error_lines(PROG)[0]


def parse_table(stdout: str, title: str) -> dict[int, list[str]]:
    """Rows of the table that follows the comment line containing `title`."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("#") and title in line)
    rows = {}
    for line in lines[start + 3:]:
        if not line.strip() or line.startswith("#"):
            break
        fields = line.split()
        rows[int(fields[0])] = fields[1:]
    return rows


def test_run_prints_both_tables_and_appends_json(run_mpi, tmp_path):
    out = tmp_path / "halo2d.jsonl"
    args = ["--max-size", "64", "--json", str(out), *QUICK]
    first = run_mpi(4, PROG, *args, timeout=120)
    assert first.returncode == 0, first.stdout + first.stderr
    times = parse_table(first.stdout, "seconds per message")
    assert sorted(times) == [0] + [2**i for i in range(7)]
    assert all(len(row) == 6 * 3 for row in times.values())  # 6 tests x 3 neighbour counts
    assert all(len(value.split(".")[1]) == 6 for row in times.values() for value in row)
    bandwidth = parse_table(first.stdout, "MB/s")
    assert set(bandwidth[0]) == {"-"} and sorted(bandwidth) == sorted(times)
    assert "mesh 2x2" in first.stdout and "single sender: rank 3 at (1,1)" in first.stdout

    second = run_mpi(4, PROG, *args, "--tests", "phased", "--neighbors", "8", timeout=120)
    assert second.returncode == 0, second.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 2
    full, phased = records
    assert full["program"] == PROG and full["ranks"] == 4
    assert full["mesh"]["dims"] == [2, 2] and full["mesh"]["phases"] == {"2": 2, "4": 2, "8": 4}
    assert len(full["results"]) == 6 * 3 * 8
    assert {r["test"] for r in full["results"]} == {
        "single", "all", "phased", "persistent", "irecv-first", "sendrecv"}
    for r in full["results"]:
        assert r["seconds_per_message"] == pytest.approx(r["seconds_per_exchange"] / r["neighbors"])
        assert r["seconds_per_exchange"] == min(r["trial_seconds_per_exchange"])
    assert len(phased["results"]) == 8 and phased["mesh"]["phases"] == {"8": 4}
    assert "mpi_library" in full and "rank_map" in full


@pytest.mark.parametrize("ranks,extra,mesh", [
    (1, [], "1x1"),
    (2, [], "2x1"),
    (5, [], "5x1"),
    (5, ["--no-periodic", "--neighbors", "2"], "5x1"),
    (4, ["--mesh", "1", "4", "--reorder"], "1x4"),
])
def test_degenerate_and_explicit_meshes_run(run_mpi, ranks, extra, mesh):
    run = run_mpi(ranks, PROG, "--sizes", "0,1,4KiB", *extra, *QUICK, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"mesh {mesh}" in run.stdout
    assert "verification on" in run.stdout
    assert sorted(parse_table(run.stdout, "seconds per message")) == [0, 1, 4096]


def test_help_lists_options_but_not_the_fault_injector(run_mpi):
    run = run_mpi(2, PROG, "--help", timeout=60)
    assert run.returncode == 0
    for option in ["--mesh", "--periodic", "--reorder", "--tests", "--neighbors", "--min-size",
                   "--max-size", "--sizes", "--nrep", "--warmup", "--trials", "--no-check", "--json"]:
        assert option in run.stdout
    assert "--inject-fault" not in run.stdout
    assert run.stdout.count("Usage:") == 1  # rank 0 only
