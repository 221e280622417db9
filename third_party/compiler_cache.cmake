# Use ccache for incremental rebuilds when it is installed.
#
# CCACHE_BASEDIR is the source directory, so ccache hashes paths inside the
# checkout relative to the build directory: two build directories at the same
# depth under the source tree (the editable install's build/<wheel tag>, the
# wheel check's build/wheel, the CMake-build test's build/cmake-test) share
# their cached objects, as does an unpacked sdist. ccache 4.7 takes its
# settings from the environment only, hence `env` as the first launcher word.
find_program(DNNL_OCL_INTEROP_CCACHE ccache)
find_program(DNNL_OCL_INTEROP_ENV env)
if(DNNL_OCL_INTEROP_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(_launcher "${DNNL_OCL_INTEROP_CCACHE}")
  if(DNNL_OCL_INTEROP_ENV)
    set(_launcher "${DNNL_OCL_INTEROP_ENV}" "CCACHE_BASEDIR=${CMAKE_SOURCE_DIR}" "${DNNL_OCL_INTEROP_CCACHE}")
  endif()
  set(CMAKE_C_COMPILER_LAUNCHER ${_launcher})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${_launcher})
  message(STATUS "Compiler cache: ${DNNL_OCL_INTEROP_CCACHE} (base directory ${CMAKE_SOURCE_DIR})")
endif()
