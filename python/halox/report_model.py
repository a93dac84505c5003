"""`halox report --model`: the measured placement effect beside the time model's prediction and
beside the Betzy one published for hwcart vs MPICart, and a plot of predicted against measured.

Records of one shape (variant, element type, halo, fields, ranks, nodes) are compared with the
--mpicart run of that shape; each is laid out again by halox-topo (calibrate.topo_args), which
predicts its time under the model.
"""
from __future__ import annotations

import json
import pathlib
import statistics
from typing import Sequence

from . import calibrate as cal
from . import timemodel as tm
from .records import Record
from .report import Report, Section, Table

COLUMNS = ["measured µs", "predicted µs", "measured x cart", "predicted x cart",
           "Betzy hwcart x MPICart"]
KINDS = ["us2", "us2", "ratio", "ratio", "ratio"]


def _shape(r: Record) -> tuple:
    raw = r.raw
    return (r.variant, r.type, r.halo_label, r.nfields, raw["ranks"], cal.nodes_of(raw))


def _placement(r: Record) -> str:
    d = r.raw["decomposition"]
    grids = f" {d['level_grids']} --order {d['order']}" if d.get("level_grids") else ""
    return f"{d['kind']} {'x'.join(map(str, d['dims']))}{grids}"


def betzy_ratio(halo: str, nfields: int) -> float | None:
    """hwcart's time over MPICart's on 27 Betzy nodes (halfcores, XYZ), where published."""
    run = json.loads(tm.BETZY_PUBLISHED.read_text())["runs"]["halfcores_27_nodes"]
    cell = f"h{halo}f{nfields}"
    cart = run["mpicart_seconds"]["XYZ"].get(cell)
    return run["hwcart_seconds"]["XYZ"][cell] / cart if cart else None


def _rows_of_shape(cell: dict[str, list[Record]], model: dict, topology: str | None) -> list:
    rows = []
    for placement, records in cell.items():
        measured = statistics.median(r.times["median"] * 1e6 for r in records)
        kind = cal.layout_options(records[0].raw)[0]
        predicted = tm.layout(tm.predict(model, cal.topo_args(records[0].raw, topology)),
                              kind)["us"]
        rows.append((placement, measured, predicted))
    return rows


def placement_effect(records: Sequence[Record], model: dict,
                     topology: str | None) -> tuple[Report, list[tuple[float, float, str]]]:
    """The table, and the (measured, predicted, label) points of every placement."""
    shapes: dict[tuple, dict[str, list[Record]]] = {}
    for r in records:
        if r.peer or r.raw["decomposition"].get("kind") not in ("cart", "hw"):
            continue
        shapes.setdefault(_shape(r), {}).setdefault(_placement(r), []).append(r)
    table_rows, points = [], []
    for (variant, type_, halo, nfields, ranks, nodes), cell in shapes.items():
        rows = _rows_of_shape(cell, model, topology)
        cart = next(((m, p) for name, m, p in rows if name.startswith("cart")), None)
        for name, measured, predicted in rows:
            label = f"{variant} {type_} h{halo}f{nfields} {ranks} ranks/{nodes} node(s): {name}"
            vs = [measured / cart[0], predicted / cart[1]] if cart else [None, None]
            hw = betzy_ratio(halo, nfields) if not name.startswith("cart") else None
            table_rows.append((label, [measured, predicted, *vs, hw]))
            points.append((measured, predicted, label))
    notes = ["x cart: time over that of the first --mpicart placement of the same shape; "
             "Betzy: hwcart over MPICart on 27 nodes x 64 ranks (halfcores, XYZ, "
             "benchmark_mpi_comm), where published"]
    table = Table(title="", row_header="shape: placement", columns=COLUMNS, kinds=KINDS,
                  rows=table_rows, notes=notes)
    section = Section("Placement effect: measured, predicted by the time model, and on Betzy",
                      [], [table])
    return Report(preamble=[], sections=[section]), points


def plot_points(points: list[tuple[float, float, str]], out: str | pathlib.Path,
                measured: str = "measured µs per exchange (median)") -> pathlib.Path:
    """Predicted against measured time per exchange, log-log, with the line of equality."""
    from . import plot
    fig, ax = plot.plt.subplots(figsize=(6, 5))
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    ax.loglog(xs, ys, "o", markersize=4)
    low, high = min(xs + ys) / 1.5, max(xs + ys) * 1.5
    ax.plot([low, high], [low, high], "k--", linewidth=0.8, label="predicted = measured")
    ax.set_xlabel(measured)
    ax.set_ylabel("predicted µs per exchange")
    ax.legend(fontsize=8)
    ax.set_title("time model: predicted vs measured", fontsize=9)
    return plot._save(fig, out)
