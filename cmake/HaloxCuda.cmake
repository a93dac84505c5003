# CUDA support: fields in device memory, packed by CUDA kernels, moved by
# mpi-p2p (through pinned host buffers or a CUDA-aware MPI) and cuda-ipc.
#   HALOX_CUDA=AUTO  on when CMake finds a CUDA compiler, off (cleanly) when not
#   HALOX_CUDA=ON    required: configuring fails without a CUDA compiler
#   HALOX_CUDA=OFF   never
# The CUDA runtime is linked statically (the programs need only the driver's
# libcuda on the machine that runs them); kernels are built for sm_90 (SASS)
# plus PTX that the driver compiles for newer GPUs.
set(HALOX_CUDA AUTO CACHE STRING "CUDA support: AUTO (when a CUDA compiler is found), ON or OFF")
set_property(CACHE HALOX_CUDA PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${HALOX_CUDA}" halox_cuda_request)
if(NOT halox_cuda_request MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "HALOX_CUDA must be AUTO, ON or OFF, not '${HALOX_CUDA}'")
endif()

set(HALOX_WITH_CUDA OFF)
if(NOT halox_cuda_request STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # "90": sm_90 code and compute_90 PTX.
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    # The kernels include the plan's C++20 headers. nvcc 12 and later speak
    # C++20, but CMake before 3.26 does not know it: teach it the flag.
    if(CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA" AND
       CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0 AND
       NOT "cuda_std_20" IN_LIST CMAKE_CUDA_COMPILE_FEATURES)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
      list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
    endif()
    find_package(CUDAToolkit REQUIRED)
    set(HALOX_WITH_CUDA ON)
    message(STATUS "halox: CUDA ${CUDAToolkit_VERSION} (${CMAKE_CUDA_COMPILER}), architectures "
                   "${CMAKE_CUDA_ARCHITECTURES}")
  elseif(halox_cuda_request STREQUAL "ON")
    message(FATAL_ERROR "HALOX_CUDA=ON but no CUDA compiler was found (set CMAKE_CUDA_COMPILER "
                        "or put nvcc on PATH)")
  else()
    message(STATUS "halox: no CUDA compiler found, building without CUDA")
  endif()
else()
  message(STATUS "halox: building without CUDA (HALOX_CUDA=OFF)")
endif()
