"""The mini-apps that add into their halos (examples/assembly): LULESH-shaped
nodal sums and particle deposition. N ranks agree with 1 rank to rounding (the
additions run in another order), every transport and algorithm gives the same
bits, and every holder's total is the same, so the copy from the owners
changes no copy (the LULESH-style exchange's holders add in different orders);
in the Fortran twin, N ranks agree with 1, transports give the same bits, and
its LULESH-style exchange gives the same sums to rounding."""
import re

import pytest

ARGS = ["global=8", "steps=3"]


def state(run):
    assert run.returncode == 0, run.stdout + run.stderr
    nodes = re.search(r"nodes: sum ux (\S+) vz (\S+) digest (\S+) (\S+)", run.stdout)
    charge = re.search(r"charge: sum (\S+) digest (\S+)", run.stdout)
    changed = re.search(r"copies the owners' copy changed: (\d+)", run.stdout)
    assert nodes and charge and changed, run.stdout
    return {"sums": (float(nodes.group(1)), float(nodes.group(2)), float(charge.group(1))),
            "digest": (nodes.group(3), nodes.group(4), charge.group(2)),
            "changed": int(changed.group(1))}


@pytest.mark.parametrize("periodic", ["000", "111"])
def test_nodal3d_on_n_ranks_is_the_one_rank_state_to_rounding(run_mpi, periodic):
    serial = state(run_mpi(1, "halox-example-nodal3d", *ARGS, f"periodic={periodic}"))
    assert abs(serial["sums"][0]) > 1e-6 and serial["sums"][2] > 1
    for ranks in (2, 4, 8):
        parallel = state(run_mpi(ranks, "halox-example-nodal3d", *ARGS, f"periodic={periodic}"))
        assert parallel["sums"] == pytest.approx(serial["sums"], rel=1e-11, abs=1e-13), ranks
        assert parallel["changed"] == 0, ranks


@pytest.mark.parametrize("periodic", ["000", "101"])
def test_nodal3d_bits_are_the_same_whatever_carries_the_exchange(run_mpi, periodic):
    runs = [state(run_mpi(4, "halox-example-nodal3d", *ARGS, f"periodic={periodic}", *extra))
            for extra in ([], ["transport=shm", "algorithm=staged"],
                          ["transport=mpi-types", "algorithm=faces"],
                          ["transport=cma+mpi-neighbor"])]
    assert all(r["digest"] == runs[0]["digest"] for r in runs), [r["digest"] for r in runs]
    # The same app with LULESH's exchange: the same physics to rounding.
    lulesh = state(run_mpi(4, "halox-example-nodal3d", *ARGS, f"periodic={periodic}",
                           "exchange=lulesh"))
    assert lulesh["sums"] == pytest.approx(runs[0]["sums"], rel=1e-11, abs=1e-13)


def test_nodal3d_refuses_a_bad_argument(run_mpi):
    run = run_mpi(2, "halox-example-nodal3d", "exchange=carrier-pigeon")
    assert run.returncode != 0
    assert "exchange must be halox or lulesh" in run.stderr


def fortran_state(run):
    assert run.returncode == 0, run.stdout + run.stderr
    m = re.search(r"nodal3d: sums\s+(\S+)\s+(\S+) digest (\S+) (\S+)", run.stdout)
    assert m, run.stdout
    return (float(m.group(1)), float(m.group(2))), (m.group(3), m.group(4))


@pytest.mark.parametrize("boundary", ["open", "periodic"])
def test_nodal3d_fortran_agrees_across_ranks_and_transports(run_mpi, boundary):
    serial, _ = fortran_state(run_mpi(1, "halox-example-nodal3d-fortran", "8", "3", boundary))
    sums, bits = fortran_state(run_mpi(4, "halox-example-nodal3d-fortran", "8", "3", boundary))
    assert sums == pytest.approx(serial, rel=1e-11, abs=1e-13)
    _, other = fortran_state(run_mpi(4, "halox-example-nodal3d-fortran", "8", "3", boundary,
                                     "shm", "staged"))
    assert other == bits


@pytest.mark.parametrize("boundary", ["open", "periodic"])
def test_nodal3d_fortran_lulesh_style_exchange_is_the_same_physics(run_mpi, boundary):
    halox_sums, _ = fortran_state(run_mpi(4, "halox-example-nodal3d-fortran", "8", "3", boundary))
    # Its exchanges written the way LULESH's are: the holders add in other orders.
    lulesh_sums, _ = fortran_state(run_mpi(4, "halox-example-nodal3d-fortran", "8", "3", boundary,
                                           "exchange=lulesh"))
    assert lulesh_sums == pytest.approx(halox_sums, rel=1e-11, abs=1e-13)


def test_nodal3d_fortran_refuses_a_bad_exchange(run_mpi):
    run = run_mpi(2, "halox-example-nodal3d-fortran", "8", "3", "open", "exchange=carrier-pigeon")
    assert run.returncode != 0
    assert "exchange must be halox or lulesh" in run.stderr
