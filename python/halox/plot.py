"""Bar plots of a metric per variant and shape (the seeds' "compact vs staged" plot):
one panel per table of the chosen layout, one group of bars per (halo, nfields), one bar per
variant, logarithmic time axis (halo 1 x 1 field and halo 5 x 8 fields differ by ~100x)."""
from __future__ import annotations

import pathlib
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from . import records as rec  # noqa: E402
from . import report  # noqa: E402
from .records import Record  # noqa: E402


def plot(records: Sequence[Record], out: str | pathlib.Path, metric: str = "median",
         baseline: str = report.DEFAULT_BASELINE) -> pathlib.Path:
    """Writes a PNG and returns its path."""
    chosen = report.chosen(records, metric, baseline)
    panels = [(section, table) for section in chosen.sections for table in section.tables]
    description, unit, _ = rec.METRICS[metric]
    ncols = 1
    fig_width = max(6.0, min(18.0, 2.0 + 1.6 * max(
        sum(k == "value" for k in t.kinds) for _, t in panels)))
    fig, axes = plt.subplots(len(panels), ncols, figsize=(fig_width, 3.8 * len(panels)),
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
        ax.set_ylabel("per exchange [µs]" if unit == "µs" else f"10000 exchanges [{unit}]")
        ax.set_title(f"{table.title}: {section.details[0]}", fontsize=9)
        ax.grid(axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=7, ncols=2 if nvariants > 6 else 1, loc="upper left",
                  bbox_to_anchor=(1.01, 1.0))
    fig.suptitle(description, fontsize=10)
    fig.tight_layout()
    out = pathlib.Path(out)
    fig.savefig(out, dpi=100, format="png")
    plt.close(fig)
    return out
