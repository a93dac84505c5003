"""The Fortran and C blocks of the docs build against the installed package
(pkg-config halox-fortran / halox and the MPI's wrappers) and run on 2 ranks,
as test_docs.py does for the C++ and Python ones (its installed-package fixture
and fragment mark are reused). A Fortran block without a `program` statement
is a fragment of one: declarations, then statements, wrapped in a subroutine
with `use halox`, `mpi_f08` and `iso_fortran_env`.
"""
import os
import re
import shutil
import subprocess

import pytest

from conftest import ROOT, launcher, mpi_flavor
from test_docs import FRAGMENT_MARK, installed  # noqa: F401 (installed is a fixture)

DOCS = ["README.md", "docs/library.md", "docs/fortran.md"]
BLOCK = re.compile(r"^```(fortran|c)\n(.*?)^```", re.M | re.S)


def code_blocks(language: str):
    out = []
    for doc in DOCS:
        text = (ROOT / doc).read_text()
        for m in BLOCK.finditer(text):
            before = text[:m.start()].rstrip().splitlines()[-1:] or [""]
            if m.group(1) == language and before[0].strip() != FRAGMENT_MARK:
                line = text[:m.start()].count("\n") + 1
                out.append(pytest.param(m.group(2), id=f"{doc}:{line}"))
    return out


def as_fortran_program(code: str) -> str:
    if re.search(r"^\s*program\s+\w+", code, re.M | re.I):
        return code
    body = "\n".join("    " + line for line in code.splitlines())
    return ("program fragment\n  use mpi_f08\n  implicit none\n  call MPI_Init()\n  call body()\n"
            "  call MPI_Finalize()\ncontains\n  subroutine body()\n    use halox\n"
            "    use, intrinsic :: iso_fortran_env\n    implicit none\n" + body +
            "\n  end subroutine body\nend program fragment\n")


def as_c_program(code: str) -> str:
    if re.search(r"\bint main\s*\(", code):
        return code
    includes = [l for l in code.splitlines() if l.startswith("#include")]
    body = "\n".join(l for l in code.splitlines() if not l.startswith("#include"))
    return ("#include <mpi.h>\n#include <halox/halox.h>\n" + "\n".join(includes) +
            "\nint main(int argc, char** argv) {\n  MPI_Init(&argc, &argv);\n" + body +
            "\n  MPI_Finalize();\n  return 0;\n}\n")


def build_and_run(source, prefix, module: str, compiler: str, tmp_path):
    pc_dirs = [str(p) for p in prefix.glob("lib*/pkgconfig")] + \
        [str(p) for p in prefix.glob("lib/*/pkgconfig")]
    if not any(os.path.exists(f"{d}/{module}.pc") for d in pc_dirs):
        pytest.skip(f"{module}.pc is not installed (built without it)")
    env = dict(os.environ, PKG_CONFIG_PATH=":".join(pc_dirs))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", module], env=env, check=True,
                           capture_output=True, text=True).stdout.split()
    wrapper = shutil.which(f"{compiler}.{mpi_flavor()}") or compiler
    built = subprocess.run([wrapper, "-O1", str(source), *flags, "-lm", "-o",
                            str(tmp_path / "program")], capture_output=True, text=True,
                           timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    run = subprocess.run(launcher(2) + [str(tmp_path / "program")], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("code", code_blocks("fortran"))
def test_fortran_blocks_build_against_the_installed_package_and_run(code, installed, tmp_path):
    source = tmp_path / "program.f90"
    source.write_text(as_fortran_program(code))
    build_and_run(source, installed, "halox-fortran", "mpif90", tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("code", code_blocks("c"))
def test_c_blocks_build_against_the_installed_package_and_run(code, installed, tmp_path):
    source = tmp_path / "program.c"
    source.write_text(as_c_program(code))
    build_and_run(source, installed, "halox", "mpicc", tmp_path)


def test_the_docs_have_fortran_and_c_programs():
    assert len(code_blocks("fortran")) >= 4 and len(code_blocks("c")) >= 1
