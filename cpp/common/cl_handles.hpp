// The one place that knows pyopencl: OpenCL handles in (a pyopencl object or
// an int, as pyopencl's int_ptr, typed for signatures), retained pyopencl
// objects out.
#pragma once

#include <vector>

#include <CL/cl.h>
#include <pybind11/pybind11.h>
#include <pybind11/typing.h>

namespace dnnl_ocl_interop {
namespace cl_handles {

// --- Parameters -------------------------------------------------------------
// Bound functions take these types; the casters below load a pyopencl object
// of the family or an int (pyopencl's int_ptr) and refuse anything else, so
// overloads and None defaults work and signatures show the Python types.
// A NULL or out-of-range int loads too: get(param) raises naming the
// parameter, where its value is used: dnnl.invalid_arguments (a ValueError)
// for NULL, as oneDNN does, ValueError for an int beyond 64 bits.

enum class family { device, context, queue, mem, event, kernel };
// not_an_object: an int that does not start like an OpenCL object of this
// process's platforms (may_be_cl_object).
enum class arg_state : unsigned char { ok, null, out_of_range, wrong_type, not_an_object };

template <typename Handle>
struct handle_arg {
    Handle handle = nullptr;
    arg_state state = arg_state::null;
    // Loaded from a pyopencl object, so a live handle of its family (an int
    // may be anything).
    bool from_object = false;
    Handle get(const char *param) const;
};
using device_arg = handle_arg<cl_device_id>;
using context_arg = handle_arg<cl_context>;
using queue_arg = handle_arg<cl_command_queue>;
using mem_arg = handle_arg<cl_mem>;
using kernel_arg = handle_arg<cl_kernel>;

// A sequence of events (pyopencl.Event or int); None entries are skipped
// (execute() returns None on in-order streams: chained code passes it on).
// Any sequence loads; get(param) raises naming param[i] for an item that is
// not an event (TypeError) or a NULL/out-of-range int (as above), so a
// call's other arguments are checked first, as before typed parameters.
struct event_list_arg {
    std::vector<cl_event> events;
    // The first bad item: its position in the sequence, what is wrong, and
    // the item (for the TypeError's "not <type>").
    size_t bad_index = 0;
    arg_state bad_state = arg_state::ok;
    pybind11::object bad_item;
    const std::vector<cl_event> &get(const char *param) const; // names param[i]
};

// The casters' work: false when `obj` is not of the family (nothing raised).
bool load_handle(pybind11::handle obj, family f, void *&handle, arg_state &state,
        bool *from_object = nullptr);
bool load_events(pybind11::handle obj, event_list_arg &out);
[[noreturn]] void throw_bad_value(arg_state state, const char *param);

template <typename Handle>
Handle handle_arg<Handle>::get(const char *param) const {
    if (state != arg_state::ok) throw_bad_value(state, param);
    return handle;
}

// The pointer-sized word at `address`, read without faulting
// (process_vm_readv on this process): no for an address that is not mapped,
// unknown where the process may not read itself that way (some sandboxes).
enum class readable { yes, no, unknown };
readable read_word(const void *address, void *&word);

// Whether an int handle may be an OpenCL object: every object of an ICD
// platform starts with its platform's dispatch table (the ICD rule), so a
// stray int, host memory or a USM pointer is told apart without handing it
// to the driver, which dereferences it (the CPU runtime crashes). A released
// object whose memory still holds the table passes. True where the memory
// cannot be read back, or no platform is found: the int is then taken at its
// word.
bool may_be_cl_object(const void *handle);

// True when `obj` is a pyopencl memory object (for overloads that take either
// a cl_mem or something else).
bool is_mem_object(pybind11::handle obj);

// Loads a cl_mem from a pyopencl memory object or int; TypeError naming
// `param` otherwise (for parameters that take a cl_mem among other things).
cl_mem to_mem(pybind11::handle obj, const char *param);

// --- Results ----------------------------------------------------------------
// Python objects typed as the pyopencl class they are (for signatures).
#define DNNL_OCL_INTEROP_PYOPENCL_OBJECT(name) \
    struct name : pybind11::object { \
        using pybind11::object::object; \
    };
DNNL_OCL_INTEROP_PYOPENCL_OBJECT(py_device)
DNNL_OCL_INTEROP_PYOPENCL_OBJECT(py_context)
DNNL_OCL_INTEROP_PYOPENCL_OBJECT(py_queue)
DNNL_OCL_INTEROP_PYOPENCL_OBJECT(py_buffer)
DNNL_OCL_INTEROP_PYOPENCL_OBJECT(py_event)
#undef DNNL_OCL_INTEROP_PYOPENCL_OBJECT

// New pyopencl objects that hold their own reference (retain, then wrap):
// for handles borrowed from oneDNN's accessors. Devices are the exception:
// pyopencl never owns a device it wraps from a handle, so retained_device's
// object borrows (root devices are not reference counted anyway).
py_device retained_device(cl_device_id device);
py_context retained_context(cl_context context);
py_queue retained_queue(cl_command_queue queue);
py_buffer retained_buffer(cl_mem mem);
py_event retained_event(cl_event event);
// Wraps an event whose reference the caller hands over (no extra retain);
// None for a NULL event.
pybind11::typing::Optional<py_event> owned_event(cl_event event);

} // namespace cl_handles
} // namespace dnnl_ocl_interop

namespace pybind11 {
namespace detail {

template <typename Handle>
struct cl_handle_traits;
#define DNNL_OCL_INTEROP_HANDLE_TRAITS(Handle, family_value, py_name) \
    template <> \
    struct cl_handle_traits<Handle> { \
        static constexpr auto family = dnnl_ocl_interop::cl_handles::family::family_value; \
        static constexpr auto name = const_name(py_name); \
    };
DNNL_OCL_INTEROP_HANDLE_TRAITS(cl_device_id, device, "pyopencl.Device | int")
DNNL_OCL_INTEROP_HANDLE_TRAITS(cl_context, context, "pyopencl.Context | int")
DNNL_OCL_INTEROP_HANDLE_TRAITS(cl_command_queue, queue, "pyopencl.CommandQueue | int")
DNNL_OCL_INTEROP_HANDLE_TRAITS(cl_mem, mem, "pyopencl.MemoryObjectHolder | int")
DNNL_OCL_INTEROP_HANDLE_TRAITS(cl_event, event, "pyopencl.Event | int")
DNNL_OCL_INTEROP_HANDLE_TRAITS(cl_kernel, kernel, "pyopencl.Kernel | int")
#undef DNNL_OCL_INTEROP_HANDLE_TRAITS

template <typename Handle>
struct type_caster<dnnl_ocl_interop::cl_handles::handle_arg<Handle>> {
    using arg_type = dnnl_ocl_interop::cl_handles::handle_arg<Handle>;
    PYBIND11_TYPE_CASTER(arg_type, cl_handle_traits<Handle>::name);
    bool load(handle src, bool) {
        void *h = nullptr;
        if (!dnnl_ocl_interop::cl_handles::load_handle(src, cl_handle_traits<Handle>::family, h,
                    value.state, &value.from_object))
            return false;
        value.handle = static_cast<Handle>(h);
        return true;
    }
};

template <>
struct type_caster<dnnl_ocl_interop::cl_handles::event_list_arg> {
    PYBIND11_TYPE_CASTER(dnnl_ocl_interop::cl_handles::event_list_arg,
            const_name("collections.abc.Sequence[pyopencl.Event | int | None]"));
    bool load(handle src, bool) { return dnnl_ocl_interop::cl_handles::load_events(src, value); }
};

#define DNNL_OCL_INTEROP_PYOPENCL_NAME(type, py_name) \
    template <> \
    struct handle_type_name<dnnl_ocl_interop::cl_handles::type> { \
        static constexpr auto name = const_name(py_name); \
    };
DNNL_OCL_INTEROP_PYOPENCL_NAME(py_device, "pyopencl.Device")
DNNL_OCL_INTEROP_PYOPENCL_NAME(py_context, "pyopencl.Context")
DNNL_OCL_INTEROP_PYOPENCL_NAME(py_queue, "pyopencl.CommandQueue")
DNNL_OCL_INTEROP_PYOPENCL_NAME(py_buffer, "pyopencl.Buffer")
DNNL_OCL_INTEROP_PYOPENCL_NAME(py_event, "pyopencl.Event")
#undef DNNL_OCL_INTEROP_PYOPENCL_NAME

} // namespace detail
} // namespace pybind11
