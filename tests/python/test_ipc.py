"""halox-ipc as a user meets it: bad inputs (one error line on rank 0, non-zero exit on every
rank, no hang), a good run's tables and its JSON record."""
import json
import os
import pathlib
import subprocess

import pytest

from conftest import build_dir, launcher

IPC = "halox-ipc"
SMALL = ["--bufsize", "16384", "--nrep", "3", "--warmup", "1", "--cell-time", "0.2"]
XPMEM_PRESENT = os.path.exists("/dev/xpmem")




@pytest.mark.skipif(XPMEM_PRESENT, reason="this machine has XPMEM")
def test_unavailable_mechanism_asked_for_by_name_is_an_error(run_mpi):
    run = run_mpi(2, IPC, *SMALL, "--mechanisms", "MAP_C,XPMEM_NC", timeout=60)
    assert run.returncode != 0
    assert run.error_lines(IPC) == [
        f"{IPC}: error: mechanism XPMEM_NC is not available here: "
        "no /dev/xpmem (XPMEM kernel module not loaded)"]


def test_one_rank_is_an_error(run_mpi):
    run = run_mpi(1, IPC, *SMALL, timeout=60)
    assert run.returncode != 0
    assert run.error_lines(IPC) == [
        f"{IPC}: error: needs at least 2 ranks (an owner and a peer), got 1"]


def test_pairs_need_an_even_number_of_ranks(run_mpi):
    run = run_mpi(3, IPC, *SMALL, "--pairs", timeout=60)
    assert run.returncode != 0
    assert run.error_lines(IPC) == [f"{IPC}: error: --pairs needs an even number of ranks, got 3"]




def test_good_run_prints_the_seed_tables_and_appends_one_json_record(run_mpi, tmp_path):
    results = tmp_path / "ipc.jsonl"
    args = [*SMALL, "--min-block", "4", "--max-block", "16384", "--layout", "strided",
            "--json", str(results)]
    run = run_mpi(2, IPC, *args, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert "buffer size: 16384 bytes" in out
    header = next(l for l in out.splitlines() if l.strip().startswith("IOV_size"))
    for column in ["IOV_count", "SHMEM_NP", "SHMEM_P", "CMA", "MAP_NC", "MAP_C", "MPI_DT",
                   "XPMEM_NC", "XPMEM_C", "memcpy"]:
        assert column in header
    for title in ["bandwidth [GB/s]", "efficiency", "first copy after prepare", "control messages"]:
        assert title in out
    first_row = next(l for l in out.splitlines() if l.split()[:2] == ["4", "4096"])
    if not XPMEM_PRESENT:
        assert first_row.split()[-3:-1] == ["n/a", "n/a"]  # XPMEM_NC, XPMEM_C; then memcpy

    # A second run appends a second whole line.
    assert run_mpi(2, IPC, *args, "--mechanisms", "MAP_C", timeout=120).returncode == 0
    lines = results.read_text().splitlines()
    assert len(lines) == 2
    record = json.loads(lines[0])
    assert record["program"] == IPC
    assert record["options"]["layout"] == "strided"
    assert record["options"]["mode"] == "one-to-many"
    assert [row["iov_size"] for row in record["rows"]] == [4 << i for i in range(13)]
    row = record["rows"][0]
    assert row["iov_count"] == 4096 and row["memcpy_us"] > 0
    for name in ["SHMEM_NP", "SHMEM_P", "CMA", "MAP_NC", "MAP_C", "MPI_DT"]:
        cell = row["mechanisms"][name]
        assert cell["time_us"] > 0 and cell["verified"] is True
        assert cell["repetitions"] >= 3
        assert [p["rank"] for p in cell["peers"]] == [1]
    if not XPMEM_PRESENT:
        assert row["mechanisms"]["XPMEM_NC"] is None
        assert "xpmem" in record["unavailable"]["XPMEM_C"]
    assert json.loads(lines[1])["options"]["mechanisms"] == ["MAP_C"]


def test_pairs_and_three_rank_one_to_many_runs_verify(run_mpi):
    run = run_mpi(3, IPC, *SMALL, "--min-block", "1024", "--layout", "strided", timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "one-to-many: rank 0 owns, 2 peers" in run.stdout
    run = run_mpi(2, IPC, *SMALL, "--min-block", "1024", "--pairs", timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 pair copying at once" in run.stdout


def test_help_documents_every_option(run_mpi):
    run = run_mpi(1, IPC, "--help")
    assert run.returncode == 0
    for option in ["--bufsize", "--min-block", "--max-block", "--layout", "--stride-factor",
                   "--mechanisms", "--pairs", "--chunk", "--nrep", "--warmup", "--cell-time",
                   "--no-check", "--no-populate", "--json"]:
        assert option in run.stdout
