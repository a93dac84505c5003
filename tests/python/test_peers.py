"""Peer programs in a sweep (peers.py): the cartex output parser on real captured outputs, the
rank grid in cartex's options, [[peers]] checks, a sweep with a peer program that prints a
captured output (records, resume across a peer, the report's layout), the programs HALOX_CARTEX
adds beside the baselines and the report's fidelity section, and - where the real cartex
programs are present (HALOX_CARTEX) - a sweep with them."""
import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, build_dir, mpi_flavor
from halox import peers
from halox import records as rec
from halox import report as rep
from halox import report_fidelity as fid

DATA = ROOT / "tests" / "python" / "data" / "peers"
CAPTURED = sorted(DATA.glob("cartex-mpi_comm-*-h5f8.txt"))


def halox(*args, timeout=600):
    env = dict(os.environ, HALOX_ROOT=str(ROOT))
    return subprocess.run([sys.executable, "-m", "halox.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env)


def line_value(text, name):
    """The number on the line that starts with `name` (read independently of the parser)."""
    for line in text.splitlines():
        if line.startswith(name):
            return float(line[len(name):].split()[0])
    raise AssertionError(f"no line {name!r}")


# ---------------------------------------------------------------------------------------------
# The parser, on real outputs


def test_every_captured_runtime_output_is_present():
    assert len(CAPTURED) == 4, CAPTURED  # mpi_comm packed and datatypes, Open MPI and MPICH


@pytest.mark.parametrize("path", CAPTURED, ids=lambda p: p.stem)
def test_cartex_summary_is_parsed_from_a_real_output(path):
    text = path.read_text()
    parsed = peers.parse_cartex(text)
    assert parsed["runtime"] == "mpi_comm"
    assert parsed["ranks"] == 2
    assert parsed["repetitions"] == 200
    times = parsed["time_per_exchange_s"]
    for name, key in (("median (s)", "median"), ("mean (s)", "mean"), ("min (s)", "min"),
                      ("max (s)", "max"), ("5% centile (s)", "p5"), ("95% centile (s)", "p95"),
                      ("stddev (s)", "stddev")):
        assert times[key] == line_value(text, name)
    assert times["min"] <= times["p5"] <= times["p25"] <= times["median"] <= times["p75"] \
        <= times["p95"] <= times["max"]
    assert parsed["throughput_GBps"]["median"] == line_value(text, "tp. median (GB/s)")
    # load = 2 x halo cells x fields x 4 bytes, summed over the ranks (runtime.cpp)
    halo_cells = 74 ** 3 - 64 ** 3
    assert parsed["load_bytes"] == 2 * 2 * halo_cells * 8 * 4


def test_a_decomposition_cartex_could_not_build_is_an_error():
    text = (DATA / "cartex-mpi_comm-bad-grid-openmpi.txt").read_text()
    with pytest.raises(peers.PeerError, match="could not create the decomposition"):
        peers.parse_cartex(text)


def test_a_failed_check_is_an_error():
    # cartex prints this line when a halo cell differs (runtime::check, runtime.cpp)
    text = CAPTURED[0].read_text() + "check failed!!!!!!!!!!!!!!!!! expected 17 but found 0\n"
    with pytest.raises(peers.PeerError, match="check failed"):
        peers.parse_cartex(text)


def test_an_output_cut_short_is_an_error():
    lines = CAPTURED[0].read_text().splitlines()
    cut = "\n".join(lines[:lines.index(next(l for l in lines if l.startswith("median")))])
    with pytest.raises(peers.PeerError, match="no cartex summary"):
        peers.parse_cartex(cut)
    cut = "\n".join(l for l in lines if not l.startswith("95% centile"))
    with pytest.raises(peers.PeerError, match="cut short"):
        peers.parse_cartex(cut)


# ---------------------------------------------------------------------------------------------
# Rank grids


@pytest.mark.parametrize("words, ranks, expected, dims", [
    (["--mpicart", "2", "1", "1"], 2, ["--MPICart", "2", "1", "1"], [2, 1, 1]),
    (["--mpicart", "0", "0", "0"], 16, ["--MPICart", "4", "2", "2"], [4, 2, 2]),
    (["--mpicart", "1", "1", "0"], 6, ["--MPICart", "1", "1", "6"], [1, 1, 6]),
    ([], 12, ["--MPICart", "3", "2", "2"], [3, 2, 2]),
    (["--socket", "1", "1", "2", "--core", "2", "1", "1"], 4,
     ["--node", "1", "1", "1", "--socket", "1", "1", "2", "--core", "2", "1", "1", "--order",
      "XYZ"], [2, 1, 2]),
    (["--node", "2", "1", "1", "--core", "1", "2", "1", "--order", "ZYX"], 4,
     ["--node", "2", "1", "1", "--core", "1", "2", "1", "--order", "ZYX"], [2, 2, 1]),
])
def test_rank_grid_in_cartex_options(words, ranks, expected, dims):
    grid = peers.grid_of(words, ranks)
    assert grid.words == expected
    assert grid.dims == dims


@pytest.mark.parametrize("words, fragment", [
    (["--l2", "2", "1", "1"], "--l2"),
    (["--slot", "2", "1", "1"], "--slot"),
    (["--decomposition", "auto"], "auto"),
    (["--periodic", "1", "0", "1"], "periodic"),
    (["--mpicart", "3", "1", "1"], "do not fit"),
    (["--core", "4", "1", "1"], "not 2 ranks"),
])
def test_rank_grid_cartex_cannot_build_is_an_error(words, fragment):
    with pytest.raises(peers.PeerError, match=re.escape(fragment)):
        peers.grid_of(words, 2)


# ---------------------------------------------------------------------------------------------
# A sweep with a peer program: a small script that prints a captured output


FAKE_PEER = """\
#!{python}
# Prints a captured cartex output on rank 0, as cartex does, after checking its arguments;
# logs every start; fails while {fail} exists for halo 5.
import os, sys
args = sys.argv[1:]
rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0")))
halo = args[args.index("--halo") + 1]
if rank == 0:
    with open({log!r}, "a") as f:
        f.write(" ".join(args) + "\\n")
if halo == "5" and os.path.exists({fail!r}):
    sys.exit(3)
if rank == 0:
    sys.stdout.write(open({captured!r}).read())
"""


def fake_peer(tmp_path):
    script = tmp_path / "fake_cartex"
    log = tmp_path / "peer.log"
    fail = tmp_path / "fail-h5"
    script.write_text(FAKE_PEER.format(python=sys.executable, log=str(log), fail=str(fail),
                                       captured=str(DATA / "cartex-mpi_comm-datatypes-"
                                                    "openmpi-h5f8.txt")))
    script.chmod(0o755)
    return script, log, fail


def peer_spec(tmp_path, script, extra=""):
    path = tmp_path / "peers.toml"
    path.write_text(textwrap.dedent(f"""
        [sweep]
        ranks = 2
        name = "peers"
        mpi = "{mpi_flavor()}"
        build_dir = "{build_dir()}"

        [[sweep.run]]
        name = "x-split"
        args = ["--mpicart", "2", "1", "1"]

        [matrix]
        halo = [1, 5]
        nfields = [1]
        type = ["float"]
        transport = ["mpi-types"]
        algorithm = ["staged"]
        grouping = ["sequence"]

        [bench]
        nrep = 20
        warmup = 2
        timing = "latency"
        quiet = true

        [[peers]]
        name = "cartex-dt"
        command = ["{script}", "{{grid}}", "{{domain}}", "--halo", "{{halo}}",
                   "--nfields", "{{nfields}}", "--nrep", "200", "--check", "--MPI-datatypes"]
        format = "cartex"
        type = "float"
        {extra}
    """))
    return path


def objects(path):
    return [json.loads(l) for l in path.read_text().splitlines()]


needs_bench = pytest.mark.skipif(not (build_dir() / "halox-bench").is_file(),
                                 reason="halox-bench is not built")


def test_dry_run_lists_the_peer_runs_beside_each_invocation(tmp_path):
    script, _, _ = fake_peer(tmp_path)
    out = tmp_path / "out.jsonl"
    r = halox("sweep", peer_spec(tmp_path, script), "--output", out, "--dry-run")
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stdout.splitlines() if not l.startswith("#")]
    assert len(lines) == 3
    assert "halox-bench" in lines[0]
    for line, halo in zip(lines[1:], ("1", "5")):
        assert f"{script} --MPICart 2 1 1 --domain 64 64 64 --halo {halo} --nfields 1 " \
               "--nrep 200 --check --MPI-datatypes" in line
        assert line.startswith(f"HALOX_MPI={mpi_flavor()} ")
        assert "scripts/mpirun.sh 2 " in line  # the same launcher and ranks as halox-bench


@needs_bench
def test_sweep_records_peers_and_resumes_across_a_failed_peer(tmp_path):
    script, log, fail = fake_peer(tmp_path)
    spec = peer_spec(tmp_path, script)
    out = tmp_path / "out.jsonl"
    fail.write_text("")
    first = halox("sweep", spec, "--output", out)
    assert first.returncode == 1, first.stdout + first.stderr
    assert "peer 'cartex-dt' (h5f1" in first.stderr
    got = objects(out)
    bench = [o for o in got if o["tool"] == "halox-bench"]
    peer = [o for o in got if o["tool"] == "halox-peer"]
    failures = [o for o in got if o.get("event") == "failure"]
    assert len(bench) == 2 and len(peer) == 1 and len(failures) == 1
    assert failures[0]["peer"] == "cartex-dt" and failures[0]["exit_status"] == 3
    record = peer[0]
    captured = peers.parse_cartex((DATA / "cartex-mpi_comm-datatypes-openmpi-h5f8.txt")
                                  .read_text())
    assert record["time_per_exchange_s"] == captured["time_per_exchange_s"]
    assert record["seconds_per_10000"] == pytest.approx(captured["time_per_exchange_s"]["mean"]
                                                        * 1e4)
    assert record["config"]["halo"] == 1 and record["config"]["nfields"] == 1
    assert record["config"]["type"] == "float"
    # the same toolchain, grid and run as the halox-bench records it ran beside
    assert record["mpi_library"] == bench[0]["mpi_library"]
    assert record["decomposition"] == bench[0]["decomposition"]
    assert record["beside_run_id"] == bench[0]["run_id"]
    assert record["sweep"]["run"] == "x-split" and record["sweep"]["repeat"] == 1
    assert len(log.read_text().splitlines()) == 2

    fail.unlink()
    second = halox("sweep", spec, "--output", out)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "1 of 1 runs were recorded already" in second.stdout
    # only the failed peer run ran again; halox-bench was not started
    starts = log.read_text().splitlines()
    assert len(starts) == 3 and "--halo 5" in starts[-1]
    got = objects(out)
    assert len([o for o in got if o["tool"] == "halox-bench"]) == 2
    peer = [o for o in got if o["tool"] == "halox-peer"]
    assert sorted(o["config"]["halo"] for o in peer) == [1, 5]

    third = halox("sweep", spec, "--output", out)
    assert third.returncode == 0
    assert len(log.read_text().splitlines()) == 3  # nothing left to run
    assert "cartex-dt h1f1 beside x-split #1: recorded, skipped" in third.stderr

    # the report: halox's variant and the peer in one table, (xN) over the chosen peer, in the
    # Betzy tables' column order
    loaded = rec.load([out])
    assert {r.variant for r in loaded.records} == {"cartex-dt", "mpi-types/staged/sequence"}
    report = rep.build(loaded.records, "chosen", "median", "cartex-dt")
    times, ratios = report.sections[0].tables[:2]
    assert times.columns == ["h1f1", "h5f1"] and ratios.columns == ["h1f1 (xN)", "h5f1 (xN)"]
    peer_median = captured["time_per_exchange_s"]["median"] * 1e6
    assert dict(times.rows)["cartex-dt"] == pytest.approx([peer_median, peer_median])
    assert dict(ratios.rows)["cartex-dt"] == pytest.approx([1.0, 1.0])
    halox_rows = {(r.halo): r.metric("median") for r in loaded.records if not r.peer}
    assert dict(times.rows)["mpi-types/staged/sequence"] == pytest.approx(
        [halox_rows[1], halox_rows[5]])
    assert dict(ratios.rows)["mpi-types/staged/sequence"] == pytest.approx(
        [peer_median / halox_rows[1], peer_median / halox_rows[5]])
    assert any("with the peer programs run beside it" in n for t in (times, ratios)
               for n in t.notes)
    # the full layout: a table per variant and per peer, rows = halo, columns = fields
    full = rep.build(loaded.records, "full", "median")
    tables = {t.title: t for t in full.sections[0].tables}
    assert set(tables) == {"cartex-dt", "mpi-types/staged/sequence"}
    assert tables["cartex-dt"].columns == ["1"]
    assert [label for label, _ in tables["cartex-dt"].rows] == ["1", "5"]
    for _, values in tables["cartex-dt"].rows:
        assert values == pytest.approx([peer_median])
    text = halox("report", out, "--baseline", "cartex-dt", "--markdown",
                 "--plot", tmp_path / "plot.png")
    assert text.returncode == 0, text.stderr
    assert "| cartex-dt |" in text.stdout
    assert (tmp_path / "plot.png").stat().st_size > 0


@pytest.mark.parametrize("extra, fragment", [
    ('format = "ghex"', "format must be one of cartex"),
    ('type = "double"', "is not in matrix.type"),
    ('colour = "red"', "unknown key 'peers[1].colour'"),
])
def test_bad_peer_is_one_line_before_anything_runs(tmp_path, extra, fragment):
    script, log, _ = fake_peer(tmp_path)
    spec = peer_spec(tmp_path, script)
    head, peer = spec.read_text().split("[[peers]]")
    key = extra.split(" = ")[0]
    peer = re.sub(rf"^\s*{key} = .*$", "", peer, flags=re.M) + extra + "\n"
    spec.write_text(head + "[[peers]]" + peer)
    r = halox("sweep", spec, "--output", tmp_path / "out.jsonl")
    assert r.returncode != 0
    assert fragment in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not log.exists()


def test_peer_without_halo_placeholder_or_program_is_an_error(tmp_path):
    script, _, _ = fake_peer(tmp_path)
    spec = peer_spec(tmp_path, script)
    spec.write_text(spec.read_text().replace('"--halo", "{halo}",', ""))
    r = halox("sweep", spec, "--output", tmp_path / "out.jsonl", "--dry-run")
    assert r.returncode != 0 and "must pass {halo} and {nfields}" in r.stderr
    spec = peer_spec(tmp_path, tmp_path / "no-such-program")
    r = halox("sweep", spec, "--output", tmp_path / "out.jsonl")
    assert r.returncode != 0 and "is not an executable program" in r.stderr


# ---------------------------------------------------------------------------------------------
# HALOX_CARTEX: the real programs beside the baselines, and the report's fidelity section


STAND_IN = """\
#!{python}
# Prints on rank 0 the captured output of the cartex program its arguments ask for (packed, or
# --MPI-datatypes), as cartex does.
import os, sys
rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0")))
kind = "datatypes" if "--MPI-datatypes" in sys.argv else "packed"
if rank == 0:
    sys.stdout.write(open({data!r} + "/cartex-mpi_comm-" + kind + "-openmpi-h5f8.txt").read())
"""


def cartex_folder(tmp_path, *names):
    """A folder laid out as HALOX_CARTEX may name it, each program a stand-in."""
    for name in names:
        path = tmp_path / "cartex" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(STAND_IN.format(python=sys.executable, data=str(DATA)))
        path.chmod(0o755)
    return tmp_path / "cartex"


def test_halox_cartex_names_a_program_or_a_folder(tmp_path, capsys):
    folder = cartex_folder(tmp_path, "openmpi/benchmark_mpi_comm", "benchmark_mpi_comm_double",
                           "mpich/benchmark_mpi_comm")
    assert peers.cartex_programs(str(folder), "openmpi") == {
        "float": folder / "openmpi/benchmark_mpi_comm", "double": folder / "benchmark_mpi_comm_double"}
    assert peers.cartex_programs(str(folder), "mpich")["float"] == folder / "mpich/benchmark_mpi_comm"
    assert peers.cartex_programs(str(folder / "benchmark_mpi_comm_double"), "mpich") == {
        "double": folder / "benchmark_mpi_comm_double"}
    with pytest.raises(peers.PeerError, match="holds no benchmark_mpi_comm"):
        peers.cartex_programs(str(tmp_path), "openmpi")
    with pytest.raises(peers.PeerError, match="neither a program nor a folder"):
        peers.cartex_programs(str(tmp_path / "none"), "openmpi")
    env = {"HALOX_CARTEX": str(folder)}
    tables = peers.cartex_tables("openmpi", ["float"], 300, env)
    assert [t["name"] for t in tables] == ["cartex-mpi", "cartex-mpi-datatypes"]
    assert ["--MPI-datatypes" in t["command"] for t in tables] == [False, True]
    assert all(t["command"][t["command"].index("--nrep") + 1] == "300" for t in tables)
    assert peers.cartex_tables("openmpi", ["float"], 300, {}) == []
    float_only = {"HALOX_CARTEX": str(folder / "openmpi")}
    assert peers.cartex_tables("openmpi", ["double"], 300, float_only) == []
    assert "no program for the sweep's type (double)" in capsys.readouterr().err


def fidelity_spec(tmp_path):
    path = tmp_path / "baselines.toml"
    path.write_text(textwrap.dedent(f"""
        [sweep]
        ranks = 2
        name = "fidelity"
        mpi = "{mpi_flavor()}"
        build_dir = "{build_dir()}"

        [[sweep.run]]
        name = "x-split"
        args = ["--mpicart", "2", "1", "1"]

        [matrix]
        halo = [1]
        nfields = [1]
        type = ["float"]
        transport = ["mpi-types", "mpi-cartex"]
        algorithm = ["staged"]
        grouping = ["sequence"]

        [bench]
        nrep = 20
        warmup = 2
        timing = "latency"
        quiet = true
    """))
    return path


def rewrite(path, change):
    """Rewrites each record of a JSON Lines file through change(record)."""
    got = objects(path)
    for o in got:
        change(o)
    path.write_text("".join(json.dumps(o) + "\n" for o in got))


@needs_bench
def test_halox_cartex_runs_the_programs_beside_the_baselines_and_reports_fidelity(tmp_path):
    folder = cartex_folder(tmp_path, f"{mpi_flavor()}/benchmark_mpi_comm")
    out = tmp_path / "out.jsonl"
    env = dict(os.environ, HALOX_ROOT=str(ROOT), HALOX_CARTEX=str(folder))
    r = subprocess.run([sys.executable, "-m", "halox.cli", "sweep", str(fidelity_spec(tmp_path)),
                        "--output", str(out)], capture_output=True, text=True, timeout=300,
                       env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    got = objects(out)
    peer = {o["peer"]: o for o in got if o["tool"] == "halox-peer"}
    assert set(peer) == {"cartex-mpi", "cartex-mpi-datatypes"}
    assert "--MPI-datatypes" in peer["cartex-mpi-datatypes"]["command"]
    assert "--MPI-datatypes" not in peer["cartex-mpi"]["command"]
    halox_us = {o["config"]["transport"]: o["time_per_exchange_s"]["median"] * 1e6
                for o in got if o["tool"] == "halox-bench"}
    program_us = {name: line_value((DATA / f"cartex-mpi_comm-{kind}-openmpi-h5f8.txt")
                                   .read_text(), "median (s)") * 1e6
                  for name, kind in (("cartex-mpi", "packed"),
                                     ("cartex-mpi-datatypes", "datatypes"))}

    loaded = rec.load([out])
    report = fid.fidelity(loaded.records)
    (table,) = report.sections[0].tables
    rows = {label.split("  <<")[0]: (label, values) for label, values in table.rows}
    for baseline, program in (("mpi-types/staged/sequence", "cartex-mpi-datatypes"),
                              ("mpi-cartex/staged/sequence", "cartex-mpi")):
        label, values = rows[f"{baseline} / {program} float h1f1"]
        ratio = halox_us[baseline.split("/")[0]] / program_us[program]
        assert values == pytest.approx([halox_us[baseline.split("/")[0]], program_us[program],
                                        ratio, ratio, ratio, 1])
        # the captured outputs are of h5f8, far slower than an h1f1 exchange: flagged
        assert label.endswith("<< outside 0.9-1.1")
    # the real program is the (xN) reference when it ran beside
    assert fid.reference(loaded.records, None) == "cartex-mpi-datatypes"
    assert fid.reference(loaded.records, "mpi-p2p/staged/sequence") == "mpi-p2p/staged/sequence"
    text = halox("report", out)
    assert text.returncode == 0, text.stderr
    assert "2 of 2 baseline ratios are outside 0.9-1.1" in text.stdout
    assert "(xN) = cartex-mpi-datatypes /" in text.stdout

    # a program within 10 %: not flagged; the run's machine probe is shown in one line; a halox
    # run timed otherwise than the program, or on huge pages the program's heap does not get,
    # is named
    def near(o):
        if o["tool"] == "halox-peer":
            base = halox_us["mpi-types" if "--MPI-datatypes" in o["command"] else "mpi-cartex"]
            o["time_per_exchange_s"]["median"] = base / 1.05 * 1e-6
        elif o["tool"] == "halox-bench":
            assert o["config"]["field_pages"] == "system"
            if o["config"]["transport"] == "mpi-cartex":
                o["config"]["timing"] = "throughput"
            else:
                o["config"].update(field_pages="huge", huge_pages="madvise")
    rewrite(out, near)
    report = fid.fidelity(rec.load([out]).records)
    tables = [t for section in report.sections for t in section.tables]
    rows = [row for t in tables for row in t.rows]
    notes = [n for t in tables for n in t.notes]
    assert [values[2] for _, values in rows] == pytest.approx([1.05, 1.05])
    assert not any("<<" in label for label, _ in rows)
    assert report.preamble == ["0 of 2 baseline ratios are outside 0.9-1.1."]
    assert sorted(label for label, _ in rows) == [
        "mpi-cartex/staged/sequence / cartex-mpi float h1f1",
        "mpi-types/staged/sequence / cartex-mpi-datatypes float h1f1, huge pages"]
    for t in tables:  # one line per run of the table, in words
        (probe,) = [n for n in t.notes if n.startswith("machine probe, run ")]
        assert "round trip nearest ranks 0-1 " in probe and " GB/s" in probe and "[{" not in probe
    assert any(n.startswith("mpi-types/staged/sequence h1f1: halox's fields had huge pages")
               for n in notes)
    assert any(n.startswith("mpi-cartex/staged/sequence h1f1: halox timed throughput")
               for n in notes)


# ---------------------------------------------------------------------------------------------
# The real cartex program, where it is built


CARTEX = os.environ.get("HALOX_CARTEX")


@needs_bench
@pytest.mark.skipif(not CARTEX, reason="HALOX_CARTEX does not name the cartex benchmark built "
                                       "with CARTEX_RUNTIME=mpi_comm and CARTEX_FLOAT=float, nor "
                                       "a folder holding it as benchmark_mpi_comm "
                                       "(docs/peers.md says how to build it)")
def test_sweep_with_the_real_cartex_program(tmp_path):
    program = peers.cartex_programs(CARTEX, mpi_flavor())["float"]
    spec = peer_spec(tmp_path, program)
    out = tmp_path / "out.jsonl"
    r = halox("sweep", spec, "--output", out)
    assert r.returncode == 0, r.stdout + r.stderr
    peer = [o for o in objects(out) if o["tool"] == "halox-peer"]
    assert sorted(o["config"]["halo"] for o in peer) == [1, 5]
    for o in peer:
        assert o["runtime"] == "mpi_comm" and o["verification"] == "passed"
        assert 0 < o["time_per_exchange_s"]["median"] < 1.0
    # both programs beside both baselines, from HALOX_CARTEX
    out = tmp_path / "fidelity.jsonl"
    env = dict(os.environ, HALOX_ROOT=str(ROOT), HALOX_CARTEX=CARTEX)
    r = subprocess.run([sys.executable, "-m", "halox.cli", "sweep", str(fidelity_spec(tmp_path)),
                        "--output", str(out)], capture_output=True, text=True, timeout=300,
                       env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    (table,) = fid.fidelity(rec.load([out]).records).sections[0].tables
    assert sorted(label.split(" float")[0] for label, _ in table.rows) == [
        "mpi-cartex/staged/sequence / cartex-mpi",
        "mpi-types/staged/sequence / cartex-mpi-datatypes"]
    assert all(values[2] > 0 for _, values in table.rows)
