"""Running one program of a sweep: the process under a timeout (its whole tree ended when it
outlives it), its output in log files, and what a failure looks like in one line."""
from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import signal
import subprocess
import time

TAIL_LINES = 20
CRASH_WORDS = re.compile(r"error|fault|signal|abort|killed|terminated", re.IGNORECASE)
KILL_GRACE_S = 10.0


@dataclasses.dataclass
class Outcome:
    returncode: int | None
    timed_out: bool
    duration_s: float
    stdout_path: pathlib.Path
    stderr_path: pathlib.Path

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


def kill_tree(process: subprocess.Popen, grace_s: float = KILL_GRACE_S) -> None:
    """Ends a launcher and everything it started: SIGTERM first, so that mpirun and srun can
    take their ranks down, then SIGKILL for whatever is left."""
    import psutil
    try:
        root = psutil.Process(process.pid)
        tree = [root] + root.children(recursive=True)
    except psutil.NoSuchProcess:
        return
    for p in tree:
        try:
            p.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(tree, timeout=grace_s)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=grace_s)
    process.poll()


def execute(argv: list[str], env: dict[str, str], timeout: float | None,
            log_stem: pathlib.Path) -> Outcome:
    out_path = log_stem.with_suffix(".out")
    err_path = log_stem.with_suffix(".err")
    full_env = dict(os.environ)
    full_env.update(env)
    started = time.monotonic()
    timed_out = False
    with out_path.open("wb") as out, err_path.open("wb") as err:
        # Same process group as the sweep: killing the sweep's group kills the runs too.
        process = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                   env=full_env)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_tree(process)
        except BaseException:
            kill_tree(process, grace_s=2.0)
            raise
    return Outcome(process.returncode, timed_out, time.monotonic() - started, out_path, err_path)


def tail_lines(path: pathlib.Path, lines: int = TAIL_LINES) -> list[str]:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    return [l.rstrip() for l in text.splitlines() if l.strip()][-lines:]


def error_summary(program: str, outcome: Outcome) -> str:
    lines = tail_lines(outcome.stdout_path, 200) + tail_lines(outcome.stderr_path, 200)
    for line in lines:
        if line.startswith(f"{program}: error:"):
            return line
    # Launchers report a crash first and then the ranks they killed because of it
    # ("srun: error: hostb: tasks 2-3: Killed"): the first such line names the cause.
    tail = tail_lines(outcome.stderr_path)
    causes = [l for l in tail if CRASH_WORDS.search(l)]
    if causes:
        return causes[0].strip()
    return tail[-1].strip() if tail else "no error message"


def describe_failure(outcome: Outcome, timeout: float | None) -> str:
    if outcome.timed_out:
        return f"timed out after {timeout:g} s"
    if outcome.returncode is not None and outcome.returncode < 0:
        return f"was killed by {signal.Signals(-outcome.returncode).name}"
    return f"failed with exit code {outcome.returncode}"
