// The one place that knows pyopencl: OpenCL handles in (a pyopencl object or
// an int, as pyopencl's int_ptr), retained pyopencl objects out.
#pragma once

#include <vector>

#include <CL/cl.h>
#include <pybind11/pybind11.h>

namespace dnnl_ocl_interop {
namespace cl_handles {

// Borrow the handle held by `obj`; TypeError names `param` when `obj` is
// neither the matching pyopencl type nor an int, ValueError when it is NULL.
cl_device_id to_device(pybind11::handle obj, const char *param);
cl_context to_context(pybind11::handle obj, const char *param);
cl_command_queue to_queue(pybind11::handle obj, const char *param);
cl_mem to_mem(pybind11::handle obj, const char *param);
cl_event to_event(pybind11::handle obj, const char *param);
// A list or tuple of events (pyopencl.Event or int); None entries are skipped.
std::vector<cl_event> to_events(pybind11::handle obj, const char *param);

// True when `obj` is a pyopencl memory object (for overloads that take either
// a cl_mem or something else).
bool is_mem_object(pybind11::handle obj);

// New pyopencl objects that hold their own reference (retain, then wrap):
// for handles borrowed from oneDNN's accessors. Devices are the exception:
// pyopencl never owns a device it wraps from a handle, so retained_device's
// object borrows (root devices are not reference counted anyway).
pybind11::object retained_device(cl_device_id device);
pybind11::object retained_context(cl_context context);
pybind11::object retained_queue(cl_command_queue queue);
pybind11::object retained_buffer(cl_mem mem);
pybind11::object retained_event(cl_event event);
// Wraps an event whose reference the caller hands over (no extra retain);
// None for a NULL event.
pybind11::object owned_event(cl_event event);

} // namespace cl_handles
} // namespace dnnl_ocl_interop
