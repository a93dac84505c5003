"""Bad input to every program: one error line on rank 0, a non-zero exit on every rank, no hang.

Each table row is a malformed or contradictory command line; each runs under a shell per rank that
records the program's own exit code (and then exits 0, so that the launcher does not end the other
ranks before they have recorded theirs)."""
import pytest

from conftest import run_recording_exit_codes, transport_table

BETZY = "synthetic:pack:2 numa:4 l3:4 core:4 pu:1"

# (arguments, part of the one error line); halox-bench runs on 2 ranks with SMALL first.
BENCH_SMALL = ["--nrep", "5", "--warmup", "1"]
BENCH = [
    (["--domain", "0", "8", "8"], "--domain must be positive"),
    (["--domain", "-4", "8", "8"], "--domain must be positive"),
    (["--domain", "8", "8"], "--domain"),
    (["--mpicart", "2", "1"], "--mpicart"),
    (["--halo", "9", "--domain", "8", "8", "8"], "wider than the sub-domain"),
    (["--halo", "-1"], "must not be negative"),
    (["--halo", "abc"], "--halo"),
    (["--nfields", "0"], "--nfields must be positive"),
    (["--nfields", "2.5"], "--nfields"),
    (["--nfields", "1001"], "more than the 1000 supported"),
    (["--mpicart", "3", "1", "1"], "does not fit 2 ranks"),
    (["--mpicart", "2", "2", "1"], "does not fit 2 ranks"),
    (["--transport", "carrier-pigeon"], "unknown transport 'carrier-pigeon'"),
    (["--transport", "mpi-p2p+shm"], "cannot carry the off-node neighbours"),
    (["--transport", "shm+"], "is not NAME or LOCAL+REMOTE"),
    (["--transport", "shm+mpi-p2p+mpi-types"], "is not NAME or LOCAL+REMOTE"),
    (["--algorithm", "diagonal"], "unknown algorithm 'diagonal'"),
    (["--grouping", "mixed"], "unknown field grouping 'mixed'"),
    (["--fields-per-block", "-1"], "--fields-per-block must not be negative"),
    (["--fields-per-block", "two"], "--fields-per-block"),
    (["--variants", "shm/staged"], "is not TRANSPORT/ALGORITHM/GROUPING"),
    (["--variants", "shm/diagonal/cache"], "unknown algorithm 'diagonal'"),
    (["--variants", "shm/staged/mixed"], "unknown field grouping 'mixed'"),
    (["--variants", "carrier-pigeon/staged/cache"], "unknown transport 'carrier-pigeon'"),
    (["--type", "int"], "unknown type 'int'"),
    (["--timing", "sometimes"], "unknown timing 'sometimes'"),
    (["--periodic", "2", "1", "1"], "--periodic"),
    (["--nrep", "0"], "--nrep must be positive"),
    (["--rounds", "0"], "--rounds must be positive"),
    (["--rounds", "often"], "--rounds takes a positive number or auto, got 'often'"),
    (["--rounds", "auto", "--rounds-budget", "-1"], "--rounds-budget must not be negative"),
    (["--warmup", "-1"], "--warmup must not be negative"),
    (["--time", "-1"], "--time must not be negative"),
    (["--timeout", "-1"], "--timeout must not be negative"),
    (["--memory", "swap"], "--memory"),
    (["--field-pages", "big"], "--field-pages"),
    (["--memory", "device", "--timing", "compute"], "--timing compute steps on the host"),
    (["--ranks-per-node", "3"], "does not divide the 2 ranks"),
    (["--global-domain", "1", "8", "8", "--mpicart", "2", "1", "1"], "cannot be split over 2 ranks"),
    (["--global-domain", "9", "8", "8", "--halo", "5", "--mpicart", "2", "1", "1"],
     "wider than the sub-domain"),
    (["--domain", "8", "8", "8", "--global-domain", "16", "8", "8"],
     "--domain and --global-domain contradict each other"),
    (["--domain", "2000", "2000", "2000"], "but the node has"),
    (["--domain", "99999999", "99999999", "99999999"], "but the node has"),
    (["--halo-lo", "1", "1", "1"], "--halo-lo and --halo-hi must be given together"),
    (["--halo-lo", "1", "1", "1", "--halo-hi", "1", "-1", "1"], "must not be negative"),
    (["--json", "/nonexistent-dir/results.jsonl"], "cannot open result file"),
    (["--no-such-option"], "no-such-option"),
]

HALO2D_QUICK = ["--nrep", "3", "--warmup", "1", "--trials", "1"]
# (ranks, arguments, part of the one error line)
HALO2D = [
    (2, ["--max-size", "32MiB"], "out of range"),
    (2, ["--max-size", "99999999999999999999999"], "out of range"),
    (2, ["--sizes", "-4"], "negative"),
    (2, ["--sizes", "12abc"], "is not a message size"),
    (2, ["--sizes", "1.5"], "is not a message size"),
    (2, ["--sizes", ","], "no size given"),
    (2, ["--min-size", "-1"], "negative"),
    (2, ["--min-size", "4096", "--max-size", "1024"], "larger than --max-size"),
    (2, ["--min-size", "3", "--max-size", "3"], "no power of two"),
    (2, ["--sizes", "4", "--max-size", "8"], "excludes"),
    (2, ["--nrep", "abc"], "--nrep"),
    (2, ["--nrep", "0"], "--nrep"),
    (2, ["--warmup", "-3"], "--warmup"),
    (2, ["--trials", "-1"], "--trials"),
    (2, ["--trials", "abc"], "--trials"),
    (2, ["--tests", "single,bogus"], "unknown test 'bogus'"),
    (2, ["--tests", ","], "no test given"),
    (2, ["--neighbors", "3"], "not a neighbour count"),
    (2, ["--neighbors", "4,x"], "--neighbors"),
    (4, ["--mesh", "3", "2"], "the job has 4 ranks"),
    (3, ["--mesh", "2", "2"], "the job has 3 ranks"),
    (4, ["--mesh", "3", "0"], "cannot be split"),
    (4, ["--mesh", "2"], "--mesh"),
    (4, ["--no-periodic"], "need at least 3 processes"),
    (3, ["--no-periodic", "--neighbors", "4"], "dimension y"),
    (2, ["--json", "/nonexistent-dir/out.json"], "cannot open result file"),
    (2, ["--bogus-option"], "--bogus-option"),
    (2, ["--inject-fault", "sometimes"], "unknown fault"),
    (2, ["--inject-fault", "corrupt", "--no-check"], "needs verification on"),
]

IPC_SMALL = ["--bufsize", "16384", "--nrep", "3", "--warmup", "1", "--cell-time", "0.2"]
# (ranks, arguments, part of the one error line)
IPC = [
    (2, ["--min-block", "3"], "--min-block must be a power of two >= 4, got 3"),
    (2, ["--min-block", "2"], "--min-block must be a power of two >= 4, got 2"),
    (2, ["--max-block", "96"], "--max-block must be a power of two >= 4, got 96"),
    (2, ["--max-block", "32768"], "--max-block 32768 is larger than the buffer size 16384"),
    (2, ["--min-block", "64", "--max-block", "16"], "--min-block 64 is larger than --max-block 16"),
    (2, ["--bufsize", "24576", "--max-block", "16384"],
     "block size 16384 does not divide the buffer size 24576"),
    (2, ["--bufsize", "24574"], "--bufsize must be a multiple of 4"),
    (2, ["--bufsize", "0"], "--bufsize must be between 4 and 1073741824 bytes, got 0"),
    (2, ["--bufsize", "2GiB"], "--bufsize must be between 4 and 1073741824 bytes, got 2147483648"),
    (2, ["--bufsize", "-5"], "--bufsize: '-5' is not a size in bytes"),
    (2, ["--bufsize", "4x"], "--bufsize: '4x' is not a size in bytes"),
    (2, ["--bufsize", "abc"], "--bufsize: 'abc' is not a size in bytes"),
    (2, ["--bufsize", "99999999999999999999999"], "is too large"),
    (2, ["--bufsize", "4", "--min-block", "8"], "--min-block 8 is larger than the buffer size 4"),
    (2, ["--layout", "diagonal"], "unknown layout 'diagonal'"),
    (2, ["--layout", "strided", "--stride-factor", "1"], "--stride-factor must be between 2 and 64"),
    (2, ["--mechanisms", "carrier-pigeon"], "unknown mechanism 'carrier-pigeon'"),
    (2, ["--chunk", "100"], "--chunk must be a power of two"),
    (2, ["--chunk", "0"], "--chunk must be a power of two"),
    (2, ["--nrep", "0"], "--nrep must be positive"),
    (2, ["--nrep", "2.5"], "--nrep"),
    (2, ["--warmup", "-1"], "--warmup must not be negative"),
    (2, ["--warmup", "abc"], "--warmup"),
    (2, ["--cell-time", "-1"], "--cell-time must not be negative"),
    (2, ["--cell-time", "soon"], "--cell-time"),
    (2, ["--json", "/nonexistent-dir/results.jsonl"], "cannot open result file"),
    (2, ["--no-such-option"], "no-such-option"),
    (1, [], "needs at least 2 ranks (an owner and a peer), got 1"),
    (3, ["--pairs"], "--pairs needs an even number of ranks, got 3"),
]

# halox-topo plans without running an exchange; it still runs under the launcher.
TOPO = [
    (["--topology", "synthetic:pack:x"], "invalid synthetic topology 'pack:x'"),
    (["--topology", "synthetic:"], "invalid synthetic topology"),
    (["--topology", "/nonexistent/node.xml"], "cannot read topology file '/nonexistent/node.xml'"),
    (["--topology", BETZY, "--nodes", "2", "--ranks-per-node", "64", "--node", "2", "2", "2",
      "--core", "32", "1", "1"],
     "make a 64x2x2 grid of 256 ranks, but there are 128 ranks"),
    (["--topology", BETZY, "--ranks-per-node", "64", "--l3", "3", "1", "1", "--core", "2", "1",
      "1", "--numa", "2", "2", "2"],
     "make a"),
    (["--topology", BETZY, "--ranks-per-node", "64", "--socket", "2", "1", "1", "--numa", "4",
      "1", "1", "--l3", "1", "1", "2", "--core", "2", "2", "1"],
     "l3 level: grid 1x1x2 needs 2 occupied L3 caches in each NUMA node, but NUMA node 0 of "
     "node 0 has ranks on 4"),
    (["--topology", BETZY, "--ranks-per-node", "64", "--l2", "64", "1", "1"],
     "--l2 64x1x1: the topology has no L2 caches"),
    (["--topology", BETZY, "--ranks-per-node", "48"], "cannot spread 48 ranks evenly"),
    (["--topology", BETZY, "--assume-binding", "real"],
     "--assume-binding real needs the topology of this machine"),
    (["--assume-binding", "sometimes"], "--assume-binding"),
    (["--order", "XXY"], "unknown order 'XXY'"),
    (["--core", "2", "1", "1", "--order", "ZZZ"], "unknown order 'ZZZ'"),
    (["--mpicart", "5", "5", "5"], "does not fit"),
    (["--mpicart", "2", "2"], "--mpicart"),
    (["--node", "1", "1"], "--node"),
    (["--node", "0", "1", "1"], "grid entries must be positive"),
    (["--nodes", "0"], "--nodes: Value 0 not in range 1"),
    (["--ranks-per-node", "0"], "--ranks-per-node"),
    (["--domain", "0", "1", "1"], "--domain entries must be positive"),
    (["--domain", "8", "8"], "--domain"),
    (["--halo", "-1"], "--halo"),
    (["--fields", "0"], "--fields"),
    (["--element-size", "0"], "--element-size"),
    (["--algorithm", "diagonal"], "unknown algorithm 'diagonal'"),
    (["--periodic", "2", "0", "0"], "--periodic"),
    (["--no-such-option"], "no-such-option"),
]


def check_one_error_everywhere(run, program, ranks, fragment):
    assert len(run.codes) == ranks, run.output
    assert all(code != 0 for code in run.codes), (run.codes, run.output)
    lines = run.error_lines(program)
    assert len(lines) == 1, run.output
    assert fragment in lines[0], lines[0]
    # Found before anything ran: no MPI abort, no stack of errors.
    assert "MPI_ABORT" not in run.output and "fatal error" not in run.output


# 141 runs of the four programs: 105 s in all on 2 cores; `make test` runs them.
@pytest.mark.slow
@pytest.mark.parametrize("args, fragment", BENCH, ids=[" ".join(a) for a, _ in BENCH])
def test_bench(tmp_path, args, fragment):
    base = BENCH_SMALL if "--domain" in args or "--global-domain" in args else \
        BENCH_SMALL + ["--domain", "8", "8", "8"]
    run = run_recording_exit_codes(2, "halox-bench", [*base, *args], tmp_path)
    check_one_error_everywhere(run, "halox-bench", 2, fragment)


def test_bench_device_memory_without_a_gpu(tmp_path):
    ipc = next(t for t in transport_table() if t["name"] == "cuda-ipc")
    if ipc["available"]:
        pytest.skip("a GPU is usable here: --memory device runs (tests/gpu, scripts/jobs/gpu.jobs)")
    run = run_recording_exit_codes(2, "halox-bench", [*BENCH_SMALL, "--domain", "8", "8", "8",
                                                      "--memory", "device"], tmp_path)
    check_one_error_everywhere(run, "halox-bench", 2, "--memory device: ")


def test_bench_three_ranks(tmp_path):
    run = run_recording_exit_codes(3, "halox-bench", [*BENCH_SMALL, "--mpicart", "2", "2", "1"],
                                   tmp_path)
    check_one_error_everywhere(run, "halox-bench", 3, "rank grid 2x2x1 does not fit 3 ranks")


@pytest.mark.slow
@pytest.mark.parametrize("ranks, args, fragment", HALO2D, ids=[" ".join(a) for _, a, _ in HALO2D])
def test_halo2d(tmp_path, ranks, args, fragment):
    run = run_recording_exit_codes(ranks, "halox-halo2d", [*args, *HALO2D_QUICK], tmp_path)
    check_one_error_everywhere(run, "halox-halo2d", ranks, fragment)
    # Found before anything was measured: no table, not even the header.
    assert "# halox-halo2d:" not in run.output


@pytest.mark.slow
@pytest.mark.parametrize("ranks, args, fragment", IPC, ids=[" ".join(a) or "none" for _, a, _ in IPC])
def test_ipc(tmp_path, ranks, args, fragment):
    run = run_recording_exit_codes(ranks, "halox-ipc", [*IPC_SMALL, *args], tmp_path)
    check_one_error_everywhere(run, "halox-ipc", ranks, fragment)


@pytest.mark.slow
@pytest.mark.parametrize("args, fragment", TOPO, ids=[" ".join(a) for a, _ in TOPO])
def test_topo(tmp_path, args, fragment):
    run = run_recording_exit_codes(2, "halox-topo", args, tmp_path)
    check_one_error_everywhere(run, "halox-topo", 2, fragment)
