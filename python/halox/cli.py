"""The `halox` command: `halox sweep SPEC.toml`, `halox report FILE.jsonl ...` and
`halox calibrate FILE.jsonl ... -o MODEL.json`."""
from __future__ import annotations

import argparse
import json
import pathlib
import shlex
import sys

from . import calibrate as cal
from . import document, launch, report_breakdown, report_fidelity, report_halo2d, report_ipc
from . import report_launches
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
    _add_report(sub)
    _add_sweep(sub)
    _add_calibrate(sub)
    return parser


def _add_report(sub) -> None:
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
    r.add_argument("--baseline", default=None, metavar="T/A/G|PEER",
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
    r.add_argument("--crossing", action="store_true",
                   help="chosen layout: add 'cross' columns, the fraction of the floor of the "
                        "lines and the crossing together (moving the halo's bytes between the "
                        "node's cores, measured in the same run) each cell reaches")
    r.add_argument("--breakdown", action="store_true",
                   help="halox-bench: also a table per shape of where each stage's time goes "
                        "(packing, other copies, waiting for neighbours' data and for their "
                        "reading, the rest) on the slowest and the median rank, with the "
                        "exchange's setup time (--save writes them, with a plot per rank grid, "
                        "whenever the records carry them)")
    r.add_argument("--summary", action="store_true",
                   help="halox-bench: instead of the tables, one screen: per rank grid and "
                        "shape the variant to use, its time, speed-up over the baseline with "
                        "the range over rounds, efficiency and how far to trust it (stable, "
                        "noisy, unreliable), the causes of instability and how the automatic "
                        "choice fared (what make bench prints; --save still writes every table)")
    r.add_argument("--markdown", action="store_true", help="GitHub markdown tables")
    r.add_argument("--plot", metavar="OUT.png", help="also write a bar plot of the chosen layout")
    r.add_argument("--save", metavar="DIR",
                   help="also write DIR/report.md (every table) and PNG plots beside it")
    r.add_argument("--model", metavar="MODEL.json",
                   help="halox-bench: also the placement effect (each run's time over that of "
                        "the --mpicart run of its shape) measured, predicted by this time model "
                        "(halox calibrate) and published for Betzy")
    r.add_argument("--model-topology", metavar="TOPOLOGY",
                   help="with --model: the node the records ran on (default: this machine)")
    r.add_argument("--plot-model", metavar="OUT.png",
                   help="with --model: a plot of predicted against measured times")
    filters = r.add_argument_group("selection (comma lists)")
    filters.add_argument("--run-id", help="only these runs")
    filters.add_argument("--halo", help="only these halo widths, e.g. 1,5")
    filters.add_argument("--nfields", help="only these numbers of fields, e.g. 1,8")
    filters.add_argument("--transport", help="only these transports")
    filters.add_argument("--algorithm", help="only these algorithms")
    filters.add_argument("--grouping", help="only these groupings of the fields into messages")
    filters.add_argument("--type", help="only these element types")


def _add_sweep(sub) -> None:
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


def _add_calibrate(sub) -> None:
    c = sub.add_parser("calibrate", help="fit the time model of halox-topo predict to "
                                         "halox-bench records (docs/topology.md)",
                       description="Fits the time model's parameters (halox-topo predict) to "
                                   "the median times of halox-bench records of --mpicart or "
                                   "level-grid runs on one node (examples/sweeps/"
                                   "calibrate-node.toml), and the network's to runs across "
                                   "nodes; or, with --betzy, the Betzy model to the published "
                                   "single-node table and HDR100's figures, and prints its "
                                   "check against the 27-node tables.")
    c.add_argument("files", nargs="*", metavar="FILE.jsonl")
    c.add_argument("--output", "-o", required=True, metavar="MODEL.json",
                   help="write the model here")
    c.add_argument("--betzy", action="store_true",
                   help="the Betzy model, from the published tables (no records)")
    c.add_argument("--topology", help="the node the records ran on, as halox-topo --topology "
                                      "takes it (default: this machine)")
    c.add_argument("--base", metavar="MODEL.json",
                   help="parameters kept as they are unless fitted (e.g. a network entered by "
                        "hand, or fitted from a two-node run)")
    c.add_argument("--fit", metavar="GROUP,...",
                   help="parameter groups to fit (default: the on-node ones, and the "
                        "network's when a record spans nodes): "
                        + ", ".join(cal.ON_NODE_GROUPS + cal.NETWORK_GROUPS))
    c.add_argument("--plot", metavar="OUT.png",
                   help="with --betzy: predicted against published times of the 27-node tables")


def calibrate_main(args) -> int:
    prog = "halox calibrate"
    from . import betzy
    from . import timemodel as tm
    try:
        if args.betzy:
            if args.files:
                return _fail(prog, "--betzy takes no records")
            doc = betzy.fit_model()
        else:
            if not args.files:
                return _fail(prog, "give the halox-bench records to fit (or --betzy)")
            records = cal.read_records(args.files)
            base = tm.load_model(args.base) if args.base else None
            groups = rec.parse_list(args.fit) or cal.default_groups(records)
            doc = cal.calibrate(records, args.topology, groups, base)
        pathlib.Path(args.output).write_text(json.dumps(doc, indent=1) + "\n")
    except tm.ModelError as e:
        return _fail(prog, str(e), code=1)
    except OSError as e:
        return _fail(prog, f"cannot write {args.output}: {e.strerror}", code=1)
    print(cal.summary(doc))
    if args.betzy:
        rows = betzy.check(doc)
        print("\n" + betzy.check_table(rows))
        if args.plot:
            from . import report_model
            report_model.plot_points(betzy.published_points(rows), args.plot,
                                     "published µs per exchange (ghexbench, Betzy)")
    print(f"\nmodel written to {args.output}")
    return 0


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
                         grouping=rec.parse_list(args.grouping), type=rec.parse_list(args.type))
    _loading_notes(prog, loaded)
    if not loaded.count:
        return _fail(prog, f"no records of halox-bench, halox-halo2d or halox-ipc in "
                           f"{', '.join(args.files)}")
    if loaded.records and not records:
        return _fail(prog, f"none of the {len(loaded.records)} records match the selection")
    args.baseline = report_fidelity.reference(records, args.baseline)
    if args.summary:
        return _summary(prog, loaded, records, args)
    parts = _report_parts(prog, loaded, records, args)
    if records and args.model:
        render = rep.render_markdown if args.markdown else rep.render_text
        failed = _placement_effect(args, records, render, parts)
        if failed:
            return failed
    sys.stdout.write("\n".join(parts))
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
                                         self_copy=args.self_copy, crossing=args.crossing)
        except OSError as e:
            return _fail(prog, f"cannot write to {args.save}: {e.strerror}")
        sys.stdout.flush()
        print(f"\nreport: {path}\nplots:  " + "\n        ".join(str(p) for p in plots))
    closing = rep.closing_lines(records) if records else []
    if closing:
        print("\n" + "\n".join(closing))
    return 0


def _summary(prog: str, loaded: rec.LoadResult, records: list, args) -> int:
    """--summary: the one screen (report_summary.py), and the full report written by --save."""
    from . import report_summary
    if not records:
        return _fail(prog, "--summary needs halox-bench records")
    path = None
    if args.save:
        try:
            path, _ = document.write(loaded, records, args.save, files=args.files,
                                     metric=args.metric, baseline=args.baseline,
                                     efficiency=True, layout=args.layout,
                                     self_copy=args.self_copy, crossing=args.crossing)
        except OSError as e:
            return _fail(prog, f"cannot write to {args.save}: {e.strerror}")
    files = " ".join(shlex.quote(f) for f in args.files)
    print("\n".join(report_summary.summary_lines(records, args.baseline,
                                                 str(path) if path else None, files)))
    if loaded.failures:
        print(f"{len(loaded.failures)} runs failed: halox report {files} lists them")
    return 0


def _placement_effect(args, records, render, parts: list[str]) -> int:
    """Appends the placement-effect table (and writes its plot); non-zero on a bad model."""
    from . import report_model
    from . import timemodel as tm
    prog = "halox report"
    try:
        report, points = report_model.placement_effect(records, tm.load_model(args.model),
                                                       args.model_topology)
    except tm.ModelError as e:
        return _fail(prog, str(e), code=1)
    parts.append(render(report))
    if args.plot_model and points:
        try:
            out = report_model.plot_points(points, args.plot_model)
        except OSError as e:
            return _fail(prog, f"cannot write {args.plot_model}: {e.strerror}")
        print(f"{prog}: plot written to {out}", file=sys.stderr)
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
                                      args.efficiency, args.self_copy, args.crossing)))
        if report_launches.several_launches(records, args.baseline):
            parts.append(render(report_launches.compare(records, args.baseline)))
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
        if args.command == "calibrate":
            return calibrate_main(args)
        return sweep_main(args)
    except ModuleNotFoundError as e:
        if e.name not in TOOLS_EXTRA:
            raise
        return _fail(f"halox {args.command}",
                     f"{e.name} is missing: the sweep and report tools need the 'tools' extra "
                     "(pip install './python[tools]')")


if __name__ == "__main__":
    sys.exit(main())
