"""No function in the library, the programs or the Python tools is longer than
80 lines or has a cyclomatic complexity over 25.

A C++ function's length is its lines from the first of its signature to its
closing brace. Bodies are found by a small brace
reader (comments, strings and preprocessor lines left out): a brace at
namespace or class scope that follows a parameter list (after qualifiers,
a trailing return type or a constructor's initialisers) opens a function;
lambdas and local classes count as part of their function. Its complexity is
1 plus one per decision in that body: if, for, while, case, catch, `?`, `&&`
and `||` (`else if` counts once, as its `if`).

A Python function's length is its lines from `def` to its last statement
(nested functions and lambdas count as part of it); its complexity is 1 plus
one per decision: if, elif, conditional expression, for, while, except,
assert, each `and`/`or` operand after the first, each comprehension loop and
its conditions, each match case (a nested function counts on its own).
"""
import ast
import re
from pathlib import Path

import pytest

# Its result does not depend on the MPI library (CI runs it under one: docs/testing.md).
pytestmark = pytest.mark.any_mpi

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 80
COMPLEXITY_LIMIT = 25
TREES = ("src", "apps", "python/src")
PYTHON_TREES = ("src", "apps", "python")
SUFFIXES = (".cpp", ".hpp", ".cu", ".cuh", ".h")

LEXEME = re.compile(r'//[^\n]*|/\*.*?\*/|R"([^(\s]*)\(.*?\)\1"|"(?:[^"\\\n]|\\.)*"|'
                    r"'(?:[^'\\\n]|\\.)*'|^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.S | re.M)


def blank(text: str) -> str:
    """The source with comments, strings, characters and preprocessor lines
    replaced by spaces (newlines kept, so that line numbers stay)."""
    return LEXEME.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


AGGREGATE = re.compile(r"\b(struct|class|union|enum)\b[^()]*$")
NAMESPACE = re.compile(r"\b(namespace|extern)\b")
AFTER_PARAMETERS = re.compile(
    r"\)\s*(?:const|volatile|noexcept(?:\([^)]*\))?|override|final|mutable|&&|&|\s)*"
    r"(?:->\s*[\w:<>,\s*&]+)?$")
INITIALISERS = re.compile(r"\)\s*(?:noexcept\s*)?:(?!:)")


def functions(text: str):
    """(first line, lines, header) of every function body in a C++ source."""
    code = blank(text)
    stack = []  # per open brace: "scope" (namespace, class), "function", "other"
    header_start = 0
    for i, ch in enumerate(code):
        if ch in ";":
            if not any(k == "function" for k, _ in stack):
                header_start = i + 1
        elif ch == "{":
            inside = any(k == "function" for k, _ in stack)
            header = code[header_start:i].strip()
            if inside:
                kind = "other"
            elif NAMESPACE.search(header) and "(" not in header:
                kind = "scope"
            elif AGGREGATE.search(header):
                kind = "scope"
            elif INITIALISERS.search(header) and re.search(r"[\w>]$", header):
                kind = "initialiser"  # a member's brace initialiser before the body
            elif AFTER_PARAMETERS.search(header) or (INITIALISERS.search(header)
                                                     and header.endswith("}")):
                kind = "function"
            else:
                kind = "other"
            stack.append((kind, i))
            if kind in ("scope",):
                header_start = i + 1
        elif ch == "}":
            if not stack:
                continue
            kind, opened = stack.pop()
            if kind == "function":
                header = code[header_start:opened]
                begins = header_start + len(header) - len(header.lstrip())
                first = code.count("\n", 0, begins) + 1
                last = code.count("\n", 0, i) + 1
                name = re.sub(r"\s+", " ", header).strip()
                yield first, last - first + 1, name
            if kind in ("function", "scope", "other") and not any(k == "function" for k, _ in stack):
                header_start = i + 1


def sources(root=ROOT, trees=TREES, suffixes=SUFFIXES):
    for tree in trees:
        for f in sorted((root / tree).rglob("*")):
            if f.suffix in suffixes and f.is_file():
                yield f.relative_to(root).as_posix(), f.read_text(errors="replace")


CXX_DECISIONS = re.compile(r"\b(?:if|for|while|case|catch)\b|&&|\|\||\?")


def cxx_complexity(text: str, first: int, lines: int) -> int:
    """1 + the decisions in the lines of a C++ function (comments and strings left out)."""
    body = "\n".join(blank(text).split("\n")[first - 1:first - 1 + lines])
    return 1 + len(CXX_DECISIONS.findall(body))


def long_functions(root, tree: str) -> list[str]:
    """The C++ functions of a tree over 80 lines or a complexity of 25."""
    found = []
    for path, text in sources(root, (tree,)):
        for first, lines, name in functions(text):
            branches = cxx_complexity(text, first, lines)
            if lines > LIMIT or branches > COMPLEXITY_LIMIT:
                found.append(f"{path}:{first}: {lines} lines, complexity {branches}: {name[:80]}")
    return found


DECISIONS = (ast.If, ast.IfExp, ast.For, ast.AsyncFor, ast.While, ast.ExceptHandler, ast.Assert,
             ast.match_case)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def complexity(function: ast.AST) -> int:
    """1 + the decisions in a function's own body (not in the functions or classes it holds)."""
    count = 1
    pending = list(ast.iter_child_nodes(function))
    while pending:
        node = pending.pop()
        if isinstance(node, FUNCTIONS + (ast.ClassDef,)):
            continue
        if isinstance(node, DECISIONS):
            count += 1
        elif isinstance(node, ast.BoolOp):
            count += len(node.values) - 1
        elif isinstance(node, ast.comprehension):
            count += 1 + len(node.ifs)
        pending.extend(ast.iter_child_nodes(node))
    return count


def python_functions(text: str):
    """(first line, lines, complexity, name) of every function and method of a Python source."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, FUNCTIONS):
            yield node.lineno, node.end_lineno - node.lineno + 1, complexity(node), node.name


def python_violations(root, tree: str) -> list[str]:
    return [f"{path}:{first}: {name}: {lines} lines, complexity {branches}"
            for path, text in sources(root, (tree,), (".py",))
            for first, lines, branches, name in python_functions(text)
            if lines > LIMIT or branches > COMPLEXITY_LIMIT]


def test_the_reader_finds_functions():
    text = """
namespace a {
struct s { int x{1}; void f() const { g(); } };
s::s(int y) : x{y}, z_(y) {
  auto l = [&] { return 1; };
}
template <class T> T h(T t) noexcept { return t; }
auto k() -> int {
  return 0;
}
int table[] = {1, 2};
}  // namespace a
"""
    found = {name.split("(")[0].split()[-1]: lines for _, lines, name in functions(text)}
    assert found == {"f": 1, "s::s": 3, "h": 1, "k": 3}, found
    first = {name.split("(")[0].split()[-1]: line for line, _, name in functions(text)}
    assert first["k"] == 8 and first["h"] == 7, first


def test_the_reader_sees_the_known_functions():
    names = {name for path, text in sources() for _, _, name in functions(text)}
    assert any("map_node" in n for n in names)
    assert any("measured_choice" in n for n in names)


def test_the_reader_measures_cxx_complexity():
    text = """
int f(int a, const char* s) {
  // if (a) in a comment, "for" in a string
  if (a && s || !a) return 1;
  else if (a > 2) return a ? 2 : 3;
  for (auto c : "while") try { g(); } catch (...) {}
  switch (a) { case 1: case 2: break; default: break; }
  return 0;
}
"""
    (first, lines, _), = functions(text)
    # 1 + if + && + || + else if + ? + for + catch + 2 cases
    assert cxx_complexity(text, first, lines) == 10


@pytest.mark.parametrize("tree", TREES)
def test_no_function_is_longer_than_80_lines_or_over_complexity_25(tree):
    long = long_functions(ROOT, tree)
    assert not long, (f"functions over {LIMIT} lines or a complexity of {COMPLEXITY_LIMIT}:\n"
                      + "\n".join(long))


def test_the_python_reader_measures_length_and_complexity():
    text = """
def f(a, b):
    if a and b or a:
        return [x for x in a if x]
    for x in b:
        try:
            pass
        except ValueError:
            pass

    def inner(y):
        return 1 if y else 2
    return inner


class C:
    def m(self):
        while True:
            break
"""
    found = {name: (first, lines, branches) for first, lines, branches, name in
             python_functions(text)}
    # f: 1 + if + 2 (and, or) + comprehension loop and its condition + for + except
    assert found == {"f": (2, 12, 8), "inner": (11, 2, 2), "m": (17, 3, 2)}, found


@pytest.mark.parametrize("tree", PYTHON_TREES)
def test_no_python_function_is_longer_than_80_lines_or_over_complexity_25(tree):
    found = python_violations(ROOT, tree)
    assert not found, (f"Python functions over {LIMIT} lines or a complexity of "
                       f"{COMPLEXITY_LIMIT}:\n" + "\n".join(found))


def test_the_checks_fail_on_a_planted_violation(tmp_path):
    (tmp_path / "python").mkdir()
    (tmp_path / "src").mkdir()
    long_body = "".join(f"    x = {i}\n" for i in range(LIMIT))
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(COMPLEXITY_LIMIT))
    (tmp_path / "python" / "tool.py").write_text(
        f"def long():\n{long_body}\n\ndef branching(x):\n{branches}\n\ndef fine():\n    pass\n")
    cpp_body = "".join(f"  x += {i};\n" for i in range(LIMIT))
    cpp_branches = "".join(f"  if (x == {i}) return {i};\n" for i in range(COMPLEXITY_LIMIT))
    (tmp_path / "src" / "long.cpp").write_text(
        f"int long_one(int x) {{\n{cpp_body}  return x;\n}}\n"
        f"int branching(int x) {{\n{cpp_branches}  return x;\n}}\n"
        "int fine(int x) {\n  return x;\n}\n")
    assert [v.split(": ")[1] for v in python_violations(tmp_path, "python")] == \
        ["long", "branching"]
    assert [v.split(": ")[-1].split("(")[0] for v in long_functions(tmp_path, "src")] == \
        ["int long_one", "int branching"]
    (tmp_path / "python" / "tool.py").write_text("def fine():\n    pass\n")
    assert python_violations(tmp_path, "python") == []
    (tmp_path / "src" / "long.cpp").write_text("int fine(int x) {\n  return x;\n}\n")
    assert long_functions(tmp_path, "src") == []
