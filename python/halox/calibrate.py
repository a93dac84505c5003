"""`halox calibrate`: the time model's parameters fitted to halox-bench records of this machine.

Each record (a --mpicart or level-grid run: one node, or real hosts, or --ranks-per-node groups)
is laid out again by halox-topo on the topology it ran on, which lists the coefficient rows of
the model for its layout; the free parameters are then fitted to the records' median times
(timemodel.fit).
A base model holds the parameters that are not fitted (a network entered by hand, or fitted
earlier from a two-node run).
"""
from __future__ import annotations

import json
import pathlib
from typing import Iterable

from . import timemodel as tm
from .records import grouping_key

ELEMENT_SIZE = {"float": 4, "double": 8}

# The groups a calibration can fit.
ON_NODE_GROUPS = ["self.us_per_message", "on-node.us_per_message", "socket.memory_ns_per_byte",
                  "rank.copy_ns_per_byte"]
NETWORK_GROUPS = ["node.us_per_message", "node.injection_ns_per_byte"]


def groups() -> dict[str, list[str]]:
    """Each group's parameters, which it ties to one value: on-node, every level of the node
    above messages to oneself (halox-topo's levels); the others, the parameter of its name."""
    own, *others = tm.on_node_levels()
    tied = {"self.us_per_message": [f"{own}.us_per_message"],
            "on-node.us_per_message": [f"{level}.us_per_message" for level in others]}
    return {g: tied.get(g, [g]) for g in ON_NODE_GROUPS + NETWORK_GROUPS}


def nodes_of(record: dict) -> int:
    """Nodes of a run: --ranks-per-node groups, else the hosts of its rank map."""
    per_node = record["config"].get("ranks_per_node", 0) or 0
    if per_node > 0:
        return record["ranks"] // per_node
    return len({r["host"] for r in record["rank_map"]})


def layout_options(record: dict) -> tuple[str, list[str]]:
    """The halox-topo layout (mpicart or hw) of a record and the options that rebuild it."""
    d = record["decomposition"]
    if d.get("kind") == "cart":
        return "mpicart", ["--mpicart", *map(str, d["dims"])]
    if d.get("kind") == "hw" and d.get("level_grids"):
        return "hw", [*d["level_grids"].split(), "--order", d["order"],
                      "--mpicart", *map(str, d["dims"])]
    raise tm.ModelError(f"run {record.get('run_id')}: a {d.get('kind')} record without its "
                        "level grids cannot be laid out again (--mpicart or level-grid runs)")


def topo_args(record: dict, topology: str | None) -> list[str]:
    """halox-topo's options that lay the record's ranks out again (core binding)."""
    d, c = record["decomposition"], record["config"]
    if c["type"] not in ELEMENT_SIZE or len(set(c["halo_lo"] + c["halo_hi"])) != 1:
        raise tm.ModelError(f"run {record.get('run_id')}: needs a float or double exchange with "
                            "one halo width")
    nodes = nodes_of(record)
    args = ["--nodes", str(nodes), "--ranks-per-node", str(record["ranks"] // nodes),
            "--assume-binding", "core", *layout_options(record)[1],
            "--periodic", *("1" if p else "0" for p in d["periodic"]),
            "--domain", *map(str, c["domain"]), "--halo", str(c["halo"]),
            "--fields", str(c["nfields"]), "--element-size", str(ELEMENT_SIZE[c["type"]]),
            "--algorithm", c["algorithm"]]
    return (["--topology", topology] if topology else []) + args


def label(record: dict) -> str:
    c, d = record["config"], record["decomposition"]
    dims = "x".join(map(str, d["dims"]))
    return (f"{record['ranks']} ranks on {nodes_of(record)} node(s) {dims} {c['algorithm']} "
            f"h{c['halo']}f{c['nfields']} {c['type']} {c['transport']}/{c[grouping_key(c)]}")


def measurements(records: Iterable[dict], topology: str | None) -> list[tm.Measurement]:
    blank = tm.model_document({}, {})
    out = []
    for r in records:
        prediction = tm.predict(blank, topo_args(r, topology), coefficients=True)
        kind = layout_options(r)[0]
        rows = [row["coefficients"] for row in tm.layout(prediction, kind)["rows"]]
        out.append(tm.Measurement(label(r), r["time_per_exchange_s"]["median"] * 1e6, rows))
    return out


def read_records(paths: Iterable[str]) -> list[dict]:
    out = []
    for path in paths:
        try:
            lines = pathlib.Path(path).read_text().splitlines()
        except OSError as e:
            raise tm.ModelError(f"cannot read {path}: {e.strerror}") from None
        for n, line in enumerate(lines, 1):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                raise tm.ModelError(f"{path}:{n}: not a JSON object") from None
            if obj.get("tool") == "halox-bench":
                out.append(obj)
    if not out:
        raise tm.ModelError("no halox-bench records in " + ", ".join(paths))
    return out


def calibrate(records: list[dict], topology: str | None, free: list[str],
              base: dict | None = None) -> dict:
    """A model document: the free groups fitted, the base model's other parameters kept."""
    known = ON_NODE_GROUPS + NETWORK_GROUPS
    unknown = [g for g in free if g not in known]
    if unknown:
        raise tm.ModelError(f"unknown parameter group {unknown[0]} (known: {', '.join(known)})")
    parameters = groups()
    fixed_doc = (base or {}).get("parameters", {})
    tied = {name for g in free for name in parameters[g]}
    fixed = {k: v["value"] for k, v in fixed_doc.items() if k not in tied}
    sources = {k: v.get("source", "") for k, v in fixed_doc.items() if k not in tied}
    ms = measurements(records, topology)
    values = tm.fit(ms, {g: parameters[g] for g in free}, fixed)
    where = f"fit to {len(ms)} halox-bench runs on {topology or 'this machine'}"
    sources.update({name: where for name in tied})
    doc = tm.model_document({k: v for k, v in values.items() if v > 0}, sources)
    doc["calibration"] = [{"label": m.label, "measured_us": m.us,
                           "fitted_us": max(tm.row_value(r, values) for r in m.rows)}
                          for m in ms]
    return doc


def default_groups(records: list[dict]) -> list[str]:
    """The on-node groups, and the network's when a record spans several nodes."""
    several = any(nodes_of(r) > 1 for r in records)
    return ON_NODE_GROUPS + (NETWORK_GROUPS if several else [])


def summary(doc: dict) -> str:
    """The parameters with their sources, and each calibration cell measured vs fitted."""
    lines = ["parameters:"]
    for name, p in doc["parameters"].items():
        lines.append(f"  {name:<28} {p['value']:>10.4g}  {p.get('source', '')}")
    cells = doc.get("calibration", [])
    if cells:
        lines.append(f"calibration ({len(cells)} cells, us per exchange): measured, fitted")
        lines += [f"  {c['label']:<60} {c['measured_us']:>10.1f} {c['fitted_us']:>10.1f}"
                  for c in cells]
    return "\n".join(lines)
