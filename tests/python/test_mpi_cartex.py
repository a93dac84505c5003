"""The mpi-cartex transport (cartex mpi_comm's algorithm) and mpi-types (cartex mpi_comm
--MPI-datatypes'): cell-exact on the shapes they meet - dimensions of one rank (messages to
itself), several ranks per dimension, open boundaries, per-side halos, every algorithm and field
grouping (cartex's own loops and plain subarrays where a step is cartex's, element loops and
struct datatypes elsewhere), both element types, and mpi-cartex as the REMOTE of a routing - and
their JSON records name them."""
import json

import pytest

BENCH = "halox-bench"
SMALL = ["--nrep", "3", "--warmup", "1"]


@pytest.mark.parametrize("ranks, args", [
    (1, ["--mpicart", "1", "1", "1", "--domain", "6", "5", "4", "--halo", "1,2"]),
    (2, ["--mpicart", "2", "1", "1", "--domain", "8", "8", "8", "--halo", "1,3"]),
    (2, ["--mpicart", "1", "1", "2", "--periodic", "0", "1", "1", "--domain", "7", "6", "5",
         "--halo-lo", "1", "0", "2", "--halo-hi", "2", "1", "0"]),
    (3, ["--mpicart", "3", "1", "1", "--global-domain", "11", "6", "5", "--halo", "2"]),
    (4, ["--mpicart", "2", "2", "1", "--periodic", "1", "0", "1", "--domain", "5", "6", "7",
         "--halo", "1"]),
])
def test_mpi_cartex_is_cell_exact(run_mpi, tmp_path, ranks, args):
    out = tmp_path / "r.jsonl"
    # mpi-types beside it, except on 3 ranks (oversubscribed, the costliest launch): the shapes
    # of 3 ranks add nothing the others do not cover for it
    names = ["mpi-cartex"] + (["mpi-types"] if ranks != 3 else [])
    transports = ",".join(names)
    run = run_mpi(ranks, BENCH, *SMALL, *args, "--nfields", "1,3", "--type", "float,double",
                  "--transport", transports, "--algorithm", "standard,staged,faces",
                  "--grouping", "sequence,compact,2", "--json", str(out), timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    records = [json.loads(l) for l in out.read_text().splitlines()]
    halos = 2 if "--halo" in args and "," in args[args.index("--halo") + 1] else 1
    assert len(records) == len(names) * halos * 2 * 2 * 3 * 3
    assert {r["config"]["transport"] for r in records} == set(names)
    for r in records:
        assert r["verification"] == "passed", r["config"]


def test_mpi_cartex_as_the_remote_of_a_routing(run_mpi, tmp_path):
    out = tmp_path / "r.jsonl"
    run = run_mpi(4, BENCH, *SMALL, "--mpicart", "2", "2", "1", "--domain", "6", "6", "6",
                  "--halo", "1", "--nfields", "2", "--ranks-per-node", "2",
                  "--transport", "shm+mpi-cartex", "--algorithm", "standard,staged",
                  "--grouping", "sequence,compact", "--json", str(out), timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    records = [json.loads(l) for l in out.read_text().splitlines()]
    assert len(records) == 4
    assert all(r["verification"] == "passed" for r in records)


def test_summary_names_what_the_baselines_follow(run_mpi):
    run = run_mpi(2, BENCH, *SMALL, "--domain", "8", "8", "8", "--mpicart", "2", "1", "1",
                  "--variants", "mpi-types/staged/sequence,mpi-cartex/staged/sequence",
                  "--quiet", timeout=120)
    assert run.returncode == 0, run.stderr
    assert ("(xN) = speed-up over mpi-types/staged/sequence (the algorithm of cartex mpi_comm "
            "--MPI-datatypes)") in " ".join(run.stdout.split())  # wrapped at 118 columns
    run = run_mpi(2, BENCH, *SMALL, "--domain", "8", "8", "8", "--mpicart", "2", "1", "1",
                  "--variants", "mpi-types/staged/sequence,mpi-cartex/staged/sequence",
                  "--baseline", "mpi-cartex/staged/sequence", "--quiet", timeout=120)
    assert run.returncode == 0, run.stderr
    assert ("(xN) = speed-up over mpi-cartex/staged/sequence (the algorithm of cartex mpi_comm, "
            "the Betzy results' benchmark_mpi_comm)") in " ".join(run.stdout.split())
