// oneDNN memory kept on pyopencl arrays: what dnnl.arrays.as_memory and
// dnnl.ops share an array as, made once per engine and descriptor and kept
// on the array itself (a shelf in its __dict__), valid while the array's
// storage, offset, shape, strides and dtype and the memory's handle are the
// ones it was made on. The Python side (dnnl_ocl_interop/_array_memory.py)
// makes a memory on a miss, with its checks; dnnl.ops' launches
// (arrays/launches) find it here without Python.
//
// Each shelf is state of its array alone (no table shared between arrays),
// guarded by a mutex of its own that is held for no Python call: threads
// using one array at once (a free-threaded Python) share it safely.
#pragma once

#include <cstddef>
#include <cstdint>

#include <CL/cl.h>
#include <pybind11/pybind11.h>

#include "oneapi/dnnl/dnnl.hpp"

namespace dnnl_ocl_interop {
namespace array_memories {

// How many memories (engines × descriptors) one array keeps; the oldest
// goes first (dnnl.arrays.MEMORIES_PER_ARRAY).
constexpr size_t per_array = 8;

// The oneDNN memory kept on `array` for `token` (the key of an engine and a
// descriptor, _array_memory.memory_key) and made on `engine`, if it is
// still valid: false otherwise (nothing raised; an object without
// __dict__ keeps nothing).
bool find(PyObject *array, PyObject *token, PyObject *engine, dnnl::memory &found);

// The same as the dnnl.memory object (made from the kept memory on first
// ask, then kept too), or None.
pybind11::object find_object(pybind11::handle array, pybind11::handle token,
        pybind11::handle engine);

// Keeps `memory` (a dnnl.memory on `array`'s storage, made on `engine`) on
// `array` under `token`.
void keep(pybind11::handle array, pybind11::object token, pybind11::object engine,
        pybind11::object memory);

// Keeps a memory made in C++ (a result dnnl.ops made: its dnnl.memory
// object is made when Python first asks for it).
void keep_made(pybind11::handle array, pybind11::object token, pybind11::object engine,
        dnnl::memory memory);

// Where an array's bytes live: the cl_mem holding them (its base_data, or
// that buffer's parent for a sub-buffer: OpenCL nests no sub-buffers) and
// where base_data starts in it, in bytes. Kept on the array's shelf while
// base_data is the same object. For storage that is no cl_mem, `root` is
// the address of the storage object (equal to no cl_mem's).
struct storage {
    uintptr_t root;
    size_t origin;
};
storage storage_of(pybind11::handle array);

// _core._arrays' functions of this file.
void bind(pybind11::module_ &m);

} // namespace array_memories
} // namespace dnnl_ocl_interop
