// _core._arrays, the compiled part under dnnl.arrays and dnnl.ops: memory
// kept on pyopencl arrays (arrays/array_memories), ops' launches
// (arrays/launches) and captured programs' replays (arrays/replays).
#pragma once

#include <pybind11/pybind11.h>

namespace dnnl_ocl_interop {

void bind_arrays(pybind11::module_ &m); // arrays/launches.cpp

} // namespace dnnl_ocl_interop
