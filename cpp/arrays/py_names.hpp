// The attribute names this room reads on every call (pyopencl arrays',
// queues' and events', and the ops context's), interned once.
#pragma once

#include <pybind11/pybind11.h>

namespace dnnl_ocl_interop {

struct py_names {
    PyObject *base_data, *offset, *shape, *strides, *dtype, *events, *queue, *allocator, *int_ptr,
            *shelf, *engine, *stream, *cl_context, *context;
};

// Made at the first call (with the GIL), kept for the process.
inline const py_names &names() {
    static const py_names made = [] {
        auto intern = [](const char *name) {
            PyObject *s = PyUnicode_InternFromString(name);
            if (!s) throw pybind11::error_already_set();
            return s;
        };
        return py_names {intern("base_data"), intern("offset"), intern("shape"), intern("strides"),
                intern("dtype"), intern("events"), intern("queue"), intern("allocator"),
                intern("int_ptr"), intern("_dnnl_ocl_interop_memories"), intern("engine"),
                intern("stream"), intern("cl_context"), intern("context")};
    }();
    return made;
}

} // namespace dnnl_ocl_interop
