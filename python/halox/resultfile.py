"""Results files: JSON Lines, one record per line, appended whole.

Every writer - the halox programs (`append_json_line`) and `halox sweep` - appends a record as
one `write` to a file opened with O_APPEND while holding an exclusive `flock` on it, so lines of
concurrent writers never interleave.  A writer killed inside a large write (SIGKILL can cut a
write of several pages short) can leave an unterminated last line: readers ignore it, and the
next locked append cuts it off before writing, so no partial line stays in front of whole ones.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pathlib
from dataclasses import dataclass
from typing import Any, Iterable, Iterator


@dataclass
class Line:
    number: int   # 1-based
    text: str     # without the newline


def read_lines(path: str | pathlib.Path) -> tuple[list[Line], bool]:
    """The whole lines of a file, and whether an unterminated last line was dropped."""
    data = pathlib.Path(path).read_bytes()
    partial = bool(data) and not data.endswith(b"\n")
    if partial:
        data = data[: data.rfind(b"\n") + 1]
    text = data.decode("utf-8", errors="replace")
    lines = [Line(i, t) for i, t in enumerate(text.splitlines(), start=1) if t.strip()]
    return lines, partial


def read_objects(path: str | pathlib.Path) -> Iterator[dict]:
    """The records of a file that decode to JSON objects; anything else is passed over (for
    bookkeeping such as resuming, where a stray line must not stop a sweep)."""
    try:
        lines, _ = read_lines(path)
    except FileNotFoundError:
        return
    for line in lines:
        try:
            obj = json.loads(line.text)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            yield obj


def encode(record: dict) -> bytes:
    return (json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


class LockedFile:
    """A results file opened for appending under an exclusive lock (see `locked`)."""

    def __init__(self, fd: int, path: pathlib.Path):
        self.fd = fd
        self.path = path

    def objects(self) -> Iterator[dict]:
        return read_objects(self.path)

    def append(self, records: Iterable[dict]) -> int:
        count = 0
        for record in records:
            data = encode(record)
            while data:  # a regular file takes it in one write; loop only for safety
                written = os.write(self.fd, data)
                data = data[written:]
            count += 1
        return count


def _cut_partial_tail(fd: int) -> None:
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    # Find the last newline, reading backwards; the line after it is a killed writer's.
    end, chunk = size, 1 << 16
    while end > 0:
        start = max(0, end - chunk)
        block = os.pread(fd, end - start, start)
        newline = block.rfind(b"\n")
        if newline >= 0:
            os.ftruncate(fd, start + newline + 1)
            return
        end = start
    os.ftruncate(fd, 0)


@contextlib.contextmanager
def locked(path: str | pathlib.Path) -> Iterator[LockedFile]:
    """Opens (creating) a results file for appending, under the writers' exclusive lock, with
    any unterminated last line cut off."""
    path = pathlib.Path(path)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _cut_partial_tail(fd)
        yield LockedFile(fd, path)
    finally:
        os.close(fd)  # releases the lock


def append(path: str | pathlib.Path, records: Iterable[dict[str, Any]]) -> int:
    with locked(path) as f:
        return f.append(records)
