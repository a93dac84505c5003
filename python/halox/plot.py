"""Plots of halox records.  Every figure names, above its panels, the machine, the MPI
library, the ranks and the statistic it shows.

- `plot`: bar plot of the chosen layout (the GHEX results' "compact vs staged" plot): one
  panel per table, a group of bars per (halo, nfields), a bar per variant, log time axis.
- `bench_variants`: per rank grid and toolchain, a panel per (halo, nfields): bars per transport
  and algorithm/fields, each with a tick at its floor (a memcpy of the cache lines it touches).
- `bench_placement`: per (halo, nfields), every variant on each rank grid / decomposition.
- `bench_breakdown`: per (halo, nfields), each variant's time split into packing, copying,
  waiting and the rest on the slowest and the median rank, beside the self-copy reference.
- `halo2d`: seconds per message vs message size, a line per test, a panel per neighbour count.
- `ipc`: copy time vs block size, a line per mechanism, memcpy of the buffer dashed.
"""
from __future__ import annotations

import math
import pathlib
import textwrap
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
import numpy as np  # noqa: E402

from . import records as rec  # noqa: E402
from . import report  # noqa: E402
from . import report_breakdown, report_halo2d, report_ipc  # noqa: E402
from .records import Halo2dRun, IpcRun, Record  # noqa: E402


def _suptitle(fig, title: str, context: str) -> None:
    lines = [title] + textwrap.wrap(context, 130)
    fig.suptitle("\n".join(lines), fontsize=8.5, y=0.995)
    fig._halox_top = 1 - (0.16 * len(lines) + 0.12) / fig.get_figheight()


def _save(fig, out: str | pathlib.Path, bottom: float = 0.0) -> pathlib.Path:
    """Lays the panels out below the title (and above a legend at the bottom), writes a PNG."""
    out = pathlib.Path(out)
    top = getattr(fig, "_halox_top", 0.93)
    fig.tight_layout(rect=(0, bottom, 1, top))
    fig.subplots_adjust(top=top - 0.25 / fig.get_figheight())  # room for the panel titles
    fig.savefig(out, dpi=100, format="png")
    plt.close(fig)
    return out


def _bench_context(records: Sequence[Record], metric: str) -> str:
    description, unit, _ = rec.METRICS[metric]
    return report.context_line([r.raw for r in records], (r.ranks for r in records),
                               f"{description} [{unit}]", rec.toolchain_labels(records))


def _unit_label(metric: str) -> str:
    _, unit, _ = rec.METRICS[metric]
    return "per exchange [µs]" if unit == "µs" else f"10000 exchanges [{unit}]"


def plot(records: Sequence[Record], out: str | pathlib.Path, metric: str = "median",
         baseline: str | None = None) -> pathlib.Path:
    """Writes a PNG and returns its path."""
    chosen = report.chosen(records, metric, baseline)
    panels = [(section, table) for section in chosen.sections for table in section.tables]
    fig_width = max(6.0, min(18.0, 2.0 + 1.6 * max(
        sum(k == "value" for k in t.kinds) for _, t in panels)))
    fig, axes = plt.subplots(len(panels), 1, figsize=(fig_width, 1.0 + 3.8 * len(panels)),
                             squeeze=False)
    for ax, (section, table) in zip(axes[:, 0], panels):
        value_columns = [i for i, k in enumerate(table.kinds) if k == "value"]
        labels = [table.columns[i] for i in value_columns]
        nvariants = len(table.rows)
        width = 0.8 / max(nvariants, 1)
        x = np.arange(len(labels))
        cmap = plt.get_cmap("tab20" if nvariants > 10 else "tab10")
        for j, (variant, values) in enumerate(table.rows):
            heights = [values[i] for i in value_columns]  # NaN (missing) draws no bar
            ax.bar(x - 0.4 + width * (j + 0.5), heights, width, label=variant,
                   color=cmap(j % cmap.N))
        ax.set_xticks(x, labels)
        ax.set_yscale("log")
        ax.set_ylabel(_unit_label(metric))
        ax.set_title(f"{table.title}: {section.details[0]}", fontsize=9)
        ax.grid(axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=7, ncols=2 if nvariants > 6 else 1, loc="upper left",
                  bbox_to_anchor=(1.01, 1.0))
    _suptitle(fig, "time per variant and halo x fields", _bench_context(records, metric))
    return _save(fig, out)


def _value(cell: Sequence[Record], metric: str) -> float:
    return rec.cell_value(cell, metric)


def _floor(cell: Sequence[Record], metric: str) -> float:
    """The floor of the lines (a memcpy of the cache lines the exchange touches; before records
    carried it, the memcpy of the halo's bytes), in the metric's unit (µs per exchange, or s
    per 10^4)."""
    values = sorted(r.raw.get("line_floor_s", r.raw.get("memcpy_s", math.nan)) for r in cell)
    if not values:
        return math.nan
    seconds = float(values[len(values) // 2])
    return seconds * (1e4 if metric == "seconds_per_10000" else 1e6)


def bench_variants(records: Sequence[Record], out: str | pathlib.Path,
                   metric: str = "median") -> pathlib.Path:
    """One rank grid and toolchain: a panel per (halo, nfields); per transport a bar per
    algorithm/fields, with a black tick at the floor of the lines that bar's exchange touches."""
    shapes: dict[tuple, str] = {}
    for r in sorted(records, key=rec.shape_key):
        shapes.setdefault(rec.shape_key(r), r.shape_label)
    transports = sorted({r.transport for r in records})
    combos = sorted({(r.algorithm, r.grouping) for r in records},
                    key=lambda c: (rec.order_rank(c[0], rec.ALGORITHM_ORDER),
                                   rec.order_rank(c[1], rec.GROUPING_ORDER)))
    cells: dict[tuple, list[Record]] = {}
    for r in records:
        cells.setdefault((rec.shape_key(r), r.transport, r.algorithm, r.grouping), []).append(r)
    verdicts = report.record_verdicts(records)

    def unstable(cell: Sequence[Record]) -> bool:
        return any(not verdicts[r.source][1].stable for r in cell if r.source in verdicts)

    any_unstable = False
    ncols = min(2, len(shapes))
    nrows = math.ceil(len(shapes) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.5 * ncols, 3.6 * nrows + 1.2),
                             squeeze=False)
    cmap = plt.get_cmap("tab10")
    width = 0.8 / max(len(combos), 1)
    x = np.arange(len(transports))
    for ax, (key, label) in zip(axes.flat, shapes.items()):
        for j, (algorithm, fields) in enumerate(combos):
            offsets = x - 0.4 + width * (j + 0.5)
            heights = [_value(cells.get((key, t, algorithm, fields), []), metric)
                       for t in transports]
            floors = [_floor(cells.get((key, t, algorithm, fields), []), metric)
                      for t in transports]
            bars = ax.bar(offsets, heights, width, color=cmap(j % 10),
                          label=f"{algorithm}/{fields}")
            for bar, t in zip(bars, transports):
                if unstable(cells.get((key, t, algorithm, fields), [])):
                    bar.set_hatch("xxx")
                    bar.set_edgecolor("black")
                    bar.set_linewidth(0.4)
                    any_unstable = True
            ax.hlines(floors, offsets - width / 2, offsets + width / 2, colors="black",
                      linewidth=1.5, label="floor of the lines" if j == 0 else None)
        # Transport names are long (mpi-rma-fence): slanted, they never run into each other.
        ax.set_xticks(x, transports, rotation=30, ha="right", rotation_mode="anchor",
                      fontsize=8)
        ax.set_title(label, fontsize=10)
        ax.set_ylabel(_unit_label(metric))
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(shapes):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if any_unstable:
        handles.append(Patch(facecolor="white", edgecolor="black", hatch="xxx", linewidth=0.4))
        labels.append("unstable (*)")
    fig.legend(handles, labels, fontsize=8, loc="lower center", ncols=min(7, len(labels)))
    first = records[0]
    _suptitle(fig, f"transports and algorithms: {report.context_details(first)}",
              _bench_context(records, metric))
    return _save(fig, out, bottom=0.5 / fig.get_figheight())


def bench_placement(records: Sequence[Record], out: str | pathlib.Path,
                    metric: str = "median") -> pathlib.Path:
    """Every variant on each rank grid / decomposition (and toolchain), a panel per shape."""
    labels_tc = rec.toolchain_labels(records)
    columns: dict[tuple, str] = {}
    for r in sorted(records, key=lambda r: (rec.decomposition_key(r), r.periodic)):
        columns.setdefault((rec.decomposition_key(r), r.periodic, rec.toolchain_id(r)),
                           f"{rec.decomposition_text(r)} order {r.order}"
                           + (f" {labels_tc[rec.toolchain_id(r)]}" if len(labels_tc) > 1
                              else ""))
    shapes: dict[tuple, str] = {}
    for r in sorted(records, key=rec.shape_key):
        shapes.setdefault(rec.shape_key(r), r.shape_label)
    variants = rec.sort_variants(r.variant for r in records)
    cells: dict[tuple, list[Record]] = {}
    for r in records:
        column = (rec.decomposition_key(r), r.periodic, rec.toolchain_id(r))
        cells.setdefault((rec.shape_key(r), r.variant, column), []).append(r)
    fig, axes = plt.subplots(1, len(shapes), figsize=(3.6 * len(shapes) + 2.5,
                                                      0.32 * len(variants) * len(columns) + 2.2),
                             squeeze=False, sharey=True)
    height = 0.8 / len(columns)
    y = np.arange(len(variants))
    cmap = plt.get_cmap("tab10")
    for ax, (key, label) in zip(axes[0], shapes.items()):
        for j, (column, name) in enumerate(columns.items()):
            values = [_value(cells.get((key, v, column), []), metric) for v in variants]
            ax.barh(y - 0.4 + height * (j + 0.5), values, height, color=cmap(j % 10),
                    label=name)
        ax.set_title(label, fontsize=10)
        ax.set_xlabel(_unit_label(metric))
        ax.grid(axis="x", alpha=0.3)
    axes[0][0].set_yticks(y, variants, fontsize=8)
    axes[0][0].invert_yaxis()
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, fontsize=8, loc="lower center", ncols=min(4, len(names)))
    _suptitle(fig, "placement: the same exchanges on each rank grid",
              _bench_context(records, metric))
    return _save(fig, out, bottom=(0.3 + 0.2 * math.ceil(len(columns) / 4)) /
                 fig.get_figheight())


BREAKDOWN_PARTS = ("pack", "other copies", "waiting for neighbours' data",
                   "waiting for neighbours' reading", "the rest")


def bench_breakdown(records: Sequence[Record], out: str | pathlib.Path) -> pathlib.Path:
    """Records of one context: a panel per shape, side by side; per variant two stacked bars,
    the slowest rank's and (lighter) the median rank's time split into its parts
    (report_breakdown.bars), and a black tick at the self-copy reference (the same halos
    filled inside each rank)."""
    panels = {label: {variant: (parts, reference) for variant, parts, reference in rows}
              for label, rows in report_breakdown.bars(records).items()}
    variants = rec.sort_variants({v for rows in panels.values() for v in rows})
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels) + 2.8,
                                                      0.36 * len(variants) + 2.6),
                             squeeze=False, sharey=True)
    colours = [plt.get_cmap("tab10")(i) for i in (0, 2, 3, 1, 7)]
    shades = (1.0, 0.45)
    y = np.arange(len(variants), dtype=float)
    for ax, (label, rows) in zip(axes[0], panels.items()):
        for k, (which, _) in enumerate(report_breakdown.RANKS):
            left = np.zeros(len(variants))
            for j, part in enumerate(BREAKDOWN_PARTS):
                widths = np.nan_to_num(np.array(
                    [rows[v][0][which][j] if v in rows else math.nan for v in variants]))
                ax.barh(y - 0.2 + 0.4 * k, widths, 0.38, left=left, color=colours[j],
                        alpha=shades[k], label=part if k == 0 else None)
                left += widths
        ax.vlines([rows[v][1] if v in rows else math.nan for v in variants], y - 0.42, y + 0.42,
                  colors="black", linewidth=1.8, label="self-copy reference")
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("per exchange [µs]")
        ax.grid(axis="x", alpha=0.3)
    axes[0][0].set_yticks(y, variants, fontsize=8)
    axes[0][0].set_ylim(len(variants) - 0.5, -0.5)  # the first variant on top
    handles, names = axes[0][0].get_legend_handles_labels()
    for shade, (_, role) in zip(shades, report_breakdown.RANKS):
        handles.append(Patch(facecolor=colours[0], alpha=shade))
        names.append(role)
    fig.legend(handles, names, fontsize=8, loc="lower center", ncols=4)
    _suptitle(fig, f"where the time goes: {report.context_details(records[0])}",
              report.context_line([r.raw for r in records], (r.ranks for r in records),
                                  "µs per exchange, the mean over the middle half of each "
                                  "rank's recorded exchanges", rec.toolchain_labels(records)))
    return _save(fig, out, bottom=0.75 / fig.get_figheight())


def _log2_axis(ax) -> None:
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
        lambda v, _: f"{int(v)}" if v < 1024 else (f"{int(v) >> 10}Ki" if v < 1 << 20
                                                    else f"{int(v) >> 20}Mi")))


def halo2d(runs: Sequence[Halo2dRun], out: str | pathlib.Path) -> pathlib.Path:
    """Runs of one context (mesh, ranks, MPI): a panel per neighbour count, a line per test."""
    tests = report_halo2d.tests_of(runs)
    neighbours = sorted({k[1] for r in runs for k in r.cells})
    fig, axes = plt.subplots(1, len(neighbours), figsize=(5.2 * len(neighbours), 4.6),
                             squeeze=False, sharey=True)
    for ax, n in zip(axes[0], neighbours):
        for test in tests:
            sizes = sorted({k[2] for r in runs for k in r.cells if k[:2] == (test, n) and k[2]})
            if not sizes:
                continue
            values = [min(r.cells[(test, n, b)] for r in runs if (test, n, b) in r.cells) * 1e6
                      for b in sizes]
            ax.plot(sizes, values, marker="o", markersize=3,
                    label=report_halo2d.TEST_TITLES.get(test, test))
        _log2_axis(ax)
        ax.set_yscale("log")
        ax.set_title(f"{n} neighbours", fontsize=10)
        ax.set_xlabel("message size [bytes]")
        ax.grid(which="both", alpha=0.3)
    axes[0][0].set_ylabel("µs per message")
    axes[0][0].legend(fontsize=8)
    first = runs[0]
    _suptitle(fig, f"halox-halo2d: {report_halo2d.mesh_text(first)}",
              report.context_line([r.raw for r in runs], [first.ranks],
                                  report_halo2d.STATISTIC))
    return _save(fig, out)


def ipc(runs: Sequence[IpcRun], out: str | pathlib.Path) -> pathlib.Path:
    """Runs of one buffer (size, layout, ranks, MPI): copy time per mechanism vs block size."""
    fig, ax = plt.subplots(figsize=(8.5, 5.2))
    sizes = sorted({row["iov_size"] for r in runs for row in r.rows})
    for mechanism in report_ipc.mechanisms_of(runs):
        values = [report_ipc.cell_value(runs, s, mechanism, lambda row, c: c["time_us"])
                  for s in sizes]
        if all(v is None or math.isnan(v) for v in values):
            continue  # unavailable here
        ax.plot(sizes, [math.nan if v is None else v for v in values], marker="o",
                markersize=3, label=mechanism)
    memcpy = [report_ipc.cell_value(runs, s, None, lambda row, c: row["memcpy_us"]) for s in sizes]
    ax.plot(sizes, memcpy, color="black", linestyle="--", label="memcpy of the buffer")
    _log2_axis(ax)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("block size (IOV_size) [bytes]")
    ax.set_ylabel("copy time [µs]")
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")
    first = runs[0]
    _suptitle(fig, f"halox-ipc: {report_ipc.buffer_text(first)}",
              report.context_line([r.raw for r in runs], [first.ranks], report_ipc.STATISTIC))
    return _save(fig, out)
