// Intel USM from Python; module.cpp registers them. The USM entry points
// other folders share live below, in common/usm_api.hpp.
#pragma once

#include <pybind11/pybind11.h>

namespace dnnl_ocl_interop {

// dnnl.usm (usm/usm.cpp).
void bind_usm(pybind11::module_ &m);
// dnnl.usm.set_kernel_arg (usm/kernel_args.cpp), after bind_usm.
void bind_usm_kernel_args(pybind11::module_ &m);
// __dlpack__ and __dlpack_device__ of dnnl.memory over host and shared USM
// (usm/memory_dlpack.cpp), after bind_memory.
void bind_memory_dlpack(pybind11::module_ &m);

} // namespace dnnl_ocl_interop
