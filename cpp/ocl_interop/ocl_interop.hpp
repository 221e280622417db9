// dnnl::ocl_interop, one file per object family; module.cpp registers them
// into the `ocl_interop` submodule.
#pragma once

#include <pybind11/pybind11.h>

namespace dnnl_ocl_interop {

void bind_ocl_interop_engine(pybind11::module_ &m);  // ocl_interop/engine.cpp
void bind_ocl_interop_stream(pybind11::module_ &m);  // ocl_interop/stream.cpp
void bind_ocl_interop_memory(pybind11::module_ &m);  // ocl_interop/memory.cpp
void bind_ocl_interop_execute(pybind11::module_ &m); // ocl_interop/execute.cpp

} // namespace dnnl_ocl_interop
