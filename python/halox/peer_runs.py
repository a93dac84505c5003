"""The peer programs of a sweep run beside each halox-bench invocation (peers.py describes them):
skipped when OUTPUT holds their record, else run, parsed and recorded, or recorded as a failure."""
from __future__ import annotations

from typing import Callable

from . import execution, resultfile
from .identity import RECORD_SCHEMA_VERSION, SWEEP_TOOL, coordinates, timestamp
from .identity import identity as sweep_identity
from .peers import PARSERS, PEER_TOOL, PeerError, PeerRun, identity, library_text, make_record


def recorded_identities(objects) -> tuple[set[tuple], dict[tuple, list[dict]]]:
    """The peer runs OUTPUT holds, and the halox-bench records by their sweep identity."""
    peers_done: set[tuple] = set()
    bench: dict[tuple, list[dict]] = {}
    for obj in objects:
        coords = obj.get("sweep") if isinstance(obj, dict) else None
        if not isinstance(coords, dict):
            continue
        if obj.get("tool") == PEER_TOOL:
            peers_done.add(identity(coords))
        elif obj.get("tool") == "halox-bench":
            bench.setdefault(sweep_identity(coords), []).append(obj)
    return peers_done, bench


def _beside(candidates: list[dict], run: PeerRun) -> dict | None:
    """The halox-bench record of the same shape (else any) of the invocation the peer ran
    beside."""
    for record in candidates:
        config = record.get("config") or {}
        if (config.get("halo"), config.get("nfields"), config.get("type")) == \
                (run.halo, run.nfields, run.peer.type):
            return record
    return candidates[0] if candidates else None


def describe(plan, index: int, done: set[tuple]) -> list[str]:
    lines = []
    for run in plan.peer_runs.get(index, []):
        if identity(run.coordinates(plan.name, plan.mpi)) in done:
            lines.append(f"# {run.label}: recorded, skipped")
        else:
            lines.append(run.shell_line())
    return lines


def run_beside(plan, index: int, say: Callable[[str], None]) -> tuple[int, list[str]]:
    """Runs the peer runs beside invocation `index` that OUTPUT does not hold yet; returns the
    records written and the failures (each also recorded in OUTPUT as a sweep failure)."""
    runs = plan.peer_runs.get(index, [])
    if not runs:
        return 0, []
    inv = plan.invocations[index]
    written, failures = 0, []
    for run in runs:
        done, bench = recorded_identities(resultfile.read_objects(plan.output))
        coords = run.coordinates(plan.name, plan.mpi)
        if identity(coords) in done:
            say(f"  {run.label}: recorded, skipped")
            continue
        line = run.shell_line()
        outcome = execution.execute(run.argv, run.env, run.timeout, run.log_stem)
        text = outcome.stdout_path.read_text(errors="replace")
        error = None
        parsed = None
        if outcome.ok:
            try:
                parsed = PARSERS[run.peer.format](text)
                if parsed.get("ranks") not in (None, run.ranks):
                    error = (f"it ran on {parsed['ranks']} rank(s) instead of {run.ranks}: the "
                             "launcher did not start one MPI job")
            except PeerError as e:
                error = str(e)
        if outcome.ok and error is None:
            beside = _beside(bench.get(sweep_identity(coordinates(plan, inv)), []), run)
            library = str(beside.get("mpi_library")) if beside else library_text(plan.mpi)
            record = make_record(run, parsed, sweep_name=plan.name, mpi=plan.mpi,
                                 launch_line=line, launcher=plan.launch.launcher,
                                 spec=str(plan.spec_path), beside=beside, mpi_library=library)
            with resultfile.locked(plan.output) as out:
                if identity(coords) not in recorded_identities(out.objects())[0]:
                    written += out.append([record])
            say(f"  {run.label}: median {parsed['time_per_exchange_s']['median'] * 1e6:.2f} us")
            continue
        what = execution.describe_failure(outcome, run.timeout) if not outcome.ok else \
            "gave no usable output"
        if error is None:
            error = execution.error_summary(run.peer.program, outcome)
        failure = {
            "tool": SWEEP_TOOL, "event": "failure",
            "schema_version": RECORD_SCHEMA_VERSION, "timestamp": timestamp(),
            "program": run.peer.program, "peer": run.peer.name, "what": what,
            "sweep": {**coords, "launch": line, "launcher": plan.launch.launcher,
                      "spec": str(plan.spec_path)},
            "exit_status": outcome.returncode if outcome.returncode is not None and
            outcome.returncode >= 0 else None,
            "timed_out": outcome.timed_out, "timeout_s": run.timeout,
            "duration_s": round(outcome.duration_s, 3), "error": error,
            "stderr_tail": execution.tail_lines(outcome.stderr_path),
            "stdout_tail": execution.tail_lines(outcome.stdout_path, 5),
            "logs": [str(outcome.stdout_path), str(outcome.stderr_path)]}
        resultfile.append(plan.output, [failure])
        failures.append(f"peer '{run.peer.name}' (h{run.halo}f{run.nfields} beside run "
                        f"'{run.run}' #{run.repeat + 1}) {what}: {error}")
        say(f"  {run.label}: {what}: {error} (recorded; logs: {outcome.stderr_path})")
    return written, failures
