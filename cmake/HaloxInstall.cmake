# cmake --install: headers, libhalox, the programs, a relocatable CMake package
# (find_package(halox CONFIG) -> halox::halox) and a pkg-config file.
include(CMakePackageConfigHelpers)

set(HALOX_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/halox)
install(TARGETS halox EXPORT halox-targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Only the core's headers: the programs' headers live under apps/.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/halox DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT halox-targets NAMESPACE halox:: DESTINATION ${HALOX_CMAKE_INSTALL_DIR})
# The build tree is a package too (halox_DIR=<build folder>): the Python
# bindings link the library built here instead of compiling it again.
export(EXPORT halox-targets NAMESPACE halox:: FILE ${PROJECT_BINARY_DIR}/halox-targets.cmake)
# The Fortran module: its own export set, loaded by projects that enable
# Fortran; the .mod files under a folder named for the compiler that made them.
if(HALOX_WITH_FORTRAN)
  set(HALOX_FORTRAN_INCLUDE_DIR ${CMAKE_INSTALL_INCLUDEDIR}/halox/fortran/${HALOX_FORTRAN_MODULE_FOLDER})
  install(TARGETS halox_fortran EXPORT halox-fortran-targets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(DIRECTORY ${PROJECT_BINARY_DIR}/fortran/modules/ DESTINATION ${HALOX_FORTRAN_INCLUDE_DIR}
    FILES_MATCHING PATTERN "*.mod")
  install(EXPORT halox-fortran-targets NAMESPACE halox:: DESTINATION ${HALOX_CMAKE_INSTALL_DIR})
endif()

# The config file points FindMPI at the MPI compilers of this build.
find_program(HALOX_MPI_C_COMPILER_PATH NAMES ${MPI_C_COMPILER} NO_CACHE)
find_program(HALOX_MPI_CXX_COMPILER_PATH NAMES ${MPI_CXX_COMPILER} NO_CACHE)
if(HALOX_WITH_FORTRAN)
  find_program(HALOX_MPI_Fortran_COMPILER_PATH NAMES ${MPI_Fortran_COMPILER} NO_CACHE)
endif()
# A static libhalox needs its private dependencies at the user's link step.
get_target_property(HALOX_LIBRARY_TYPE halox TYPE)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/halox-config.cmake.in
  ${PROJECT_BINARY_DIR}/halox-config.cmake INSTALL_DESTINATION ${HALOX_CMAKE_INSTALL_DIR})
# 0.x: minor versions may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/halox-config-version.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/halox-config.cmake ${PROJECT_BINARY_DIR}/halox-config-version.cmake
  DESTINATION ${HALOX_CMAKE_INSTALL_DIR})

# pkg-config: the prefix is found relative to the .pc file, so the tree can move.
if(HALOX_MPI_FLAVOR STREQUAL "openmpi")
  set(HALOX_PC_MPI ompi-cxx)
else()
  set(HALOX_PC_MPI mpich)
endif()
# A static libhalox needs -lhwloc -lfmt on the user's link line; `--static`
# would ask for static builds of every dependency, which distributions lack.
set(HALOX_PC_PRIVATE_MODULES "hwloc fmt")
if(HALOX_WITH_UCX)
  string(APPEND HALOX_PC_PRIVATE_MODULES " ucx")
endif()
if(HALOX_LIBRARY_TYPE STREQUAL "STATIC_LIBRARY")
  set(HALOX_PC_REQUIRES "${HALOX_PC_MPI} ${HALOX_PC_PRIVATE_MODULES}")
  set(HALOX_PC_REQUIRES_PRIVATE "")
else()
  set(HALOX_PC_REQUIRES "${HALOX_PC_MPI}")
  set(HALOX_PC_REQUIRES_PRIVATE "${HALOX_PC_PRIVATE_MODULES}")
endif()
# The CUDA runtime has no pkg-config module: a static libhalox built with CUDA names it.
set(HALOX_PC_EXTRA_LIBS "")
if(HALOX_WITH_CUDA AND HALOX_LIBRARY_TYPE STREQUAL "STATIC_LIBRARY")
  set(HALOX_PC_EXTRA_LIBS " -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -ldl -lrt -lpthread")
endif()
file(RELATIVE_PATH HALOX_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" HALOX_PC_TO_PREFIX "${HALOX_PC_TO_PREFIX}")
# A static libhalox used from C or Fortran (halox/halox.h) needs the C++ runtime.
if(HALOX_LIBRARY_TYPE STREQUAL "STATIC_LIBRARY")
  string(APPEND HALOX_PC_EXTRA_LIBS " -lstdc++")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/halox.pc.in ${PROJECT_BINARY_DIR}/halox.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/halox.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
# mpif90 $(pkg-config --cflags --libs halox-fortran): the module's folder and both libraries.
if(HALOX_WITH_FORTRAN)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/halox-fortran.pc.in ${PROJECT_BINARY_DIR}/halox-fortran.pc
    @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/halox-fortran.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()
