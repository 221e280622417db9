// DLPack export of host-visible (host and shared USM) memory (usm/memory_dlpack.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace dnnl_ocl_interop {

// Adds __dlpack__ and __dlpack_device__ to dnnl.memory (bound by bind_memory,
// which must run first).
void bind_memory_dlpack(pybind11::module_ &m);

} // namespace dnnl_ocl_interop
