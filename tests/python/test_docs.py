"""The docs cannot go stale: their programs build and run, their options exist,
their tables match the code.

- Every C++ and Python block of README.md and docs/library.md is a program or a
  fragment of one (statements; the test wraps them in a main() and adds the
  imports), built against the installed package and run on 2 ranks. A block
  after `<!-- fragment: not a whole program -->` is skipped.
- Every `--option` the user docs name exists in the `--help` of the programs
  the page is about.
- README's transport table is what `halox-bench --list-transports` prints, and
  docs/library.md's environment table is the library's.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, build_dir, launcher, mpi_flavor

PROGRAM_DOCS = ["README.md", "docs/library.md"]
FRAGMENT_MARK = "<!-- fragment: not a whole program -->"
BLOCK = re.compile(r"^```(cpp|python)\n(.*?)^```", re.M | re.S)


def code_blocks(language: str):
    out = []
    for doc in PROGRAM_DOCS:
        text = (ROOT / doc).read_text()
        for i, m in enumerate(BLOCK.finditer(text)):
            before = text[:m.start()].rstrip().splitlines()[-1:] or [""]
            if m.group(1) == language and before[0].strip() != FRAGMENT_MARK:
                out.append(pytest.param(m.group(2), id=f"{doc}:{text[:m.start()].count(chr(10)) + 1}"))
    return out


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    prefix = tmp_path_factory.mktemp("prefix")
    subprocess.run(["cmake", "--install", str(build_dir()), "--prefix", str(prefix)],
                   check=True, capture_output=True, timeout=300)
    return prefix


def as_cpp_program(code: str) -> str:
    if re.search(r"\bint main\s*\(", code):
        return code
    includes = [l for l in code.splitlines() if l.startswith("#include")]
    body = "\n".join(l for l in code.splitlines() if not l.startswith("#include"))
    return ("#include <mpi.h>\n#include <vector>\n" + "\n".join(includes) +
            "\nint main(int argc, char** argv) {\n  MPI_Init(&argc, &argv);\n  {\n" + body +
            "\n  }\n  MPI_Finalize();\n}\n")


def as_python_program(code: str) -> str:
    if "import halox" in code:
        return code
    return "from mpi4py import MPI\nimport numpy as np\nimport halox\n" + code


@pytest.mark.slow
@pytest.mark.parametrize("code", code_blocks("cpp"))
def test_cpp_blocks_build_against_the_installed_package_and_run(code, installed, tmp_path):
    source = tmp_path / "program.cpp"
    source.write_text(as_cpp_program(code))
    pc_dirs = [str(p) for p in installed.glob("lib*/pkgconfig")] + \
        [str(p) for p in installed.glob("lib/*/pkgconfig")]
    env = dict(os.environ, PKG_CONFIG_PATH=":".join(pc_dirs))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "halox"], env=env, check=True,
                           capture_output=True, text=True).stdout.split()
    compiler = shutil.which(f"mpicxx.{mpi_flavor()}") or "mpicxx"
    built = subprocess.run([compiler, "-std=c++20", "-O1", str(source), *flags, "-o",
                            str(tmp_path / "program")], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    run = subprocess.run(launcher(2) + [str(tmp_path / "program")], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("code", code_blocks("python"))
def test_python_blocks_run_on_two_ranks(code, tmp_path):
    pytest.importorskip("halox._core", reason="the halox bindings are not installed here")
    script = tmp_path / "program.py"
    script.write_text(as_python_program(code))
    run = subprocess.run(launcher(2) + [sys.executable, str(script)], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]


# Which programs' --help a page's options come from; options of the tools
# around them (launchers, Slurm, Docker, mount) are allowed by name.
PAGES = {
    "README.md": ["halox-bench", "halox-halo2d", "halox-ipc", "halox-topo"],
    "docs/bench.md": ["halox-bench"],
    "docs/library.md": ["halox-bench"],
    "docs/transports.md": ["halox-bench"],
    "docs/halo2d.md": ["halox-halo2d"],
    "docs/ipc.md": ["halox-ipc"],
    "docs/topology.md": ["halox-bench", "halox-topo"],
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
    out = subprocess.run(launcher(1) + [str(build_dir() / program), "--help"], capture_output=True,
                         text=True, timeout=60).stdout
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


def test_library_environment_table_is_the_librarys():
    source = (ROOT / "src" / "common" / "environment.cpp").read_text()
    in_code = re.findall(r'\{"(HALOX_[A-Z0-9_]+)"', source)
    doc = (ROOT / "docs" / "library.md").read_text()
    in_doc = re.findall(r"^\| `(HALOX_[A-Z0-9_]+)` \|", doc, re.M)
    assert in_code and in_doc == in_code
