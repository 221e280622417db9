#include "common/cl_handles.hpp"

#include <mutex>
#include <string>

#include "common/errors.hpp"
#include "common/py_values.hpp"

namespace py = pybind11;

namespace dnnl_ocl_interop {
namespace cl_handles {
namespace {

// One OpenCL object family: its pyopencl classes and how messages name it.
struct family_t {
    const char *accepted_class; // pyopencl class accepted on input
    const char *wrapper_class;  // pyopencl class built on output
    const char *expected;       // for TypeError messages
    PyObject *accepted = nullptr; // cached: the lookup is on every call's path
    PyObject *wrapper = nullptr;
    PyObject *from_int_ptr = nullptr; // wrapper.from_int_ptr
};

family_t device_family {"Device", "Device", "a pyopencl.Device or an int cl_device_id"};
family_t context_family {"Context", "Context", "a pyopencl.Context or an int cl_context"};
family_t queue_family {"CommandQueue", "CommandQueue",
        "a pyopencl.CommandQueue or an int cl_command_queue"};
family_t mem_family {"MemoryObjectHolder", "Buffer",
        "a pyopencl memory object or an int cl_mem"};
family_t event_family {"Event", "Event", "a pyopencl.Event or an int cl_event"};

// pyopencl's classes, looked up once and kept for the life of the process.
PyObject *pyopencl_class(const char *name, PyObject *&cache) {
    if (!cache)
        cache = py::object(py::module_::import("pyopencl").attr(name)).release().ptr();
    return cache;
}
PyObject *accepted_class(family_t &family) {
    return pyopencl_class(family.accepted_class, family.accepted);
}

// The ICD loader oneDNN is linked with sets up its layers at its first
// platform query. Handles made through another loader (pyopencl carries its
// own) would otherwise reach the driver without passing the layers, e.g. the
// emulation layer that presents the device as a GPU.
void initialize_system_loader() {
    static std::once_flag once;
    std::call_once(once, [] {
        cl_uint count = 0;
        clGetPlatformIDs(0, nullptr, &count);
    });
}

void *to_handle(py::handle obj, family_t &family, const char *param) {
    initialize_system_loader();
    uintptr_t value = 0;
    if (is_int(obj)) {
        void *address = nullptr;
        if (!int_to_pointer(obj, address))
            throw py::value_error(std::string(param) + " must be " + family.expected
                    + " between 0 and 2**64-1");
        value = reinterpret_cast<uintptr_t>(address);
    } else if (PyObject_IsInstance(obj.ptr(), accepted_class(family)) == 1) {
        value = obj.attr("int_ptr").cast<uintptr_t>();
    } else {
        throw py::type_error(std::string(param) + " must be " + family.expected
                + ", not " + py::str(py::type::handle_of(obj).attr("__name__"))
                                     .cast<std::string>());
    }
    if (value == 0) throw py::value_error(std::string(param) + " is a NULL handle");
    return reinterpret_cast<void *>(value);
}

py::object wrap(family_t &family, void *handle, bool retain) {
    if (!handle) return py::none();
    if (!family.from_int_ptr)
        family.from_int_ptr = py::getattr(pyopencl_class(family.wrapper_class, family.wrapper),
                "from_int_ptr")
                                      .release()
                                      .ptr();
    // Positional arguments: keyword calls cost more, and events are wrapped
    // on every execute() of an out-of-order stream.
    return py::handle(family.from_int_ptr)(reinterpret_cast<uintptr_t>(handle), retain);
}

} // namespace

cl_device_id to_device(py::handle obj, const char *param) {
    return static_cast<cl_device_id>(to_handle(obj, device_family, param));
}
cl_context to_context(py::handle obj, const char *param) {
    return static_cast<cl_context>(to_handle(obj, context_family, param));
}
cl_command_queue to_queue(py::handle obj, const char *param) {
    return static_cast<cl_command_queue>(to_handle(obj, queue_family, param));
}
cl_mem to_mem(py::handle obj, const char *param) {
    return static_cast<cl_mem>(to_handle(obj, mem_family, param));
}
cl_event to_event(py::handle obj, const char *param) {
    return static_cast<cl_event>(to_handle(obj, event_family, param));
}

std::vector<cl_event> to_events(py::handle obj, const char *param) {
    if (!PyList_Check(obj.ptr()) && !PyTuple_Check(obj.ptr()))
        throw py::type_error(std::string(param)
                + " must be a list or tuple of pyopencl.Event, int cl_event or None");
    py::sequence seq = py::reinterpret_borrow<py::sequence>(obj);
    std::vector<cl_event> events;
    events.reserve(seq.size());
    for (size_t i = 0; i < seq.size(); ++i) {
        py::object item = seq[i];
        // execute() returns None on in-order streams: chained code passes it on.
        if (item.is_none()) continue;
        try {
            events.push_back(to_event(item, param));
        } catch (const py::builtin_exception &) {
            // Name the item only on failure: this loop runs on every execute().
            std::string item_param = std::string(param) + "[" + std::to_string(i) + "]";
            to_event(item, item_param.c_str()); // throws again, naming deps[i]
            throw;
        }
    }
    return events;
}

bool is_mem_object(py::handle obj) {
    return PyObject_IsInstance(obj.ptr(), accepted_class(mem_family)) == 1;
}

py::object retained_device(cl_device_id device) {
    return wrap(device_family, device, true);
}
py::object retained_context(cl_context context) {
    return wrap(context_family, context, true);
}
py::object retained_queue(cl_command_queue queue) {
    return wrap(queue_family, queue, true);
}
py::object retained_buffer(cl_mem mem) {
    return wrap(mem_family, mem, true);
}
py::object retained_event(cl_event event) {
    return wrap(event_family, event, true);
}
py::object owned_event(cl_event event) {
    return wrap(event_family, event, false);
}

} // namespace cl_handles
} // namespace dnnl_ocl_interop
