"""The Python package: the bindings need numpy and mpi4py only; the sweep and
report tools are the 'tools' extra, and text reports load no plotting."""
import pathlib
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


def test_the_bindings_need_numpy_and_mpi4py_only():
    names = sorted(d.split(">")[0].split("=")[0].split("<")[0] for d in project()["dependencies"])
    assert names == ["mpi4py", "numpy"]


def test_the_tools_are_an_extra():
    assert sorted(project()["optional-dependencies"]["tools"]) == ["matplotlib", "psutil", "rich"]


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
