// One registration function per object family; module.cpp calls them in order.
#pragma once

#include <pybind11/pybind11.h>

namespace dnnl_ocl_interop {

void bind_errors(pybind11::module_ &m);         // common/errors.cpp
void bind_library(pybind11::module_ &m);        // core/library.cpp
void bind_engine(pybind11::module_ &m);         // core/engine.cpp
void bind_stream(pybind11::module_ &m);         // core/stream.cpp
void bind_memory(pybind11::module_ &m);         // core/memory.cpp
void bind_ocl_interop_engine(pybind11::module_ &m); // ocl_interop/engine.cpp
void bind_ocl_interop_stream(pybind11::module_ &m); // ocl_interop/stream.cpp
void bind_ocl_interop_memory(pybind11::module_ &m); // ocl_interop/memory.cpp
void bind_ocl_interop_execute(pybind11::module_ &m); // ocl_interop/execute.cpp
void bind_usm(pybind11::module_ &m);            // usm/usm.cpp

} // namespace dnnl_ocl_interop
