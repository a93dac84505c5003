"""Randomized verification: seeded random configurations of halox-bench, every one verified
cell-exact, none allowed to hang.

Each draw picks a rank count (1-8), a rank grid (dimensions of 1 and 2 ranks included), sub-domain
sizes from 1 cell up (per rank, or a global domain split unevenly), halo widths from 0 to the
smallest sub-domain extent (uniform or per side), periodic or open per dimension, a field count,
an element type, sometimes a grouping of ranks into pseudo-nodes, and three of the transports and
LOCAL+REMOTE routings `halox-bench --list-transports` reports as available; one launch then runs
those x every algorithm x three field groupings (compact, sequence, and one of blocks of 2,
L2-sized blocks, whole messages or the measured choice), sometimes with messages cut into blocks
of 1 or 2 fields. A run that fails or outlives its timeout fails the test and prints the exact command
that reproduces it.

    pytest tests/python/test_random_configs.py                         # the fixed CI seed
    pytest tests/python/test_random_configs.py --random-configs 500 --random-seed random
"""
import os
import random
import shlex
import subprocess

import pytest

from conftest import build_dir, launcher, list_routings, list_transports, mpi_flavor

BENCH = "halox-bench"
RUN_TIMEOUT = 90  # seconds; a healthy draw takes about one


def rank_grid(rng: random.Random, ranks: int) -> list[int]:
    """A random factorisation of `ranks` into 3 dimensions."""
    dims = [1, 1, 1]
    left = ranks
    factor = 2
    primes = []
    while left > 1:
        while left % factor == 0:
            primes.append(factor)
            left //= factor
        factor += 1
    for p in primes:
        dims[rng.randrange(3)] *= p
    return dims


TRANSPORTS_PER_DRAW = 3


def draw(rng: random.Random, max_ranks: int, choices: list[str]) -> tuple[int, dict, list[str]]:
    """One configuration: (ranks, extra environment, halox-bench arguments)."""
    ranks = rng.randint(1, max_ranks)
    dims = rank_grid(rng, ranks)
    args = ["--mpicart", *map(str, dims)]
    periodic = [rng.randint(0, 1) for _ in range(3)]
    args += ["--periodic", *map(str, periodic)]
    if rng.random() < 0.5:
        extent = [rng.choice([1, 1, 2, 3, 4, 5, 7, 9]) for _ in range(3)]
        args += ["--domain", *map(str, extent)]
        smallest = extent
    else:
        total = [dims[d] * rng.randint(1, 6) + rng.randint(0, dims[d] - 1) for d in range(3)]
        args += ["--global-domain", *map(str, total)]
        smallest = [total[d] // dims[d] for d in range(3)]
    if rng.random() < 0.4:
        args += ["--halo", str(rng.randint(0, min(smallest)))]
    else:
        lo = [rng.randint(0, smallest[d]) for d in range(3)]
        hi = [rng.randint(0, smallest[d]) for d in range(3)]
        args += ["--halo-lo", *map(str, lo), "--halo-hi", *map(str, hi)]
    args += ["--nfields", str(rng.choice([1, 1, 2, 3])), "--type", rng.choice(["float", "double"])]
    args += ["--transport", ",".join(rng.sample(choices, min(TRANSPORTS_PER_DRAW, len(choices))))]
    args += ["--grouping", "compact,sequence," + rng.choice(["auto", "2", "cache", "whole"])]
    if rng.random() < 0.3:
        args += ["--fields-per-block", str(rng.choice([1, 2]))]
    env = {}
    groups = [g for g in range(1, ranks) if ranks % g == 0]
    if groups and rng.random() < 0.5:
        env["HALOX_RANKS_PER_NODE"] = str(rng.choice(groups))
    return ranks, env, args


def seed_of(config) -> int:
    text = config.getoption("random_seed")
    if text == "random":
        return random.SystemRandom().randrange(1 << 32)
    return int(text)


def pytest_generate_tests(metafunc):
    if "random_config" not in metafunc.fixturenames:
        return
    config = metafunc.config
    seed = seed_of(config)
    count = config.getoption("random_configs")
    # MPICH busy-polls in every collective: an oversubscribed draw took 10 s and more (its
    # oversubscribed runs are covered by ctest's exchange tests), so its draws fit the cores.
    max_ranks = 8 if mpi_flavor() == "openmpi" else max(2, os.cpu_count() or 2)
    rng = random.Random(seed)
    choices = list_transports() + list_routings()
    draws = [draw(rng, max_ranks, choices) for _ in range(count)]
    ids = [f"seed{seed}-{i}-n{ranks}" for i, (ranks, _, _) in enumerate(draws)]
    # The quick tier takes the draws on 1 and 2 ranks; the others are left to `make test`.
    params = [pytest.param(d, id=i, marks=[pytest.mark.slow] if d[0] > 2 else [])
              for d, i in zip(draws, ids)]
    metafunc.parametrize("random_config", params)


def reproduce_line(command: list[str], env: dict) -> str:
    prefix = " ".join(f"{k}={v}" for k, v in env.items())
    return (prefix + " " if prefix else "") + shlex.join(command)


def test_random_configuration_verifies(random_config):
    ranks, env, args = random_config
    command = launcher(ranks) + [
        str(build_dir() / BENCH), *args, "--algorithm", "all", "--nrep", "2", "--warmup", "1",
        "--quiet",
    ]
    full_env = dict(os.environ, **env)
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                             env=full_env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung for {RUN_TIMEOUT} s; reproduce with:\n  {reproduce_line(command, env)}")
    assert run.returncode == 0, (
        f"exit {run.returncode}; reproduce with:\n  {reproduce_line(command, env)}\n"
        + run.stdout[-2000:] + run.stderr[-2000:])
    assert "Summary" in run.stdout, reproduce_line(command, env)
