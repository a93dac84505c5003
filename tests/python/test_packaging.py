"""The Python package: the bindings need numpy and mpi4py only; the sweep and
report tools are the 'tools' extra, and text reports load no plotting."""
import ast
import importlib.metadata
import pathlib
import re
import subprocess
import sys
import tomllib
import pytest

# Its result does not depend on the MPI library (CI runs it under one: docs/testing.md).
pytestmark = pytest.mark.any_mpi

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "python" / "data"


def project():
    return tomllib.loads((ROOT / "python" / "pyproject.toml").read_text())["project"]


def distribution(spec: str) -> str:
    """A requirement's distribution name, normalised ("mpi4py>=3.1" -> "mpi4py")."""
    return re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0].strip().lower().replace("_", "-")


def with_requirements(specs) -> set[str]:
    """The distributions `specs` name and all they require, as installed here."""
    seen, todo = set(), [distribution(s) for s in specs]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        todo += [distribution(r) for r in requires if "extra ==" not in r]
    return seen


def distributions_of(modules) -> set[str]:
    """The installed distributions that provide these top-level modules (the standard library,
    halox itself and modules of no distribution, such as an extension's runtime, aside)."""
    owners = importlib.metadata.packages_distributions()
    return {distribution(d) for m in modules
            if m not in sys.stdlib_module_names and m != "halox" and not m.startswith("_")
            for d in owners.get(m, [])}


def test_the_bindings_load_only_what_they_declare(tmp_path):
    # One exchange on one rank: the arrays are numpy's, the communicator mpi4py's.
    script = ("import sys\n"
              "import numpy as np\n"
              "from mpi4py import MPI\n"
              "import halox\n"
              "d = halox.Decomposition(MPI.COMM_WORLD, dims=(1, 1, 1),\n"
              "                        periodic=(True, True, True))\n"
              "grid = halox.Grid(d.subdomain(global_domain=(4, 4, 4)).extent, halo=1)\n"
              "halox.HaloExchange(d, grid, [grid.zeros(np.float64)]).exchange()\n"
              "print(' '.join(sorted({m.split('.')[0] for m in list(sys.modules)})))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded = distributions_of(out.stdout.split())
    declared = with_requirements(project()["dependencies"])
    assert loaded <= declared, f"loaded but not declared: {sorted(loaded - declared)}"


def imported_modules(path: pathlib.Path) -> set[str]:
    """Every top-level module a source imports, at its top or inside a function."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_the_tools_extra_is_what_the_tools_import():
    imported = set()
    for source in (ROOT / "python" / "halox").rglob("*.py"):
        imported |= imported_modules(source)
    used = distributions_of(imported)
    deps, tools = project()["dependencies"], project()["optional-dependencies"]["tools"]
    declared = with_requirements(deps + tools)
    assert used <= declared, f"imported but not declared: {sorted(used - declared)}"
    unused = {distribution(t) for t in tools} - used
    assert not unused, f"declared tools nothing imports: {sorted(unused)}"


def test_a_text_report_imports_no_plotting_or_progress_library(tmp_path):
    records = tmp_path / "records.jsonl"
    # Real records, and a failed run, whose listing once pulled in the plots.
    records.write_text((DATA / "bench.jsonl").read_text() +
                       '{"tool": "halox-sweep", "event": "failure", "timestamp": "2026-11-26T10:00", '
                       '"sweep": {"name": "s", "mpi": "openmpi", "run": "r", "repeat": 0}, '
                       '"exit_status": 1, "error": "halox-bench: error: example"}\n')
    script = (
        "import sys\n"
        "from halox import cli\n"
        f"cli.main(['report', {str(records)!r}])\n"
        "loaded = sorted(m for m in ('matplotlib', 'rich', 'psutil') if m in sys.modules)\n"
        "print('LOADED', loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=ROOT / "python", timeout=120)
    assert out.returncode == 0, out.stderr
    assert "halox-bench: error: example" in out.stdout, out.stdout[-2000:]
    assert "LOADED []" in out.stdout, out.stdout[-2000:] + out.stderr
