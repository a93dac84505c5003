"""`halox-bench --list-transports` (stdin) as a Markdown table: name, reach, what it does.
Availability is left out: it is this machine's, not the build's."""
import re
import sys


def without_reason(summary: str) -> str:
    """An unavailable transport's summary starts with its reason in parentheses, which may
    hold parentheses of its own."""
    if not summary.startswith("("):
        return summary
    depth = 0
    for i, c in enumerate(summary):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if depth == 0:
            return summary[i + 1:].lstrip()
    return summary


print("| transport | reach | what it does |")
print("|---|---|---|")
for line in sys.stdin:
    if not line.strip():
        continue
    name, _availability, reach, summary = re.split(r"\s+", line.strip(), maxsplit=3)
    summary = without_reason(summary)
    print(f"| `{name}` | {reach} | {summary} |")
