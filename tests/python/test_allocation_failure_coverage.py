"""Every call of the C API that makes a handle is run under the allocation-failure tests
(tests/capi/allocation_failure_test.c from C, tests/fortran/allocation_failure.f90 through the
Fortran module): a create call added to halox.h or to the module's bindings without a case there
fails here."""
import re
from pathlib import Path
import pytest

# Its result does not depend on the MPI library (CI runs it under one: docs/testing.md).
pytestmark = pytest.mark.any_mpi

ROOT = Path(__file__).resolve().parents[2]
CREATE = re.compile(r"\b(halox_\w*(?:create|adopt)\w*)\s*\(")


def create_calls_of_the_c_api() -> set[str]:
    return set(CREATE.findall((ROOT / "include/halox/halox.h").read_text()))


def test_the_c_test_makes_every_create_call():
    calls = create_calls_of_the_c_api()
    assert {"halox_exchange_create_fields", "halox_decomposition_adopt_f"} <= calls, calls
    tested = set(CREATE.findall((ROOT / "tests/capi/allocation_failure_test.c").read_text()))
    assert calls <= tested, f"not under the allocation-failure test: {sorted(calls - tested)}"


def test_the_fortran_test_reaches_every_create_call_the_module_binds():
    module = (ROOT / "fortran/halox.f90").read_text()
    bound = set(re.findall(r'bind\(C, name="(halox_\w*(?:create|adopt)\w*)"\)', module))
    assert bound >= {"halox_decomposition_create_f", "halox_exchange_create_fields"}, bound
    # Each case names the C call whose "<name>: out of memory" message it must get back (the
    # test fails otherwise), so a case that reached another call cannot pass; comments aside.
    code = "\n".join(line.split("!")[0]
                     for line in (ROOT / "tests/fortran/allocation_failure.f90").read_text()
                     .splitlines())
    reached = set(re.findall(r'each_allocation_fails\(\d+, "(halox_\w+)"\)', code))
    # The _f bindings take Fortran's integer communicator; their messages name the C call. The
    # module's halox_exchange_create makes its exchanges with halox_exchange_create_fields and
    # gives its messages its own name.
    fortran_name = {"halox_exchange_create_fields": "halox_exchange_create"}
    expected = {fortran_name.get(name, name.removesuffix("_f")) for name in bound}
    assert expected <= reached, f"not reached from Fortran: {sorted(expected - reached)}"
