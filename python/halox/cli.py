"""The `halox` command: `halox sweep SPEC.toml` and `halox report FILE.jsonl ...`."""
from __future__ import annotations

import argparse
import sys

from . import records as rec
from . import report as rep
from . import sweep as swp


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

    r = sub.add_parser("report", help="tables and plots from halox-bench --json records",
                       description="Tables in the seeds' layouts from the JSON Lines records "
                                   "that `halox-bench --json` appends.")
    r.add_argument("files", nargs="+", metavar="FILE.jsonl")
    r.add_argument("--metric", choices=list(rec.METRICS), default="median",
                   help="median (default), mean, min, p5, p95: time per exchange of the slowest "
                        "rank in µs; seconds_per_10000: seconds per 10000 exchanges (the seeds' "
                        "unit)")
    r.add_argument("--layout", choices=rep.LAYOUTS, default="chosen",
                   help="chosen: a row per variant, a column per halo x fields (default); "
                        "full: per variant, rows = halo, columns = fields (+ staged / second "
                        "toolchain); decomposition: columns = decomposition x toolchain")
    r.add_argument("--baseline", default=rep.DEFAULT_BASELINE, metavar="T/A/F",
                   help="variant the (xN) ratios refer to (default %(default)s)")
    r.add_argument("--markdown", action="store_true", help="GitHub markdown tables")
    r.add_argument("--plot", metavar="OUT.png", help="also write a bar plot of the chosen layout")
    filters = r.add_argument_group("selection (comma lists)")
    filters.add_argument("--run-id", help="only these runs")
    filters.add_argument("--halo", help="only these halo widths, e.g. 1,5")
    filters.add_argument("--nfields", help="only these numbers of fields, e.g. 1,8")
    filters.add_argument("--transport", help="only these transports")
    filters.add_argument("--algorithm", help="only these algorithms")
    filters.add_argument("--fields", help="only these field modes")
    filters.add_argument("--type", help="only these element types")

    s = sub.add_parser("sweep", help="run a matrix of halox-bench configurations from TOML",
                       description="Runs the [[sweep.run]] entries of SPEC.toml, each as one "
                                   "halox-bench invocation over the whole [matrix].")
    s.add_argument("spec", metavar="SPEC.toml")
    s.add_argument("--dry-run", action="store_true",
                   help="check the spec and print the exact command lines, run nothing")
    s.add_argument("--output", metavar="FILE.jsonl",
                   help="append records here (default: sweep.output, else "
                        "results/sweep-NAME-MPI-DATE.jsonl)")
    s.add_argument("--build-dir", help="folder with halox-bench (default: sweep.build_dir, "
                                       "else build/MPI of the checkout)")
    s.add_argument("--mpi", choices=swp.MPI_FLAVORS, help="override sweep.mpi")
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
    for tool, count in loaded.skipped_tools.items():
        print(f"{prog}: note: skipped {count} records of {tool} (not halox-bench)", file=sys.stderr)
    if not loaded.records:
        return _fail(prog, f"no halox-bench records in {', '.join(args.files)}")
    if not records:
        return _fail(prog, f"none of the {len(loaded.records)} records match the selection")
    report = rep.build(records, args.layout, args.metric, args.baseline)
    sys.stdout.write(rep.render_markdown(report) if args.markdown else rep.render_text(report))
    if args.plot:
        from . import plot
        try:
            out = plot.plot(records, args.plot, args.metric, args.baseline)
        except OSError as e:
            return _fail(prog, f"cannot write {args.plot}: {e.strerror}")
        print(f"{prog}: plot written to {out}", file=sys.stderr)
    return 0


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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "report":
        return report_main(args)
    return sweep_main(args)


if __name__ == "__main__":
    sys.exit(main())
