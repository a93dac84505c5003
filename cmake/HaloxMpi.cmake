# Launcher flags that differ between MPI libraries: OpenMPI refuses root and
# oversubscription unless told; MPICH's hydra needs neither.
execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version
  OUTPUT_VARIABLE _halox_mpiexec_version ERROR_VARIABLE _halox_mpiexec_version)
if(_halox_mpiexec_version MATCHES "Open MPI|OpenRTE")
  set(HALOX_MPI_FLAVOR openmpi)
  # yield_when_idle keeps oversubscribed test runs from spinning each other out.
  set(HALOX_MPIEXEC_TEST_FLAGS --allow-run-as-root --oversubscribe --bind-to none
      --mca mpi_yield_when_idle 1)
else()
  set(HALOX_MPI_FLAVOR mpich)
  set(HALOX_MPIEXEC_TEST_FLAGS)
endif()
message(STATUS "halox: MPI flavour ${HALOX_MPI_FLAVOR}, launcher ${MPIEXEC_EXECUTABLE}")

# halox_add_mpi_test(NAME name RANKS n COMMAND exe args... [TIMEOUT s]
#                    [ENVIRONMENT var=value...] [MANY_SETUPS] [PSEUDO_NODES] [UNIT] [SLOW])
# MANY_SETUPS: the test builds hundreds of exchanges (collectives in each set-up).
# PSEUDO_NODES: the test groups ranks into nodes (HALOX_RANKS_PER_NODE), halox's
#   own logic, the same under both libraries.
# Labels (ctest -L / -LE; `make check` runs 'unit|mpi' without 'slow|many_ranks'):
#   unit            UNIT: no peers, one rank under the launcher; else
#   mpi             ranks that exchange with each other
#   many_ranks      more ranks than the reference machine has cores
#   slow            SLOW: minutes rather than seconds
#   ranks<n>        the number of ranks
# What an entry runs (its labels, its matrix, whether MPICH runs it) is fixed
# by its rank count against the 2-core reference machine that CI uses, never
# by the cores of the machine that configures: every machine runs the same
# tests.
# TIMEOUT: 3 to 4 times the test's time with Open MPI on 2 cores, at least 30 s
# (docs/testing.md); 60 s unless given.
set(HALOX_REFERENCE_CORES 2)
function(halox_add_mpi_test)
  cmake_parse_arguments(T "MANY_SETUPS;PSEUDO_NODES;UNIT;SLOW" "NAME;RANKS;TIMEOUT"
                        "COMMAND;ENVIRONMENT" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  set(_cores ${HALOX_REFERENCE_CORES})
  # MPICH 4.0 (ch4:ucx) busy-polls in every collective and does not yield: with
  # more than two ranks per core each set-up collective costs several time
  # slices per rank (8 ranks on 2 cores: 7 to 11 minutes per exchange test with
  # the minimal matrix). Those runs are left to Open MPI, whose waits yield.
  math(EXPR _most_mpich_ranks "2 * ${_cores}")
  # Beyond the cores, the same holds for the pseudo-node groupings (3.5 to 4
  # minutes each at 4 ranks on 2 cores): MPICH keeps the one-node entries of
  # 3 and 4 ranks, Open MPI runs the groupings.
  if(T_MANY_SETUPS AND HALOX_MPI_FLAVOR STREQUAL "mpich" AND
     (T_RANKS GREATER _most_mpich_ranks OR (T_PSEUDO_NODES AND T_RANKS GREATER _cores)))
    set_property(GLOBAL APPEND PROPERTY HALOX_TESTS_LEFT_TO_OPEN_MPI ${T_NAME})
    return()
  endif()
  add_test(NAME ${T_NAME}
    COMMAND ${MPIEXEC_EXECUTABLE} ${HALOX_MPIEXEC_TEST_FLAGS} ${MPIEXEC_NUMPROC_FLAG} ${T_RANKS}
            ${T_COMMAND})
  if(T_UNIT)
    set(labels unit)
  else()
    set(labels mpi)
  endif()
  if(T_RANKS GREATER _cores)
    list(APPEND labels many_ranks)
  endif()
  if(T_SLOW)
    list(APPEND labels slow)
  endif()
  list(APPEND labels ranks${T_RANKS})
  # The timeouts are measured with Open MPI. MPICH busy-polls, so that its
  # ranks beyond the cores wait for each other's time slices: give them 3 times.
  if(HALOX_MPI_FLAVOR STREQUAL "mpich" AND T_RANKS GREATER _cores)
    math(EXPR T_TIMEOUT "3 * ${T_TIMEOUT}")
  endif()
  # ctest -j counts a test's ranks, so runs of many ranks do not pile up.
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT} PROCESSORS ${T_RANKS}
    LABELS "${labels}")
  set(env ${T_ENVIRONMENT})
  # Runs of many ranks take smaller matrices: every collective of an
  # exchange's set-up costs a time slice per rank there. MPICH busy-polls in
  # them (no yielding wait), so its runs take the minimal matrix.
  if(T_RANKS GREATER _cores)
    if(HALOX_MPI_FLAVOR STREQUAL "mpich")
      list(APPEND env HALOX_TEST_MATRIX=minimal)
    else()
      list(APPEND env HALOX_TEST_MATRIX=reduced)
    endif()
  endif()
  if(env)
    set_property(TEST ${T_NAME} APPEND PROPERTY ENVIRONMENT ${env})
  endif()
endfunction()
