"""What the installed package hands a code that links it, read from the build folder's generated
files (no install, no compile: quick): libhalox is installed shared, and its link line (CMake's
exported target, pkg-config's Libs) brings MPI only; the CUDA runtime, UCX, hwloc and fmt are
private dependencies of libhalox.so. And the Makefile: `make install` builds what it installs,
`make bench` builds it too (cmake --install works after it), CI builds with warnings as errors."""
import re
import subprocess

import pytest

from conftest import ROOT, build_dir


def cache_value(name: str) -> str | None:
    cache = build_dir() / "CMakeCache.txt"
    if not cache.exists():
        pytest.skip(f"{build_dir()} is not configured")
    match = re.search(rf"^{name}:\w+=(.*)$", cache.read_text(), re.M)
    return match.group(1) if match else None


def pc_fields() -> dict[str, str]:
    text = (build_dir() / "halox.pc").read_text()
    return dict(re.findall(r"^([\w.]+):[ \t]*(.*)$", text, re.M))


def installed_shared() -> bool:
    return cache_value("HALOX_INSTALL_SHARED") == "ON" and \
        cache_value("BUILD_SHARED_LIBS") in (None, "OFF")


def test_pkg_config_links_mpi_and_libhalox_only():
    if not installed_shared():
        pytest.skip("HALOX_INSTALL_SHARED=OFF: the static library brings its dependencies")
    pc = pc_fields()
    assert pc["Requires"].split() in (["ompi-cxx"], ["mpich"]), pc
    libs = pc["Libs"]
    assert "-lhalox" in libs and not re.search(r"cudart|cuda|ucx|ucp|ucs|hwloc|fmt", libs), libs
    # The private ones are still named, for pkg-config --static.
    assert set(pc["Requires.private"].split()) >= {"hwloc", "fmt"}
    if cache_value("HALOX_WITH_CUDA") == "ON":
        assert "-lcudart_static" in pc["Libs.private"]


def test_the_exported_target_is_shared_and_brings_mpi_only():
    if not installed_shared():
        pytest.skip("HALOX_INSTALL_SHARED=OFF")
    exports = list((build_dir() / "CMakeFiles" / "Export").glob("*/halox-targets.cmake"))
    assert exports, "no install export generated"
    text = exports[0].read_text()
    assert "add_library(halox::halox SHARED IMPORTED)" in text
    assert re.findall(r'INTERFACE_LINK_LIBRARIES "([^"]*)"', text) == ["MPI::MPI_CXX"], text
    # The build folder's own package stays the static library the programs and bindings link.
    assert "add_library(halox::halox STATIC IMPORTED)" in (build_dir() /
                                                           "halox-targets.cmake").read_text()


def make_dry_run(*args: str) -> str:
    return subprocess.run(["make", "-n", "--no-print-directory", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=True).stdout


def test_make_install_builds_what_it_installs_and_bench_builds_it_too():
    install = make_dry_run("install", "PREFIX=/tmp/halox-prefix", "BUILD_DIR=build/x")
    build = install.index("--target halox-install-set")
    assert install.index("cmake --install build/x --prefix /tmp/halox-prefix") > build
    bench = make_dry_run("bench", "BUILD_DIR=build/x")
    assert re.search(r"cmake --build build/x .*--target halox-bench halox-install-set", bench)


def test_ci_builds_with_warnings_as_errors():
    assert "-DHALOX_WERROR=ON" in make_dry_run("configure-only", "CI=true", "BUILD_DIR=build/x")
    assert "-DHALOX_WERROR=OFF" in make_dry_run("configure-only", "CI=", "BUILD_DIR=build/x")
    assert "export CI=${CI:-true}" in (ROOT / ".ci" / "run").read_text()
