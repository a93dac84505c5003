"""Which sweep, run entry and repetition a record belongs to: its coordinates, the identity a
resumed sweep finds it again by, and the stamps every record of a sweep carries. Below the spec:
`plan` and `inv` are a spec.Plan and one of its spec.Invocation entries."""
from __future__ import annotations

import datetime
import json
import re
from typing import Any

SWEEP_TOOL = "halox-sweep"
PEER_TOOL = "halox-peer"  # a peer program's run (peers.py)
RECORD_SCHEMA_VERSION = 1


def timestamp() -> str:
    """The UTC time a record is stamped with."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def settings_identity(words: list[str] | tuple[str, ...]) -> tuple:
    """The recorded settings of an invocation as a key that does not depend on the order of its
    options (`--a 1 --b 2` is `--b 2 --a 1`), so that reordering a spec's [bench] table or moving
    a key into it does not make a resumed sweep run again. The words before the first option
    keep their place; an option given twice keeps the order, where it decides which one wins."""
    def is_option(word: str) -> bool:
        return word.startswith("-") and not re.fullmatch(r"-[0-9.eE+-]+", word)

    lead: list[str] = []
    groups: list[tuple[str, ...]] = []
    for word in words:
        if is_option(word):
            groups.append((word,))
        elif groups:
            groups[-1] += (word,)
        else:
            lead.append(word)
    names = [g[0] for g in groups]
    if len(set(names)) < len(names):
        return tuple(words)
    return tuple(lead) + tuple(sorted(groups))


def settings_of(plan, inv) -> list[str]:
    """What, besides the coordinates, must be equal for a record to count as this invocation's:
    the ranks and the program's options (without the output file, and - for a program that
    writes a record per configuration - without the matrix lists, which the records name)."""
    words = [f"ranks={inv.ranks}", plan.program.name]
    if not plan.program.per_configuration:
        for key, values in inv.lists.items():
            words += [f"--{key.replace('_', '-')}", ",".join(values)]
    return words + inv.other_args


def coordinates(plan, inv) -> dict[str, Any]:
    out = {"name": plan.name, "mpi": plan.mpi, "run": inv.name, "repeat": inv.repeat + 1}
    if inv.point:
        out["point"] = inv.point
    out["settings"] = settings_of(plan, inv)
    return out


def identity(coords: dict) -> tuple:
    return (coords.get("name"), coords.get("mpi"), coords.get("run"), coords.get("repeat"),
            json.dumps(coords.get("point") or {}, sort_keys=True),
            settings_identity(coords.get("settings") or ()))
