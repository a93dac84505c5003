"""`halox report` on fixed results files of all three programs: the tables match the expected
tables exactly, their numbers are the records' numbers, every table states machine, MPI
library, ranks and statistic, and the plots of --save exist and follow their input."""
import json
import math
import pathlib
import re
import struct

import pytest

from halox import cli
from halox import records as rec
from halox import report_breakdown

# Its result does not depend on the MPI library (CI runs it under one: docs/testing.md).
pytestmark = pytest.mark.any_mpi

DATA = pathlib.Path(__file__).parent / "data"
EXPECTED = DATA / "expected"


def report(capsys, *args):
    code = cli.main(["report", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def load(name):
    return [json.loads(l) for l in (DATA / name).read_text().splitlines()]


@pytest.mark.parametrize("files, options, expected", [
    (["bench.jsonl"], ["--efficiency"], "bench-chosen-efficiency.txt"),
    (["bench.jsonl"], ["--layout", "decomposition", "--markdown"], "bench-decomposition.md"),
    (["halo2d.jsonl"], [], "halo2d.txt"),
    (["halo2d.jsonl"], ["--markdown"], "halo2d.md"),
    (["ipc.jsonl"], [], "ipc.txt"),
    (["ipc.jsonl"], ["--markdown"], "ipc.md"),
])
def test_tables_match_the_expected_tables_exactly(capsys, files, options, expected):
    code, out, err = report(capsys, *[DATA / f for f in files], *options)
    assert code == 0, err
    assert out == (EXPECTED / expected).read_text()


def rows_of(text, title):
    """The rows of the fixed-width table under `title`: {label: [cells]}."""
    lines = text.splitlines()
    start = lines.index(title)
    rule = next(i for i in range(start, len(lines)) if set(lines[i].strip()) <= {"_", " "}
                and lines[i].strip())
    rows = {}
    for line in lines[rule + 2:]:
        if not line.startswith("    "):
            break
        words = line.split()
        rows[words[0]] = words[1:]
    return rows


def yardstick_cell(text, title, label, group, shape):
    """A cell of the chosen layout's efficiency table: the group ("eff", "memcpy eff" or
    "self") and the shape name its column."""
    lines = text.splitlines()
    start = lines.index(title)
    groups = lines[start + 1].split("  ")
    groups = [g.strip() for g in groups if g.strip()]
    shapes = lines[start + 2].split()
    per_group = len(shapes) // len(groups)
    row = rows_of(text, title)[label]
    return row[groups.index(group) * per_group + shapes[:per_group].index(shape)]


def with_line_floors(tmp_path):
    """bench.jsonl as halox-bench writes it since the floor of the lines: "efficiency" against
    it, "memcpy_efficiency" against the halo's bytes (distinct values, to tell them apart)."""
    records = load("bench.jsonl")
    for k, r in enumerate(records):
        if r["tool"] == "halox-bench":
            r["line_floor_s"] = r["memcpy_s"] * 3
            r["memcpy_efficiency"] = r["efficiency"]
            r["efficiency"] = 0.1 + (k % 17) * 0.05
    path = tmp_path / "bench.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path, [r for r in records if r["tool"] == "halox-bench"]


def test_bench_efficiency_columns_are_the_line_floor_and_memcpy_over_median(capsys, tmp_path):
    path, recs = with_line_floors(tmp_path)
    run_id = next(r["run_id"] for r in recs if r["decomposition"]["dims"] == [2, 1, 1])
    code, out, _ = report(capsys, path, "--efficiency", "--transport", "shm", "--run-id", run_id)
    rows = rows_of(out, "ompi")
    checked = 0
    for r in recs:
        c = r["config"]
        if c["transport"] != "shm" or r["run_id"] != run_id:
            continue
        label, shape = f"shm/{c['algorithm']}/{c['grouping']}", f"h{c['halo']}f{c['nfields']}"
        shapes = ["h1f1", "h2f1", "h1f2", "h2f2"]
        assert float(rows[label][shapes.index(shape)]) == pytest.approx(
            r["time_per_exchange_s"]["median"] * 1e6, rel=1e-4)
        assert float(yardstick_cell(out, "ompi: efficiency", label, "eff", shape)) == \
            pytest.approx(r["efficiency"], abs=0.006)
        assert float(yardstick_cell(out, "ompi: efficiency", label, "memcpy eff", shape)) == \
            pytest.approx(r["memcpy_s"] / r["time_per_exchange_s"]["median"], abs=0.006)
        checked += 1
    assert checked == 8
    tables = out[:out.index("Failed runs")]  # the failures quote their error messages whole
    assert max(len(line) for line in tables.splitlines()) <= 120


def test_records_before_the_line_floor_have_no_eff(capsys):
    """Their "efficiency" was against the halo's bytes: it shows as memcpy eff only."""
    code, out, _ = report(capsys, DATA / "bench.jsonl", "--efficiency", "--transport", "shm")
    rows = rows_of(out, "ompi: efficiency")
    assert all(cell == "NaN" for row in rows.values() for cell in row[:4])
    assert all(cell != "NaN" for row in rows.values() for cell in row[4:])


@pytest.mark.parametrize("option, field, group, note", [
    ("--self-copy", "self_copy_share", "self",
     "self = time of every rank filling the same halos from its own cells"),
    ("--crossing", "crossing_efficiency", "cross",
     "cross = the floor of the lines and the crossing together"),
])
def test_bench_yardstick_columns_are_the_records_figures(capsys, tmp_path, option, field, group,
                                                         note):
    lines = (DATA / "bench.jsonl").read_text().splitlines()
    records = [json.loads(l) for l in lines]
    bench = [r for r in records if r["tool"] == "halox-bench"]
    for k, r in enumerate(bench):
        r[field] = 0.05 + (k % 18) * 0.05  # distinct within a table
    path = tmp_path / "bench.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    run_id = next(r["run_id"] for r in bench if r["decomposition"]["dims"] == [2, 1, 1])
    code, out, _ = report(capsys, path, option, "--transport", "shm", "--run-id", run_id)
    assert code == 0
    assert note in " ".join(out.split())
    checked = 0
    for r in bench:
        c = r["config"]
        if c["transport"] != "shm" or r["run_id"] != run_id:
            continue
        shape = f"h{c['halo']}f{c['nfields']}"
        cell = yardstick_cell(out, "ompi: efficiency", f"shm/{c['algorithm']}/{c['grouping']}",
                              group, shape)
        assert float(cell) == pytest.approx(r[field], abs=0.006)
        checked += 1
    assert checked == 8


def test_breakdown_rows_are_the_records_stage_splits(capsys):
    records = load("bench-breakdown.jsonl")
    code, out, err = report(capsys, DATA / "bench-breakdown.jsonl", "--breakdown")
    assert code == 0, err
    assert "Where the time goes" in out
    lines = out.splitlines()
    parts = ("pack_s", "copy_s", "wait_peers_s", "wait_readers_s", "other_s", "total_s")
    checked = 0
    for r in records:
        c = r["config"]
        table = lines.index(f"{c['type']} h{c['halo']}f{c['nfields']}")
        variant = f"{c['transport']}/{c['algorithm']}/{c['grouping']}"
        stages = r["stage_breakdown"]["slowest_rank"]["stages"]
        for s in range(len(stages)):
            [row] = [l for l in lines[table:] if l.startswith(f"    {variant} stage {s} ")][:1]
            values = [float(v) for v in row.split()[3:]]
            expected = []
            for which in ("slowest_rank", "median_rank"):
                split = r["stage_breakdown"][which]["stages"][s]
                expected += [split[p] * 1e6 for p in parts]
            busiest = r["stage_breakdown"]["busiest_rank"]
            split = busiest["stages"][s]
            expected += [busiest["rank"],
                         (split["pack_s"] + split["copy_s"] + split["other_s"]) * 1e6,
                         split["total_s"] * 1e6, r["stage_breakdown"]["work_imbalance"]]
            expected += [r["setup"]["total_s"] * 1e3, r["setup"]["neighbours"]]
            assert values == pytest.approx(expected, abs=0.006)
            checked += 1
        if len(stages) > 1:
            [row] = [l for l in lines[table:] if l.startswith(f"    {variant} all stages ")][:1]
            values = [float(v) for v in row.split()[3:]]
            assert values[5] == pytest.approx(  # the slowest rank's total
                r["stage_breakdown"]["slowest_rank"]["total_s"] * 1e6, abs=0.02)
            assert values[13] == pytest.approx(  # the busiest rank's work
                r["stage_breakdown"]["busiest_rank"]["work_s"] * 1e6, abs=0.02)
    assert checked == sum(len(r["stage_breakdown"]["slowest_rank"]["stages"]) for r in records)


def test_breakdown_of_records_without_one_says_so(capsys):
    code, out, err = report(capsys, DATA / "bench.jsonl", "--breakdown")
    assert code == 0
    assert "Where the time goes" not in out
    assert "carry no stage breakdown" in err


def test_breakdown_bars_are_the_records_parts_over_all_stages():
    records = load("bench-breakdown.jsonl")
    [panel] = report_breakdown.bars(rec.load([DATA / "bench-breakdown.jsonl"]).records).items()
    label, rows = panel
    assert label == "float h1f1"
    by_variant = {variant: (parts, reference) for variant, parts, reference in rows}
    parts = ("pack_s", "copy_s", "wait_peers_s", "wait_readers_s", "other_s")
    for r in records:
        c = r["config"]
        got, reference = by_variant.pop(f"{c['transport']}/{c['algorithm']}/{c['grouping']}")
        for which in ("slowest_rank", "median_rank"):
            stages = r["stage_breakdown"][which]["stages"]
            expected = [sum(st[p] for st in stages) * 1e6 for p in parts]
            assert got[which] == pytest.approx(expected, rel=1e-12)
            assert sum(got[which]) == pytest.approx(
                r["stage_breakdown"][which]["total_s"] * 1e6, rel=1e-9)
        assert reference == pytest.approx(r["self_copy_reference_s"] * 1e6, rel=1e-12)
    assert not by_variant


def test_save_adds_where_the_time_goes_with_its_plot(capsys, tmp_path):
    code, out, err = report(capsys, DATA / "bench-breakdown.jsonl", "--save", tmp_path / "r")
    assert code == 0, err
    md = (tmp_path / "r" / "report.md").read_text()
    assert sorted(p.name for p in (tmp_path / "r").glob("*.png")) == ["bench-1.png",
                                                                       "breakdown-2.png"]
    width, height = png_size(tmp_path / "r" / "breakdown-2.png")
    assert width > 500 and height > 300
    # The summary first; every record's breakdown in a file of its own, linked from it.
    breakdown = (tmp_path / "r" / "breakdown.md").read_text()
    assert "## halox-bench: where the time goes" in md and "](breakdown.md)" in md
    assert md.index("halox-bench: chosen results") < md.index("where the time goes")
    assert "| shm/staged/sequence stage 2 |" not in md
    assert "](breakdown-2.png)" in breakdown and "](report.md)" in breakdown
    assert "| shm/staged/sequence stage 2 |" in breakdown

    # Of records that carry none: no such section or plot.
    code, out, err = report(capsys, DATA / "bench.jsonl", "--save", tmp_path / "without")
    assert code == 0, err
    assert not list((tmp_path / "without").glob("breakdown*"))
    assert "where the time goes" not in (tmp_path / "without" / "report.md").read_text()


def test_breakdown_plot_follows_its_input(tmp_path):
    from halox import plot  # matplotlib

    def draw(lines, name):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in lines))
        return plot.bench_breakdown(rec.load([path]).records, tmp_path / f"{name}.png").read_bytes()

    originals = load("bench-breakdown.jsonl")
    longer_wait = json.loads(json.dumps(originals))
    longer_wait[3]["stage_breakdown"]["median_rank"]["stages"][0]["wait_peers_s"] *= 3
    other_reference = json.loads(json.dumps(originals))
    other_reference[0]["self_copy_reference_s"] *= 2
    first, again = draw(originals, "a"), draw(originals, "b")
    assert first == again
    assert draw(longer_wait, "c") != first
    assert draw(other_reference, "d") != first


def test_halo2d_cells_are_the_records_microseconds_per_message(capsys):
    [run] = load("halo2d.jsonl")
    code, out, _ = report(capsys, DATA / "halo2d.jsonl")
    rows = rows_of(out, "ompi: µs per message")
    # Columns: single sender 2 4, all send/receive 2 4, phased send/receive 2 4.
    order = [(t, n) for t in ("single", "all", "phased") for n in (2, 4)]
    assert len(run["results"]) == len(order) * len(rows) == 24
    for cell in run["results"]:
        value = rows[str(cell["bytes"])][order.index((cell["test"], cell["neighbors"]))]
        assert float(value) == pytest.approx(cell["seconds_per_message"] * 1e6, abs=6e-4)
    group_line = out.splitlines()[out.splitlines().index("ompi: µs per message") + 1]
    assert re.findall(r"\S+(?: \S+)*", group_line.strip()) == [
        "single sender", "all send/receive", "phased send/receive"]


def test_ipc_cells_are_the_records_copy_times_and_efficiencies(capsys):
    runs = load("ipc.jsonl")
    code, out, _ = report(capsys, DATA / "ipc.jsonl")
    sections = out.split("\nhalox-ipc: buffer size")[1:]
    assert len(sections) == 2
    strided = next(s for s in sections if "layout strided" in s.splitlines()[0])
    run = next(r for r in runs if r["options"]["layout"] == "strided")
    times = rows_of(strided, "ompi: copy time [µs]")
    header = next(l for l in strided.splitlines() if l.strip().startswith("IOV_size")).split()
    for row in run["rows"]:
        cells = times[str(row["iov_size"])]
        assert cells[0] == str(row["iov_count"])
        for name, cell in row["mechanisms"].items():
            value = cells[header.index(name) - 1]
            if cell is None:
                assert value == "n/a"
            else:
                assert float(value) == pytest.approx(cell["time_us"], abs=0.006)
        assert float(cells[-1]) == pytest.approx(row["memcpy_us"], abs=0.006)
    efficiency = rows_of(strided, "ompi: efficiency (memcpy time / copy time; 1 = as fast as "
                                  "memcpy in one process)")
    for row in run["rows"]:
        cell = row["mechanisms"]["MAP_C"]
        assert float(efficiency[str(row["iov_size"])][header.index("MAP_C") - 1]) == \
            pytest.approx(row["memcpy_us"] / cell["time_us"], abs=6e-4)


@pytest.mark.parametrize("name, heading, sections", [
    ("bench.jsonl", "Cartesian communicator numbering order:", 2),
    ("halo2d.jsonl", "halox-halo2d: mesh", 1),
    ("ipc.jsonl", "halox-ipc: buffer size", 2),
])
def test_every_table_states_machine_mpi_ranks_and_statistic(capsys, name, heading, sections):
    code, out, _ = report(capsys, DATA / name)
    lines = out.splitlines()
    starts = [i for i, l in enumerate(lines) if l.startswith(heading)]
    assert len(starts) == sections
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(lines)
        context = [l for l in lines[start:end] if l.startswith("  machine: ")]
        assert len(context) == 1, lines[start:end]
        assert re.match(r"  machine: vm \(AMD EPYC, 2 CPUs\); MPI: Open MPI v4\.1\.4; \d+ ranks; "
                        r"statistic: \S", context[0]), context[0]
        assert any(set(l.strip()) <= {"_", " "} and l.strip() for l in lines[start:end])


def test_failures_are_listed(capsys):
    code, out, _ = report(capsys, DATA / "bench.jsonl")
    assert code == 0
    assert "Failed runs (2):" in out
    assert ("sweep 'fixture' (openmpi), run 'too-big' #1, 2026-11-23T16:02:11Z: failed with exit "
            "code 2: halox-bench: error: rank grid 3x1x1 does not fit 2 ranks") in out
    assert "run 'hang' #1, 2026-11-23T16:12:40Z: timed out after 30 s" in out


def test_a_file_read_twice_counts_once(capsys):
    _, once, _ = report(capsys, DATA / "halo2d.jsonl", DATA / "ipc.jsonl")
    code, twice, err = report(capsys, DATA / "halo2d.jsonl", DATA / "ipc.jsonl",
                              DATA / "ipc.jsonl", DATA / "halo2d.jsonl")
    assert code == 0 and twice == once
    assert "3 records were read twice and count once" in err


def test_an_unterminated_last_line_is_left_out(capsys, tmp_path):
    text = (DATA / "halo2d.jsonl").read_text() + (DATA / "ipc.jsonl").read_text()[:500]
    path = tmp_path / "cut.jsonl"
    path.write_text(text)
    code, out, err = report(capsys, path)
    assert code == 0
    assert out == (EXPECTED / "halo2d.txt").read_text()
    assert f"{path}: left out an unterminated last line" in err


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    assert data.rstrip()[-8:-4] == b"IEND"
    return struct.unpack(">II", data[16:24])


def test_save_writes_a_markdown_report_with_plots(capsys, tmp_path):
    files = [DATA / "bench.jsonl", DATA / "halo2d.jsonl", DATA / "ipc.jsonl"]
    code, out, err = report(capsys, *files, "--efficiency", "--save", tmp_path / "r")
    assert code == 0, err
    md = (tmp_path / "r" / "report.md").read_text()
    plots = sorted((tmp_path / "r").glob("*.png"))
    # bench: a plot per rank grid, one placement plot; halo2d: one; ipc: one per buffer.
    assert [p.name for p in plots] == ["bench-1.png", "bench-2.png", "halo2d-4.png",
                                       "ipc-5.png", "ipc-6.png", "placement-3.png"]
    for p in plots:
        width, height = png_size(p)
        assert width > 500 and height > 300
        assert f"]({p.name})" in md
    for heading in ("## halox-bench: chosen results", "## halox-bench: placement",
                    "## halox-halo2d", "## halox-ipc", "## Failed runs"):
        assert heading in md
    assert md.count("machine: vm (AMD EPYC, 2 CPUs)") >= 6
    assert f"report: {tmp_path / 'r' / 'report.md'}" in out
    assert all(str(p) in out for p in plots)


@pytest.mark.slow  # six plots drawn three times: 18 s
def test_plots_follow_their_input(tmp_path, capsys):
    """The same plot of other numbers is another picture; of the same numbers, the same."""
    def save(lines, where):
        path = tmp_path / f"{where}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in lines))
        assert cli.main(["report", str(path), "--save", str(tmp_path / where)]) == 0
        capsys.readouterr()
        return {p.name: p.read_bytes() for p in (tmp_path / where).glob("*.png")}

    originals = load("bench.jsonl") + load("halo2d.jsonl") + load("ipc.jsonl")
    slower = json.loads(json.dumps(originals))
    for r in slower:
        if r.get("tool") == "halox-bench":
            r["time_per_exchange_s"]["median"] *= 3
        elif r.get("tool") == "halox-halo2d":
            for cell in r["results"]:
                cell["seconds_per_message"] *= 3
        elif r.get("tool") == "halox-ipc":
            for row in r["rows"]:
                for cell in row["mechanisms"].values():
                    if cell:
                        cell["time_us"] *= 3
    first, again, other = save(originals, "a"), save(originals, "b"), save(slower, "c")
    assert first.keys() == other.keys() and len(first) == 6
    for name in first:
        assert first[name] == again[name], name
        assert first[name] != other[name], name
