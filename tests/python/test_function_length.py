"""No function in the library, the programs, the bindings, the Python tools, the Fortran module
or the examples is longer than 80 lines or has a cyclomatic complexity over 25, as lizard
(https://github.com/terryyin/lizard, installed in the venv) measures them: a function's length
from its first line to its last, its complexity 1 plus one per decision (if, loop, case, catch
or except, ?, each && / || / and / or)."""
import subprocess
import sys
from pathlib import Path

import pytest

# Its result does not depend on the MPI library (CI runs it under one: docs/testing.md).
pytestmark = pytest.mark.any_mpi

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 80
COMPLEXITY_LIMIT = 25
TREES = ("src", "apps", "python/src", "python/halox", "fortran", "examples")


def violations(*paths) -> list[str]:
    """lizard's warnings, one line each, for the functions over either limit."""
    done = subprocess.run([sys.executable, "-m", "lizard", "-L", str(LIMIT), "-C",
                           str(COMPLEXITY_LIMIT), "-w", *map(str, paths)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert not done.stderr.strip(), done.stderr
    found = [line for line in done.stdout.splitlines() if line.strip()]
    assert (done.returncode != 0) == bool(found), done.stdout
    return found


def test_no_function_is_longer_than_80_lines_or_over_complexity_25():
    for tree in TREES:
        assert (ROOT / tree).is_dir(), tree
    # lizard's walk of a folder reads the suffixes it knows; CUDA sources are named.
    cuda = sorted(f.relative_to(ROOT) for tree in TREES for suffix in ("*.cu", "*.cuh")
                  for f in (ROOT / tree).rglob(suffix))
    assert cuda, "no CUDA sources found"
    found = violations(*TREES, *cuda)
    assert not found, "functions over the limits:\n" + "\n".join(found)


def test_the_check_fails_on_planted_violations(tmp_path):
    long_cpp = "int long_one() {\n  int x = 0;\n" + "  x += 1;\n" * LIMIT + "  return x;\n}\n"
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(COMPLEXITY_LIMIT))
    complex_py = f"def many_ways(x):\n{branches}    return -1\n"
    long_f90 = ("subroutine long_one(x)\n  integer :: x\n" + "  x = x + 1\n" * LIMIT +
                "end subroutine long_one\n")
    short_cpp = "int short_one(int x) {\n  return x > 0 && x < 9 ? x : 0;\n}\n"
    for name, text in [("long.cpp", long_cpp), ("complex.py", complex_py),
                       ("long.f90", long_f90), ("short.cpp", short_cpp)]:
        (tmp_path / name).write_text(text)
    found = violations(tmp_path)
    assert [f for f in found if "long_one" in f and "long.cpp" in f], found
    assert [f for f in found if "many_ways" in f], found
    assert [f for f in found if "long.f90" in f], found
    assert not [f for f in found if "short_one" in f], found
