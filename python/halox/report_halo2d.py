"""halox-halo2d tables in the layout of Gropp's halo-exchange tests: a row per message size, a
column group per test, a column per neighbour count; µs per message (his tables give seconds
with 6 decimals, which shows on-node messages as 0.000000)."""
from __future__ import annotations

import math
from typing import Sequence

from . import records as rec
from .records import Halo2dRun
from .report import Report, Section, Table, context_line, library_legend

TEST_ORDER = ("single", "all", "phased", "persistent", "irecv-first", "sendrecv")
TEST_TITLES = {"single": "single sender", "all": "all send/receive",
               "phased": "phased send/receive", "persistent": "persistent requests",
               "irecv-first": "irecv first + barrier", "sendrecv": "sendrecv per direction"}
STATISTIC = ("µs per message = best trial of (time per exchange, max over processes; "
             "single sender: the sender's) / neighbours")


def context_key(run: Halo2dRun) -> tuple:
    return (run.mpi_library, run.ranks, run.mesh, run.periodic, run.reorder)


def mesh_text(run: Halo2dRun) -> str:
    return (f"mesh {'x'.join(map(str, run.mesh))} "
            f"({'periodic' if run.periodic else 'not periodic'}"
            f"{', reordered' if run.reorder else ''})")


def tests_of(runs: Sequence[Halo2dRun]) -> list[str]:
    present = {t for r in runs for t in r.tests}
    return [t for t in TEST_ORDER if t in present] + sorted(present - set(TEST_ORDER))


def grouped(runs: Sequence[Halo2dRun]) -> list[list[Halo2dRun]]:
    """Runs that share a table: the same mesh, ranks and MPI library."""
    groups: dict[tuple, list[Halo2dRun]] = {}
    for run in runs:
        groups.setdefault(context_key(run), []).append(run)
    return [groups[k] for k in sorted(groups, key=lambda k: (k[1], k[2], k[3], k[4], k[0]))]


def build(runs: Sequence[Halo2dRun]) -> Report:
    labels = rec.toolchain_labels_of(r.mpi_library for r in runs)
    sections = []
    for group in grouped(runs):
        first = group[0]
        tests = tests_of(group)
        neighbours = sorted({k[1] for r in group for k in r.cells})
        sizes = sorted({k[2] for r in group for k in r.cells})
        columns, column_keys, spans = [], [], []
        for test in tests:
            counts = [n for n in neighbours if any((test, n, b) in r.cells
                                                   for r in group for b in sizes)]
            spans.append((TEST_TITLES.get(test, test), len(counts)))
            for n in counts:
                columns.append(str(n))
                column_keys.append((test, n))
        rows = []
        several = False
        for size in sizes:
            values = []
            for test, n in column_keys:
                found = [r.cells[(test, n, size)] for r in group if (test, n, size) in r.cells]
                several |= len(found) > 1
                values.append(min(found) * 1e6 if found else math.nan)
            rows.append((str(size), values))
        notes = ["cells measured in several runs show the best of them"] if several else []
        table = Table(f"{labels[first.mpi_library]}: µs per message", "bytes", columns,
                      ["us3"] * len(columns), rows,
                      notes, groups=spans, label_header=True)
        trials = sorted({r.trials for r in group})
        details = [context_line([r.raw for r in group], [first.ranks], STATISTIC),
                   f"{first.ranks} ranks, {mesh_text(first)}; trials per cell: "
                   f"{', '.join(map(str, trials))}; {len(group)} run(s): "
                   f"{', '.join(r.run_id for r in group)}"]
        sections.append(Section(f"halox-halo2d: {mesh_text(first)}, {first.ranks} ranks",
                                details, [table]))
    preamble = [f"halox-halo2d: {len(runs)} run{'s' if len(runs) != 1 else ''}; "
                f"{library_legend({(lib, ''): label for lib, label in labels.items()})}."]
    return Report(preamble, sections)
