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

# halox_add_mpi_test(NAME name RANKS n COMMAND exe args... [TIMEOUT s])
function(halox_add_mpi_test)
  cmake_parse_arguments(T "" "NAME;RANKS;TIMEOUT" "COMMAND" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_test(NAME ${T_NAME}
    COMMAND ${MPIEXEC_EXECUTABLE} ${HALOX_MPIEXEC_TEST_FLAGS} ${MPIEXEC_NUMPROC_FLAG} ${T_RANKS}
            ${T_COMMAND})
  # ctest -j counts a test's ranks, so oversubscribed runs do not pile up.
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT} PROCESSORS ${T_RANKS}
    LABELS "mpi;ranks${T_RANKS}")
  # Oversubscribed runs take reduced matrices: every collective of an
  # exchange's set-up costs a time slice per rank there, and MPICH busy-polls.
  cmake_host_system_information(RESULT _cores QUERY NUMBER_OF_LOGICAL_CORES)
  if(T_RANKS GREATER _cores)
    set_property(TEST ${T_NAME} APPEND PROPERTY ENVIRONMENT HALOX_TEST_MATRIX=reduced)
  endif()
endfunction()
