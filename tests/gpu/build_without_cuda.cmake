# cmake -DSOURCE_DIR= -DBUILD_DIR= -DMPI_C_COMPILER= -DMPI_CXX_COMPILER= -DLAUNCHER= -P this
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

set(launcher "")
if(LAUNCHER)
  set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BUILD_DIR} -DHALOX_CUDA=OFF -DCMAKE_BUILD_TYPE=Release
    -DMPI_C_COMPILER=${MPI_C_COMPILER} -DMPI_CXX_COMPILER=${MPI_CXX_COMPILER} ${launcher}
    -DHALOX_BUILD_TESTS=OFF -DHALOX_BUILD_BENCHMARKS=OFF -DHALOX_BUILD_EXAMPLES=OFF
    -DHALOX_INSTALL=OFF)
if(NOT out MATCHES "building without CUDA \\(HALOX_CUDA=OFF\\)")
  message(FATAL_ERROR "the configuration does not say that CUDA is off:\n${out}")
endif()
if(out MATCHES "Looking for a CUDA compiler")
  message(FATAL_ERROR "HALOX_CUDA=OFF looked for a CUDA compiler:\n${out}")
endif()
run(${CMAKE_COMMAND} --build ${BUILD_DIR} --target halox-bench --parallel 2)
# One process, started alone (MPI singleton).
run(${BUILD_DIR}/halox-bench --list-transports)
if(NOT out MATCHES "cuda-ipc +unavailable +same-node +\\(halox was built without CUDA\\)")
  message(FATAL_ERROR "cuda-ipc's line does not say that halox was built without CUDA:\n${out}")
endif()
file(GLOB_RECURSE kernels ${BUILD_DIR}/*.cu.o)
if(kernels)
  message(FATAL_ERROR "HALOX_CUDA=OFF compiled CUDA sources: ${kernels}")
endif()
