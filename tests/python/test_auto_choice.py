"""The automatic choice as a code meets it on its first start (src/exchange/measured_choice.cpp):
rank 0 says once per process what was chosen and what it cost; the report says how many of the
candidates the budget screened; with a wisdom file the next start takes the choice unmeasured."""
import json
import re

BENCH = "halox-bench"
# 14 fields, as the staggered mini-app's exchange; every choice left to the measurement.
AUTO = ["--nrep", "5", "--warmup", "1", "--domain", "8", "8", "8", "--nfields", "14",
        "--variants", "auto/auto/auto", "--rounds", "2"]
TOLD = re.compile(r"^halox: automatic choice: chose (.+?) \((.*)\) in (\d+\.\d\d) s", re.M)


def test_the_choice_is_told_once_with_its_cost_and_the_candidates_screened(run_mpi, tmp_path):
    out = tmp_path / "auto.jsonl"
    run = run_mpi(2, BENCH, *AUTO, "--json", str(out))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    told = TOLD.findall(run.stderr)
    assert len(told) == 1, run.stderr            # once per process, on rank 0 only
    (choice, how, seconds), = told
    screened, total = map(int, re.search(r"(\d+) of (\d+) candidates screened", how).groups())
    assert 1 <= screened <= total and total >= 3
    assert float(seconds) > 0
    assert "a wisdom file, HALOX_WISDOM, keeps it for the next start" in run.stderr
    [record] = [json.loads(l) for l in out.read_text().splitlines()]
    assert record["config"]["chosen"].startswith(f"chose {choice} (")
    assert "candidates screened" in record["config"]["chosen"]


def test_a_wisdom_file_makes_the_next_start_take_the_choice(run_mpi, tmp_path):
    wisdom = tmp_path / "wisdom.jsonl"
    first = run_mpi(2, BENCH, *AUTO, "--wisdom", str(wisdom))
    assert first.returncode == 0, first.stderr[-2000:]
    second = run_mpi(2, BENCH, *AUTO, "--wisdom", str(wisdom))
    assert second.returncode == 0, second.stderr[-2000:]
    (choice, how, _), = TOLD.findall(second.stderr)
    assert how == f"from wisdom file {wisdom}"
    assert choice == TOLD.findall(first.stderr)[0][0]
    assert "keeps it for the next start" not in second.stderr
