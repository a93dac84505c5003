"""`halox report` on real records: the session fixture runs the real halox-bench and the tables
must show the records' numbers (medians, baseline/variant ratios), NaN where a cell is missing."""
import json
import math
import os
import pathlib
import re
import struct
import subprocess
import sys

import pytest

from conftest import ROOT, build_dir, launcher, list_transports, mpi_flavor
from halox import cli, records

BENCH = "halox-bench"
SMALL = ["--domain", "8", "8", "8", "--nrep", "5", "--warmup", "1"]
MATRIX = ["--halo", "1,2", "--nfields", "1,2", "--transport", "all",
          "--algorithm", "standard,staged", "--grouping", "compact,sequence"]
BASELINE = "mpi-types/staged/sequence"


def run_bench(out: pathlib.Path, *args: str, exe: pathlib.Path | None = None, env=None):
    exe = exe or build_dir() / BENCH
    if not exe.exists():
        pytest.fail(f"{exe} is not built")
    cmd = (launcher(2) if env is None else [str(ROOT / "scripts" / "mpirun.sh"), "2"])
    done = subprocess.run(cmd + [str(exe), *SMALL, *args, "--quiet", "--json", str(out)],
                          capture_output=True, text=True, timeout=300,
                          env=None if env is None else {**os.environ, **env})
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads(line) for line in out.read_text().splitlines()]


@pytest.fixture(scope="session")
def bench_files(tmp_path_factory):
    """Real records: the full small matrix on MPI_Cart_create, a subset on a hardware grid
    (--slot), and a second run of a subset on MPI_Cart_create."""
    d = tmp_path_factory.mktemp("records")
    files = {"main": d / "main.jsonl", "hw": d / "hw.jsonl", "again": d / "again.jsonl"}
    run_bench(files["main"], *MATRIX)
    run_bench(files["hw"], "--slot", "2", "1", "1", "--halo", "1,2", "--nfields", "1,2",
              "--transport", "mpi-types,shm", "--algorithm", "staged", "--grouping", "sequence")
    run_bench(files["again"], "--halo", "1", "--nfields", "1", "--transport", "mpi-types,shm",
              "--algorithm", "staged", "--grouping", "sequence")
    return files


def load(path):
    return [json.loads(line) for line in pathlib.Path(path).read_text().splitlines()]


def variant(r):
    c = r["config"]
    return f"{c['transport']}/{c['algorithm']}/{c['grouping']}"


def shape(r):
    return f"h{r['config']['halo']}f{r['config']['nfields']}"


def report(capsys, *args):
    code = cli.main(["report", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


class Table:
    def __init__(self, title, columns, rows):
        self.title, self.columns, self.rows = title, columns, rows

    def cell(self, row, column):
        return self.rows[row][self.columns.index(column)]


def parse_tables(text):
    """Fixed-width tables: a header, an underline of ____ per column, a blank line, rows
    indented by 4 spaces (labels and cells have no spaces)."""
    lines = text.splitlines()
    tables = []
    for i, line in enumerate(lines):
        if not (line.strip() and set(line.strip()) <= {"_", " "}):
            continue
        header = lines[i - 1]
        columns, prev = [], 0
        for m in re.finditer(r"_+", line):
            columns.append(header[prev:m.end()].strip())
            prev = m.end()
        rows = {}
        j = i + 2
        while j < len(lines) and lines[j].startswith("    "):
            tokens = lines[j].split()
            rows[tokens[0]] = tokens[1:]
            assert len(tokens[1:]) == len(columns), lines[j]
            j += 1
        tables.append(Table(lines[i - 2] if i >= 2 else "", columns, rows))
    return tables


def chosen_tables(text):
    """The chosen layout's tables of one toolchain (times, then "(xN)", then "efficiency"),
    each merged into one: columns side by side, as the layout's three tables show them."""
    merged = []
    for t in parse_tables(text):
        if merged and t.title.startswith(merged[-1].title + ": "):
            merged[-1].columns += t.columns
            for label, cells in t.rows.items():
                merged[-1].rows[label] += cells
            continue
        merged.append(t)
    return merged


def unwrap(text):
    """The report with its wrapped notes and details joined back into one line each (their
    later lines are indented by 6 or 8 spaces; table rows by 4)."""
    return re.sub(r"\n {6,8}(?=\S)", " ", text)


def value(text):
    """A cell's number; a trailing * marks an unstable cell."""
    text = text.removesuffix("*").removesuffix("\\")
    return math.nan if text == "NaN" else float(text)


def expect_close(cell, expected, rel=1e-4):
    assert value(cell) == pytest.approx(expected, rel=rel), (cell, expected)


# ---------------------------------------------------------------------------------------------


def test_chosen_table_shows_the_medians_and_ratios_of_one_run(capsys, bench_files):
    recs = load(bench_files["main"])
    code, out, _ = report(capsys, bench_files["main"])
    assert code == 0
    [table] = chosen_tables(out)
    assert table.title == records.toolchain_short(recs[0]["mpi_library"])
    assert table.columns == ["h1f1", "h2f1", "h1f2", "h2f2",
                             "h1f1 (xN)", "h2f1 (xN)", "h1f2 (xN)", "h2f2 (xN)"]
    variants = 4 * len(list_transports())  # transports x 2 algorithms x 2 groupings
    assert len(table.rows) == variants == len({variant(r) for r in recs})
    base = {shape(r): r["time_per_exchange_s"]["median"] for r in recs if variant(r) == BASELINE}
    for r in recs:
        median = r["time_per_exchange_s"]["median"]
        expect_close(table.cell(variant(r), shape(r)), median * 1e6)
        # The mark follows the stability halox-bench recorded (the same rules, same baseline).
        assert table.cell(variant(r), shape(r)).endswith("*") == (not r["stable"])
        assert value(table.cell(variant(r), shape(r) + " (xN)")) == pytest.approx(
            base[shape(r)] / median, abs=0.006)
    assert (f"(xN) = {BASELINE} (the algorithm of cartex mpi_comm --MPI-datatypes) / variant, "
            f"measured in one run ({recs[0]['run_id']})") in unwrap(out)
    assert "Cartesian communicator numbering order: ZYX (mpicart 2x1x1)" in unwrap(out)
    assert "median time per exchange of the slowest rank [µs]" in unwrap(out)


@pytest.mark.parametrize("metric", ["mean", "seconds_per_10000"])
def test_other_metrics_come_from_the_records(capsys, bench_files, metric):
    recs = load(bench_files["main"])
    code, out, _ = report(capsys, bench_files["main"], "--metric", metric)
    assert code == 0
    [table] = chosen_tables(out)
    for r in recs:
        expected = (r["seconds_per_10000"] if metric == "seconds_per_10000"
                    else r["time_per_exchange_s"]["mean"] * 1e6)
        expect_close(table.cell(variant(r), shape(r)), expected)
    if metric == "seconds_per_10000":
        assert "execution time of 10000 exchange calls" in unwrap(out) and "[s]" in unwrap(out)


def test_another_baseline(capsys, bench_files):
    recs = load(bench_files["main"])
    code, out, _ = report(capsys, bench_files["main"], "--baseline", "shm/staged/compact")
    [table] = chosen_tables(out)
    base = {shape(r): r["time_per_exchange_s"]["median"] for r in recs
            if variant(r) == "shm/staged/compact"}
    for r in recs:
        assert value(table.cell(variant(r), shape(r) + " (xN)")) == pytest.approx(
            base[shape(r)] / r["time_per_exchange_s"]["median"], abs=0.006)
    assert all(c == "1.00" for c in table.rows["shm/staged/compact"][4:])


def test_missing_cells_print_nan(capsys, bench_files, tmp_path):
    recs = load(bench_files["main"])
    dropped = [r for r in recs if variant(r) == "shm/staged/compact" and shape(r) == "h2f2"]
    baseline_dropped = [r for r in recs if variant(r) == BASELINE and shape(r) == "h1f2"]
    assert len(dropped) == 1 and len(baseline_dropped) == 1
    kept = [r for r in recs if r is not dropped[0] and r is not baseline_dropped[0]]
    path = tmp_path / "partial.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in kept))
    code, out, _ = report(capsys, path)
    assert code == 0
    [table] = chosen_tables(out)
    assert table.cell("shm/staged/compact", "h2f2") == "NaN"
    assert table.cell("shm/staged/compact", "h2f2 (xN)") == "NaN"
    # Without the baseline's cell, no ratio for that shape, but the values stay.
    assert all(row[table.columns.index("h1f2 (xN)")] == "NaN" for row in table.rows.values())
    assert table.cell(BASELINE, "h1f2") == "NaN"
    expect_close(table.cell("shm/staged/compact", "h1f1"),
                 next(r for r in recs if variant(r) == "shm/staged/compact" and shape(r) == "h1f1")
                 ["time_per_exchange_s"]["median"] * 1e6)
    code, md, _ = report(capsys, path, "--markdown")
    # The times' table, then the ratios'.
    rows = [l for l in md.splitlines() if l.startswith("| shm/staged/compact |")]
    cells = [c.strip() for row in rows[:2] for c in row.strip("|").split("|")[1:]]
    assert cells[3] == "NaN" and cells[7] == "NaN"


def test_records_of_several_runs_give_absolute_values_only(capsys, bench_files):
    main, again = load(bench_files["main"]), load(bench_files["again"])
    code, out, _ = report(capsys, bench_files["main"], bench_files["again"])
    assert code == 0
    # The times, then the launches compared (their rows' labels hold spaces: not parsed here).
    [table] = chosen_tables(out[:out.index("Launches compared")])
    assert "cells measured in two launches differ beyond the launches' own spread" in unwrap(out)
    assert table.columns == ["h1f1", "h2f1", "h1f2", "h2f2"]
    assert "no (xN) ratios: the records come from 2 runs" in unwrap(out)
    assert "median of their values" in unwrap(out)
    # A cell with one record from each run shows the median (= mean) of the two.
    for r in again:
        twin = next(m for m in main if variant(m) == variant(r) and shape(m) == shape(r))
        both = [r["time_per_exchange_s"]["median"], twin["time_per_exchange_s"]["median"]]
        expect_close(table.cell(variant(r), shape(r)), sum(both) / 2 * 1e6)
    # --run-id picks one run again, and with it the ratios.
    code, out, _ = report(capsys, bench_files["main"], bench_files["again"],
                          "--run-id", main[0]["run_id"])
    [table] = chosen_tables(out)
    assert "h1f1 (xN)" in table.columns
    for r in main:
        expect_close(table.cell(variant(r), shape(r)), r["time_per_exchange_s"]["median"] * 1e6)


def test_selection_options_pick_the_chosen_shapes(capsys, bench_files):
    code, out, _ = report(capsys, bench_files["main"], "--halo", "2", "--nfields", "1,2",
                          "--transport", "shm", "--algorithm", "staged")
    [table] = chosen_tables(out)
    assert table.columns == ["h2f1", "h2f2"]  # baseline not selected: no ratios
    assert set(table.rows) == {"shm/staged/compact", "shm/staged/sequence"}
    assert "baseline mpi-types/staged/sequence is not in these records" in unwrap(out)


def test_decompositions_are_separate_tables_in_chosen(capsys, bench_files):
    code, out, _ = report(capsys, bench_files["main"], bench_files["hw"])
    tables = chosen_tables(out)
    assert len(tables) == 2
    assert "(hwcart 2x1x1)" in unwrap(out) and "(mpicart 2x1x1)" in unwrap(out)
    hw = load(bench_files["hw"])
    assert out.index("(mpicart 2x1x1)") < out.index("(hwcart 2x1x1)")
    hw_table = tables[1]
    assert set(hw_table.rows) == {variant(r) for r in hw}
    for r in hw:
        expect_close(hw_table.cell(variant(r), shape(r)), r["time_per_exchange_s"]["median"] * 1e6)


def test_full_layout_rows_halo_columns_fields_and_staged(capsys, bench_files):
    recs = load(bench_files["main"])
    code, out, _ = report(capsys, bench_files["main"], "--layout", "full")
    assert code == 0
    tables = parse_tables(out)
    assert [t.title for t in tables] == [f"{t}/{f}" for t in sorted(list_transports())
                                         for f in ("compact", "sequence")]
    assert "columns without a suffix: standard" in unwrap(out)
    for t in tables:
        assert t.columns == ["1", "2", "1 (staged)", "2 (staged)"]
        assert list(t.rows) == ["1", "2"]
    by_title = {t.title: t for t in tables}
    for r in recs:
        c = r["config"]
        column = str(c["nfields"]) + (" (staged)" if c["algorithm"] == "staged" else "")
        expect_close(by_title[f"{c['transport']}/{c['grouping']}"].cell(str(c["halo"]), column),
                     r["time_per_exchange_s"]["median"] * 1e6)


def test_decomposition_layout_columns_are_kind_by_toolchain(capsys, bench_files):
    main, hw = load(bench_files["main"]), load(bench_files["hw"])
    code, out, _ = report(capsys, bench_files["main"], bench_files["hw"], "--layout",
                          "decomposition")
    assert code == 0
    tables = parse_tables(out)
    assert len(tables) == 4  # one per (halo, nfields)
    assert "halo width: 1, number of fields: 1" in unwrap(out)
    assert "halo width: 2, number of fields: 2" in unwrap(out)
    tc = records.toolchain_short(main[0]["mpi_library"])
    headings = re.findall(r"^halo width: (\S+), number of fields: (\S+)$", out, re.M)
    for (h, f), table in zip(headings, tables):
        assert table.columns == [f"mpicart {tc}", f"hwcart {tc}"]
        for r in main:
            if shape(r) == f"h{h}f{f}":
                expect_close(table.cell(variant(r), f"mpicart {tc}"),
                             r["time_per_exchange_s"]["median"] * 1e6)
        for r in hw:
            if shape(r) == f"h{h}f{f}":
                expect_close(table.cell(variant(r), f"hwcart {tc}"),
                             r["time_per_exchange_s"]["median"] * 1e6)
        # The hardware grid ran only two variants: the others are NaN there.
        assert table.cell("mpi-p2p/standard/compact", f"hwcart {tc}") == "NaN"


def test_markdown_tables(capsys, bench_files):
    recs = load(bench_files["main"])
    code, out, _ = report(capsys, bench_files["main"], "--markdown")
    assert code == 0
    lines = out.splitlines()
    header = next(i for i, l in enumerate(lines) if l.startswith("| transport/algorithm/grouping"))
    assert lines[header] == "| transport/algorithm/grouping | h1f1 | h2f1 | h1f2 | h2f2 |"
    assert lines[header + 1] == "|:---|" + "---:|" * 4
    ratios = next(i for i, l in enumerate(lines) if i > header and
                  l.startswith("| transport/algorithm/grouping"))
    assert lines[ratios] == ("| transport/algorithm/grouping | h1f1 (xN) | h2f1 (xN) | h1f2 (xN) | "
                             "h2f2 (xN) |")
    rows = {}
    for start in (header, ratios):
        for l in lines[start + 2:]:
            if not l.startswith("|"):
                break
            cells = [c.strip() for c in l.strip("|").split("|")]
            rows.setdefault(cells[0], []).extend(cells[1:])
    assert len(rows) == 4 * len(list_transports()) == len({variant(r) for r in recs})
    columns = ["h1f1", "h2f1", "h1f2", "h2f2"]
    for r in recs:
        expect_close(rows[variant(r)][columns.index(shape(r))],
                     r["time_per_exchange_s"]["median"] * 1e6)
    assert rows[BASELINE][4:] == ["1.00"] * 4
    assert "### Cartesian communicator numbering order: ZYX" in unwrap(out)
    assert "```" not in out


def test_plot_is_a_png(capsys, bench_files, tmp_path):
    out = tmp_path / "plot.png"
    code, _, err = report(capsys, bench_files["main"], bench_files["hw"], "--plot", out)
    assert code == 0
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert width > 300 and height > 300  # two panels
    assert data.rstrip()[-8:-4] == b"IEND"
    assert str(out) in err


def test_console_entry_point(bench_files):
    done = subprocess.run([sys.executable, "-m", "halox.cli", "report", str(bench_files["main"]),
                           "--halo", "1", "--nfields", "1"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "h1f1 (xN)" in done.stdout


# ---------------------------------------------------------------------------------------------
# Bad input: one line, non-zero exit


def _one_error_line(err):
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("halox report: error: ")
    return lines[0]


def test_missing_file(capsys, tmp_path):
    code, out, err = report(capsys, tmp_path / "nope.jsonl")
    assert code != 0 and out == ""
    assert "nope.jsonl: no such file" in _one_error_line(err)


def test_truncated_record_names_file_and_line(capsys, bench_files, tmp_path):
    text = pathlib.Path(bench_files["main"]).read_text().splitlines()
    path = tmp_path / "cut.jsonl"
    path.write_text(text[0] + "\n" + text[1][: len(text[1]) // 2] + "\n")
    code, out, err = report(capsys, path)
    assert code != 0 and out == ""
    assert f"{path}:2: not a JSON record" in _one_error_line(err)


def test_record_without_a_required_field(capsys, bench_files, tmp_path):
    r = load(bench_files["main"])[0]
    del r["time_per_exchange_s"]
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(r) + "\n")
    code, _, err = report(capsys, path)
    assert code != 0
    assert f"{path}:1: record has no 'time_per_exchange_s'" in _one_error_line(err)


def test_unsupported_schema_version(capsys, bench_files, tmp_path):
    r = load(bench_files["main"])[0]
    r["schema_version"] = 99
    path = tmp_path / "future.jsonl"
    path.write_text(json.dumps(r) + "\n")
    code, _, err = report(capsys, path)
    assert code != 0
    assert "schema_version 99 is not supported" in _one_error_line(err)


def test_selection_matching_nothing(capsys, bench_files):
    code, out, err = report(capsys, bench_files["main"], "--halo", "7")
    assert code != 0 and out == ""
    total = len(load(bench_files["main"]))
    assert total == 16 * len(list_transports())  # 4 variants x 4 shapes per transport
    assert f"none of the {total} records match the selection" in _one_error_line(err)


def test_bad_option_is_one_line(capsys, bench_files):
    with pytest.raises(SystemExit) as e:
        cli.main(["report", str(bench_files["main"]), "--layout", "sideways"])
    assert e.value.code == 2
    _, err = capsys.readouterr()
    assert "invalid choice: 'sideways'" in _one_error_line(err)


@pytest.mark.parametrize("library, short", [
    ("Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022",
     "ompi"),
    ("MPICH Version:\t4.0.2", "mpich"),
    ("Intel(R) MPI Library 2021.6 for Linux* OS", "impi"),
    ("MVAPICH2 Version      :\t2.3.7", "mvapich"),
])
def test_toolchain_short_names(library, short):
    assert records.toolchain_short(library) == short


# ---------------------------------------------------------------------------------------------
# A second toolchain (when its build exists next to this one)


def other_flavor():
    return "mpich" if mpi_flavor() == "openmpi" else "openmpi"


def test_second_toolchain_columns(capsys, bench_files, tmp_path):
    other_exe = build_dir().parent / other_flavor() / BENCH
    if not other_exe.exists():
        pytest.skip(f"{other_exe} is not built")
    path = tmp_path / "other.jsonl"
    other = run_bench(path, "--halo", "1,2", "--nfields", "1,2", "--transport", "mpi-types",
                      "--algorithm", "standard,staged", "--grouping", "sequence", exe=other_exe,
                      env={"HALOX_MPI": other_flavor()})
    main = load(bench_files["main"])
    this_tc = records.toolchain_short(main[0]["mpi_library"])
    other_tc = records.toolchain_short(other[0]["mpi_library"])
    assert this_tc != other_tc
    # full: a column group per (algorithm, toolchain); the first without a suffix.
    code, out, _ = report(capsys, bench_files["main"], path, "--layout", "full")
    assert code == 0
    assert f"columns without a suffix: standard, {this_tc}" in unwrap(out)
    table = next(t for t in parse_tables(out) if t.title == "mpi-types/sequence")
    assert table.columns == ["1", "2", f"1 (standard, {other_tc})", f"2 (standard, {other_tc})",
                             f"1 (staged, {this_tc})", f"2 (staged, {this_tc})",
                             f"1 (staged, {other_tc})", f"2 (staged, {other_tc})"]
    for r in other:
        c = r["config"]
        expect_close(table.cell(str(c["halo"]), f"{c['nfields']} ({c['algorithm']}, {other_tc})"),
                     r["time_per_exchange_s"]["median"] * 1e6)
    # An MPI-p2p table has no records of the other toolchain: NaN there.
    p2p = next(t for t in parse_tables(out) if t.title == "mpi-p2p/compact")
    assert p2p.cell("1", f"1 (standard, {other_tc})") == "NaN"
    # chosen: times and ratios per toolchain, each a run of its own, each with ratios.
    code, out, _ = report(capsys, bench_files["main"], path)
    tables = parse_tables(out)
    assert [t.title for t in tables] == [this_tc, f"{this_tc}: (xN)", other_tc, f"{other_tc}: (xN)"]
    assert all("h1f1 (xN)" in t.columns for t in tables if t.title.endswith("(xN)"))
    # decomposition: columns mpicart x toolchain.
    code, out, _ = report(capsys, bench_files["main"], path, "--layout", "decomposition")
    assert parse_tables(out)[0].columns == [f"mpicart {this_tc}", f"mpicart {other_tc}"]
