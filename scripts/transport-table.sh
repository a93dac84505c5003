#!/usr/bin/env bash
# Rewrites the transport table of README.md from `halox-bench --list-transports`:
#   scripts/transport-table.sh [BUILD_DIR]      (default build/openmpi)
# The test suite checks that README.md holds what this prints.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build/openmpi}
table=$("$build/halox-bench" --list-transports | python3 "$here/scripts/transport_table.py")
python3 - "$here/README.md" "$table" <<'PY'
import re, sys
path, table = sys.argv[1], sys.argv[2]
text = open(path).read()
begin = text.index("<!-- transports:begin")
begin = text.index("\n", begin) + 1
end = text.index("<!-- transports:end -->")
open(path, "w").write(text[:begin] + table + "\n" + text[end:])
PY
