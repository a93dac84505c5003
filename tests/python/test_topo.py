"""halox-topo: layouts planned for machines we do not have, and its errors."""
import json
import re
import shutil
import subprocess

import pytest

BETZY = "synthetic:pack:2 numa:4 l3:4 core:4 pu:1"
HALFCORES = ["--node", "3", "3", "3", "--socket", "1", "1", "2", "--numa", "1", "2", "2",
             "--l3", "2", "2", "1", "--core", "2", "1", "1"]
ALLCORES = HALFCORES[:-4] + ["--core", "4", "1", "1"]


def topo(run_mpi, *args, ranks=1):
    return run_mpi(ranks, "halox-topo", *args)


def layouts(run):
    assert run.returncode == 0, run.stderr
    return {row["name"].split()[0]: row for row in json.loads(run.stdout)["layouts"]}


def test_betzy_halfcores_table(run_mpi):
    run = topo(run_mpi, "--topology", BETZY, "--nodes", "27", "--ranks-per-node", "64",
               "--mpicart", "12", "12", "12", *HALFCORES)
    assert run.returncode == 0, run.stderr
    for name in ("mpicart 12x12x12", "hw 12x12x12", "auto 12x12x12"):
        assert name in run.stdout
    for column in ("same-core", "cross-core", "cross-L3", "cross-NUMA", "cross-socket",
                   "cross-node", "max/rank"):
        assert column in run.stdout
    assert "27 nodes x 64 = 1728" in run.stdout
    assert "auto: chosen --node 3 3 3" in run.stdout


@pytest.mark.parametrize("per_node,core,mpicart", [
    (64, ["--core", "2", "1", "1"], ["12", "12", "12"]),
    (128, ["--core", "4", "1", "1"], ["24", "12", "12"]),
])
def test_betzy_hw_and_auto_cross_fewer_node_boundaries(run_mpi, per_node, core, mpicart):
    grids = HALFCORES[:-4] + core
    for halo, fields in (("1", "1"), ("5", "8")):
        run = topo(run_mpi, "--topology", BETZY, "--nodes", "27", "--ranks-per-node",
                   str(per_node), "--mpicart", *mpicart, *grids, "--halo", halo, "--fields",
                   fields, "--element-size", "4", "--json")
        rows = layouts(run)
        cart, hw, auto = rows["mpicart"], rows["hw"], rows["auto"]
        # Same exchange, same bytes in all: only where they go differs.
        assert sum(cart["total"].values()) == sum(hw["total"].values()) == sum(auto["total"].values())
        assert hw["total"]["cross-node"] < cart["total"]["cross-node"]
        assert auto["total"]["cross-node"] <= hw["total"]["cross-node"]
        assert hw["dims"] == auto["dims"] == [int(m) for m in mpicart]


def test_order_changes_numbering_not_bytes(run_mpi):
    totals, pictures = [], []
    for order in ("XYZ", "ZYX", "YZX"):
        args = ["--topology", BETZY, "--nodes", "2", "--ranks-per-node", "128",
                "--node", "2", "1", "1", *ALLCORES[4:], "--order", order]
        totals.append(layouts(topo(run_mpi, *args, "--json"))["hw"]["total"])
        shown = topo(run_mpi, *args, "--print")
        assert shown.returncode == 0, shown.stderr
        # The hw layout's picture of the core each grid position holds.
        picture = re.search(r"\nhw [^\n]*: core of each rank \(on its node\)\n(.*?)(?:\n\n|\Z)",
                            shown.stdout, re.S)
        assert picture, shown.stdout
        pictures.append(picture.group(1))
    assert totals[0] == totals[1] == totals[2]
    assert len(set(pictures)) == 3  # each order numbers the grid's cores differently


def test_this_machine_defaults(run_mpi):
    run = topo(run_mpi)
    assert run.returncode == 0, run.stderr
    assert "topology: this machine" in run.stdout
    assert "auto: chosen" in run.stdout


def test_print_shows_node_and_core_of_every_rank(run_mpi):
    run = topo(run_mpi, "--topology", "synthetic:pack:2 core:2 pu:1", "--nodes", "2",
               "--node", "2", "1", "1", "--socket", "1", "2", "1", "--core", "1", "1", "2",
               "--print")
    assert run.returncode == 0, run.stderr
    assert "hw 2x2x2: node of each rank" in run.stdout
    assert "hw 2x2x2: core of each rank" in run.stdout


def test_xml_topology(run_mpi, tmp_path):
    lstopo = shutil.which("lstopo-no-graphics") or shutil.which("lstopo")
    if not lstopo:
        pytest.skip("lstopo is not installed")
    xml = tmp_path / "node.xml"
    subprocess.run([lstopo, "--input", "pack:2 l3:2 core:4 pu:2", "--of", "xml", str(xml)],
                   check=True)
    run = topo(run_mpi, "--topology", str(xml), "--ranks-per-node", "16", "--nodes", "2",
               "--node", "1", "1", "2", "--socket", "2", "1", "1", "--l3", "1", "2", "1",
               "--core", "2", "2", "1", "--json")
    rows = layouts(run)
    assert rows["hw"]["dims"] == [4, 4, 2]
    assert "2 sockets" in json.loads(run.stdout)["topology"]["summary"]




def test_errors_once_with_several_ranks(run_mpi):
    run = topo(run_mpi, "--topology", "synthetic:pack:x", ranks=2)
    assert run.returncode != 0
    assert len(run.error_lines("halox-topo")) == 1
