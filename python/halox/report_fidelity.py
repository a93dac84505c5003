"""Fidelity of the plain-MPI baselines: each baseline beside the real program it follows
(docs/peers.md), when a sweep ran the program as a peer (a spec's [[peers]], or HALOX_CARTEX).

mpi-types/staged/sequence follows cartex `benchmark_mpi_comm --MPI-datatypes`,
mpi-cartex/staged/sequence follows `benchmark_mpi_comm`; a peer record is recognised by the
runtime its output names (mpi_comm) and its command. A ratio is taken between a baseline and
its program of the same run (the program ran beside that halox-bench invocation), then the
median over the runs; a median outside 0.9-1.1 is flagged: the (xN) speed-ups over the copy
then differ from those over the program by as much."""
from __future__ import annotations

import statistics
from typing import Sequence

from . import records as rec
from . import stability
from .records import Record
from .report import Report, Section, Table, context_details, context_key

MPI_TYPES = "mpi-types/staged/sequence"
MPI_CARTEX = "mpi-cartex/staged/sequence"
FAITHFUL = (0.9, 1.1)
OUTSIDE = "outside 0.9-1.1"


def follows(r: Record) -> str | None:
    """The halox baseline whose algorithm a peer record's program runs, if any."""
    if not r.peer or r.raw.get("runtime") != "mpi_comm":
        return None
    return MPI_TYPES if "--MPI-datatypes" in (r.raw.get("command") or []) else MPI_CARTEX


def reference(records: Sequence[Record], baseline: str | None) -> str:
    """The reference of the (xN) columns: the baseline asked for, else the real program that
    the records' baseline follows when it ran beside these records, else that baseline."""
    if baseline:
        return baseline
    named = rec.baseline_of(records)
    programs = sorted({r.peer for r in records if follows(r) == named})
    return programs[0] if len(programs) == 1 else named


def _pairs(records: Sequence[Record]) -> dict[tuple, list[tuple[Record, Record]]]:
    """(context, toolchain, baseline, program, type, halo, nfields, field pages) -> the
    (baseline record, program record) pairs of each run."""
    halox: dict[tuple, Record] = {}
    for r in records:
        if not r.peer and r.variant in (MPI_TYPES, MPI_CARTEX):
            halox[(r.run_id, r.variant, r.type, r.halo, r.nfields)] = r
    out: dict[tuple, list[tuple[Record, Record]]] = {}
    for p in records:
        baseline = follows(p)
        h = halox.get((p.ratio_run, baseline, p.type, p.halo, p.nfields)) if baseline else None
        if h is not None:
            key = (context_key(h), rec.toolchain_id(h), baseline, p.peer, p.type, p.halo,
                   p.nfields, field_pages(h))
            out.setdefault(key, []).append((h, p))
    return out


def field_pages(h: Record) -> str:
    """The pages halox-bench asked for its private fields ("system" before it could choose)."""
    return str((h.raw.get("config") or {}).get("field_pages") or "system")


def probe_lines(halox_records: Sequence[Record]) -> list[str]:
    """Per halox-bench run of the table, the machine as its probes saw it, in one line."""
    runs: dict[str, list[dict]] = {}
    for h in halox_records:
        runs.setdefault(str(h.run_id), []).append(h.raw)
    lines = []
    for run_id, raws in runs.items():
        probe = stability.launch_probe(raws)
        if probe is not None:
            lines.append(f"machine probe, run {run_id}: {probe.text()}")
    return lines


def page_note(baseline: str, halo: int, nfields: int, halox_records: Sequence[Record]) -> str:
    """Why a ratio compares unlike pages: halox's private fields advised huge pages on a machine
    whose heap gets them only when advised (docs/bench.md, Pages)."""
    configs = [h.raw.get("config") or {} for h in halox_records]
    if any(c.get("field_pages") == "huge" and c.get("memory") == "private"
           and c.get("huge_pages") == "madvise" for c in configs):
        return (f"{baseline} h{halo}f{nfields}: halox's fields had huge pages advised, the "
                "program's heap fields get 4 KiB pages on this machine (transparent huge pages: "
                "madvise): set bench.field_pages = \"system\" for a like-for-like ratio")
    return ""


def has_fidelity(records: Sequence[Record]) -> bool:
    return bool(_pairs(records))


def outside(records: Sequence[Record]) -> list[str]:
    """'baseline / program hXfY (type): ratio' for each median ratio outside 0.9-1.1."""
    out = []
    for key, pairs in _pairs(records).items():
        ratio = statistics.median(h.metric("median") / p.metric("median") for h, p in pairs)
        if not FAITHFUL[0] <= ratio <= FAITHFUL[1]:
            pages = f", {key[7]} pages" if key[7] != "system" else ""
            out.append(f"{key[2]} / {key[3]} h{key[5]}f{key[6]} ({key[4]}{pages}): {ratio:.2f}")
    return out


def fidelity(records: Sequence[Record]) -> Report:
    """A table per context and toolchain: per baseline, program and shape, both medians (the
    median over runs of each one's median), the median and range of the per-run ratios, the runs,
    and a flag when the median ratio is outside 0.9-1.1."""
    labels = rec.toolchain_labels(records)
    groups: dict[tuple, dict[tuple, list]] = {}
    for key, pairs in _pairs(records).items():
        groups.setdefault(key[:2], {})[key[2:]] = pairs
    sections = []
    flagged = 0
    for (_, toolchain), cells in groups.items():
        rows, notes = [], []
        probed: list[Record] = []
        for (baseline, program, element, halo, nfields, pages), pairs in sorted(cells.items()):
            ratios = [h.metric("median") / p.metric("median") for h, p in pairs]
            ratio = statistics.median(ratios)
            flag = not FAITHFUL[0] <= ratio <= FAITHFUL[1]
            flagged += flag
            label = f"{baseline} / {program} {element} h{halo}f{nfields}" + \
                (f", {pages} pages" if pages != "system" else "") + \
                (f"  << {OUTSIDE}" if flag else "")
            rows.append((label, [statistics.median(h.metric("median") for h, _ in pairs),
                                 statistics.median(p.metric("median") for _, p in pairs),
                                 ratio, min(ratios), max(ratios), float(len(pairs))]))
            if any(h.timing != "latency" for h, _ in pairs):
                notes.append(f"{baseline} h{halo}f{nfields}: halox timed "
                             f"{pairs[0][0].timing}, the program each exchange alone after a "
                             "barrier: set bench.timing = \"latency\" for a like-for-like ratio")
            unlike_pages = page_note(baseline, halo, nfields, [h for h, _ in pairs])
            if unlike_pages:
                notes.append(unlike_pages)
            probed += [h for h, _ in pairs]
        notes.insert(0, "ratio = halox / program, each its own median (halox: the slowest rank; "
                        "the program: rank 0), per run beside it, then the median and range "
                        f"over runs; a median {OUTSIDE} is flagged")
        notes += probe_lines(probed)
        columns = ["halox", "program", "ratio", "min", "max", "runs"]
        kinds = ["value", "value", "ratio", "ratio", "ratio", "count"]
        table = Table(labels[toolchain], "baseline / program", columns, kinds, rows, notes)
        first = next(iter(cells.values()))[0][0]
        sections.append(Section("Fidelity of the baselines to the programs they follow",
                                [context_details(first)], [table]))
    preamble = [f"{flagged} of {sum(len(t.rows) for s in sections for t in s.tables)} baseline "
                f"ratios are {OUTSIDE}" + (": speed-ups (xN) over those baselines differ from "
                                           "speed-ups over the real programs by as much"
                                           if flagged else ".")]
    return Report(preamble, sections)
