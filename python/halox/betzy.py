"""The Betzy time model: calibrated from the single-node table of the ghexbench cartex results on
Betzy and the published figures of InfiniBand HDR100, and checked against the 27-node tables
(hwcart vs MPICart, benchmark_mpi_comm, Open MPI). The published figures and their citation are
in data/betzy/published.json (seconds per 10000 exchanges = µs per exchange / 100).
"""
from __future__ import annotations

import json

from . import timemodel as tm

CELLS = ("h1f1", "h5f1", "h1f8", "h5f8")
ORDERS = ("XYZ", "ZYX")
# The one figure not read off a table: MPI's cost per message over HDR100, about 1 µs.
NETWORK_US_PER_MESSAGE = 1.0


def published() -> dict:
    return json.loads(tm.BETZY_PUBLISHED.read_text())


def _shape(cell: str) -> tuple[str, str]:
    halo, fields = cell[1:].split("f")
    return halo, fields


def layout_args(data: dict, run: str, cell: str, order: str) -> list[str]:
    """halox-topo's options for a run of the tables: both layouts (hw, and --mpicart)."""
    r = data["runs"][run]
    halo, fields = _shape(cell)
    args = ["--topology", data["topology"], "--nodes", str(r["nodes"]), "--ranks-per-node",
            str(r["ranks_per_node"]), *r["hwcart"].split(), "--order", order,
            "--halo", halo, "--fields", fields, "--algorithm", r["algorithm"],
            "--domain", *map(str, data["exchange"]["domain"]),
            "--element-size", str(data["exchange"]["element_size"])]
    if "mpicart" in r:
        args += ["--mpicart", *r["mpicart"].split()]
    return args


def network_parameters(data: dict) -> tuple[dict[str, float], dict[str, str]]:
    """HDR100's published figures: one port of 100 Gb/s per node, shared by its ranks."""
    gbps = data["network"]["link_Gbps"]
    values = {"node.injection_ns_per_byte": 8.0 / gbps,
              "node.us_per_message": NETWORK_US_PER_MESSAGE}
    sources = {"node.injection_ns_per_byte": data["network"]["note"],
               "node.us_per_message": "by hand: MPI's cost per message over InfiniBand HDR, "
                                      "about 1 us"}
    return values, sources


def single_node_measurements(data: dict) -> list[tm.Measurement]:
    """The allcores single-node table (128 ranks, hwcart): every halo x fields cell, both orders."""
    run = "allcores_single_node"
    table = data["runs"][run]["hwcart_seconds"]
    blank = tm.model_document({}, {})
    out = []
    for order, cells in table.items():
        for cell, seconds in cells.items():
            prediction = tm.predict(blank, layout_args(data, run, cell, order), coefficients=True)
            rows = [r["coefficients"] for r in tm.layout(prediction, "hw")["rows"]]
            out.append(tm.Measurement(f"{run} {order} {cell}", seconds * 100.0, rows))
    return out


def fit_model(data: dict | None = None) -> dict:
    """The Betzy model: on-node parameters fitted to the single-node table, the network's from
    HDR100. One placement on one node cannot tell the levels' per-message costs apart, nor a
    socket's shared memory from a rank's own copies: one value per message on the node, and the
    bytes' cost on the socket's memory (shared by its cores)."""
    data = data or published()
    fixed, sources = network_parameters(data)
    measurements = single_node_measurements(data)
    per_message = [f"{level}.us_per_message" for level in tm.on_node_levels()]
    free = {"on-node.us_per_message": per_message,
            "socket.memory_ns_per_byte": ["socket.memory_ns_per_byte"]}
    values = tm.fit(measurements, free, fixed)
    fitted = "fit to the Betzy allcores single-node table (benchmark_mpi_comm, Open MPI, " \
             "32 cells: halo 1,2,4,5 x fields 1,2,4,8 x XYZ,ZYX)"
    for group in free.values():
        sources.update({name: fitted for name in group})
    doc = tm.model_document({k: v for k, v in values.items() if v > 0}, sources)
    doc["machine"] = data["machine"]
    doc["citation"] = data["citation"]
    doc["calibration"] = [{"label": m.label, "measured_us": m.us,
                           "fitted_us": max(tm.row_value(r, values) for r in m.rows)}
                          for m in measurements]
    return doc


def _published_cell(runs: dict, key: str, order: str, cell: str) -> float | None:
    return runs.get(key, {}).get(order, {}).get(cell)


def check(model: dict, data: dict | None = None,
          runs: tuple[str, ...] = ("halfcores_27_nodes", "allcores_27_nodes")) -> list[dict]:
    """Predicted hwcart and MPICart times per cell and order beside the published ones."""
    data = data or published()
    out = []
    for run in runs:
        r = data["runs"][run]
        for order in ORDERS:
            for cell in CELLS:
                p = tm.predict(model, layout_args(data, run, cell, order))
                hw, cart = tm.layout(p, "hw")["us"], tm.layout(p, "mpicart")["us"]
                pub_hw = _published_cell(r, "hwcart_seconds", order, cell)
                pub_cart = _published_cell(r, "mpicart_seconds", order, cell)
                row = {"run": run, "order": order, "cell": cell, "hw_s": hw / 100,
                       "mpicart_s": cart / 100, "ratio": cart / hw, "published_hw_s": pub_hw,
                       "published_mpicart_s": pub_cart, "published_ratio": None}
                if pub_hw and pub_cart:
                    row["published_ratio"] = pub_cart / pub_hw
                    row["ratio_error"] = row["ratio"] / row["published_ratio"] - 1
                out.append(row)
    return out


def _num(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def _times(row: dict, kind: str) -> str:
    """'predicted / published (xfactor)' of one layout, the factor where a time is published."""
    predicted, published_s = row[f"{kind}_s"], row[f"published_{kind}_s"]
    factor = f" (x{predicted / published_s:.2f})" if published_s else ""
    return f"{predicted:.3f} / {_num(published_s, '.3f')}{factor}"


def check_table(rows: list[dict]) -> str:
    """The comparison as GitHub markdown: a row per run, order and cell."""
    lines = ["| run | order | cell | hwcart s (pred / pub) | MPICart s (pred / pub) "
             "| MPICart/hwcart pred | published | error |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['run']} | {r['order']} | {r['cell']} | {_times(r, 'hw')} | "
            f"{_times(r, 'mpicart')} | "
            f"{r['ratio']:.3f} | {_num(r['published_ratio'], '.3f')} | "
            f"{_num(r.get('ratio_error') and 100 * r['ratio_error'], '+.1f')}"
            f"{'' if r.get('ratio_error') is None else ' %'} |")
    return "\n".join(lines + [""] + check_summary(rows))


def check_summary(rows: list[dict]) -> list[str]:
    """Per run: how many published ratios the prediction meets within 20 %, and the factor
    between predicted and published times (the measure of the absolute error)."""
    out = []
    for run in dict.fromkeys(r["run"] for r in rows):
        mine = [r for r in rows if r["run"] == run]
        errors = [r["ratio_error"] for r in mine if r.get("ratio_error") is not None]
        factors = [r[f"{k}_s"] / r[f"published_{k}_s"] for r in mine for k in ("hw", "mpicart")
                   if r[f"published_{k}_s"]]
        met = sum(abs(e) < 0.20 for e in errors)
        out.append(f"{run}: MPICart/hwcart within 20 % of the published ratio in {met} of "
                   f"{len(errors)} cells; predicted/published times x{min(factors):.2f}-"
                   f"x{max(factors):.2f} ({len(factors)} published times)")
    return out


def published_points(rows: list[dict]) -> list[tuple[float, float, str]]:
    """(published, predicted, label) in µs per exchange for every published time of the check."""
    points = []
    for r in rows:
        for kind in ("hw", "mpicart"):
            published_s = r[f"published_{kind}_s"]
            if published_s:
                points.append((published_s * 100, r[f"{kind}_s"] * 100,
                               f"{r['run']} {r['order']} {r['cell']} {kind}"))
    return points
