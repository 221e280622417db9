#include "common/enum_caster.hpp" // first: see the header

#include "common/cl_handles.hpp"

#include <atomic>
#include <cerrno>
#include <mutex>
#include <string>
#include <vector>

#include <sys/uio.h>
#include <unistd.h>

#include "common/errors.hpp"
#include "common/fork_guard.hpp"
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
    // Cached, as the lookup is on every call's path: looked up by the first
    // thread that needs it (two at once on a free-threaded Python: the first
    // to publish wins), then kept for the life of the process.
    std::atomic<PyObject *> accepted {nullptr};
    std::atomic<PyObject *> wrapper {nullptr};
    std::atomic<PyObject *> from_int_ptr {nullptr}; // wrapper.from_int_ptr
};

family_t device_family {"Device", "Device", "a pyopencl.Device or an int cl_device_id"};
family_t context_family {"Context", "Context", "a pyopencl.Context or an int cl_context"};
family_t queue_family {"CommandQueue", "CommandQueue",
        "a pyopencl.CommandQueue or an int cl_command_queue"};
family_t mem_family {"MemoryObjectHolder", "Buffer", "a pyopencl memory object or an int cl_mem"};
family_t event_family {"Event", "Event", "a pyopencl.Event or an int cl_event"};
family_t kernel_family {"Kernel", "Kernel", "a pyopencl.Kernel or an int cl_kernel"};

// `cache`, or `look_up()` (a new reference) kept there: the first thread's,
// when several look it up at once.
template <typename F>
PyObject *kept(std::atomic<PyObject *> &cache, F &&look_up) {
    if (PyObject *known = cache.load(std::memory_order_acquire)) return known;
    PyObject *found = py::object(look_up()).release().ptr();
    PyObject *expected = nullptr;
    if (cache.compare_exchange_strong(expected, found, std::memory_order_acq_rel)) return found;
    Py_DECREF(found); // another thread's is kept (and holds the same object)
    return expected;
}

// pyopencl's classes, looked up once and kept for the life of the process.
PyObject *pyopencl_class(const char *name, std::atomic<PyObject *> &cache) {
    return kept(cache, [&] { return py::object(py::module_::import("pyopencl").attr(name)); });
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
        fork_guard::mark_used();
        cl_uint count = 0;
        clGetPlatformIDs(0, nullptr, &count);
    });
}

family_t &family_of(family f) {
    switch (f) {
        case family::device: return device_family;
        case family::context: return context_family;
        case family::queue: return queue_family;
        case family::mem: return mem_family;
        case family::kernel: return kernel_family;
        case family::event: break;
    }
    return event_family;
}

py::object wrap(family_t &family, void *handle, bool retain) {
    if (!handle) return py::none();
    PyObject *from_int_ptr = kept(family.from_int_ptr, [&] {
        return py::getattr(py::handle(pyopencl_class(family.wrapper_class, family.wrapper)),
                "from_int_ptr");
    });
    // Positional arguments: keyword calls cost more, and events are wrapped
    // on every execute() of an out-of-order stream.
    return py::handle(from_int_ptr)(reinterpret_cast<uintptr_t>(handle), retain);
}

template <typename T>
T wrap_as(family_t &family, void *handle, bool retain) {
    return py::reinterpret_steal<T>(wrap(family, handle, retain).release());
}

// The dispatch tables of this process's platforms (through the loader
// oneDNN uses, whose platforms are the drivers' own objects).
const std::vector<void *> &platform_dispatch_tables() {
    static std::vector<void *> tables;
    static std::once_flag once;
    std::call_once(once, [] {
        cl_uint count = 0;
        if (clGetPlatformIDs(0, nullptr, &count) != CL_SUCCESS || count == 0) return;
        std::vector<cl_platform_id> platforms(count);
        if (clGetPlatformIDs(count, platforms.data(), nullptr) != CL_SUCCESS) return;
        for (cl_platform_id platform : platforms) {
            void *word = nullptr;
            if (read_word(platform, word) == readable::yes) tables.push_back(word);
        }
    });
    return tables;
}

} // namespace

readable read_word(const void *address, void *&word) {
    iovec local {&word, sizeof(word)};
    iovec remote {const_cast<void *>(address), sizeof(word)};
    ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    if (n == static_cast<ssize_t>(sizeof(word))) return readable::yes;
    return n < 0 && errno == EFAULT ? readable::no : readable::unknown;
}

bool may_be_cl_object(const void *handle) {
    void *word = nullptr;
    switch (read_word(handle, word)) {
        case readable::no: return false;
        case readable::unknown: return true;
        case readable::yes: break;
    }
    const auto &tables = platform_dispatch_tables();
    if (tables.empty()) return true;
    for (void *table : tables)
        if (word == table) return true;
    return false;
}

bool load_handle(py::handle obj, family f, void *&handle, arg_state &state, bool *from_object) {
    initialize_system_loader();
    if (from_object) *from_object = false;
    if (is_int(obj)) {
        if (!int_to_pointer(obj, handle)) {
            handle = nullptr;
            state = arg_state::out_of_range;
            return true;
        }
        // A cl_mem int is checked where its use is known (a USM pointer is
        // told apart there: storage_checks).
        if (handle && f != family::mem && !may_be_cl_object(handle)) {
            state = arg_state::not_an_object;
            return true;
        }
    } else if (PyObject_IsInstance(obj.ptr(), accepted_class(family_of(f))) == 1) {
        static PyObject *const int_ptr
                = PyUnicode_InternFromString("int_ptr"); // made once, not per call
        auto value = py::reinterpret_steal<py::object>(PyObject_GetAttr(obj.ptr(), int_ptr));
        if (!value) throw py::error_already_set();
        handle = reinterpret_cast<void *>(value.cast<uintptr_t>());
        if (from_object) *from_object = true;
    } else {
        PyErr_Clear(); // IsInstance may have failed on an odd object: a mismatch
        return false;
    }
    state = handle ? arg_state::ok : arg_state::null;
    return true;
}

void throw_bad_value(arg_state state, const char *param) {
    if (state == arg_state::out_of_range) // no C++ caller can pass one: Python's own
        throw_invalid_argument(std::string(param) + " must be an OpenCL handle between 0 "
                                                   "and 2**64-1");
    if (state == arg_state::not_an_object)
        throw_invalid_argument(std::string(param) + " is not an OpenCL object of this "
                "process's platforms (a released, wrong or stray handle?)");
    // What oneDNN's C API answers to a NULL handle (a ValueError too).
    throw_invalid_argument(std::string(param) + " is a NULL handle");
}

bool load_events(py::handle obj, event_list_arg &out) {
    // Any sequence but text; lists and tuples (the common case) are read in place.
    if (!PySequence_Check(obj.ptr()) || PyUnicode_Check(obj.ptr()) || PyBytes_Check(obj.ptr())
            || PyByteArray_Check(obj.ptr()))
        return false;
    py::object items = py::reinterpret_borrow<py::object>(obj);
    if (!PyList_Check(obj.ptr()) && !PyTuple_Check(obj.ptr())) {
        items = py::reinterpret_steal<py::object>(PySequence_List(obj.ptr()));
        if (!items) {
            PyErr_Clear();
            return false;
        }
    }
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(items.ptr());
    out.events.clear();
    out.events.reserve(static_cast<size_t>(n));
    out.bad_state = arg_state::ok;
    out.bad_item = py::object();
    for (Py_ssize_t i = 0; i < n; ++i) {
        py::handle item = PySequence_Fast_GET_ITEM(items.ptr(), i);
        if (item.is_none()) continue;
        void *handle = nullptr;
        arg_state state = arg_state::ok;
        if (!load_handle(item, family::event, handle, state)) state = arg_state::wrong_type;
        if (state != arg_state::ok && out.bad_state == arg_state::ok) {
            out.bad_index = static_cast<size_t>(i);
            out.bad_state = state;
            out.bad_item = py::reinterpret_borrow<py::object>(item);
        }
        out.events.push_back(static_cast<cl_event>(handle));
    }
    return true;
}

const std::vector<cl_event> &event_list_arg::get(const char *param) const {
    if (bad_state == arg_state::ok) return events;
    // Only a failure builds the indexed name: this runs on every execute().
    std::string item = std::string(param) + "[" + std::to_string(bad_index) + "]";
    if (bad_state == arg_state::wrong_type) throw_type_error(item, event_family.expected, bad_item);
    throw_bad_value(bad_state, item.c_str());
}

bool is_mem_object(py::handle obj) {
    return PyObject_IsInstance(obj.ptr(), accepted_class(mem_family)) == 1;
}

cl_mem to_mem(py::handle obj, const char *param) {
    void *handle = nullptr;
    arg_state state = arg_state::ok;
    if (!load_handle(obj, family::mem, handle, state))
        throw_type_error(param, mem_family.expected, obj);
    if (state != arg_state::ok) throw_bad_value(state, param);
    return static_cast<cl_mem>(handle);
}

py_device retained_device(cl_device_id device) {
    return wrap_as<py_device>(device_family, device, true);
}
py_context retained_context(cl_context context) {
    return wrap_as<py_context>(context_family, context, true);
}
py_queue retained_queue(cl_command_queue queue) {
    return wrap_as<py_queue>(queue_family, queue, true);
}
py_buffer retained_buffer(cl_mem mem) {
    return wrap_as<py_buffer>(mem_family, mem, true);
}
py_event retained_event(cl_event event) {
    return wrap_as<py_event>(event_family, event, true);
}
py::typing::Optional<py_event> owned_event(cl_event event) {
    return wrap_as<py::typing::Optional<py_event>>(event_family, event, false);
}

} // namespace cl_handles
} // namespace dnnl_ocl_interop
