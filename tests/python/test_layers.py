"""The library's layers point down only, and its public headers are the concepts.

Layers, lowest first: common < topology, grid < decomposition < plan < pack <
memory < transport < exchange < capi (the C API). Every `#include "..."` under
include/ and src/ is read and must name a file that exists; an include from a
lower layer of a higher one fails, as does a public header that includes a
private one, the router and the registry including each other (either way), a
transport family including another family, or a built-in transport's name
written in a string outside the registry's names.

Transport families: src/transport/<family>/ (mpi, node, ucx, cuda). They share
src/transport/core/ (the base, the registry, the router) and
src/transport/common/ (the machinery several families use: message buffers,
the outbox schedule of single-copy transports, node publication and signals).
Only the registry assembles the families.
"""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

# Its result does not depend on the MPI library (CI runs it under one: docs/testing.md).
pytestmark = pytest.mark.any_mpi

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ["common", "topology|grid", "decomposition", "plan", "pack", "memory", "transport", "exchange",
          "capi"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_named(name: str):
    """The rank of the layer called `name`, else None."""
    for rank, names_of_layer in enumerate(LAYERS):
        if name in names_of_layer.split("|"):
            return rank
    return None


def layer_of(path: str) -> int:
    """The layer of a header or source, from where it lives: its folder below include/halox/ or
    src/ (the tiers' folders aside); for a public header outside a layer's folder, the folder of
    the source of its name (field.hpp: src/plan/field.cpp), else the lowest layer that includes
    it (halox.h: the C API's sources)."""
    p = path.removeprefix("include/").removeprefix("src/").removeprefix("halox/")
    p = p.removeprefix("extend/").removeprefix("programs/")  # the tiers (architecture.md)
    first = re.split(r"[/.]", p)[0]
    if (rank := layer_named(first)) is not None:
        return rank
    assert path.startswith("include/"), f"{path}: no layer for '{first}' (add it to LAYERS)"
    stem = Path(path).stem
    homes = [layer_named(f.relative_to(ROOT / "src").parts[0])
             for f in (ROOT / "src").rglob(f"{stem}.c*")]
    if homes:
        return min(homes)
    users = [layer_of(by) for by, _, target in includes() if target == path and by != path]
    assert users, f"{path}: no source of its name and nobody includes it: no layer"
    return min(users)


def library_files():
    for top in ("include", "src"):
        for f in sorted((ROOT / top).rglob("*")):
            if f.suffix in (".hpp", ".cpp", ".cu", ".cuh") and f.is_file():
                yield f.relative_to(ROOT).as_posix(), f.read_text(errors="replace")


def resolve(included: str, by: str) -> str:
    """An include as written -> the path it names (public: halox/..., private:
    src/..., or a neighbour of the including file by its bare name)."""
    if included.startswith("halox/"):
        return "include/" + included
    if "/" not in included:
        return (Path(by).parent / included).as_posix()
    return "src/" + included


def includes():
    """(including file, include as written, the file it names) for every include."""
    for path, text in library_files():
        for included in INCLUDE.findall(text):
            yield path, included, resolve(included, path)


def test_every_include_names_a_file():
    unresolved = [f"{path}: {included}" for path, included, target in includes()
                  if not (ROOT / target).is_file()]
    assert not unresolved, "includes that name no file:\n" + "\n".join(unresolved)


def test_every_library_file_has_a_layer():
    for path, _ in library_files():
        layer_of(path)


def test_includes_point_down_only():
    upward = []
    for path, included, target in includes():
        mine = layer_of(path)
        if layer_of(target) > mine:
            upward.append(f"{path} ({LAYERS[mine]}) includes {included} ({LAYERS[layer_of(target)]})")
    assert not upward, "includes that point up:\n" + "\n".join(upward)


def test_public_headers_include_public_headers_only():
    private = []
    for path, text in library_files():
        if path.startswith("include/"):
            private += [f"{path}: {i}" for i in INCLUDE.findall(text) if not i.startswith("halox/")]
    assert not private, "public headers that include private ones:\n" + "\n".join(private)


SHARED = ("core", "common")  # what every family may include
ASSEMBLER = "src/transport/core/registry.cpp"  # the one file that includes every family


def family_of(path: str):
    """The transport family of a file below src/transport/, else None."""
    m = re.match(r"src/transport/([^/]+)/", path)
    return m.group(1) if m else None


def families():
    return sorted(d.name for d in (ROOT / "src/transport").iterdir()
                  if d.is_dir() and d.name not in SHARED)


def test_the_families_are_found():
    assert {"mpi", "node", "ucx", "cuda"} <= set(families()), families()
    assert not (ROOT / "src/device").exists(), "the CUDA transports live in src/transport/cuda/"


def test_transport_families_include_no_other_family():
    crossing = []
    for path, included, target in includes():
        mine, theirs = family_of(path), family_of(target)
        if theirs is None or theirs in SHARED or theirs == mine or path == ASSEMBLER:
            continue
        crossing.append(f"{path} ({mine or 'outside the transports'}) includes {included} ({theirs})")
    assert not crossing, "includes across transport families:\n" + "\n".join(crossing)


def is_router(path: str) -> bool:
    return path in ("src/transport/core/router.hpp", "src/transport/core/router.cpp")


def is_registry(path: str) -> bool:
    return path in ("include/halox/extend/registry.hpp", ASSEMBLER)


@pytest.mark.parametrize("includer, included", [(is_router, is_registry), (is_registry, is_router)],
                         ids=["router-includes-registry", "registry-includes-router"])
def test_router_and_registry_do_not_include_each_other(includer, included):
    files = [p for p, _ in library_files()]
    assert sum(map(is_router, files)) == 2 and sum(map(is_registry, files)) == 2, files
    found = [f"{p} includes {i}" for p, i, t in includes() if includer(p) and included(t)]
    assert not found, found


def test_transport_implementations_are_not_public():
    public = sorted(p.name for p in (ROOT / "include/halox/transport").glob("*.hpp"))
    assert public == ["choice.hpp", "tuning.hpp"], public


def built_in_names():
    names_hpp = (ROOT / "src/transport/core/names.hpp").read_text()
    names = re.findall(r'=\s*"([a-z0-9-]+)"', names_hpp)
    assert "mpi-p2p" in names and "shm" in names, names
    return names


STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)  # examples in comments are documentation


def strings_of(text: str) -> list[str]:
    """The string literals of a C++ source, comments and includes left out."""
    return STRING.findall(INCLUDE.sub("", COMMENT.sub("", text)))


def names_in(literal: str, name: str) -> bool:
    """Whether a string literal spells the transport name as a word of its own
    ("mpi-p2p", "mpi-p2p(device)", "via mpi-p2p", but not "mpi-p2ps"). A dotted
    key ("tuning.shm.push") is a key, and "/dev/shm" a path, not the name."""
    return re.search(r"(?<![\w./-])" + re.escape(name) + r"(?![\w.-])", literal) is not None


def test_a_name_is_found_inside_a_longer_string():
    assert names_in('"mpi-p2p(device, host copies)"', "mpi-p2p")
    assert names_in('"routed by shm+mpi-p2p"', "shm")
    assert not names_in('"mpi-rma-fence"', "mpi-rma") and not names_in('"shm_open"', "shm")
    assert not names_in('"/dev/shm"', "shm") and not names_in('"tuning.shm.push"', "shm")


# The environment table's help texts (a variable's help names the transport it steers): the
# reader in the common layer, below the names, the knobs' table and the other variables'.
HELP_TEXTS = ("src/common/environment.cpp", "include/halox/transport/tuning.hpp",
              "src/exchange/environment.cpp")


@pytest.mark.parametrize("name", built_in_names())
def test_transport_names_are_written_in_the_registry_only(name):
    found = [path for path, text in library_files()
             if path not in ("src/transport/core/names.hpp", *HELP_TEXTS)
             and any(names_in(literal, name) for literal in strings_of(text))]
    assert not found, f'"{name}" written outside src/transport/core/names.hpp: {found}'


def test_every_halox_include_is_an_installed_header():
    """`halox/...` is the library's prefix only: the programs' headers are `halox_programs/...`,
    so an include of halox/X anywhere names include/halox/X."""
    assert not list((ROOT / "apps").glob("*/include/halox")), "a program's header under halox/"
    missing = []
    for top in ("include", "src", "apps", "tests", "python/src", "microbench", "examples"):
        for f in sorted((ROOT / top).rglob("*")):
            if f.suffix in (".hpp", ".cpp", ".cu", ".cuh") and f.is_file():
                for included in re.findall(r'^\s*#\s*include\s+[<"](halox/[^">]+)[">]',
                                           f.read_text(errors="replace"), re.M):
                    if not (ROOT / "include" / included).exists():
                        missing.append(f"{f.relative_to(ROOT)}: {included}")
    assert not missing, "includes of halox/ headers that are not the library's:\n" + "\n".join(missing)


# The tiers of the public surface (docs/architecture.md): what a stencil code includes, what a
# transport author adds, and what only halox's own programs use. Each may include the tiers
# before it in this list, never one after it.
TIERS = ("stencil code", "transport author", "halox programs")


def tier_of(path: str):
    """The tier of a public header (include/halox/...) or of the library's sources (src/: they
    build on the stencil code's and the transport author's tiers; only the sources of the
    programs' headers on the programs' tier), else None."""
    if path.startswith("src/"):
        # The source of a programs' header (src/decomposition/hw.cpp of
        # halox/programs/decomposition/hw.hpp) is the programs' own.
        header = "include/halox/programs/" + path.removeprefix("src/").rsplit(".", 1)[0] + ".hpp"
        return "halox programs" if (ROOT / header).is_file() else "transport author"
    if not path.startswith("include/halox/"):
        return None
    if path.startswith("include/halox/extend/"):
        return "transport author"
    if path.startswith("include/halox/programs/"):
        return "halox programs"
    return "stencil code"


def tier_crossings(edges) -> list[str]:
    """The (including file, include, file included) edges from a tier to a later one."""
    return [f"{path} ({tier_of(path)}) includes {included} ({tier_of(target)})"
            for path, included, target in edges
            if tier_of(path) and tier_of(target)
            and TIERS.index(tier_of(target)) > TIERS.index(tier_of(path))]


def test_a_tier_includes_nothing_from_the_tiers_after_it():
    assert {tier_of(p) for p, _ in library_files()} >= set(TIERS)
    found = tier_crossings(includes())
    assert not found, "includes across the tiers:\n" + "\n".join(found)


def test_a_crossing_of_the_tiers_is_found():
    planted = [("include/halox/exchange.hpp", "halox/extend/registry.hpp",
                "include/halox/extend/registry.hpp"),
               ("src/exchange/exchange.cpp", "halox/programs/decomposition/hw.hpp",
                "include/halox/programs/decomposition/hw.hpp"),
               ("include/halox/extend/pack.hpp", "halox/extend/plan.hpp",
                "include/halox/extend/plan.hpp"),
               ("src/plan/plan.cpp", "halox/extend/plan.hpp", "include/halox/extend/plan.hpp"),
               ("src/decomposition/hw.cpp", "halox/programs/decomposition/hw.hpp",
                "include/halox/programs/decomposition/hw.hpp"),
               ("include/halox/exchange.hpp", "halox/field.hpp", "include/halox/field.hpp")]
    assert len(tier_crossings(planted)) == 2


def stencil_tier(into: Path) -> Path:
    """A copy of the stencil code's tier alone, as an include folder."""
    for f in (ROOT / "include/halox").rglob("*"):
        path = f.relative_to(ROOT).as_posix()
        if f.is_file() and tier_of(path) == "stencil code":
            target = into / f.relative_to(ROOT / "include")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(f.read_bytes())
    return into


@pytest.mark.parametrize("language, compiler, source", [
    ("c", "mpicc", "examples/stencil/heat3d.c"),
    ("c++", "mpicxx", "examples/stencil/heat3d.cpp")])
def test_a_code_compiles_against_the_stencil_tier_alone(tmp_path, language, compiler, source):
    """The example heat codes, C and C++, with none of the other tiers' headers there."""
    exe = shutil.which(f"{compiler}.openmpi") or shutil.which(f"{compiler}.mpich") or \
        shutil.which(compiler)
    assert exe, f"no {compiler}"
    include = stencil_tier(tmp_path / "include")
    assert not (include / "halox/extend").exists() and (include / "halox/halox.h").is_file()
    standard = ["-std=gnu99"] if language == "c" else ["-std=c++20"]
    done = subprocess.run([exe, *standard, "-fsyntax-only", "-I", str(include),
                           str(ROOT / source)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
