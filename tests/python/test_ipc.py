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


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--min-block", "3"], "--min-block must be a power of two >= 4, got 3"),
        (["--min-block", "2"], "--min-block must be a power of two >= 4, got 2"),
        (["--max-block", "96"], "--max-block must be a power of two >= 4, got 96"),
        (["--max-block", "32768"], "--max-block 32768 is larger than the buffer size 16384"),
        (["--min-block", "64", "--max-block", "16"], "--min-block 64 is larger than --max-block 16"),
        (["--bufsize", "24576", "--max-block", "16384"],
         "block size 16384 does not divide the buffer size 24576"),
        (["--bufsize", "24574"], "--bufsize must be a multiple of 4"),
        (["--bufsize", "0"], "--bufsize must be between 4 and 1073741824 bytes, got 0"),
        (["--bufsize", "2GiB"], "--bufsize must be between 4 and 1073741824 bytes, got 2147483648"),
        (["--bufsize", "-5"], "--bufsize: '-5' is not a size in bytes"),
        (["--bufsize", "4x"], "--bufsize: '4x' is not a size in bytes"),
        (["--bufsize", "abc"], "--bufsize: 'abc' is not a size in bytes"),
        (["--bufsize", "99999999999999999999999"], "is too large"),
        (["--layout", "diagonal"], "unknown layout 'diagonal'"),
        (["--layout", "strided", "--stride-factor", "1"], "--stride-factor must be between 2 and 64"),
        (["--mechanisms", "carrier-pigeon"], "unknown mechanism 'carrier-pigeon'"),
        (["--chunk", "100"], "--chunk must be a power of two"),
        (["--nrep", "0"], "--nrep must be positive"),
        (["--nrep", "2.5"], "--nrep"),
        (["--warmup", "-1"], "--warmup must not be negative"),
        (["--cell-time", "-1"], "--cell-time must not be negative"),
        (["--cell-time", "soon"], "--cell-time"),
        (["--json", "/nonexistent-dir/results.jsonl"], "cannot open result file"),
        (["--no-such-option"], "no-such-option"),
    ],
)
def test_bad_input_is_one_error_line_and_nonzero_exit(run_mpi, args, fragment):
    run = run_mpi(2, IPC, *SMALL, *args, timeout=60)
    lines = run.error_lines(IPC)
    assert run.returncode != 0
    assert len(lines) == 1, run.stdout + run.stderr
    assert fragment in lines[0]
    assert "MPI_ABORT" not in run.stderr and "fatal error" not in run.stderr


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


@pytest.mark.parametrize("args", [["--min-block", "3"], ["--mechanisms", "nope"], ["--pairs"]])
def test_every_rank_exits_nonzero(tmp_path, args):
    """Each rank runs under a shell that records the program's exit code and then exits 0,
    so that the launcher does not kill the other ranks before they have recorded theirs."""
    exe = build_dir() / IPC
    if not exe.exists():
        pytest.fail(f"{exe} is not built")
    record = 'exe="$1"; dir="$2"; shift 2; "$exe" "$@"; echo $? > "$dir/rank.$$"'
    completed = subprocess.run(
        launcher(3) + ["sh", "-c", record, "sh", str(exe), str(tmp_path), *SMALL, *args],
        capture_output=True, text=True, timeout=60)
    codes = [int(p.read_text()) for p in tmp_path.glob("rank.*")]
    assert len(codes) == 3, completed.stdout + completed.stderr
    assert all(code == 2 for code in codes), codes
    lines = [l for l in (completed.stdout + completed.stderr).splitlines()
             if l.startswith(f"{IPC}: error:")]
    assert len(lines) == 1


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
