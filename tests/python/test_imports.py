"""The modules of the halox Python package import each other one way: no circle, also not
through an import inside a function (which hides a circle from the interpreter until that
function runs, and from a reader always)."""
import ast
import pathlib
import pytest

# Its result does not depend on the MPI library (CI runs it under one: docs/testing.md).
pytestmark = pytest.mark.any_mpi

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "halox"


def imported(node: ast.AST, package: str) -> list[str]:
    """The first names below `package` that an import statement brings in (`from . import a, b`:
    a and b; `from .a.b import c`, `import halox.a`, `from halox import a`: a)."""
    if isinstance(node, ast.Import):
        parts = [a.name.split(".") for a in node.names]
        return [p[1] for p in parts if p[0] == package and len(p) > 1]
    if not isinstance(node, ast.ImportFrom):
        return []
    module = (node.module or "").split(".")
    if node.level == 0:
        if module[0] != package:
            return []
        module = module[1:]
    elif node.level > 1:
        return []  # above the package
    module = [m for m in module if m]
    return [module[0]] if module else [a.name for a in node.names]


def module_imports(package: pathlib.Path) -> dict[str, list[tuple[str, int]]]:
    """Each module of the package (by name) and the package modules it imports, with the line:
    every import statement counts, at the top, in a function or under a condition."""
    modules = {f.stem for f in package.glob("*.py")}
    edges: dict[str, list[tuple[str, int]]] = {}
    for module in sorted(modules):
        tree = ast.parse((package / f"{module}.py").read_text())
        edges[module] = [(target, node.lineno) for node in ast.walk(tree)
                         for target in imported(node, package.name)
                         if target in modules and target != module]
    return edges


def circles(edges: dict[str, list[tuple[str, int]]]) -> list[list[str]]:
    """One circle per group of modules that reach each other, as `a:LINE -> b:LINE -> a`."""
    state: dict[str, str] = {}
    stack: list[tuple[str, int]] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        state[module] = "open"
        for target, line in edges.get(module, []):
            stack.append((module, line))
            if state.get(target) == "open":
                start = next(i for i, (m, _) in enumerate(stack) if m == target)
                found.append([f"{m}.py:{l}" for m, l in stack[start:]] + [f"{target}.py"])
            elif target not in state:
                visit(target)
            stack.pop()
        state[module] = "done"

    for module in sorted(edges):
        if module not in state:
            visit(module)
    return found


def test_the_package_imports_one_way():
    found = circles(module_imports(PACKAGE))
    assert not found, "import circles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_the_reader_sees_the_package_imports():
    edges = module_imports(PACKAGE)
    assert any(t == "records" for t, _ in edges["report"])  # an import at the top
    assert any(t == "plot" for t, _ in edges["document"])  # an import inside a function


def test_a_circle_through_a_function_level_import_is_found(tmp_path):
    package = tmp_path / "halox"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "top.py").write_text("from . import middle\n")
    (package / "middle.py").write_text("from .bottom import thing\n")
    (package / "bottom.py").write_text("thing = 1\n\n\ndef later():\n    import halox.top\n")
    (package / "apart.py").write_text("from halox import bottom\n")
    found = circles(module_imports(package))
    assert found == [["bottom.py:5", "top.py:1", "middle.py:1", "bottom.py"]], found
    (package / "bottom.py").write_text("thing = 1\n")
    assert circles(module_imports(package)) == []
