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

ELEMENT_SIZE = {"float": 4, "double": 8}

# The groups a calibration can fit; a group ties its parameters to one value.
GROUPS: dict[str, list[str]] = {
    "self.us_per_message": ["self.us_per_message"],
    "on-node.us_per_message": [f"{l}.us_per_message" for l in tm.ON_NODE_LEVELS[1:]],
    "socket.memory_ns_per_byte": ["socket.memory_ns_per_byte"],
    "rank.copy_ns_per_byte": ["rank.copy_ns_per_byte"],
    "node.us_per_message": ["node.us_per_message"],
    "node.injection_ns_per_byte": ["node.injection_ns_per_byte"],
}
ON_NODE_GROUPS = ["self.us_per_message", "on-node.us_per_message", "socket.memory_ns_per_byte",
                  "rank.copy_ns_per_byte"]
NETWORK_GROUPS = ["node.us_per_message", "node.injection_ns_per_byte"]


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
            f"h{c['halo']}f{c['nfields']} {c['type']} {c['transport']}/{c['fields']}")


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
    unknown = [g for g in free if g not in GROUPS]
    if unknown:
        raise tm.ModelError(f"unknown parameter group {unknown[0]} (known: {', '.join(GROUPS)})")
    fixed_doc = (base or {}).get("parameters", {})
    tied = {name for g in free for name in GROUPS[g]}
    fixed = {k: v["value"] for k, v in fixed_doc.items() if k not in tied}
    sources = {k: v.get("source", "") for k, v in fixed_doc.items() if k not in tied}
    ms = measurements(records, topology)
    values = tm.fit(ms, {g: GROUPS[g] for g in free}, fixed)
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
