"""How a sweep starts its MPI jobs: the launcher's command line for a number of ranks.

`local` is the checkout's scripts/mpirun.sh (this machine: the build's MPI, ranks pinned to cores
when they fit, oversubscribed with yielding waits when they do not).  `mpirun` and `mpiexec` are
the MPI library's own launchers (Open MPI's, or MPICH's Hydra), `srun` is Slurm's, for runs
inside an allocation (`salloc`, or the batch script of `halox sweep --emit-sbatch`).
"""
from __future__ import annotations

import os
import pathlib
import shutil
from dataclasses import dataclass, field

LAUNCHERS = ("local", "mpirun", "mpiexec", "srun")
BINDINGS = ("core", "hwthread", "socket", "none")
SRUN_BINDINGS = {"core": "cores", "hwthread": "threads", "socket": "sockets", "none": "none"}


class LaunchError(Exception):
    """A launch setting this launcher cannot express; the message is one line."""


@dataclass(frozen=True)
class LaunchSettings:
    launcher: str = "local"
    nodes: int | None = None             # Slurm -N, and #SBATCH --nodes
    ranks_per_node: int | None = None
    ranks_per_socket: int | None = None
    cpus_per_rank: int | None = None     # cores given to each rank (Open MPI pe=M, Slurm -c M)
    bind: str = "core"
    srun_mpi: str | None = None          # srun --mpi=...; None: the cluster's MpiDefault
    extra: tuple[str, ...] = field(default_factory=tuple)  # further launcher arguments


def _mpi_executable(name: str, flavor: str) -> str:
    """Debian installs both libraries' launchers as name.openmpi / name.mpich; a cluster's module
    system puts the chosen one first in PATH as plain `mpirun` / `mpiexec`."""
    suffixed = f"{name}.{flavor}"
    return suffixed if shutil.which(suffixed) else name


def _open_mpi(s: LaunchSettings, exe: str, ranks: int) -> list[str]:
    argv = [exe, "-n", str(ranks)]
    if os.geteuid() == 0:
        argv.append("--allow-run-as-root")  # Open MPI refuses root otherwise
    pe = f":pe={s.cpus_per_rank}" if s.cpus_per_rank else ""
    if s.ranks_per_socket:
        argv += ["--map-by", f"ppr:{s.ranks_per_socket}:socket{pe}"]
    elif s.ranks_per_node:
        argv += ["--map-by", f"ppr:{s.ranks_per_node}:node{pe}"]
    elif s.cpus_per_rank:
        argv += ["--map-by", f"slot{pe}"]
    elif s.bind != "none":
        argv += ["--map-by", s.bind]
    argv += ["--bind-to", s.bind]
    return argv


def _hydra(s: LaunchSettings, exe: str, ranks: int) -> list[str]:
    if s.ranks_per_socket:
        raise LaunchError("sweep.ranks_per_socket: MPICH's mpiexec maps per node only "
                          "(use ranks_per_node, or the srun launcher)")
    argv = [exe, "-n", str(ranks)]
    if s.ranks_per_node:
        argv += ["-ppn", str(s.ranks_per_node)]
    if s.bind != "none":
        argv += ["-bind-to", f"{s.bind}:{s.cpus_per_rank}" if s.cpus_per_rank else s.bind]
    return argv


def _srun(s: LaunchSettings, ranks: int) -> list[str]:
    argv = ["srun", "-n", str(ranks)]
    if s.nodes:
        argv += ["-N", str(s.nodes)]
    if s.ranks_per_node:
        argv += [f"--ntasks-per-node={s.ranks_per_node}"]
    if s.ranks_per_socket:
        argv += [f"--ntasks-per-socket={s.ranks_per_socket}"]
    if s.cpus_per_rank:
        argv += [f"--cpus-per-task={s.cpus_per_rank}"]
    argv += [f"--cpu-bind={SRUN_BINDINGS[s.bind]}"]
    if s.srun_mpi:
        argv += [f"--mpi={s.srun_mpi}"]
    return argv


def command(s: LaunchSettings, flavor: str, ranks: int, root: pathlib.Path) -> list[str]:
    """The words before the program: e.g. ["srun", "-n", "2", "--cpu-bind=cores"]."""
    if s.launcher == "local":
        if s.extra or s.ranks_per_node or s.ranks_per_socket or s.cpus_per_rank or \
                s.bind != "core" or s.nodes:
            raise LaunchError("the local launcher (scripts/mpirun.sh) takes no placement "
                              "settings; choose launcher mpirun, mpiexec or srun")
        return [str(root / "scripts" / "mpirun.sh"), str(ranks)]
    if s.launcher == "srun":
        argv = _srun(s, ranks)
    elif flavor == "openmpi":
        argv = _open_mpi(s, _mpi_executable(s.launcher, flavor), ranks)
    else:
        argv = _hydra(s, _mpi_executable(s.launcher, flavor), ranks)
    return argv + list(s.extra)
