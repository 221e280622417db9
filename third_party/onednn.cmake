# Finds or builds the oneDNN this package needs: version 3.13 or newer, built for
# the OpenCL GPU runtime, with the graph component. 3.13 is the oldest release
# the sources compile against (3.12 lacks the graph API's user scratchpads,
# compiled_partition::get_scratchpad_logical_tensor; docs/building.md).
#
#   DNNL_OCL_INTEROP_ONEDNN = auto (default) | system | bundled
#     system:  find_package(dnnl CONFIG) on CMAKE_PREFIX_PATH and the system
#              prefixes, checked; the module links it through its RPATH.
#     bundled: the pinned release built by third_party/onednn_bundle.py into a
#              cache outside the checkout (reused across clones and rebuilds),
#              installed inside the package next to _core (RPATH $ORIGIN).
#     auto:    system when a suitable oneDNN is found, otherwise bundled.
#   ONEDNN_SOURCE_DIR (CMake define or environment): a local oneDNN checkout
#     for the bundled build, instead of downloading the release archive.
#
# Sets DNNL_LIBRARY_DIR (where libdnnl lies at build time) and
# DNNL_OCL_INTEROP_ONEDNN_BUNDLED.
set(DNNL_OCL_INTEROP_MIN_ONEDNN 3.13)
set(DNNL_OCL_INTEROP_ONEDNN auto CACHE STRING "Which oneDNN to use: auto, system or bundled")
set_property(CACHE DNNL_OCL_INTEROP_ONEDNN PROPERTY STRINGS auto system bundled)
set(ONEDNN_SOURCE_DIR "" CACHE PATH
  "Local oneDNN checkout for the bundled build (else the release archive is downloaded)")
set(_dnnl_source "${ONEDNN_SOURCE_DIR}")
if(NOT _dnnl_source)
  set(_dnnl_source "$ENV{ONEDNN_SOURCE_DIR}")
endif()
if(NOT DNNL_OCL_INTEROP_ONEDNN MATCHES "^(auto|system|bundled)$")
  message(FATAL_ERROR "DNNL_OCL_INTEROP_ONEDNN is '${DNNL_OCL_INTEROP_ONEDNN}': "
    "use auto, system or bundled")
endif()

set(_dnnl_hint
  "Let the build make one (-DDNNL_OCL_INTEROP_ONEDNN=bundled, the default 'auto' "
  "does so when none is found), or point CMake at a suitable install with "
  "CMAKE_PREFIX_PATH, e.g. pip install . -Ccmake.define.CMAKE_PREFIX_PATH=/opt/onednn")

# Why the oneDNN whose headers are in INCLUDE_DIR cannot serve (empty: it can).
function(dnnl_ocl_interop_unsuitable include_dir out)
  set(config "${include_dir}/oneapi/dnnl/dnnl_config.h")
  set(version_h "${include_dir}/oneapi/dnnl/dnnl_version.h")
  if(NOT EXISTS "${config}" OR NOT EXISTS "${version_h}")
    set(${out} "no oneapi/dnnl/dnnl_config.h and dnnl_version.h in ${include_dir}" PARENT_SCOPE)
    return()
  endif()
  file(READ "${version_h}" text)
  foreach(part MAJOR MINOR PATCH)
    string(REGEX MATCH "#define DNNL_VERSION_${part} ([0-9]+)" _ "${text}")
    list(APPEND version "${CMAKE_MATCH_1}")
  endforeach()
  list(JOIN version . version)
  file(READ "${config}" text)
  if(version VERSION_LESS DNNL_OCL_INTEROP_MIN_ONEDNN)
    set(${out} "oneDNN ${version} in ${include_dir} is older than ${DNNL_OCL_INTEROP_MIN_ONEDNN}" PARENT_SCOPE)
  elseif(NOT text MATCHES "#define DNNL_GPU_RUNTIME DNNL_RUNTIME_OCL")
    string(REGEX MATCH "#define DNNL_GPU_RUNTIME [A-Z_]+" gpu "${text}")
    set(${out} "oneDNN ${version} in ${include_dir} was not built for the OpenCL GPU runtime ('${gpu}')" PARENT_SCOPE)
  elseif(NOT text MATCHES "#define ONEDNN_BUILD_GRAPH")
    set(${out} "oneDNN ${version} in ${include_dir} was built without the graph component" PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

set(DNNL_OCL_INTEROP_ONEDNN_BUNDLED OFF)
if(NOT DNNL_OCL_INTEROP_ONEDNN STREQUAL "bundled")
  # Probe the headers first: find_package would define DNNL::dnnl for a
  # oneDNN that auto mode then has to pass over (a CPU-only distro package).
  find_path(DNNL_OCL_INTEROP_SYSTEM_INCLUDE oneapi/dnnl/dnnl_config.h NO_CACHE)
  if(DNNL_OCL_INTEROP_SYSTEM_INCLUDE)
    dnnl_ocl_interop_unsuitable("${DNNL_OCL_INTEROP_SYSTEM_INCLUDE}" _dnnl_why)
  else()
    set(_dnnl_why "no oneDNN on CMAKE_PREFIX_PATH='${CMAKE_PREFIX_PATH}' or the system prefixes")
  endif()
  if(_dnnl_why AND DNNL_OCL_INTEROP_ONEDNN STREQUAL "system")
    message(FATAL_ERROR "DNNL_OCL_INTEROP_ONEDNN=system: ${_dnnl_why}. ${_dnnl_hint}")
  elseif(_dnnl_why)
    message(STATUS "oneDNN: ${_dnnl_why}; building the bundled one")
    set(DNNL_OCL_INTEROP_ONEDNN_BUNDLED ON)
  else()
    get_filename_component(_dnnl_prefix "${DNNL_OCL_INTEROP_SYSTEM_INCLUDE}" DIRECTORY)
    find_package(dnnl CONFIG REQUIRED HINTS "${_dnnl_prefix}")
  endif()
else()
  set(DNNL_OCL_INTEROP_ONEDNN_BUNDLED ON)
endif()

if(DNNL_OCL_INTEROP_ONEDNN_BUNDLED)
  set(_dnnl_prefix_file "${CMAKE_BINARY_DIR}/onednn_bundle_prefix.txt")
  file(REMOVE "${_dnnl_prefix_file}")
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env "ONEDNN_SOURCE_DIR=${_dnnl_source}"
      "${Python_EXECUTABLE}" "${CMAKE_CURRENT_LIST_DIR}/onednn_bundle.py" ensure
      --compiler "${CMAKE_CXX_COMPILER}" --prefix-file "${_dnnl_prefix_file}"
    OUTPUT_QUIET
    RESULT_VARIABLE _dnnl_rc)
  if(NOT _dnnl_rc EQUAL 0 OR NOT EXISTS "${_dnnl_prefix_file}")
    message(FATAL_ERROR "The bundled oneDNN build failed (see the message above; "
      "third_party/onednn_bundle.py). ${_dnnl_hint}")
  endif()
  file(READ "${_dnnl_prefix_file}" _dnnl_prefix)
  find_package(dnnl CONFIG REQUIRED PATHS "${_dnnl_prefix}" NO_DEFAULT_PATH)
endif()

# The imported target's own headers pass the same checks (a last guard
# against a config file and headers from different installs).
get_target_property(_dnnl_includes DNNL::dnnl INTERFACE_INCLUDE_DIRECTORIES)
list(GET _dnnl_includes 0 _dnnl_include)
dnnl_ocl_interop_unsuitable("${_dnnl_include}" _dnnl_why)
if(_dnnl_why)
  message(FATAL_ERROR "${_dnnl_why} (found through ${dnnl_DIR}). ${_dnnl_hint}")
endif()

# The directory holding libdnnl, so the module finds it without LD_LIBRARY_PATH.
get_target_property(_dnnl_location DNNL::dnnl LOCATION)
get_filename_component(DNNL_LIBRARY_DIR "${_dnnl_location}" DIRECTORY)
if(DNNL_OCL_INTEROP_ONEDNN_BUNDLED)
  message(STATUS "oneDNN ${dnnl_VERSION}: bundled build in ${_dnnl_prefix}")
else()
  message(STATUS "oneDNN ${dnnl_VERSION}: system install, library in ${DNNL_LIBRARY_DIR}")
endif()

# Installs the bundled libdnnl (under its soname, links resolved) and its
# licence files into the package directory DESTINATION.
function(dnnl_ocl_interop_install_bundled_onednn destination)
  get_target_property(soname DNNL::dnnl IMPORTED_SONAME_RELEASE)
  if(NOT soname)
    get_target_property(soname DNNL::dnnl IMPORTED_SONAME)
  endif()
  string(REGEX REPLACE "^@rpath/" "" soname "${soname}")
  file(REAL_PATH "${_dnnl_location}" library)
  install(FILES "${library}" DESTINATION "${destination}" RENAME "${soname}")
  install(FILES "${_dnnl_prefix}/share/doc/dnnl/LICENSE" "${_dnnl_prefix}/share/doc/dnnl/THIRD-PARTY-PROGRAMS"
    DESTINATION "${destination}/licenses/oneDNN")
endfunction()

# Writes into OUT_DIR the member lists of oneDNN's C++ enums as the headers of
# the oneDNN found above declare them (third_party/onednn_headers.py:
# onednn_enum_<name>.inc), so the binding registers every value the headers
# have (some 1,670 format tags among them). Listed at configure time, and
# again whenever a header or the script changes: nothing of oneDNN's text is
# kept in the repository.
function(dnnl_ocl_interop_write_enum_lists out_dir)
  set(script "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/onednn_headers.py")
  execute_process(
    COMMAND "${Python_EXECUTABLE}" "${script}" --include "${_dnnl_include}" --out "${out_dir}"
    RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "Reading the enums of oneDNN's headers in ${_dnnl_include} failed "
      "(see the message above)")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${script}")
  foreach(header dnnl.hpp dnnl_common.hpp dnnl_graph.hpp dnnl_ocl.hpp)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
      "${_dnnl_include}/oneapi/dnnl/${header}")
  endforeach()
endfunction()
