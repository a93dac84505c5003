# halox: the two commands a newcomer needs are `make bench` and `make test`.
# MPI=openmpi (default) or MPI=mpich selects the toolchain; each has its own build folder.

MPI ?= openmpi
BUILD_TYPE ?= Release
BUILD_DIR ?= build/$(MPI)
JOBS ?= $(shell nproc)
VENV ?= .venv
PYTHON := $(VENV)/bin/python

ifeq ($(MPI),openmpi)
  MPICXX := mpicxx.openmpi
  MPICC := mpicc.openmpi
  MPIEXEC := mpiexec.openmpi
else ifeq ($(MPI),mpich)
  MPICXX := mpicxx.mpich
  MPICC := mpicc.mpich
  MPIEXEC := mpiexec.mpich
else
  $(error MPI must be openmpi or mpich, not '$(MPI)')
endif

.PHONY: all deps test-deps venv configure build test bench sweep clean format

all: build

deps:
	@MPI=$(MPI) ./scripts/install-deps.sh

# Only the tests need Slurm (halox sweep under sbatch and salloc); `make bench` stays lean.
test-deps:
	@MPI=$(MPI) ./scripts/install-deps.sh --test

venv: $(VENV)/.installed

$(VENV)/.installed: python/pyproject.toml
	@python3 -m venv $(VENV) || (echo "make: python3 -m venv failed (install python3-venv)" && false)
	@$(PYTHON) -m pip install --quiet --upgrade pip
	@$(PYTHON) -m pip install --quiet -e 'python[test]'
	@touch $@

configure: deps
	@mkdir -p $(BUILD_DIR)
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  -DMPI_C_COMPILER=$(MPICC) -DMPI_CXX_COMPILER=$(MPICXX) \
	  -DMPIEXEC_EXECUTABLE=$$(command -v $(MPIEXEC)) > $(BUILD_DIR)/configure.log 2>&1 \
	  || (cat $(BUILD_DIR)/configure.log && false)

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

test: build venv test-deps
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)
	@HALOX_BUILD_DIR=$(abspath $(BUILD_DIR)) HALOX_MPI=$(MPI) $(PYTHON) -m pytest -q -rs tests/python

# The benchmark needs only halox-bench; the test suite is built by `make test`.
bench: configure venv
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target halox-bench
	@HALOX_BUILD_DIR=$(abspath $(BUILD_DIR)) HALOX_MPI=$(MPI) ./scripts/bench.sh

# make sweep SPEC=examples/sweeps/default.toml
SPEC ?= examples/sweeps/default.toml
sweep: build venv
	@HALOX_BUILD_DIR=$(abspath $(BUILD_DIR)) HALOX_MPI=$(MPI) $(VENV)/bin/halox sweep $(SPEC) --mpi $(MPI)

clean:
	rm -rf build

format:
	@clang-format -i $$(git ls-files '*.cpp' '*.hpp')
