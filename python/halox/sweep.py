"""`halox sweep SPEC.toml`: runs the invocations of a spec (see spec.py), resumably.

Each invocation appends its records to a scratch file of its own (in OUTPUT's `.sweep` folder
beside it); when it ends, the sweep moves the whole records it finds there into OUTPUT, each
stamped with its sweep coordinates (sweep name, MPI, run entry, repetition, expanded matrix
values, the settings and the exact launch line), and then a `complete` mark for the invocation.
Running the same sweep into the same OUTPUT again skips every invocation marked complete and
every configuration already recorded, so a sweep killed with `kill -9` (its whole process group,
as a batch system does) loses at most the configurations that were in flight.  All appends to
OUTPUT are whole lines under a lock (resultfile.py); a record whose coordinates and
configuration are already in OUTPUT is never appended again.

A run that fails or outlives its timeout is recorded as a `failure` (exit status, signal, the
tail of its error output, the launch line), the sweep goes on, lists the failures at the end
and exits with status 1.
"""
from __future__ import annotations

import dataclasses
import fcntl
import json
import pathlib
import shlex
import signal
import time
from typing import Iterable

from . import peer_runs, resultfile, sbatch
from .execution import Outcome, describe_failure, error_summary, execute, tail_lines
from .identity import RECORD_SCHEMA_VERSION, SWEEP_TOOL, coordinates, identity, timestamp
from .spec import MPI_FLAVORS, Invocation, Plan, SpecError, make_plan  # noqa: F401



class RunError(Exception):
    """The sweep could not go on; the message is one line."""


class Terminated(Exception):
    """SIGTERM (a batch system ending the job): stop, leaving OUTPUT resumable."""


# ---------------------------------------------------------------------------------------------
# Identities: which records belong to which invocation and configuration


def config_key(plan: Plan, record: dict) -> tuple:
    """The matrix values a record was measured with, in the order of the spec's lists."""
    if not plan.program.per_configuration:
        return ()
    config = record.get("config") or {}
    return tuple(str(config.get(key)) for key in plan.invocations[0].lists)


def expected_configs(plan: Plan, inv: Invocation) -> set[tuple] | None:
    """Every configuration of an invocation, or None when "all" stands for values the sweep
    cannot list (a build that does not say which transports it has)."""
    import itertools
    if not plan.program.per_configuration:
        return {()}
    axes = []
    for key, words in inv.lists.items():
        if "all" in words:
            if key not in plan.known:
                return None
            words = [w for w in words if w != "all"] + list(plan.known[key])
        axes.append(list(dict.fromkeys(words)))
    return set(itertools.product(*axes))


def product_cover(points: Iterable[tuple]) -> list[tuple[list, ...]]:
    """Splits a set of configurations into products (one list of values per axis) whose union
    is exactly that set: the configurations that agree on all axes but the first are grouped,
    those groups with the same first-axis values merged, and the rest split the same way."""
    points = list(points)
    if not points:
        return []
    if not points[0]:
        return [()]
    firsts_by_rest: dict[tuple, list] = {}
    for p in points:
        firsts = firsts_by_rest.setdefault(p[1:], [])
        if p[0] not in firsts:
            firsts.append(p[0])
    rests_by_firsts: dict[tuple, list[tuple]] = {}
    for rest, firsts in firsts_by_rest.items():
        rests_by_firsts.setdefault(tuple(firsts), []).append(rest)
    blocks = []
    for firsts, rests in rests_by_firsts.items():
        for sub in product_cover(rests):
            blocks.append((list(firsts),) + sub)
    return blocks


@dataclasses.dataclass
class Recorded:
    """What OUTPUT already holds for this sweep."""
    configs: dict[tuple, set[tuple]] = dataclasses.field(default_factory=dict)
    complete: set[tuple] = dataclasses.field(default_factory=set)

    def add(self, plan: Plan, record: dict) -> None:
        coords = record.get("sweep")
        if not isinstance(coords, dict):
            return
        key = identity(coords)
        if record.get("tool") == SWEEP_TOOL:
            if record.get("event") == "complete":
                self.complete.add(key)
        elif record.get("tool") == plan.program.name:
            self.configs.setdefault(key, set()).add(config_key(plan, record))


def read_recorded(plan: Plan, objects: Iterable[dict]) -> Recorded:
    recorded = Recorded()
    for obj in objects:
        recorded.add(plan, obj)
    return recorded


@dataclasses.dataclass
class Step:
    """What to do for one invocation: nothing, the whole matrix, or the missing parts."""
    inv: Invocation
    lists: list[dict[str, list[str]]]   # one program run per entry; empty: already recorded
    missing: int | None                 # configurations missing, when known
    resumed: bool                       # some of its configurations were recorded before


def decide(plan: Plan, inv: Invocation, recorded: Recorded) -> Step:
    key = identity(coordinates(plan, inv))
    if key in recorded.complete:
        return Step(inv, [], 0, True)
    have = recorded.configs.get(key, set())
    expected = expected_configs(plan, inv)
    if not have:
        return Step(inv, [inv.lists], len(expected) if expected else None, False)
    if expected is None:  # cannot tell what is missing: run it all, keep only the new records
        return Step(inv, [inv.lists], None, True)
    missing = expected - have
    if not missing:
        return Step(inv, [], 0, True)
    axes = list(inv.lists)
    lists = [dict(zip(axes, block)) for block in product_cover(sorted(
        missing, key=lambda c: tuple(_axis_position(plan, inv, axes, c)))) ]
    return Step(inv, lists, len(missing), True)


def _axis_position(plan: Plan, inv: Invocation, axes: list[str], config: tuple) -> list[int]:
    """Sort key that keeps the spec's order of values within each axis."""
    out = []
    for key, value in zip(axes, config):
        words = inv.lists[key]
        if "all" in words:
            words = [w for w in words if w != "all"] + list(plan.known.get(key, ()))
        out.append(words.index(value) if value in words else len(words))
    return out


# ---------------------------------------------------------------------------------------------
# Moving records from an invocation's scratch file into OUTPUT


@dataclasses.dataclass
class Harvest:
    written: int = 0
    wrong_ranks: set[int] = dataclasses.field(default_factory=set)  # ranks records claim


def harvest(plan: Plan, inv: Invocation, launch_line: str | None) -> Harvest:
    """Appends the whole records of the invocation's scratch file that OUTPUT does not hold yet,
    stamped with their sweep coordinates; removes the scratch file. Records of another rank
    count (the launcher started separate 1-rank jobs instead of one MPI job) are not kept."""
    result = Harvest()
    try:
        lines, _ = resultfile.read_lines(inv.scratch)
    except FileNotFoundError:
        return result
    if launch_line is None:  # an attempt killed before its records were moved
        try:
            launch_line = inv.scratch.with_suffix(".launch").read_text().strip()
        except OSError:
            launch_line = "unknown"
    coords = coordinates(plan, inv)
    key = identity(coords)
    fresh = []
    for line in lines:
        try:
            record = json.loads(line.text)
        except json.JSONDecodeError:
            continue  # not a whole record: lost with the run that wrote it
        if not isinstance(record, dict) or record.get("tool") != plan.program.name:
            continue
        if record.get("ranks") != inv.ranks:
            result.wrong_ranks.add(record.get("ranks"))
            continue
        record["sweep"] = {**coords, "launch": launch_line,
                           "launcher": plan.launch.launcher, "spec": str(plan.spec_path)}
        fresh.append(record)
    with resultfile.locked(plan.output) as out:
        have = read_recorded(plan, out.objects()).configs.get(key, set())
        new = []
        for record in fresh:
            config = config_key(plan, record)
            if config not in have:
                have.add(config)
                new.append(record)
        result.written = out.append(new)
    inv.scratch.unlink(missing_ok=True)
    return result


def mark_complete(plan: Plan, inv: Invocation, records: int) -> None:
    resultfile.append(plan.output, [{
        "tool": SWEEP_TOOL, "event": "complete", "schema_version": RECORD_SCHEMA_VERSION,
        "timestamp": timestamp(), "sweep": coordinates(plan, inv), "records": records}])



def failure_record(plan: Plan, inv: Invocation, outcome: Outcome, launch_line: str,
                   what: str, summary: str) -> dict:
    rc = outcome.returncode
    return {
        "tool": SWEEP_TOOL, "event": "failure", "schema_version": RECORD_SCHEMA_VERSION,
        "timestamp": timestamp(), "program": plan.program.name, "what": what,
        "sweep": {**coordinates(plan, inv), "launch": launch_line,
                  "launcher": plan.launch.launcher, "spec": str(plan.spec_path)},
        "exit_status": rc if rc is not None and rc >= 0 else None,
        "signal": signal.Signals(-rc).name if rc is not None and rc < 0 else None,
        "timed_out": outcome.timed_out, "timeout_s": inv.timeout,
        "duration_s": round(outcome.duration_s, 3), "error": summary,
        "stderr_tail": tail_lines(outcome.stderr_path),
        "stdout_tail": tail_lines(outcome.stdout_path, 5),
        "logs": [str(outcome.stdout_path), str(outcome.stderr_path)],
    }


# ---------------------------------------------------------------------------------------------
# The sweep


def prepare_output(plan: Plan) -> None:
    """Creates OUTPUT's folder and its work folder, and checks that OUTPUT can be appended to."""
    try:
        plan.output.parent.mkdir(parents=True, exist_ok=True)
        with plan.output.open("a"):
            pass
        plan.work_dir.mkdir(exist_ok=True)
    except OSError as e:
        raise SpecError(f"cannot append to {plan.output}: {e.strerror}") from None


def _hold_sweep_lock(plan: Plan):
    """One sweep at a time per (sweep, MPI, OUTPUT): a second one would run the same scratch
    files."""
    path = plan.work_dir / f"{plan.name}.{plan.mpi}.lock"
    handle = path.open("w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise RunError(f"another halox sweep is running '{plan.name}' ({plan.mpi}) into "
                       f"{plan.output}") from None
    return handle


def read_output(plan: Plan) -> Recorded:
    return read_recorded(plan, resultfile.read_objects(plan.output))


def describe(plan: Plan, recorded: Recorded | None = None) -> list[str]:
    """The dry-run text: comment lines, then one exact command line per program run."""
    lines = [f"# sweep '{plan.name}' ({plan.program.name}) from {plan.spec_path}: "
             f"{len(plan.invocations)} invocation(s)"
             + (f" x {plan.configurations} configurations" if plan.configurations else "")
             + (f", ~{plan.estimate_s:.0f} s of timed exchanges each" if plan.estimate_s else ""),
             f"# records are appended to {plan.output}"]
    if not plan.executable.is_file():
        lines.append(f"# note: {plan.executable} is not built yet")
    peers_done = peer_runs.recorded_identities(resultfile.read_objects(plan.output))[0] \
        if plan.peer_runs and plan.output.exists() else set()
    for index, inv in enumerate(plan.invocations):
        step = decide(plan, inv, recorded) if recorded else Step(inv, [inv.lists], None, False)
        if not step.lists:
            lines.append(f"# {inv.label}: recorded, skipped")
        else:
            if step.resumed:
                lines.append(f"# {inv.label}: resumed, "
                             + (f"{step.missing} configuration(s) missing" if step.missing
                                else "the missing configurations are kept"))
            lines += [inv.shell_line(lists) for lists in step.lists]
        lines += peer_runs.describe(plan, index, peers_done)
    return lines


@dataclasses.dataclass
class Summary:
    written: int = 0
    ran: int = 0
    skipped: int = 0
    failures: list[str] = dataclasses.field(default_factory=list)


def _on_sigterm(signum, frame):
    raise Terminated()


def run(plan: Plan, *, console=None, verbose: bool = False) -> Summary:
    """Runs every invocation not yet recorded, with a progress display."""
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn,
                               TextColumn, TimeElapsedColumn)

    console = console or Console(stderr=True)
    prepare_output(plan)
    lock = _hold_sweep_lock(plan)
    summary = Summary()
    previous_handler = signal.signal(signal.SIGTERM, _on_sigterm)
    columns = [SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(),
               MofNCompleteColumn(), TimeElapsedColumn()]
    total = len(plan.invocations)
    try:
        with Progress(*columns, console=console, transient=False) as progress:
            task = progress.add_task(f"sweep {plan.name}", total=total)

            def say(text: str) -> None:
                progress.console.print(text, markup=False, highlight=False, soft_wrap=True)

            for i, inv in enumerate(plan.invocations, start=1):
                progress.update(task, description=f"sweep {plan.name}: {inv.label}")
                # Records left by an attempt that was killed before they were moved.
                if inv.scratch.exists():
                    summary.written += harvest(plan, inv, None).written
                step = decide(plan, inv, read_output(plan))
                if not step.lists:
                    summary.skipped += 1
                    say(f"  {inv.label}: recorded, skipped")
                    _run_peers(plan, i - 1, say, summary)
                    progress.advance(task)
                    continue
                if step.resumed:
                    say(f"  {inv.label}: resuming, "
                        + (f"{step.missing} configuration(s) missing" if step.missing
                           else "running it again for the missing configurations"))
                summary.ran += 1
                started = time.monotonic()
                failed = False
                records = 0
                for lists in step.lists:
                    line = inv.shell_line(lists)
                    inv.scratch.with_suffix(".launch").write_text(line + "\n")
                    outcome = execute(inv.argv(lists), inv.env, inv.timeout,
                                      inv.scratch.with_suffix(""))
                    harvested = harvest(plan, inv, line)
                    records += harvested.written
                    if verbose:
                        say(outcome.stdout_path.read_text(errors="replace").rstrip())
                    if outcome.ok and not harvested.wrong_ranks:
                        continue
                    failed = True
                    what = describe_failure(outcome, inv.timeout)
                    error = error_summary(plan.program.name, outcome)
                    if outcome.ok:
                        what = "ran as separate processes"
                        claimed = ", ".join(map(str, sorted(harvested.wrong_ranks)))
                        error = (f"its records say {claimed} rank(s) instead of {inv.ranks}: the "
                                 "launcher did not start one MPI job (with srun, set "
                                 "sweep.srun_mpi to the PMI your MPI library speaks: pmix, pmi2)")
                    resultfile.append(plan.output, [failure_record(plan, inv, outcome, line,
                                                                   what, error)])
                    summary.failures.append(f"run '{inv.name}' ({i}/{total}) {what}: {error}")
                    say(f"  {inv.label}: {what} after {outcome.duration_s:.1f} s "
                        f"(recorded; logs: {outcome.stderr_path})")
                summary.written += records
                if not failed:
                    # What a successful run did not record (a transport its "all" leaves out)
                    # would not appear on a second try either.
                    mark_complete(plan, inv, records)
                    say(f"  {inv.label}: done in {time.monotonic() - started:.1f} s, "
                        f"{records} records")
                _run_peers(plan, i - 1, say, summary)
                progress.advance(task)
    finally:
        signal.signal(signal.SIGTERM, previous_handler)
        lock.close()
    return summary


def _run_peers(plan: Plan, index: int, say, summary: Summary) -> None:
    """The peer programs beside invocation `index` (peers.py), in the same job."""
    written, failures = peer_runs.run_beside(plan, index, say)
    summary.written += written
    summary.failures += failures


def main(args) -> int:
    # A batch script starts every run with srun: check the spec for that launcher.
    plan = make_plan(args.spec, output=args.output, build_dir=args.build_dir, mpi=args.mpi,
                     launcher="srun" if args.emit_sbatch else args.launcher,
                     timeout=args.timeout, require_build=not args.dry_run,
                     overrides=args.set or [])
    if args.emit_sbatch:
        path = sbatch.write(plan, args.emit_sbatch, spec_arguments(args))
        print(f"batch script written to {path}; submit it with: sbatch {shlex.quote(str(path))}")
        print(f"records will be appended to {plan.output}")
        return 0
    if args.dry_run:
        print("\n".join(describe(plan, read_output(plan) if plan.output.exists() else None)))
        return 0
    try:
        summary = run(plan, verbose=args.verbose)
    except Terminated:
        print(f"halox sweep: terminated; the records so far are in {plan.output}; run the same "
              "command again to resume", flush=True)
        return 143
    note = f" ({summary.skipped} of {len(plan.invocations)} runs were recorded already)" \
        if summary.skipped else ""
    print(f"{summary.written} records appended to {plan.output}{note}")
    if summary.written or summary.skipped:
        print(f"tables: halox report {shlex.quote(str(plan.output))}")
    if summary.failures:
        import sys
        for failure in summary.failures:
            print(f"halox sweep: error: {failure}", file=sys.stderr)
        print(f"{len(summary.failures)} run(s) failed; they are recorded in {plan.output}; "
              "running the sweep again retries them", file=sys.stderr)
        return 1
    return 0


def spec_arguments(args) -> list[str]:
    """The options of this command that a batch script must repeat."""
    words = []
    if args.mpi:
        words += ["--mpi", args.mpi]
    if args.build_dir:
        words += ["--build-dir", str(pathlib.Path(args.build_dir).resolve())]
    if args.timeout is not None:
        words += ["--timeout", repr(args.timeout)]
    for item in args.set or []:
        words += ["--set", item]
    return words
