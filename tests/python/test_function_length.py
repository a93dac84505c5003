"""No function in the library or the programs is longer than 80 lines.

A function's length is its lines from the first of its signature to its
closing brace. Bodies are found by a small brace
reader (comments, strings and preprocessor lines left out): a brace at
namespace or class scope that follows a parameter list (after qualifiers,
a trailing return type or a constructor's initialisers) opens a function;
lambdas and local classes count as part of their function.
"""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 80
TREES = ("src", "apps", "python/src")
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


def sources():
    for tree in TREES:
        for f in sorted((ROOT / tree).rglob("*")):
            if f.suffix in SUFFIXES and f.is_file():
                yield f.relative_to(ROOT).as_posix(), f.read_text(errors="replace")


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


@pytest.mark.parametrize("tree", TREES)
def test_no_function_is_longer_than_80_lines(tree):
    long = [f"{path}:{first}: {lines} lines: {name[:80]}"
            for path, text in sources() if path.startswith(tree + "/")
            for first, lines, name in functions(text) if lines > LIMIT]
    assert not long, f"functions over {LIMIT} lines:\n" + "\n".join(long)
