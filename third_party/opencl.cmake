# OpenCL headers and the system ICD loader (Debian: opencl-headers,
# ocl-icd-opencl-dev). The loader must support layers (API version 100) for the
# emulated device; ocl-icd does.
set(CL_TARGET_OPENCL_VERSION 300)
find_package(OpenCL 3.0)
if(NOT OpenCL_FOUND)
  message(FATAL_ERROR
    "OpenCL headers or ICD loader not found. On Debian/Ubuntu: "
    "apt-get install opencl-headers ocl-icd-opencl-dev")
endif()
if(NOT EXISTS "${OpenCL_INCLUDE_DIR}/CL/cl_layer.h")
  message(FATAL_ERROR
    "${OpenCL_INCLUDE_DIR}/CL/cl_layer.h is missing: the OpenCL headers are too "
    "old for the emulation layer. Install opencl-headers 2021.04 or newer.")
endif()
