"""The values of a sweep spec: each TOML value checked against the kind of option it sets, and
the command-line words it becomes; a problem is a SpecError of one line."""
from __future__ import annotations

import difflib
import re
from typing import Any

from . import launch


class SpecError(Exception):
    """A bad spec; the message is one line."""


def type_name(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "a table"}.get(type(value), type(value).__name__)


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


CHOICES = {"timing": ("throughput", "latency", "compute"),
           "order": ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"),
           "layout": ("contiguous", "strided"),
           "launcher": launch.LAUNCHERS,
           "bind": launch.BINDINGS}


def _check_int(where: str, kind: str, v: Any) -> None:
    if not is_int(v):
        raise SpecError(f"{where} must be an integer, not {type_name(v)} ({v!r})")
    if kind == "pos_int" and v <= 0:
        raise SpecError(f"{where} must be positive, got {v}")
    if kind == "nonneg_int" and v < 0:
        raise SpecError(f"{where} must not be negative, got {v}")


def _check_number(where: str, kind: str, v: Any) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise SpecError(f"{where} must be a number, not {type_name(v)} ({v!r})")
    if kind == "pos_number" and v <= 0:
        raise SpecError(f"{where} must be positive, got {v}")
    if kind == "nonneg_number" and v < 0:
        raise SpecError(f"{where} must not be negative, got {v}")


def _check_bool(where: str, kind: str, v: Any) -> None:
    if not isinstance(v, bool):
        raise SpecError(f"{where} must be true or false, not {type_name(v)} ({v!r})")


def _check_size(where: str, kind: str, v: Any) -> None:
    """A byte count, or text with a unit ("64KiB") that the program itself parses."""
    if is_int(v):
        if v < 0:
            raise SpecError(f"{where} must not be negative, got {v}")
    elif not isinstance(v, str) or not re.fullmatch(r"\d+\s*[A-Za-z]{0,3}", v):
        raise SpecError(f"{where} must be a size in bytes (4194304 or \"4MiB\"), got {v!r}")


def _check_rounds(where: str, kind: str, v: Any) -> None:
    """halox-bench --rounds: a count, or auto (until the ratios settle)."""
    if v != "auto":
        _check_int(where, "pos_int", v) if is_int(v) else _fail_rounds(where, v)


def _check_text(where: str, kind: str, v: Any, choices: tuple[str, ...]) -> None:
    if not isinstance(v, str):
        raise SpecError(f"{where} must be a string, not {type_name(v)} ({v!r})")
    if not v:
        raise SpecError(f"{where} must not be empty")
    allowed = choices or CHOICES.get(kind)
    if allowed and v not in allowed:
        raise SpecError(f"{where} must be one of {', '.join(allowed)}, got {v!r}")
    if kind == "variant" and v.count("/") != 2:
        raise SpecError(f"{where} must be transport/algorithm/grouping, got {v!r}")


_CHECKS = {"rounds": _check_rounds, "int": _check_int, "pos_int": _check_int,
           "nonneg_int": _check_int, "number": _check_number, "pos_number": _check_number,
           "nonneg_number": _check_number, "bool": _check_bool, "negatable": _check_bool,
           "size": _check_size}


def check_scalar(where: str, kind: str, v: Any, choices: tuple[str, ...] = ()) -> None:
    """Raises SpecError when v is not a value of this kind (any other kind: text, from
    `choices` or the kind's CHOICES where given)."""
    check = _CHECKS.get(kind)
    if check:
        check(where, kind, v)
    else:
        _check_text(where, kind, v, choices)


def _fail_rounds(where: str, v: Any) -> None:
    raise SpecError(f"{where} must be a positive integer or \"auto\", got {v!r}")


def option_words(where: str, kind: str, v: Any, choices: tuple[str, ...] = ()) -> list[str]:
    """Checks an option value and returns its command-line words (after the option)."""
    if kind.startswith(("xyz_", "xy_")):
        n = 3 if kind.startswith("xyz_") else 2
        shape = "[X, Y, Z]" if n == 3 else "[X, Y]"
        if not isinstance(v, list) or len(v) != n or not all(is_int(x) for x in v):
            raise SpecError(f"{where} must be a list of {n} integers {shape}, got {v!r}")
        for x in v:
            if kind.endswith("_pos") and x <= 0:
                raise SpecError(f"{where} entries must be positive, got {v!r}")
            if kind.endswith(("_nonneg", "_01")) and x < 0:
                raise SpecError(f"{where} entries must not be negative, got {v!r}")
            if kind.endswith("_01") and x > 1:
                raise SpecError(f"{where} entries must be 0 or 1, got {v!r}")
            if choices and str(x) not in choices:
                raise SpecError(f"{where} entries must be one of {', '.join(choices)}, got {v!r}")
        return [str(x) for x in v]
    check_scalar(where, kind, v, choices)
    if kind in ("bool", "negatable"):
        return []
    return [repr(v) if isinstance(v, float) else str(v)]


def normalise_keys(table: dict, where: str) -> dict:
    out = {}
    for key, value in table.items():
        norm = key.replace("-", "_")
        if norm in out:
            raise SpecError(f"{where}: key '{key}' is given twice")
        out[norm] = value
    return out


def unknown_key(where: str, key: str, known) -> SpecError:
    what = f"key '{where}.{key}'" if where else f"table '{key}'"
    close = difflib.get_close_matches(key, list(known), n=1)
    hint = f"did you mean '{close[0]}'?" if close else f"known: {', '.join(sorted(known))}"
    return SpecError(f"unknown {what} ({hint})")


def need_table(where: str, value: Any) -> dict:
    if not isinstance(value, dict):
        raise SpecError(f"{where} must be a table, not {type_name(value)}")
    return value


def env_table(where: str, value: Any) -> dict[str, str]:
    table = need_table(where, value)
    env = {}
    for k, v in table.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
            raise SpecError(f"{where}: '{k}' is not an environment variable name")
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise SpecError(f"{where}.{k} must be a string, not {type_name(v)}")
        env[k] = str(v)
    return env


def string_list(where: str, value: Any) -> list[str]:
    if not isinstance(value, list) or any(not isinstance(a, (str, int, float)) or
                                          isinstance(a, bool) for a in value):
        raise SpecError(f"{where} must be a list of strings, got {value!r}")
    return [str(a) for a in value]


def list_words(where: str, kind: str, value: Any) -> list[str]:
    values = value if isinstance(value, list) else [value]
    if not values:
        raise SpecError(f"{where} must not be empty")
    words = []
    for v in values:
        check_scalar(where, kind, v)
        if isinstance(v, str) and "," in v:
            raise SpecError(f"{where}: write lists as TOML lists, not '{v}'")
        words.append(str(v))
    return words
