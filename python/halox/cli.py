"""The `halox` command: `halox sweep SPEC.toml` and `halox report FILE.jsonl ...`."""
from __future__ import annotations

import argparse
import sys

from . import document, launch, report_breakdown, report_fidelity, report_halo2d, report_ipc
from . import records as rec
from . import report as rep
from . import sweep as swp


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"'{text}' must be positive")
    return value


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line: `halox report: error: ...`."""

    def error(self, message: str):  # noqa: D401
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _fail(prog: str, message: str, code: int = 2) -> int:
    print(f"{prog}: error: {message}", file=sys.stderr)
    return code


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="halox", description="Sweeps and reports for the halox benchmarks.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    r = sub.add_parser("report", help="tables and plots from the records of halox-bench, "
                                      "halox-halo2d and halox-ipc",
                       description="Tables from the JSON Lines records that the halox programs "
                                   "append with --json (and halox sweep collects): halox-bench "
                                   "in the layouts of the GHEX benchmark results on Betzy, "
                                   "halox-halo2d in those of Gropp's halo tests, halox-ipc in "
                                   "those of the mpidt benchmark.")
    r.add_argument("files", nargs="+", metavar="FILE.jsonl")
    r.add_argument("--metric", choices=list(rec.METRICS), default="median",
                   help="halox-bench: median (default), mean, min, p5, p95: time per exchange of "
                        "the slowest rank in µs; seconds_per_10000: seconds per 10000 exchanges "
                        "(the unit of the GHEX results)")
    r.add_argument("--layout", choices=rep.LAYOUTS, default="chosen",
                   help="halox-bench: chosen: a row per variant, a column per halo x fields "
                        "(default); full: per variant, rows = halo, columns = fields (+ staged / "
                        "second toolchain); decomposition: columns = decomposition x toolchain")
    r.add_argument("--baseline", default=None, metavar="T/A/F|PEER",
                   help="variant, or peer program of the sweep's [[peers]], that the (xN) "
                        "ratios refer to (default: the real program that the records' baseline "
                        "follows, where it ran beside them, else that baseline: halox-bench's "
                        "--baseline)")
    r.add_argument("--efficiency", action="store_true",
                   help="chosen layout: add 'eff' columns, the fraction of the single-copy floor "
                        "(a memcpy of the same bytes in the same run) each cell reaches")
    r.add_argument("--self-copy", action="store_true",
                   help="chosen layout: add 'self' columns, the fraction of the self-copy "
                        "reference (every rank filling the same halos from its own cells, "
                        "measured in the same run) each cell reaches")
    r.add_argument("--breakdown", action="store_true",
                   help="halox-bench: also a table per shape of where each stage's time goes "
                        "(packing, other copies, waiting for neighbours' data and for their "
                        "reading, the rest) on the slowest and the median rank, with the "
                        "exchange's setup time (--save writes them, with a plot per rank grid, "
                        "whenever the records carry them)")
    r.add_argument("--markdown", action="store_true", help="GitHub markdown tables")
    r.add_argument("--plot", metavar="OUT.png", help="also write a bar plot of the chosen layout")
    r.add_argument("--save", metavar="DIR",
                   help="also write DIR/report.md (every table) and PNG plots beside it")
    filters = r.add_argument_group("selection (comma lists)")
    filters.add_argument("--run-id", help="only these runs")
    filters.add_argument("--halo", help="only these halo widths, e.g. 1,5")
    filters.add_argument("--nfields", help="only these numbers of fields, e.g. 1,8")
    filters.add_argument("--transport", help="only these transports")
    filters.add_argument("--algorithm", help="only these algorithms")
    filters.add_argument("--fields", help="only these field modes")
    filters.add_argument("--type", help="only these element types")

    s = sub.add_parser("sweep", help="run a matrix of benchmark configurations from TOML",
                       description="Runs the [[sweep.run]] entries of SPEC.toml, each as one "
                                   "invocation of sweep.executable (halox-bench, halox-halo2d, "
                                   "halox-ipc) over the whole [matrix]. Running it again into "
                                   "the same output resumes: recorded runs are skipped.")
    s.add_argument("spec", metavar="SPEC.toml")
    s.add_argument("--dry-run", action="store_true",
                   help="check the spec and print the exact command lines (and what is "
                        "recorded already), run nothing")
    s.add_argument("--output", metavar="FILE.jsonl",
                   help="append records here (default: sweep.output, else "
                        "results/sweep-NAME-MPI.jsonl)")
    s.add_argument("--build-dir", help="folder with the programs (default: sweep.build_dir, "
                                       "else build/MPI of the checkout)")
    s.add_argument("--mpi", choices=swp.MPI_FLAVORS, help="override sweep.mpi")
    s.add_argument("--launcher", choices=launch.LAUNCHERS,
                   help="override sweep.launcher: local (scripts/mpirun.sh, the default), "
                        "mpirun, mpiexec, or srun (inside a Slurm allocation)")
    s.add_argument("--timeout", type=_positive_seconds, metavar="SECONDS",
                   help="override the per-run timeout (sweep.timeout, sweep.run.timeout)")
    s.add_argument("--set", action="append", metavar="TABLE.KEY=VALUE",
                   help="change one value of the spec, e.g. --set bench.time=0.05 "
                        "--set 'matrix.halo=[1, 5]' (repeatable)")
    s.add_argument("--emit-sbatch", metavar="FILE.sh",
                   help="write a Slurm batch script that runs this sweep with srun inside its "
                        "allocation, appending to --output; run nothing")
    s.add_argument("-v", "--verbose", action="store_true",
                   help="show each benchmark's own output (its summary table) when it ends")
    return parser


def report_main(args) -> int:
    prog = "halox report"
    try:
        loaded = rec.load(args.files)
    except rec.RecordError as e:
        return _fail(prog, str(e))
    records = rec.select(loaded.records, run_id=rec.parse_list(args.run_id),
                         halo=rec.parse_list(args.halo), nfields=rec.parse_list(args.nfields),
                         transport=rec.parse_list(args.transport),
                         algorithm=rec.parse_list(args.algorithm),
                         fields=rec.parse_list(args.fields), type=rec.parse_list(args.type))
    _loading_notes(prog, loaded)
    if not loaded.count:
        return _fail(prog, f"no records of halox-bench, halox-halo2d or halox-ipc in "
                           f"{', '.join(args.files)}")
    if loaded.records and not records:
        return _fail(prog, f"none of the {len(loaded.records)} records match the selection")
    args.baseline = report_fidelity.reference(records, args.baseline)
    sys.stdout.write("\n".join(_report_parts(prog, loaded, records, args)))
    if args.plot and records:
        from . import plot  # matplotlib only where plots are drawn
        try:
            out = plot.plot(records, args.plot, args.metric, args.baseline)
        except OSError as e:
            return _fail(prog, f"cannot write {args.plot}: {e.strerror}")
        print(f"{prog}: plot written to {out}", file=sys.stderr)
    if args.save:
        try:
            path, plots = document.write(loaded, records, args.save, files=args.files,
                                         metric=args.metric, baseline=args.baseline,
                                         efficiency=args.efficiency, layout=args.layout,
                                         self_copy=args.self_copy)
        except OSError as e:
            return _fail(prog, f"cannot write to {args.save}: {e.strerror}")
        sys.stdout.flush()
        print(f"\nreport: {path}\nplots:  " + "\n        ".join(str(p) for p in plots))
    closing = rep.closing_line(records, args.baseline) if records else ""
    if closing:
        print(f"\n{closing}")
    return 0


def _loading_notes(prog: str, loaded: rec.LoadResult) -> None:
    """What the reading left out or counted once, on stderr."""
    for tool, count in loaded.skipped_tools.items():
        print(f"{prog}: note: skipped {count} records of {tool} (not a halox program)",
              file=sys.stderr)
    if loaded.duplicates:
        print(f"{prog}: note: {loaded.duplicates} records were read twice and count once",
              file=sys.stderr)
    for path in loaded.partial:
        print(f"{prog}: note: {path}: left out an unterminated last line (its writer was "
              "interrupted)", file=sys.stderr)


def _report_parts(prog: str, loaded: rec.LoadResult, records: list, args) -> list[str]:
    """The report's tables as text (or Markdown), one part per program and kind of table."""
    render = rep.render_markdown if args.markdown else rep.render_text
    parts = []
    if records and report_fidelity.has_fidelity(records):
        parts.append(render(report_fidelity.fidelity(records)))
    if records:
        parts.append(render(rep.build(records, args.layout, args.metric, args.baseline,
                                      args.efficiency, args.self_copy)))
    if records and args.breakdown:
        if report_breakdown.has_breakdown(records):
            parts.append(render(report_breakdown.breakdown(records)))
        else:
            print(f"{prog}: note: --breakdown: these records carry no stage breakdown (written "
                  "before halox-bench recorded it, or with --stage-times off)", file=sys.stderr)
    if loaded.halo2d:
        parts.append(render(report_halo2d.build(loaded.halo2d)))
    if loaded.ipc:
        parts.append(render(report_ipc.build(loaded.ipc)))
    if loaded.failures:
        lines = document.failure_lines(loaded.failures)
        parts.append("\n".join(
            [f"### Failed runs ({len(lines)})", "", *[f"- {l}" for l in lines]] if args.markdown
            else [f"Failed runs ({len(lines)}):", *[f"  {l}" for l in lines]]) + "\n")
    return parts


def sweep_main(args) -> int:
    prog = "halox sweep"
    try:
        return swp.main(args)
    except swp.SpecError as e:
        return _fail(prog, str(e))
    except swp.RunError as e:
        return _fail(prog, str(e), code=1)
    except KeyboardInterrupt:
        return _fail(prog, "interrupted", code=130)


TOOLS_EXTRA = ("matplotlib", "rich", "psutil")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "report":
            return report_main(args)
        return sweep_main(args)
    except ModuleNotFoundError as e:
        if e.name not in TOOLS_EXTRA:
            raise
        return _fail(f"halox {args.command}",
                     f"{e.name} is missing: the sweep and report tools need the 'tools' extra "
                     "(pip install './python[tools]')")


if __name__ == "__main__":
    sys.exit(main())
