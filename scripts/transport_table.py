"""`halox-bench --list-transports` (stdin) as a Markdown table: name, reach, what it does.
Availability is left out: it is this machine's, not the build's."""
import re
import sys

print("| transport | reach | what it does |")
print("|---|---|---|")
for line in sys.stdin:
    if not line.strip():
        continue
    name, _availability, reach, summary = re.split(r"\s+", line.strip(), maxsplit=3)
    summary = re.sub(r"^\([^)]*\)\s*", "", summary)  # an unavailable one's reason
    print(f"| `{name}` | {reach} | {summary} |")
