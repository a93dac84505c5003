# cmake -DBUILD_DIR= -DPREFIX= -DCONSUMER= -DEXAMPLES= -DMPI_CXX_COMPILER= -DCONFIG= -DSOURCE_DIR=
#       -DSTATIC=ON|OFF -DINSTALL_SHARED=ON|OFF
#       -DMPI_C_COMPILER= -DMPIEXEC= [-DMPI_Fortran_COMPILER= -DFORTRAN_MODULE_FOLDER=]
#       -P this
# (MPIEXEC: the static build learns the MPI flavour, which halox.pc names, from its launcher)
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}")
  endif()
endfunction()

file(REMOVE_RECURSE ${PREFIX} ${PREFIX}-before-move ${CONSUMER})
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX}-before-move --config ${CONFIG})
file(RENAME ${PREFIX}-before-move ${PREFIX})

# The core's headers only; the programs' stay in the source tree.
foreach(internal verify.hpp cli.hpp stats.hpp halo2d ipc decomposition/options.hpp
         program.hpp device_memory.hpp options_json.hpp)
  if(EXISTS ${PREFIX}/include/halox/${internal})
    message(FATAL_ERROR "installed a programs' header: include/halox/${internal}")
  endif()
endforeach()
if(EXISTS ${PREFIX}/include/halox_programs)
  message(FATAL_ERROR "installed the programs' headers: include/halox_programs")
endif()
foreach(file include/halox/exchange.hpp include/halox/field_memory.hpp bin/halox-bench)
  if(NOT EXISTS ${PREFIX}/${file})
    message(FATAL_ERROR "not installed: ${file}")
  endif()
endforeach()

# The public API is the concepts: the transport folder holds what a stencil
# code chooses (the choice, the tuning knobs), extend/ what a transport author
# builds on; no transport implementation.
file(GLOB transport_headers RELATIVE ${PREFIX}/include/halox/transport ${PREFIX}/include/halox/transport/*)
list(SORT transport_headers)
if(NOT transport_headers STREQUAL "choice.hpp;tuning.hpp")
  message(FATAL_ERROR "installed transport headers: ${transport_headers} "
                      "(expected choice.hpp;tuning.hpp)")
endif()
file(GLOB extend_headers RELATIVE ${PREFIX}/include/halox/extend ${PREFIX}/include/halox/extend/*)
list(SORT extend_headers)
set(expected_extend "launcher.hpp;pack.hpp;plan.hpp;registry.hpp;topology.hpp;transport.hpp;wait_policy.hpp")
if(NOT extend_headers STREQUAL expected_extend)
  message(FATAL_ERROR "installed transport authors' headers: ${extend_headers} "
                      "(expected ${expected_extend})")
endif()
# Every installed header compiles on its own against the installed tree alone
# (and MPI): it includes nothing that was not installed.
file(GLOB_RECURSE headers RELATIVE ${PREFIX}/include ${PREFIX}/include/halox/*.hpp)
file(MAKE_DIRECTORY ${CONSUMER}/headers)
foreach(header ${headers})
  string(MAKE_C_IDENTIFIER ${header} name)
  file(WRITE ${CONSUMER}/headers/${name}.cpp "#include \"${header}\"\n")
  run(${MPI_CXX_COMPILER} -std=c++20 -fsyntax-only
      ${CONSUMER}/headers/${name}.cpp -I${PREFIX}/include)
endforeach()
# An installed header includes only the standard library, MPI and halox/:
# anything else would need a package the user's build is not told about.
foreach(header ${headers})
  file(STRINGS ${PREFIX}/include/${header} includes REGEX "^[ \t]*#[ \t]*include")
  foreach(line ${includes})
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"].*" "\\1" included "${line}")
    if(NOT included MATCHES "^halox/" AND NOT included STREQUAL "mpi.h" AND included MATCHES "[./]")
      message(FATAL_ERROR "installed header ${header} includes <${included}>, "
                          "which is not the standard library, MPI or halox")
    endif()
  endforeach()
endforeach()
file(GLOB config ${PREFIX}/lib*/cmake/halox/halox-config.cmake ${PREFIX}/lib/*/cmake/halox/halox-config.cmake)
if(NOT config)
  message(FATAL_ERROR "no halox-config.cmake under ${PREFIX}")
endif()

# CMake: find_package(halox CONFIG REQUIRED) + halox::halox.
run(${CMAKE_COMMAND} -S ${EXAMPLES} -B ${CONSUMER}/cmake -DCMAKE_PREFIX_PATH=${PREFIX}
    -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${CONSUMER}/cmake)

# pkg-config: the MPI compiler wrapper and `pkg-config --cflags --libs halox`.
file(GLOB pc_dir ${PREFIX}/lib*/pkgconfig ${PREFIX}/lib/*/pkgconfig)
execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pc_dir}
                        pkg-config --cflags --libs halox
  RESULT_VARIABLE rc OUTPUT_VARIABLE flags ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config halox failed: ${err}")
endif()
# The shared library installed by default brings MPI and libhalox alone to the link line: the
# CUDA runtime, UCX, hwloc and fmt are its private dependencies.
# (What the MPI library's own module brings is its business: MPICH's names hwloc and UCX.)
set(private_libraries cudart_static cudart ucp ucs uct hwloc fmt)
if(INSTALL_SHARED)
  file(GLOB installed_shared ${PREFIX}/lib*/libhalox.so ${PREFIX}/lib/*/libhalox.so)
  if(NOT installed_shared)
    message(FATAL_ERROR "no libhalox.so under ${PREFIX} (HALOX_INSTALL_SHARED)")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pc_dir}
                          pkg-config --print-requires halox
    OUTPUT_VARIABLE mpi_module OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND pkg-config --libs ${mpi_module} OUTPUT_VARIABLE mpi_flags)
  foreach(library ${private_libraries})
    if(" ${flags} " MATCHES " -l${library} " AND NOT " ${mpi_flags} " MATCHES " -l${library} ")
      message(FATAL_ERROR "pkg-config --libs halox names a private dependency (${library}): ${flags}")
    endif()
    if(" ${mpi_flags} " MATCHES " -l${library} ")
      list(REMOVE_ITEM private_libraries ${library})
    endif()
  endforeach()
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
file(MAKE_DIRECTORY ${CONSUMER}/pkgconfig)
run(${MPI_CXX_COMPILER} -std=c++20 -O2 ${EXAMPLES}/stencil/heat3d.cpp ${flags}
    -o ${CONSUMER}/pkgconfig/halox-example-heat3d)
# ... and the code built with it needs neither (readelf: its NEEDED entries).
find_program(READELF readelf)
if(INSTALL_SHARED AND READELF)
  foreach(consumer ${CONSUMER}/pkgconfig/halox-example-heat3d ${CONSUMER}/cmake/halox-example-heat3d)
    execute_process(COMMAND ${READELF} -d ${consumer} OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0 OR NOT dynamic MATCHES "libhalox")
      message(FATAL_ERROR "${consumer} does not link libhalox.so:\n${dynamic}")
    endif()
    foreach(library ${private_libraries})
      if(dynamic MATCHES "\\[lib${library}\\.so")
        message(FATAL_ERROR "${consumer} links a private dependency of libhalox:\n${dynamic}")
      endif()
    endforeach()
  endforeach()
endif()

# C and Fortran projects: find_package(halox) from `LANGUAGES C` / `LANGUAGES
# Fortran` alone, and the MPI wrappers with pkg-config (halox, halox-fortran).
# (a third argument, c: the C project alone)
function(build_c_and_fortran prefix suffix)
  file(GLOB pc_dir ${prefix}/lib*/pkgconfig ${prefix}/lib/*/pkgconfig)
  set(languages c)
  if(MPI_Fortran_COMPILER AND NOT ARGN STREQUAL "c")
    list(APPEND languages fortran)
    if(NOT EXISTS ${prefix}/include/halox/fortran/${FORTRAN_MODULE_FOLDER}/halox.mod)
      message(FATAL_ERROR "not installed: include/halox/fortran/${FORTRAN_MODULE_FOLDER}/halox.mod")
    endif()
  endif()
  foreach(language ${languages})
    run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/package/${language} -B ${CONSUMER}/${language}-cmake${suffix}
        -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release -DEXAMPLES=${EXAMPLES}
        -DMPI_C_COMPILER=${MPI_C_COMPILER} -DMPI_Fortran_COMPILER=${MPI_Fortran_COMPILER})
    run(${CMAKE_COMMAND} --build ${CONSUMER}/${language}-cmake${suffix})
    if(language STREQUAL "c")
      set(module halox)
      set(compiler ${MPI_C_COMPILER})
      set(source ${EXAMPLES}/stencil/heat3d.c)
    else()
      set(module halox-fortran)
      set(compiler ${MPI_Fortran_COMPILER})
      set(source ${EXAMPLES}/stencil/heat3d.f90)
    endif()
    execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pc_dir}
                            pkg-config --cflags --libs ${module}
      RESULT_VARIABLE rc OUTPUT_VARIABLE flags ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "pkg-config ${module} failed: ${err}")
    endif()
    separate_arguments(flags UNIX_COMMAND "${flags}")
    file(MAKE_DIRECTORY ${CONSUMER}/${language}-pkgconfig${suffix})
    get_filename_component(libdir ${pc_dir} DIRECTORY)
    run(${compiler} -O2 ${source} ${flags} -lm -Wl,-rpath,${libdir}
        -o ${CONSUMER}/${language}-pkgconfig${suffix}/halox-example-heat3d-${language})
  endforeach()
endfunction()
if(SOURCE_DIR)
  build_c_and_fortran(${PREFIX} "")
  # The stencil code's tier alone (docs/architecture.md): the installed package without the
  # transport authors' (halox/extend/) and the programs' (halox/programs/) headers still
  # builds and links the C code, with CMake and with pkg-config.
  set(stencil_prefix ${CONSUMER}/stencil-prefix)
  file(COPY ${PREFIX}/ DESTINATION ${stencil_prefix})
  file(REMOVE_RECURSE ${stencil_prefix}/include/halox/extend ${stencil_prefix}/include/halox/programs)
  if(EXISTS ${stencil_prefix}/include/halox/extend OR EXISTS ${stencil_prefix}/include/halox/programs)
    message(FATAL_ERROR "the other tiers are still under ${stencil_prefix}/include/halox")
  endif()
  build_c_and_fortran(${stencil_prefix} "-stencil" c)
endif()

# A static libhalox installs and serves the same consumer: the library alone, configured from
# the same sources (STATIC: HALOX_TEST_STATIC_PACKAGE), without CUDA: its packaging (the link
# line that carries the private dependencies) is the same with it, and the CUDA compile would
# double the test's time.
if(SOURCE_DIR AND STATIC)
  set(static_build ${CONSUMER}/static-build)
  set(static_prefix ${CONSUMER}/static-prefix)
  set(fortran -DHALOX_FORTRAN=OFF)
  if(MPI_Fortran_COMPILER)
    set(fortran -DHALOX_FORTRAN=ON -DMPI_Fortran_COMPILER=${MPI_Fortran_COMPILER})
  endif()
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${static_build} -DCMAKE_BUILD_TYPE=Release
      -DBUILD_SHARED_LIBS=OFF -DHALOX_INSTALL_SHARED=OFF -DHALOX_BUILD_PROGRAMS=OFF
      -DHALOX_BUILD_TESTS=OFF -DHALOX_BUILD_MICROBENCH=OFF -DHALOX_BUILD_EXAMPLES=OFF
      -DMPI_CXX_COMPILER=${MPI_CXX_COMPILER} -DMPI_C_COMPILER=${MPI_C_COMPILER} ${fortran}
      -DMPIEXEC_EXECUTABLE=${MPIEXEC} -DHALOX_CUDA=OFF ${LAUNCHER})
  run(${CMAKE_COMMAND} --build ${static_build} --parallel 2)
  run(${CMAKE_COMMAND} --install ${static_build} --prefix ${static_prefix})
  file(GLOB static_library ${static_prefix}/lib*/libhalox.a ${static_prefix}/lib/*/libhalox.a)
  file(GLOB stray_shared ${static_prefix}/lib*/libhalox.so ${static_prefix}/lib/*/libhalox.so)
  if(NOT static_library OR stray_shared)
    message(FATAL_ERROR "expected libhalox.a and no libhalox.so under ${static_prefix}")
  endif()
  run(${CMAKE_COMMAND} -S ${EXAMPLES} -B ${CONSUMER}/static -DCMAKE_PREFIX_PATH=${static_prefix}
      -DCMAKE_BUILD_TYPE=Release)
  run(${CMAKE_COMMAND} --build ${CONSUMER}/static)
  build_c_and_fortran(${static_prefix} "-static")
endif()
