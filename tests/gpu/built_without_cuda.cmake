# cmake -DBUILD_DIR= -DBENCH= -DREQUEST= -P this
# A build without CUDA, checked on itself: no CUDA object was compiled,
# cuda-ipc says why it is missing and, where HALOX_CUDA=OFF asked for it, no
# CUDA compiler was looked for.
file(GLOB_RECURSE kernels ${BUILD_DIR}/*.cu.o)
if(kernels)
  message(FATAL_ERROR "a build without CUDA compiled CUDA sources: ${kernels}")
endif()
if(REQUEST STREQUAL "OFF")
  file(STRINGS ${BUILD_DIR}/CMakeCache.txt looked REGEX "^CMAKE_CUDA_COMPILER:")
  if(looked)
    message(FATAL_ERROR "HALOX_CUDA=OFF looked for a CUDA compiler: ${looked}")
  endif()
endif()
# One process, started alone (MPI singleton).
execute_process(COMMAND ${BENCH} --list-transports RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "halox-bench --list-transports failed (${rc}):\n${out}")
endif()
if(NOT out MATCHES "cuda-ipc +unavailable +same-node +\\(halox was built without CUDA\\)")
  message(FATAL_ERROR "cuda-ipc's line does not say that halox was built without CUDA:\n${out}")
endif()
