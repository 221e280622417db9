// dnnl::ocl_interop, one file per object family; module.cpp registers them
// into the `ocl_interop` submodule. What other folders share of OpenCL
// engines and streams lives below, in core/ocl_objects.hpp.
#pragma once

#include <pybind11/pybind11.h>

namespace dnnl_ocl_interop {

void bind_ocl_interop_engine(pybind11::module_ &m);  // ocl_interop/ocl_engine.cpp
void bind_ocl_interop_stream(pybind11::module_ &m);  // ocl_interop/ocl_stream.cpp
void bind_ocl_interop_memory(pybind11::module_ &m);  // ocl_interop/ocl_memory.cpp
void bind_ocl_interop_execute(pybind11::module_ &m); // ocl_interop/ocl_execute.cpp

} // namespace dnnl_ocl_interop
