# halox: the commands a newcomer needs are `make bench`, `make check` and `make test`.
# MPI=openmpi (default) or MPI=mpich selects the toolchain; each has its own build folder.

MPI ?= openmpi
BUILD_TYPE ?= Release
BUILD_DIR ?= build/$(MPI)
JOBS ?= $(shell nproc)
# Open MPI's PMIx tries munge authentication first: where munge is installed (Slurm brings it)
# but its daemon is not running, every launch retries it for about 2 s. Launches on this machine
# need only the native check (the local peer's uid).
export PMIX_MCA_psec ?= native
# Unity builds of the tests and the programs' untimed support code (HALOX_UNITY_BUILD).
UNITY ?= ON
# CUDA=AUTO|ON|OFF (HALOX_CUDA, docs/gpu.md); left empty, CMake's default (AUTO) holds.
CUDA ?=
# WERROR=ON makes every compiler warning an error (HALOX_WERROR); CI (CI=true) builds so.
WERROR ?= $(if $(filter true 1 yes,$(CI)),ON,OFF)
# make install PREFIX=...: where the library, headers, programs and packages go.
PREFIX ?= /usr/local

ifeq ($(MPI),openmpi)
  MPICXX := mpicxx.openmpi
  MPICC := mpicc.openmpi
  MPIFC := mpif90.openmpi
  MPIEXEC := mpiexec.openmpi
  MPI_LIBRARY := Open MPI
  DEFAULT_VENV := .venv
else ifeq ($(MPI),mpich)
  MPICXX := mpicxx.mpich
  MPICC := mpicc.mpich
  MPIFC := mpif90.mpich
  MPIEXEC := mpiexec.mpich
  MPI_LIBRARY := MPICH
  DEFAULT_VENV := .venv-mpich
else
  $(error MPI must be openmpi or mpich, not '$(MPI)')
endif

# One venv per MPI: the Python bindings and mpi4py are built against it.
VENV ?= $(DEFAULT_VENV)
PYTHON := $(VENV)/bin/python
# What the compiled bindings are built from.
PY_SOURCES := $(shell find python/halox python/src include src cmake -type f \
  \( -name '*.py' -o -name '*.cpp' -o -name '*.hpp' -o -name '*.cmake' -o -name '*.in' \)) \
  python/CMakeLists.txt python/pyproject.toml CMakeLists.txt src/CMakeLists.txt

.PHONY: all deps test-deps venv configure configure-only build check test bench install sweep clean format

all: build

deps:
	@MPI=$(MPI) ./scripts/install-deps.sh

# Only the tests need Slurm (halox sweep under sbatch and salloc); `make bench` stays lean.
test-deps:
	@MPI=$(MPI) ./scripts/install-deps.sh --test

venv: $(VENV)/.installed

# The venv's tools, and mpi4py compiled against this MPI (checked). mpi4py only
# hands over communicators here, so -O0 keeps its long compile short.
$(VENV)/.base: python/pyproject.toml
	@python3 -m venv $(VENV) || (echo "make: python3 -m venv failed (install python3-venv)" && false)
	@$(PYTHON) -m pip install --quiet --upgrade pip
	@$(PYTHON) -m pip install --quiet scikit-build-core nanobind numpy matplotlib rich psutil pytest lizard
	@echo "make: building mpi4py against $(MPI_LIBRARY)"
	@MPICC=$(MPICC) CFLAGS="-O0 -g0" $(PYTHON) -m pip install --quiet --force-reinstall \
	  --no-deps --no-binary=mpi4py --no-cache-dir mpi4py
	@$(PYTHON) -c "from mpi4py import MPI; v = MPI.Get_library_version(); \
	  assert '$(MPI_LIBRARY)' in v, 'mpi4py uses ' + v"
	@touch $@

# The halox package (bindings + sweep/report tools) against this MPI; the
# build folder persists, so a rebuild compiles only what changed.
# The bindings link the libhalox of $(BUILD_DIR) (its build tree is a CMake
# package) rather than compiling the core a second time.
$(VENV)/.installed: $(VENV)/.base $(PY_SOURCES)
	@test -f $(BUILD_DIR)/CMakeCache.txt || $(MAKE) --no-print-directory configure-only
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target halox
	@echo "make: installing the halox Python package into $(VENV)"
	@CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(PYTHON) -m pip install --quiet --no-build-isolation \
	  './python[tools]' -C build-dir=$(abspath $(BUILD_DIR))/python \
	  -C cmake.define.MPI_C_COMPILER=$(MPICC) -C cmake.define.MPI_CXX_COMPILER=$(MPICXX) \
	  -C cmake.define.HALOX_PYTHON_USE_INSTALLED=ON -C cmake.define.halox_DIR=$(abspath $(BUILD_DIR))
	@touch $@

configure: deps
	@$(MAKE) --no-print-directory configure-only

# Configures without installing anything (what `make check` needs).
configure-only:
	@mkdir -p $(BUILD_DIR)
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  -DMPI_C_COMPILER=$(MPICC) -DMPI_CXX_COMPILER=$(MPICXX) \
	  $$(command -v $(MPIFC) >/dev/null && echo -DMPI_Fortran_COMPILER=$(MPIFC)) \
	  -DMPIEXEC_EXECUTABLE=$$(command -v $(MPIEXEC)) $(if $(CUDA),-DHALOX_CUDA=$(CUDA)) \
	  -DHALOX_UNITY_BUILD=$(UNITY) -DHALOX_WERROR=$(WERROR) \
	  $$(command -v ccache >/dev/null && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache) \
	  > $(BUILD_DIR)/configure.log 2>&1 \
	  || (cat $(BUILD_DIR)/configure.log && false)

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# The quick tier (docs/testing.md): unit tests, exchanges on 1 and 2 ranks, the programs'
# quick runs, report and spec tests. Installs nothing and needs no root or Slurm.
CHECK_CTEST_LABELS := -L 'unit|mpi' -LE 'slow|many_ranks'
CHECK_PYTEST_MARKERS := not slow and not root and not slurm
check: configure-only venv
	@cmake --build $(BUILD_DIR) -j $(JOBS)
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) $(CHECK_CTEST_LABELS)
	@HALOX_BUILD_DIR=$(abspath $(BUILD_DIR)) HALOX_MPI=$(MPI) $(PYTHON) -m pytest -q -rs \
	  -m "$(CHECK_PYTEST_MARKERS)" tests/python

# The full suite: every ctest entry and pytest case (Slurm and the test hosts need root).
# PYTEST_MARKERS="not any_mpi": the second toolchain's run leaves out the cases whose result
# does not depend on the MPI library (CI: .ci/run).
PYTEST_MARKERS ?=
test: build venv test-deps
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)
	@HALOX_BUILD_DIR=$(abspath $(BUILD_DIR)) HALOX_MPI=$(MPI) $(PYTHON) -m pytest -q -rs \
	  $(if $(PYTEST_MARKERS),-m "$(PYTEST_MARKERS)") tests/python

# The benchmark needs only halox-bench; the test suite is built by `make test`. What
# `cmake --install` installs (halox-install-set: the library, the programs, the Fortran module)
# is built too, before the measurement, so that the folder installs as docs/library.md says.
bench: configure venv
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target halox-bench halox-install-set
	@HALOX_BUILD_DIR=$(abspath $(BUILD_DIR)) HALOX_MPI=$(MPI) HALOX_VENV=$(abspath $(VENV)) \
	  ./scripts/bench.sh

# make install PREFIX=$$HOME/opt/halox: builds what it installs, then installs it.
install: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target halox-install-set
	@cmake --install $(BUILD_DIR) --prefix $(abspath $(PREFIX))

# make sweep SPEC=examples/sweeps/default.toml
SPEC ?= examples/sweeps/default.toml
sweep: build venv
	@HALOX_BUILD_DIR=$(abspath $(BUILD_DIR)) HALOX_MPI=$(MPI) $(VENV)/bin/halox sweep $(SPEC) --mpi $(MPI)

clean:
	rm -rf build

format:
	@clang-format -i $$(git ls-files '*.cpp' '*.hpp')
