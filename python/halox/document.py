"""`halox report ... --save DIR`: one Markdown report (DIR/report.md) with every table of the
records and the PNG plots beside it."""
from __future__ import annotations

import datetime
import pathlib
import shlex
from typing import Sequence

from . import records as rec
from . import report
from . import report_breakdown, report_fidelity, report_halo2d, report_ipc
from .records import LoadResult, Record


def failure_lines(failures: Sequence[dict]) -> list[str]:
    """One line per failed run of a sweep: where, what happened, its own error line."""
    lines = []
    for f in failures:
        s = f.get("sweep") or {}
        if f.get("what"):
            what = f["what"]
        elif f.get("timed_out"):
            what = f"timed out after {f.get('timeout_s')} s"
        elif f.get("signal"):
            what = f"was killed by {f['signal']}"
        else:
            what = f"failed with exit code {f.get('exit_status')}"
        lines.append(f"sweep '{s.get('name')}' ({s.get('mpi')}), run '{s.get('run')}' "
                     f"#{s.get('repeat')}, {f.get('timestamp')}: {what}: {f.get('error')}")
    return lines


def _placement_groups(records: Sequence[Record]) -> list[list[Record]]:
    """Records measured alike (ranks, domain, timing) on more than one rank grid."""
    out = []
    for _, group in rec.group(records, lambda r: report.context_key(r, decomposition=False)
                              ).items():
        if len({(rec.decomposition_key(r), r.periodic) for r in group}) > 1:
            out.append(group)
    return out


def write(loaded: LoadResult, bench: Sequence[Record], out_dir: str | pathlib.Path, *,
          files: Sequence[str], metric: str, baseline: str, efficiency: bool,
          layout: str, self_copy: bool = False,
          crossing: bool = False) -> tuple[pathlib.Path, list[pathlib.Path]]:
    """Writes DIR/report.md and the plots; returns the report's path and the plots' paths."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    plots: list[pathlib.Path] = []
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    md = ["# halox report", "",
          f"Generated {stamp} from {', '.join(f'`{f}`' for f in files)} "
          f"(`halox report {shlex.join(files)}`).", ""]
    closing = report.closing_lines(bench, baseline) if bench else []
    if closing:
        md += [f"**{closing[0]}**", "", *[f"- {line.strip()}" for line in closing[1:]], "",
               "Unstable cells are marked \\* in the tables and hatched in the plots "
               "(docs/bench.md, Stability); every cell's reasons follow its table.", ""]
    if bench:
        md += _bench_tables(bench, out_dir, plots, metric=metric, baseline=baseline,
                            efficiency=efficiency, layout=layout, self_copy=self_copy,
                            crossing=crossing)
        md += _placement(bench, out_dir, plots, metric)
        md += _breakdown(bench, out_dir, plots, files)
    md += _other_programs(loaded, out_dir, plots)
    if loaded.failures:
        md += ["## Failed runs", "", *[f"- {line}" for line in failure_lines(loaded.failures)],
               ""]
    path = out_dir / "report.md"
    path.write_text("\n".join(md).rstrip() + "\n")
    return path, plots


def _bench_tables(bench: Sequence[Record], out_dir: pathlib.Path, plots: list[pathlib.Path], *,
                  metric: str, baseline: str, efficiency: bool, layout: str,
                  self_copy: bool, crossing: bool) -> list[str]:
    """halox-bench's tables in the chosen layout, a plot per table, and the fidelity tables."""
    from . import plot  # matplotlib only where plots are drawn
    images: dict[int, list[str]] = {}
    sections = list(rec.group(bench, report.context_key).values())
    for i, srecs in enumerate(sections):
        for trecs in report.ordered_groups(srecs, rec.toolchain_id).values():
            path = plot.bench_variants(trecs, out_dir / f"bench-{len(plots) + 1}.png", metric)
            plots.append(path)
            images.setdefault(i, []).append(path.name)
    tables = report.build(bench, layout, metric, baseline, efficiency, self_copy, crossing)
    title = {"chosen": "chosen results", "full": "full results",
             "decomposition": "decompositions"}[layout]
    md = [f"## halox-bench: {title}", "",
          report.render_markdown(tables, level=3, images=images if layout == "chosen" else None)]
    if report_fidelity.has_fidelity(bench):
        md += ["## halox-bench: the baselines beside the real programs", "",
               report.render_markdown(report_fidelity.fidelity(bench), level=3)]
    return md


def _placement(bench: Sequence[Record], out_dir: pathlib.Path, plots: list[pathlib.Path],
               metric: str) -> list[str]:
    """The same exchanges on each rank grid, where the records hold several."""
    from . import plot  # matplotlib only where plots are drawn
    placement = _placement_groups(bench)
    if not placement:
        return []
    md = ["## halox-bench: placement (the same exchanges on each rank grid)", ""]
    for group in placement:
        path = plot.bench_placement(group, out_dir / f"placement-{len(plots) + 1}.png", metric)
        plots.append(path)
        md += [report.render_markdown(report.decomposition(group, metric), level=3),
               f"![placement]({path.name})", ""]
    return md


def _breakdown(bench: Sequence[Record], out_dir: pathlib.Path, plots: list[pathlib.Path],
               files: Sequence[str]) -> list[str]:
    """Where the time goes, wherever the records carry it (halox-bench's default): the tables
    of every record are long, so they go to a file of their own."""
    from . import plot  # matplotlib only where plots are drawn
    images = {}
    for i, srecs in enumerate(report_breakdown.contexts(bench)):
        path = plot.bench_breakdown(srecs, out_dir / f"breakdown-{len(plots) + 1}.png")
        plots.append(path)
        images[i] = [path.name]
    if not images:
        return []
    breakdown_md = out_dir / "breakdown.md"
    breakdown_md.write_text("\n".join([
        "# halox-bench: where the time goes", "",
        f"Part of [the report](report.md) of {', '.join(f'`{f}`' for f in files)}.", "",
        report.render_markdown(report_breakdown.breakdown(bench), level=2,
                               images=images)]).rstrip() + "\n")
    return ["## halox-bench: where the time goes", "",
            "Every record's split of its time into packing, copying, waiting and the "
            f"rest, with its plots: [breakdown.md]({breakdown_md.name}).", ""]


def _other_programs(loaded: LoadResult, out_dir: pathlib.Path,
                    plots: list[pathlib.Path]) -> list[str]:
    """halox-halo2d's and halox-ipc's tables, a plot per table."""
    from . import plot  # matplotlib only where plots are drawn
    md = []
    for name, runs, module, draw in (
            ("halox-halo2d: Gropp's halo-exchange tests", loaded.halo2d, report_halo2d,
             plot.halo2d),
            ("halox-ipc: intra-node copies of non-contiguous data (the mpidt benchmark's tables)",
             loaded.ipc, report_ipc, plot.ipc)):
        if not runs:
            continue
        images = {}
        for i, group in enumerate(module.grouped(runs)):
            stem = module.__name__.rsplit("_", 1)[-1]
            path = draw(group, out_dir / f"{stem}-{len(plots) + 1}.png")
            plots.append(path)
            images[i] = [path.name]
        md += [f"## {name}", "", report.render_markdown(module.build(runs), level=3,
                                                         images=images)]
    return md
