"""`halox sweep SPEC --emit-sbatch FILE`: a Slurm batch script that runs the sweep inside its
allocation, every run started with `srun`.  The sweep resumes, so submitting the same script
again after a job hit its time limit runs only what is not recorded yet."""
from __future__ import annotations

import math
import pathlib
import shlex
import sys

from .spec import Plan, SpecError, repo_root


def directives(plan: Plan) -> list[str]:
    s = plan.launch
    ranks = plan.max_ranks
    nodes = s.nodes
    if nodes is None and s.ranks_per_node:
        nodes = math.ceil(ranks / s.ranks_per_node)
    slurm = plan.slurm
    lines = [f"--job-name={slurm.get('job_name', f'halox-{plan.name}')}"]
    if nodes:
        lines.append(f"--nodes={nodes}")
    lines.append(f"--ntasks={ranks}")
    if s.ranks_per_node:
        lines.append(f"--ntasks-per-node={s.ranks_per_node}")
    if s.ranks_per_socket:
        lines.append(f"--ntasks-per-socket={s.ranks_per_socket}")
    if s.cpus_per_rank:
        lines.append(f"--cpus-per-task={s.cpus_per_rank}")
    for key in ("time", "partition", "account", "qos", "constraint"):
        if key in slurm:
            lines.append(f"--{key}={slurm[key]}")
    stem = plan.output.name.removesuffix(".jsonl")
    lines.append(f"--output={plan.output.parent / (stem + '-slurm-%j.out')}")
    lines += list(slurm.get("extra", []))
    return lines


def script(plan: Plan, extra_arguments: list[str]) -> str:
    command = [sys.executable, "-m", "halox.cli", "sweep", str(plan.spec_path),
               "--launcher", "srun", "--output", str(plan.output), *extra_arguments]
    body = [
        "#!/bin/bash",
        f"# halox sweep '{plan.name}' ({plan.program.name}, {plan.mpi}) from {plan.spec_path}.",
        "# Every run starts with srun inside this allocation; records are appended to",
        f"# {plan.output}.",
        "# Submitting this script again resumes the sweep: recorded runs are skipped.",
        *[f"#SBATCH {d}" for d in directives(plan)],
        "set -euo pipefail",
        f"cd {shlex.quote(str(repo_root()))}",
        f"export HALOX_MPI={shlex.quote(plan.mpi)}",
        "exec " + shlex.join(command),
        "",
    ]
    return "\n".join(body)


def write(plan: Plan, path: str | pathlib.Path, extra_arguments: list[str]) -> pathlib.Path:
    path = pathlib.Path(path).resolve()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Slurm opens the job's log there before anything of the script runs.
        plan.output.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(script(plan, extra_arguments))
        path.chmod(0o755)
    except OSError as e:
        raise SpecError(f"cannot write {path}: {e.strerror}") from None
    return path
