# cmake --install: headers, libhalox, the programs, a relocatable CMake package
# (find_package(halox CONFIG) -> halox::halox) and a pkg-config file.
include(CMakePackageConfigHelpers)

set(HALOX_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/halox)
# The installed libhalox is shared (HALOX_INSTALL_SHARED, on by default), linked from the objects
# of the static one the programs use, so nothing is compiled twice: a code that links it gets
# MPI on its link line and nothing else. The CUDA runtime, UCX, hwloc and fmt stay private
# dependencies of libhalox.so; a static libhalox would bring every one of them to every code
# (the CUDA runtime alone added 2.2 MB to a small CPU-only code).
get_target_property(HALOX_BUILT_TYPE halox TYPE)
option(HALOX_INSTALL_SHARED "Install libhalox as a shared library (linked from the static one's objects)" ON)
set(HALOX_INSTALLED_LIBRARY halox)
if(HALOX_BUILT_TYPE STREQUAL "STATIC_LIBRARY" AND HALOX_INSTALL_SHARED)
  add_library(halox_shared SHARED $<TARGET_OBJECTS:halox>)
  get_target_property(_halox_links halox LINK_LIBRARIES)
  # UCX's imported target lives in src/: the same module, found again here.
  if("PkgConfig::UCX" IN_LIST _halox_links)
    pkg_check_modules(HALOX_SHARED_UCX REQUIRED QUIET IMPORTED_TARGET ucx)
    list(TRANSFORM _halox_links REPLACE "^PkgConfig::UCX$" "PkgConfig::HALOX_SHARED_UCX")
  endif()
  target_link_libraries(halox_shared PUBLIC MPI::MPI_CXX PRIVATE ${_halox_links})
  target_include_directories(halox_shared PUBLIC $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(halox_shared PUBLIC cxx_std_20)
  set_target_properties(halox_shared PROPERTIES OUTPUT_NAME halox EXPORT_NAME halox
    LINKER_LANGUAGE CXX VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  set(HALOX_INSTALLED_LIBRARY halox_shared)
  # The Fortran module's library links the static libhalox here and the shared one installed.
  if(TARGET halox_fortran)
    get_target_property(_halox_fortran_links halox_fortran INTERFACE_LINK_LIBRARIES)
    list(TRANSFORM _halox_fortran_links REPLACE "^halox$" "$<BUILD_INTERFACE:halox>;$<INSTALL_INTERFACE:halox_shared>")
    set_target_properties(halox_fortran PROPERTIES INTERFACE_LINK_LIBRARIES "${_halox_fortran_links}")
  endif()
endif()
get_target_property(HALOX_LIBRARY_TYPE ${HALOX_INSTALLED_LIBRARY} TYPE)
install(TARGETS ${HALOX_INSTALLED_LIBRARY} EXPORT halox-targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Only the core's headers: the programs' headers live under apps/.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/halox DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT halox-targets NAMESPACE halox:: DESTINATION ${HALOX_CMAKE_INSTALL_DIR})
# The build tree is a package too (halox_DIR=<build folder>): the Python
# bindings link the (static) library built here instead of compiling it again.
export(TARGETS halox NAMESPACE halox:: FILE ${PROJECT_BINARY_DIR}/halox-targets.cmake)
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
# A static libhalox needs its private dependencies at the user's link step: the build tree's
# package (static, the Python bindings' link) and the installed one (HALOX_LIBRARY_TYPE) each
# get a config file of their own.
set(_halox_installed_type ${HALOX_LIBRARY_TYPE})
set(HALOX_LIBRARY_TYPE ${HALOX_BUILT_TYPE})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/halox-config.cmake.in
  ${PROJECT_BINARY_DIR}/halox-config.cmake INSTALL_DESTINATION ${HALOX_CMAKE_INSTALL_DIR})
set(HALOX_LIBRARY_TYPE ${_halox_installed_type})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/halox-config.cmake.in
  ${PROJECT_BINARY_DIR}/install-config/halox-config.cmake INSTALL_DESTINATION ${HALOX_CMAKE_INSTALL_DIR})
# 0.x: minor versions may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/halox-config-version.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/install-config/halox-config.cmake
  ${PROJECT_BINARY_DIR}/halox-config-version.cmake DESTINATION ${HALOX_CMAKE_INSTALL_DIR})

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
# The CUDA runtime has no pkg-config module: a static libhalox built with CUDA names it on its
# link line, a shared one as a private dependency (pkg-config --static lists it).
set(HALOX_PC_EXTRA_LIBS "")
set(HALOX_PC_LIBS_PRIVATE "")
set(_halox_pc_cuda "")
if(HALOX_WITH_CUDA)
  set(_halox_pc_cuda " -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -ldl -lrt -lpthread")
endif()
file(RELATIVE_PATH HALOX_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" HALOX_PC_TO_PREFIX "${HALOX_PC_TO_PREFIX}")
if(HALOX_LIBRARY_TYPE STREQUAL "STATIC_LIBRARY")
  # A static libhalox used from C or Fortran (halox/halox.h) needs the C++ runtime.
  set(HALOX_PC_EXTRA_LIBS "${_halox_pc_cuda} -lstdc++")
else()
  # A shared one is found where it lies, wherever the prefix moved, without LD_LIBRARY_PATH.
  set(HALOX_PC_EXTRA_LIBS " -Wl,-rpath,\${libdir}")
  set(HALOX_PC_LIBS_PRIVATE "${_halox_pc_cuda}")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/halox.pc.in ${PROJECT_BINARY_DIR}/halox.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/halox.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
# mpif90 $(pkg-config --cflags --libs halox-fortran): the module's folder and both libraries.
if(HALOX_WITH_FORTRAN)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/halox-fortran.pc.in ${PROJECT_BINARY_DIR}/halox-fortran.pc
    @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/halox-fortran.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()

# Everything the rules above install, as one target: `make bench` and `make install` build it,
# so that `cmake --install` works on a folder that was built for the benchmark alone.
add_custom_target(halox-install-set)
add_dependencies(halox-install-set ${HALOX_INSTALLED_LIBRARY})
if(HALOX_WITH_FORTRAN)
  add_dependencies(halox-install-set halox_fortran)
endif()
if(HALOX_BUILD_PROGRAMS)
  get_property(_halox_app_targets DIRECTORY ${PROJECT_SOURCE_DIR}/apps PROPERTY BUILDSYSTEM_TARGETS)
  foreach(_halox_target ${_halox_app_targets})
    get_target_property(_halox_target_type ${_halox_target} TYPE)
    if(_halox_target_type STREQUAL "EXECUTABLE")
      add_dependencies(halox-install-set ${_halox_target})
    endif()
  endforeach()
endif()
