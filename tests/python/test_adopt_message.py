"""The error a code's own sub-domains get when they do not tile the grid as the decomposition
places the ranks (src/decomposition/adopt.cpp): it names what disagrees, and nothing that
agrees. Rank 0 sits where the code put it; its neighbour does not: the message says where the
neighbour's cells are and where the code's extents put them, with no clause about rank 0."""
import subprocess
import sys

from conftest import launcher

SCRIPT = """
from mpi4py import MPI
import sys
import halox
comm = MPI.COMM_WORLD
out = open(f"{sys.argv[1]}/rank{comm.rank}.txt", "w")  # one file a rank: no interleaved lines
code = (comm.rank % 2, comm.rank // 2, 0)  # the code numbers its ranks x fastest
extent = (5, 5, 4)
offset = tuple(c * e for c, e in zip(code, extent))
try:
    halox.Decomposition.adopt(comm, (2, 2, 1), (True, True, True), rank_order="ZYX",
                              subdomain=halox.Subdomain(offset, extent, (10, 10, 4)))
    out.write("NO ERROR")
except ValueError as e:
    out.write(f"MESSAGE: {e}")
out.close()
"""


def test_the_mismatch_names_the_neighbour_and_no_empty_clause_for_rank_0(tmp_path):
    script = tmp_path / "adopt.py"
    script.write_text(SCRIPT)
    done = subprocess.run(launcher(4) + [sys.executable, str(script), str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    said = [(tmp_path / f"rank{r}.txt").read_text() for r in range(4)]
    assert all(s.startswith("MESSAGE: ") for s in said), said
    messages = {s.split(":", 1)[1].strip() for s in said}
    assert len(messages) == 1, said
    (message,) = messages
    assert ("(ranks numbered ZYX, z fastest, on a 2x2x1 grid): the neighbour above rank 0 in x, "
            "rank 2 at coordinates (1,0,0), holds cells from (0,5,0) on, which the code's extents "
            "put at coordinates (0,1,0), not from 5 in x beside it.") in message, message
    assert "rank 0 sits at" not in message and "from (0,0,0) on" not in message, message
