"""The example stencil code gives the same answer on 1 rank and on several."""
import json
import re

import pytest


def checksum(run):
    assert run.returncode == 0, run.stderr
    match = re.search(r"sum=(\S+) norm2=(\S+)", run.stdout)
    assert match, run.stdout
    return float(match.group(1)), float(match.group(2))


@pytest.mark.parametrize("ranks", [2, 3, 4, 8])
def test_heat3d_is_independent_of_the_rank_count(run_mpi, ranks):
    serial = checksum(run_mpi(1, "halox-example-heat3d", "20", "12"))
    parallel = checksum(run_mpi(ranks, "halox-example-heat3d", "20", "12"))
    # Sums are reduced in a different order; the stencil itself is exact per cell.
    assert parallel[0] == pytest.approx(serial[0], rel=1e-9, abs=1e-9)
    assert parallel[1] == pytest.approx(serial[1], rel=1e-12)
    assert serial[1] > 1.0  # the field is not trivially zero


def digest(run):
    assert run.returncode == 0, run.stderr
    match = re.search(r"digest ([0-9a-f]{16})", run.stdout)
    assert match, run.stdout
    return match.group(1)


# The staggered mini-app: cell, node and face fields, subset halo updates at depths 2
# and 1. Bit for bit the same state on 1 rank and on several, periodic or open, with
# halox or with the plain-MPI exchange written the way CloverLeaf's is.
@pytest.mark.parametrize("periodic", ["111", "000", "101"])
def test_hydro3d_is_bit_identical_on_any_rank_count(run_mpi, periodic):
    args = ["global=10", "steps=3", f"periodic={periodic}"]
    serial = digest(run_mpi(1, "halox-example-hydro3d", *args))
    for ranks, extra in [(2, "algorithm=standard"), (4, "exchange=plain"), (4, "order=XYZ"),
                         (8, "transport=shm")]:
        assert digest(run_mpi(ranks, "halox-example-hydro3d", *args, extra)) == serial, (ranks, extra)


def test_hydro3d_digest_follows_the_state(run_mpi):
    # One step more changes the state, and the digest with it.
    assert digest(run_mpi(1, "halox-example-hydro3d", "global=10", "steps=2")) != \
        digest(run_mpi(1, "halox-example-hydro3d", "global=10", "steps=3"))


def test_hydro3d_refuses_a_bad_argument(run_mpi):
    run = run_mpi(2, "halox-example-hydro3d", "exchange=carrier-pigeon")
    assert run.returncode != 0
    assert "exchange must be halox or plain" in run.stderr


# CloverLeaf3D's own calls (examples/staggered/cloverleaf_calls.hpp): halox with the shared
# faces kept leaves every point of the 19 fields as the code's own exchange does (the
# benchmark stops with an error otherwise), on rank grids with and without self-neighbours,
# and with halox's fields in node-shared memory, which shm then reads in place.
@pytest.mark.parametrize("ranks,boundary,algorithm,transport,memory,path", [
    (2, "open", "staged", "mpi-p2p", "private", "mpi-p2p"),
    (4, "periodic", "standard", "mpi-p2p", "private", "mpi-p2p"),
    (3, "open", "standard", "shm", "private", "shm(outbox)+mpi-p2p"),
    (4, "periodic", "staged", "shm", "shared", "shm+mpi-p2p")])
def test_cloverleaf3d_calls_leave_the_fields_as_the_codes_own_exchange(
        run_mpi, ranks, boundary, algorithm, transport, memory, path):
    run = run_mpi(ranks, "halox-example-hydro3d-bench", "cells=6", "rounds=1", "steps=2",
                  "parts=cloverleaf", f"boundary={boundary}", f"algorithm={algorithm}",
                  f"transport={transport}", f"memory={memory}")
    assert run.returncode == 0, run.stdout + run.stderr
    where = "node-shared" if memory == "shared" else "private"
    assert f"halox's fields in {where} memory, path {path}\n" in run.stdout, run.stdout
    assert "cloverleaf3d halo time per step" in run.stdout, run.stdout


# breakdown=on: per kind of call, halox's stage parts (its subset calls recorded) beside the
# code's own pack, messages and unpack, rank by rank, in microseconds per call.
def test_cloverleaf3d_breakdown_splits_every_kind_of_call(run_mpi):
    run = run_mpi(2, "halox-example-hydro3d-bench", "cells=8", "rounds=1", "steps=2",
                  "parts=cloverleaf", "boundary=open", "transport=shm", "breakdown=on")
    assert run.returncode == 0, run.stdout + run.stderr
    records = [json.loads(line) for line in run.stdout.splitlines()
               if line.startswith('{"measurement": "breakdown ')]
    assert sorted({r["rank"] for r in records}) == [0, 1], run.stdout
    labels = {r["measurement"] for r in records}
    assert labels == {f"breakdown {kind}" for kind in (
        "1 field, depth 1", "5 fields, depth 1", "4 fields, depth 2", "7 fields, depth 2",
        "12 fields, depth 2")}, run.stdout
    for r in records:
        assert all(v >= 0 for k, v in r.items() if k.endswith("_us")), r
        # Open along x, 2 ranks: each rank packs what it sends, halox and the code alike.
        assert r["halox_pack_us"] > 0 and r["own_pack_us"] > 0 and r["own_messages_us"] > 0, r
