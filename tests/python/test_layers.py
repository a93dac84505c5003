"""The library's layers point down only, and its public headers are the concepts.

Layers, lowest first: common < topology, grid < decomposition < plan < pack <
memory < transport < exchange < capi (the C API). Every `#include "..."` under include/ and src/
is read; an include from a lower layer of a higher one fails, as does a public
header that includes a private one, the router and the registry including each
other, or a built-in transport's name written as a string outside the registry.
"""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ["common", "topology|grid", "decomposition", "plan", "pack", "memory", "transport", "exchange",
          "capi"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path: str) -> int:
    """The layer of a header or source, by its path below include/ or src/."""
    p = path.removeprefix("include/").removeprefix("src/").removeprefix("halox/")
    first = re.split(r"[/.]", p)[0]
    # device/: device memory and the device transports (CUDA), at the transports' level.
    names = {"field_memory": "memory", "options_json": "exchange", "device": "transport",
             "exchange_profile": "exchange", "halox": "capi"}
    first = names.get(first, first)
    for rank, names_of_layer in enumerate(LAYERS):
        if first in names_of_layer.split("|"):
            return rank
    raise AssertionError(f"{path}: no layer for '{first}' (add it to LAYERS)")


def library_files():
    for top in ("include", "src"):
        for f in sorted((ROOT / top).rglob("*")):
            if f.suffix in (".hpp", ".cpp", ".cu", ".cuh") and f.is_file():
                yield f.relative_to(ROOT).as_posix(), f.read_text(errors="replace")


def resolve(included: str) -> str:
    """An include as written -> the path it names (public: halox/..., private: src/...)."""
    if included.startswith("halox/"):
        return "include/" + included
    return "src/" + included


def test_every_library_file_has_a_layer():
    for path, _ in library_files():
        layer_of(path)


def test_includes_point_down_only():
    upward = []
    for path, text in library_files():
        mine = layer_of(path)
        for included in INCLUDE.findall(text):
            target = resolve(included)
            if not (ROOT / target).exists():
                continue  # a neighbour included by its bare name
            if layer_of(target) > mine:
                upward.append(f"{path} ({LAYERS[mine]}) includes {included} ({LAYERS[layer_of(target)]})")
    assert not upward, "includes that point up:\n" + "\n".join(upward)


def test_public_headers_include_public_headers_only():
    private = []
    for path, text in library_files():
        if path.startswith("include/"):
            private += [f"{path}: {i}" for i in INCLUDE.findall(text) if not i.startswith("halox/")]
    assert not private, "public headers that include private ones:\n" + "\n".join(private)


def test_router_and_registry_do_not_include_each_other():
    router = [t for p, t in library_files() if "/router." in p]
    assert router, "the router's files are missing"
    for text in router:
        assert "halox/transport/registry.hpp" not in INCLUDE.findall(text)


def test_transport_implementations_are_not_public():
    public = sorted(p.name for p in (ROOT / "include/halox/transport").glob("*.hpp"))
    assert public == ["registry.hpp", "tuning.hpp", "wait_policy.hpp"], public


def built_in_names():
    names_hpp = (ROOT / "src/transport/core/names.hpp").read_text()
    names = re.findall(r'=\s*"([a-z0-9-]+)"', names_hpp)
    assert "mpi-p2p" in names and "shm" in names, names
    return names


@pytest.mark.parametrize("name", built_in_names())
def test_transport_names_are_written_in_the_registry_only(name):
    literal = re.compile(r'"' + re.escape(name) + r'"')
    comment = re.compile(r"//.*$", re.M)  # examples in comments are documentation
    found = [path for path, text in library_files()
             if literal.search(comment.sub("", text)) and not path.endswith("core/names.hpp")]
    assert not found, f'"{name}" written outside src/transport/core/names.hpp: {found}'
