# Finds oneDNN and checks that it can serve this package: version 3.5 or newer,
# built for the OpenCL GPU runtime, with the graph component.
set(DNNL_OCL_INTEROP_MIN_ONEDNN 3.5)
set(_dnnl_hint
  "Build oneDNN ${DNNL_OCL_INTEROP_MIN_ONEDNN}+ with -DONEDNN_GPU_RUNTIME=OCL "
  "-DONEDNN_BUILD_GRAPH=ON (see its doc/build/build_options.md), install it, and "
  "point CMake at its prefix with CMAKE_PREFIX_PATH, e.g. "
  "pip install . -Ccmake.define.CMAKE_PREFIX_PATH=/opt/onednn")

find_package(dnnl CONFIG QUIET)
if(NOT dnnl_FOUND)
  message(FATAL_ERROR "oneDNN was not found (no dnnl-config.cmake on "
    "CMAKE_PREFIX_PATH='${CMAKE_PREFIX_PATH}' or the system prefixes). ${_dnnl_hint}")
endif()
set(_dnnl_where "oneDNN ${dnnl_VERSION} found at ${dnnl_DIR}")

if(dnnl_VERSION VERSION_LESS DNNL_OCL_INTEROP_MIN_ONEDNN)
  message(FATAL_ERROR "${_dnnl_where} is too old: version "
    "${DNNL_OCL_INTEROP_MIN_ONEDNN} or newer is needed. ${_dnnl_hint}")
endif()

get_target_property(_dnnl_includes DNNL::dnnl INTERFACE_INCLUDE_DIRECTORIES)
find_file(DNNL_CONFIG_HEADER oneapi/dnnl/dnnl_config.h
  PATHS ${_dnnl_includes} NO_DEFAULT_PATH NO_CACHE)
if(NOT DNNL_CONFIG_HEADER)
  message(FATAL_ERROR "${_dnnl_where} has no oneapi/dnnl/dnnl_config.h in "
    "'${_dnnl_includes}'. ${_dnnl_hint}")
endif()
file(READ "${DNNL_CONFIG_HEADER}" _dnnl_config)

if(NOT _dnnl_config MATCHES "#define DNNL_GPU_RUNTIME DNNL_RUNTIME_OCL")
  string(REGEX MATCH "#define DNNL_GPU_RUNTIME [A-Z_]+" _dnnl_gpu "${_dnnl_config}")
  message(FATAL_ERROR "${_dnnl_where} was not built for the OpenCL GPU runtime "
    "(${DNNL_CONFIG_HEADER} says '${_dnnl_gpu}'). ${_dnnl_hint}")
endif()
if(NOT _dnnl_config MATCHES "#define ONEDNN_BUILD_GRAPH")
  message(FATAL_ERROR "${_dnnl_where} was built without the graph component "
    "(ONEDNN_BUILD_GRAPH is not defined in ${DNNL_CONFIG_HEADER}). ${_dnnl_hint}")
endif()

# The directory holding libdnnl, so the module finds it without LD_LIBRARY_PATH.
get_target_property(_dnnl_location DNNL::dnnl LOCATION)
get_filename_component(DNNL_LIBRARY_DIR "${_dnnl_location}" DIRECTORY)
message(STATUS "${_dnnl_where}: OpenCL GPU runtime, graph component, library in ${DNNL_LIBRARY_DIR}")
