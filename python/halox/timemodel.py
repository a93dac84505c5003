"""The time model per placement: model files, calibration by least squares, the Betzy check.

The formula is halox-topo's (include/halox/programs/decomposition/time_model.hpp): the time of
a rank is a sum of terms, each a count from the exchange's plan (messages or bytes over a level,
the bytes of the ranks sharing a node's port or a socket's memory, the bytes a rank copies) times
one parameter, and the slowest rank's time is the exchange's. `halox-topo predict --json
--coefficients` lists each layout's distinct rows of those counts (already multiplied out per
parameter); this module only solves for the parameters that make the rows' maxima match
measured times (a row times the parameters is all it computes), and predictions come from
halox-topo.

A model file is JSON: {"parameters": {name: {"value": v, "source": "where it came from"}},
"calibration": [...measured and fitted cells...]}; a parameter of 0 (or absent) drops its term.
"""
from __future__ import annotations

import functools
import json
import os
import pathlib
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field

import numpy as np

DATA = pathlib.Path(__file__).resolve().parent / "data" / "betzy"
BETZY_PUBLISHED = DATA / "published.json"
BETZY_MODEL = DATA / "model.json"



class ModelError(RuntimeError):
    """A model or calibration input that cannot be used; the message is one line."""


def topo_program() -> str:
    """halox-topo of HALOX_BUILD_DIR, else of a checkout's build (HALOX_ROOT, the one this
    package lives in, the current folder; Open MPI's, then MPICH's), else on PATH. An installed
    package lives outside the checkout, so the current folder is tried too."""
    builds = [os.environ.get("HALOX_BUILD_DIR")]
    for root in (os.environ.get("HALOX_ROOT"), pathlib.Path(__file__).resolve().parents[2],
                 pathlib.Path.cwd()):
        if root:
            builds += [pathlib.Path(root) / "build" / mpi for mpi in ("openmpi", "mpich")]
    for build in builds:
        if build and (pathlib.Path(build) / "halox-topo").is_file():
            return str(pathlib.Path(build) / "halox-topo")
    found = shutil.which("halox-topo")
    if not found:
        raise ModelError("halox-topo not found: set HALOX_BUILD_DIR (or HALOX_ROOT), run from the "
                         "checkout, or put it on PATH")
    return found


def model_document(values: dict[str, float], sources: dict[str, str]) -> dict:
    return {"parameters": {name: {"value": float(v), "source": sources.get(name, "")}
                           for name, v in values.items()}}


def load_model(path: str | pathlib.Path) -> dict:
    try:
        doc = json.loads(pathlib.Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ModelError(f"cannot read the model file {path}: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("parameters"), dict):
        raise ModelError(f"the model file {path} has no \"parameters\" object")
    return doc


def predict(model: dict, args: list[str], coefficients: bool = False) -> dict:
    """halox-topo predict's JSON for the layout options `args` under `model`."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(model, f)
        path = f.name
    try:
        cmd = [topo_program(), "predict", "--model", path, "--json", *args]
        if coefficients:
            cmd.append("--coefficients")
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    finally:
        os.unlink(path)
    if run.returncode != 0:
        lines = [l for l in (run.stderr + run.stdout).splitlines() if "error" in l]
        raise ModelError(lines[-1] if lines else f"halox-topo failed ({run.returncode})")
    return json.loads(run.stdout)


@functools.cache
def on_node_levels() -> tuple[str, ...]:
    """The time model's levels within a node, bottom-up (messages to oneself first), as
    halox-topo names them in its parameters."""
    return tuple(predict(model_document({}, {}), [])["on_node_levels"])


def layout(prediction: dict, kind: str) -> dict:
    """The layout of a prediction whose name starts with kind (mpicart, hw, auto)."""
    for row in prediction["layouts"]:
        if row["name"].split()[0] == kind:
            return row
    raise ModelError(f"no {kind} layout in the prediction")


@dataclass
class Measurement:
    """A measured time (µs per exchange) and the coefficient rows of its layout."""
    label: str
    us: float
    rows: list[dict[str, float]] = field(default_factory=list)


def nnls(a: np.ndarray, b: np.ndarray, iterations: int = 200) -> np.ndarray:
    """Non-negative least squares, min |a x - b| with x >= 0 (Lawson and Hanson's active set)."""
    n = a.shape[1]
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    for _ in range(iterations):
        gradient = a.T @ (b - a @ x)
        if passive.all() or gradient[~passive].max(initial=0) <= 1e-12 * max(1.0, abs(b).max()):
            break
        passive[np.argmax(np.where(passive, -np.inf, gradient))] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if (z[passive] > 0).all():
                x = z
                break
            shrinking = passive & (z <= 0)
            alpha = np.min(x[shrinking] / (x[shrinking] - z[shrinking]))
            x = x + alpha * (z - x)
            passive &= x > 1e-15
    return x


def row_value(row: dict[str, float], values: dict[str, float]) -> float:
    return sum(c * values.get(name, 0.0) for name, c in row.items())


def _active_rows(measurements: list[Measurement], values: dict[str, float]) -> list[dict]:
    """Each measurement's slowest row under the current values (the max of the model)."""
    return [max(m.rows, key=lambda r: row_value(r, values)) for m in measurements]


def fit(measurements: list[Measurement], free: dict[str, list[str]],
        fixed: dict[str, float]) -> dict[str, float]:
    """Values of the free parameters (each name ties the model parameters it lists to one value)
    that minimise the relative error over the measurements, the fixed ones held; alternates
    between choosing each measurement's slowest row and a non-negative least-squares fit."""
    if not measurements:
        raise ModelError("no measurements to fit")
    values = dict(fixed)
    for group in free.values():
        values.update({name: 1.0 for name in group})
    chosen: list[dict] | None = None
    for _ in range(20):
        active = _active_rows(measurements, values)
        if active == chosen:
            break
        chosen = active
        a = np.array([[sum(row.get(n, 0.0) for n in group) for group in free.values()]
                      for row in active]) / np.array([[m.us] for m in measurements])
        b = np.array([1.0 - row_value(row, fixed) / m.us for row, m in zip(active, measurements)])
        for (_, group), v in zip(free.items(), nnls(a, b)):
            values.update({name: float(v) for name in group})
    return values
