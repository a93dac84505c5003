"""The docs cannot go stale: their programs build and run, their options exist,
their tables match the code.

- Every C++ and Python block of README.md and docs/*.md is a program or a
  piece of one, built against the installed package and run (on 2 ranks,
  but for Python blocks of the report tools alone, which read the tests'
  sample records as results/*.jsonl):
  a block with main() runs as it is; a block of statements runs wrapped in a
  main() (MPI_Init and MPI_Finalize around it, the imports added); a block of
  definitions only (functions, no main) is built, not run. Every C++ block of
  every page goes into one translation unit, each in a namespace of its own
  and under #line directives that name the page and line, so one compile
  checks them all. A block after `<!-- fragment: not a whole program -->` is
  skipped.
- Every `--option` the user docs name exists in the `--help` of the programs
  the page is about.
- README's transport table is what `halox-bench --list-transports` prints, and
  docs/library.md's environment table is the library's (the variables that
  are not knobs, and the knobs of halox/transport/tuning.hpp).
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, build_dir, launcher, mpi_flavor

# Its result does not depend on the MPI library (CI runs it under one: docs/testing.md).
pytestmark = pytest.mark.any_mpi

PROGRAM_DOCS = ["README.md"] + sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))
FRAGMENT_MARK = "<!-- fragment: not a whole program -->"
BLOCK = re.compile(r"^```(cpp|python)\n(.*?)^```", re.M | re.S)
MAIN = re.compile(r"\bint main\s*\(")
# A definition at the left margin: `type name(args) {` (a block of statements has none).
DEFINITION = re.compile(r"^[A-Za-z_][\w:<>,*& ]*\s[\w:]+\([^;]*\)\s*(const\s*)?\{\s*$", re.M)


class Block:
    def __init__(self, doc: str, line: int, language: str, code: str):
        self.doc, self.line, self.language, self.code = doc, line, language, code
        self.runs = bool(MAIN.search(code)) or not DEFINITION.search(code)

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def code_blocks(language: str) -> list[Block]:
    out = []
    for doc in PROGRAM_DOCS:
        text = (ROOT / doc).read_text()
        for m in BLOCK.finditer(text):
            before = text[:m.start()].rstrip().splitlines()[-1:] or [""]
            if m.group(1) == language and before[0].strip() != FRAGMENT_MARK:
                # The code's first line: the line after the fence.
                out.append(Block(doc, text[:m.start()].count("\n") + 2, language, m.group(2)))
    return out


CPP_BLOCKS = code_blocks("cpp")
PYTHON_BLOCKS = code_blocks("python")


def test_the_docs_have_programs():
    assert len(CPP_BLOCKS) >= 4 and len(PYTHON_BLOCKS) >= 2
    assert any(not b.runs for b in CPP_BLOCKS), "the GPU page's block is built, not run"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    prefix = tmp_path_factory.mktemp("prefix")
    subprocess.run(["cmake", "--install", str(build_dir()), "--prefix", str(prefix)],
                   check=True, capture_output=True, timeout=300)
    return prefix


def as_namespace(index: int, block: Block) -> str:
    """A block as namespace doc_N: statements become its main(); #line names the page."""
    lines = block.code.splitlines()
    body = [l if not l.startswith("#include") else "" for l in lines]  # hoisted, lines kept
    code = "\n".join(body)
    if block.runs and not MAIN.search(code):
        return (f"namespace doc_{index} {{\nint main(int argc, char** argv) {{\n"
                f"  MPI_Init(&argc, &argv);\n  {{\n#line {block.line} \"{block.doc}\"\n{code}\n  }}\n"
                f"  MPI_Finalize();\n  return 0;\n}}\n}}\n")
    return f"namespace doc_{index} {{\n#line {block.line} \"{block.doc}\"\n{code}\n}}\n"


def docs_program() -> str:
    """Every C++ block in one program: `program N` runs block N's main()."""
    includes = ["#include <mpi.h>", "#include <cstdlib>", "#include <string>", "#include <vector>"]
    for block in CPP_BLOCKS:
        includes += [l for l in block.code.splitlines() if l.startswith("#include")]
    parts = [as_namespace(i, b) for i, b in enumerate(CPP_BLOCKS)]
    runs = "".join(f"    case {i}: return doc_{i}::main(argc - 1, argv + 1);\n"
                   for i, b in enumerate(CPP_BLOCKS) if b.runs)
    dispatch = ("int main(int argc, char** argv) {\n  switch (argc > 1 ? std::atoi(argv[1]) : -1) {\n"
                + runs + "    default: return 2;\n  }\n}\n")
    return "\n".join(dict.fromkeys(includes)) + "\n" + "".join(parts) + dispatch


@pytest.fixture(scope="module")
def docs_binary(installed, tmp_path_factory) -> Path:
    """The docs' C++ blocks, built once against the installed package (pkg-config)."""
    folder = tmp_path_factory.mktemp("docs")
    source = folder / "docs_program.cpp"
    source.write_text(docs_program())
    pc_dirs = [str(p) for p in installed.glob("lib*/pkgconfig")] + \
        [str(p) for p in installed.glob("lib/*/pkgconfig")]
    env = dict(os.environ, PKG_CONFIG_PATH=":".join(pc_dirs))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "halox"], env=env, check=True,
                           capture_output=True, text=True).stdout.split()
    compiler = shutil.which(f"mpicxx.{mpi_flavor()}") or "mpicxx"
    built = subprocess.run([compiler, "-std=c++20", "-O0", "-Wall", str(source), *flags, "-o",
                            str(folder / "docs_program")], capture_output=True, text=True,
                           timeout=300)
    assert built.returncode == 0, built.stderr[-4000:]
    return folder / "docs_program"


@pytest.mark.parametrize("index", [pytest.param(i, id=b.id) for i, b in enumerate(CPP_BLOCKS)])
def test_cpp_blocks_build_against_the_installed_package_and_run(index, docs_binary):
    if not CPP_BLOCKS[index].runs:
        return  # definitions only: built with the others
    run = subprocess.run(launcher(2) + [str(docs_binary), str(index)], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]


def as_python_program(code: str) -> str:
    if re.search(r"^(import|from) halox", code, re.M):
        return code
    return "from mpi4py import MPI\nimport numpy as np\nimport halox\n" + code


def uses_mpi(code: str) -> bool:
    """Exchanges run on 2 ranks; the report tools alone, without MPI."""
    return "MPI" in as_python_program(code)


@pytest.mark.parametrize("block", [pytest.param(b, id=b.id) for b in PYTHON_BLOCKS])
def test_python_blocks_run(block, tmp_path):
    if uses_mpi(block.code):
        pytest.importorskip("halox._core", reason="the halox bindings are not installed here")
    script = tmp_path / "program.py"
    script.write_text(as_python_program(block.code))
    # Pages that read records find the tests' sample files under results/.
    (tmp_path / "results").mkdir()
    for name in ("bench.jsonl", "halo2d.jsonl", "ipc.jsonl"):
        shutil.copy(ROOT / "tests" / "python" / "data" / name, tmp_path / "results" / name)
    run = subprocess.run((launcher(2) if uses_mpi(block.code) else []) + [sys.executable, str(script)],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]


# Which programs' --help a page's options come from; options of the tools
# around them (launchers, Slurm, Docker, mount) are allowed by name.
PAGES = {
    "README.md": ["halox-bench", "halox-halo2d", "halox-ipc", "halox-topo", "halox report"],
    "docs/bench.md": ["halox-bench", "halox report"],
    "docs/library.md": ["halox-bench"],
    "docs/transports.md": ["halox-bench"],
    "docs/halo2d.md": ["halox-halo2d"],
    "docs/ipc.md": ["halox-ipc"],
    "docs/topology.md": ["halox-bench", "halox-topo", "halox-topo predict", "halox calibrate",
                         "halox report"],
    "docs/multihost.md": ["halox-bench", "halox-topo"],
}
OTHER_TOOLS = {
    "--bind-to", "--map-by", "--mca", "--oversubscribe", "--allow-run-as-root", "--host", "--mpi",
    "--ntasks-per-node", "--cpus-per-task", "--cpu-bind", "--cap-add", "--shm-size", "--prefix",
    "--build", "--install", "--cflags", "--libs", "--no-binary", "--wait", "--time",
    "--of",  # lstopo
}
# Options a program keeps out of its --help on purpose (documented for testers).
HIDDEN = {"halox-halo2d": {"--inject-fault"}}


def help_options(program: str) -> set[str]:
    """The options in the --help of a program, a program's subcommand ("halox-topo predict") or
    a command of the Python tools ("halox calibrate")."""
    exe, *sub = program.split()
    cmd = ([sys.executable, "-m", "halox.cli"] if exe == "halox"
           else launcher(1) + [str(build_dir() / exe)])
    out = subprocess.run(cmd + sub + ["--help"], capture_output=True, text=True,
                         timeout=60).stdout
    return set(re.findall(r"(--[a-z][a-z0-9-]*)", out))


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_option_the_docs_name_exists(page):
    text = (ROOT / page).read_text()
    named = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text))
    known = set().union(*(help_options(p) | HIDDEN.get(p, set()) for p in PAGES[page])) | OTHER_TOOLS
    missing = sorted(named - known)
    assert not missing, f"{page} names options no program has: {missing}"


def test_readme_transport_table_is_what_list_transports_prints():
    listing = subprocess.run(launcher(1) + [str(build_dir() / "halox-bench"), "--list-transports"],
                             capture_output=True, text=True, timeout=60, check=True).stdout
    table = subprocess.run([sys.executable, str(ROOT / "scripts" / "transport_table.py")],
                           input=listing, capture_output=True, text=True, check=True).stdout
    readme = (ROOT / "README.md").read_text()
    assert table.strip() in readme, "README.md's transport table is stale: run scripts/transport-table.sh"
    # What a transport does, not why this machine lacks it (a reason may nest parentheses).
    reasons = subprocess.run([sys.executable, str(ROOT / "scripts" / "transport_table.py")],
                             input="cuda-ipc unavailable same-node (no device (no driver)) copies\n",
                             capture_output=True, text=True, check=True).stdout
    assert reasons.splitlines()[-1] == "| `cuda-ipc` | same-node | copies |"
    for row in table.splitlines()[2:]:
        assert not row.split(" | ")[2].startswith(("(", ")")), row


def library_environment_table() -> list[tuple[str, str, str]]:
    """(variable, overrides, meaning) as the library lists them: the variables of
    src/exchange/environment.cpp, then the knobs of halox/transport/tuning.hpp."""
    def rows(text):
        return re.findall(r'\{"(HALOX_[A-Z0-9_]+)", "([^"]*)",\s*"([^"]*)"(?:\s*"([^"]*)")?', text)
    fixed = (ROOT / "src" / "exchange" / "environment.cpp").read_text()
    out = [(n, o, m + (more or "")) for n, o, m, more in rows(fixed)]
    for option, name, meaning in transport_knobs():
        out.append((name, option, meaning))
    return out


def transport_knobs() -> list[tuple[str, str, str]]:
    """(option, variable, meaning) of every knob in halox/transport/tuning.hpp."""
    text = (ROOT / "include" / "halox" / "transport" / "tuning.hpp").read_text()
    return re.findall(r'\{"(tuning\.[a-z0-9_.]+)", "(HALOX_[A-Z0-9_]+)",\s*"([^"]*)"', text)


def test_library_environment_table_is_the_librarys():
    in_code = [(n, f"`{o}`" if o.startswith(("tuning.", "exchange_options")) else o,
                re.sub(r"(HALOX_[A-Z0-9_]+)", r"`\1`", m)) for n, o, m in library_environment_table()]
    doc = (ROOT / "docs" / "library.md").read_text()
    in_doc = re.findall(r"^\| `(HALOX_[A-Z0-9_]+)` \| (.*?) \| (.*?) \|$", doc, re.M)
    assert len(in_code) >= 12 and in_doc == in_code


def test_every_knob_is_named_once():
    """A knob's option names its member, its variable is the option in capitals, its
    accessor reaches that member, and the transports' "forced by" texts are knobs."""
    knobs = transport_knobs()
    text = (ROOT / "include" / "halox" / "transport" / "tuning.hpp").read_text()
    accessors = re.findall(r"return t\.([a-z0-9_.]+);", text)
    assert [o.removeprefix("tuning.") for o, _, _ in knobs] == accessors
    for option, variable, _ in knobs:
        assert variable == "HALOX_" + option.removeprefix("tuning.").replace(".", "_").upper()
    options = {o for o, _, _ in knobs}
    for path in (ROOT / "src").rglob("*.cpp"):
        for named in re.findall(r'"(tuning\.[a-z0-9_.]+)"', path.read_text()):
            assert named in options, f"{path.relative_to(ROOT)} names {named}, not a knob"


def test_every_variable_the_library_reads_is_in_its_table():
    listed = {n for n, _, _ in library_environment_table()}
    read = re.compile(r'environment_(?:value|count|switch|seconds)\(\s*"(HALOX_[A-Z0-9_]+)"')
    for top in ("src", "include"):
        for path in (ROOT / top).rglob("*.[ch]pp"):
            text = path.read_text()
            for name in read.findall(text) + re.findall(r'variable = "(HALOX_[A-Z0-9_]+)"', text):
                assert name in listed, f"{path.relative_to(ROOT)} reads {name}, not in the table"
            assert "getenv(\"HALOX_" not in text.replace(" ", ""), f"{path}: HALOX_* read past the reader"
