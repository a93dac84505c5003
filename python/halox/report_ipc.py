"""halox-ipc tables in the layout of the mpidt benchmark: per buffer, a row per block size
(IOV_size, IOV_count), a column per copy mechanism, µs per copy; and the same cells as the
fraction of a memcpy of the buffer they reach."""
from __future__ import annotations

import math
import statistics
from typing import Sequence

from . import records as rec
from .records import IpcRun
from .report import Report, Section, Table, context_line, library_legend

MECHANISM_ORDER = ("SHMEM_NP", "SHMEM_P", "CMA", "MAP_NC", "MAP_C", "MPI_DT", "XPMEM_NC",
                   "XPMEM_C")
STATISTIC = ("copy time [µs]: median over repetitions, max over peers "
             "(data-ready and copy-done messages excluded)")


def context_key(run: IpcRun) -> tuple:
    return (run.mpi_library, run.ranks, run.bufsize, run.layout, run.stride_factor, run.mode)


def buffer_text(run: IpcRun) -> str:
    layout = (f"layout strided (stride {run.stride_factor} x IOV_size)"
              if run.layout == "strided" else "layout contiguous")
    peers = run.ranks // 2 if run.mode == "pairs" else run.ranks - 1
    mode = (f"{peers} pair{'s' if peers != 1 else ''} at once" if run.mode == "pairs"
            else f"one-to-many, {peers} peer{'s' if peers != 1 else ''}")
    return f"buffer size: {run.bufsize} bytes, {layout}, {mode}"


def mechanisms_of(runs: Sequence[IpcRun]) -> list[str]:
    present = {m for r in runs for m in r.mechanisms}
    return [m for m in MECHANISM_ORDER if m in present] + sorted(present - set(MECHANISM_ORDER))


def cell_value(runs: Sequence[IpcRun], size: int, mechanism: str | None, value) -> float | None:
    """The median over runs of value(row, cell); None when the mechanism was unavailable."""
    found, unavailable = [], False
    for run in runs:
        for row in run.rows:
            if row["iov_size"] != size:
                continue
            if mechanism is None:
                found.append(value(row, None))
                continue
            cell = row["mechanisms"].get(mechanism)
            if cell is None:
                unavailable |= mechanism in row["mechanisms"]
            else:
                found.append(value(row, cell))
    if found:
        return statistics.median(found)
    return None if unavailable else math.nan


def grouped(runs: Sequence[IpcRun]) -> list[list[IpcRun]]:
    """Runs that share a table: the same buffer, layout, ranks and MPI library."""
    groups: dict[tuple, list[IpcRun]] = {}
    for run in runs:
        groups.setdefault(context_key(run), []).append(run)
    return [groups[k] for k in sorted(groups, key=lambda k: (k[1], k[2], k[3], k[4], k[5], k[0]))]


def build(runs: Sequence[IpcRun]) -> Report:
    labels = rec.toolchain_labels_of(r.mpi_library for r in runs)
    sections = []
    for group in grouped(runs):
        first = group[0]
        mechanisms = mechanisms_of(group)
        sizes = sorted({row["iov_size"] for r in group for row in r.rows})
        counts = {row["iov_size"]: row.get("iov_count", first.bufsize // row["iov_size"])
                  for r in group for row in r.rows}
        several = any(sum(1 for r in group for row in r.rows if row["iov_size"] == s) > 1
                      for s in sizes)
        notes = ["cells measured in several runs show the median of them"] if several else []
        times, efficiencies = [], []
        for size in sizes:
            times.append((str(size), [float(counts[size])] + [
                cell_value(group, size, m, lambda row, c: c["time_us"]) for m in mechanisms] + [
                cell_value(group, size, None, lambda row, c: row["memcpy_us"])]))
            efficiencies.append((str(size), [float(counts[size])] + [
                cell_value(group, size, m, lambda row, c: row["memcpy_us"] / c["time_us"]
                      if c["time_us"] > 0 else math.nan) for m in mechanisms]))
        label = labels[first.mpi_library]
        reasons: dict[str, list[str]] = {}
        for m, why in {m: why for r in group for m, why in r.unavailable.items()}.items():
            reasons.setdefault(why, []).append(m)
        n_a = [f"{', '.join(ms)}: n/a, {why}" for why, ms in reasons.items()]
        tables = [
            Table(f"{label}: copy time [µs]", "IOV_size", ["IOV_count", *mechanisms, "memcpy"],
                  ["count"] + ["us2"] * (len(mechanisms) + 1), times, notes + n_a,
                  label_header=True),
            Table(f"{label}: efficiency (memcpy time / copy time; 1 = as fast as memcpy in one "
                  "process)", "IOV_size", ["IOV_count", *mechanisms],
                  ["count"] + ["eff3"] * len(mechanisms), efficiencies, list(notes),
                  label_header=True)]
        details = [context_line([r.raw for r in group], [first.ranks], STATISTIC),
                   f"{first.ranks} ranks, {buffer_text(first)}; {len(group)} run(s): "
                   f"{', '.join(r.run_id for r in group)}"]
        sections.append(Section(f"halox-ipc: {buffer_text(first)}", details, tables))
    preamble = [f"halox-ipc: {len(runs)} run{'s' if len(runs) != 1 else ''}; "
                f"{library_legend({(lib, ''): label for lib, label in labels.items()})}."]
    return Report(preamble, sections)
