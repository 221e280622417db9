#include "common/enum_caster.hpp" // first: see the header

#include <string>

#include <pybind11/stl.h>

#include "common/cl_handles.hpp"
#include "common/errors.hpp"
#include "common/py_values.hpp"
#include "common/usm_api.hpp"
#include "usm/usm_bindings.hpp"

namespace py = pybind11;

namespace dnnl_ocl_interop {
namespace {

enum class alloc_kind { host, device, shared };

uintptr_t allocate(alloc_kind kind, const cl_handles::context_arg &context,
        const cl_handles::device_arg *device, size_t size, cl_uint alignment) {
    cl_context ctx = context.get("context");
    cl_device_id dev = device ? device->get("device") : nullptr;
    if (size == 0) throw_invalid_argument("size must be positive");
    const usm::api_t &api = usm::api_for(ctx);
    cl_int err = CL_SUCCESS;
    void *ptr = nullptr;
    {
        py::gil_scoped_release release;
        switch (kind) {
            case alloc_kind::host: ptr = api.host_alloc(ctx, nullptr, size, alignment, &err); break;
            case alloc_kind::device:
                ptr = api.device_alloc(ctx, dev, nullptr, size, alignment, &err);
                break;
            case alloc_kind::shared:
                ptr = api.shared_alloc(ctx, dev, nullptr, size, alignment, &err);
                break;
        }
    }
    // oneDNN reports any USM allocation of its own that fails as out_of_memory;
    // a size beyond the device's limit (CL_INVALID_BUFFER_SIZE) is one too.
    if (err != CL_SUCCESS || !ptr)
        throw status_error(err == CL_SUCCESS || err == CL_INVALID_BUFFER_SIZE ? dnnl_out_of_memory
                                                                              : cl_status(err),
                "USM allocation of " + std::to_string(size) + " bytes failed: " + cl_error_name(err)
                        + " (" + std::to_string(err) + ")",
                err);
    return reinterpret_cast<uintptr_t>(ptr);
}

// Host memory of a NumPy array (or anything with the buffer protocol), or an
// int USM pointer. Arrays must be C-contiguous and, as a destination, writable.
struct usm_operand {
    void *ptr = nullptr;
    bool is_host_array = false;
    size_t capacity = SIZE_MAX; // known only for arrays
    py::buffer_info info;       // keeps the array's buffer exported
};

usm_operand operand(py::handle obj, const char *param, bool writable) {
    usm_operand op;
    if (pointer_from(obj, param, op.ptr)) {
        // What the OpenCL call would answer (CL_INVALID_VALUE), as oneDNN maps it.
        if (!op.ptr) throw_invalid_argument(std::string(param) + " is a NULL pointer");
        return op;
    }
    if (!PyObject_CheckBuffer(obj.ptr()))
        throw_type_error(param, "a USM pointer (int or typed pointer) or a NumPy array", obj);
    op.info = py::reinterpret_borrow<py::buffer>(obj).request(writable);
    py::ssize_t expected = op.info.itemsize;
    for (py::ssize_t i = op.info.ndim - 1; i >= 0; --i) {
        if (op.info.shape[i] != 1 && op.info.strides[i] != expected)
            throw_invalid_argument(std::string(param) + " must be C-contiguous");
        expected *= op.info.shape[i];
    }
    op.ptr = op.info.ptr;
    op.is_host_array = true;
    op.capacity = static_cast<size_t>(op.info.size * op.info.itemsize);
    return op;
}

} // namespace

void bind_usm(py::module_ &m) {
    m.def("device_alloc",
            [](cl_handles::context_arg context, cl_handles::device_arg device, size_t size,
                    cl_uint alignment) {
        return allocate(alloc_kind::device, context, &device, size, alignment);
    },
            py::arg("context"), py::arg("device"), py::arg("size"), py::arg("alignment") = 0,
            "Allocate `size` bytes of device USM; returns the pointer (int). "
            "Free it with free().");
    m.def("shared_alloc",
            [](cl_handles::context_arg context, cl_handles::device_arg device, size_t size,
                    cl_uint alignment) {
        return allocate(alloc_kind::shared, context, &device, size, alignment);
    },
            py::arg("context"), py::arg("device"), py::arg("size"), py::arg("alignment") = 0,
            "Allocate `size` bytes of shared USM (host- and device-accessible).");
    m.def("host_alloc",
            [](cl_handles::context_arg context, size_t size, cl_uint alignment) {
        return allocate(alloc_kind::host, context, nullptr, size, alignment);
    }, py::arg("context"), py::arg("size"), py::arg("alignment") = 0,
            "Allocate `size` bytes of host USM.");
    m.def("free",
            [](cl_handles::context_arg context, const pointer_arg &ptr) {
        cl_context ctx = context.get("context");
        void *p = ptr.get("ptr");
        if (!p) return; // like free(NULL)
        if (usm::pointer_type(ctx, p) == CL_MEM_TYPE_UNKNOWN_INTEL)
            throw_invalid_argument(
                    "free(): pointer is not a USM allocation of "
                    "this context");
        const usm::api_t &api = usm::api_for(ctx);
        py::gil_scoped_release release; // waits for work using the memory
        check_cl(api.blocking_free(ctx, p), "clMemBlockingFreeINTEL");
    }, py::arg("context"), py::arg("ptr"),
            "Free a USM allocation after the work that uses it has finished. "
            "Freeing 0 does nothing.");
    m.def("pointer_type",
            [](cl_handles::context_arg context, const pointer_arg &ptr) {
        cl_context ctx = context.get("context");
        switch (usm::pointer_type(ctx, ptr.get("ptr"))) {
            case CL_MEM_TYPE_HOST_INTEL: return "host";
            case CL_MEM_TYPE_DEVICE_INTEL: return "device";
            case CL_MEM_TYPE_SHARED_INTEL: return "shared";
            default: return "unknown";
        }
    }, py::arg("context"), py::arg("ptr"),
            "'device', 'shared', 'host' or 'unknown' (not a USM allocation of "
            "`context`).");
    m.def("memcpy",
            [](cl_handles::queue_arg queue, py::handle dst, py::handle src, size_t size,
                    const cl_handles::event_list_arg &deps) {
        cl_command_queue q = queue.get("queue");
        const std::vector<cl_event> &wait_list = deps.get("deps");
        usm_operand d = operand(dst, "dst", /*writable=*/true);
        usm_operand s = operand(src, "src", /*writable=*/false);
        if (size > d.capacity || size > s.capacity)
            throw_invalid_argument("size " + std::to_string(size) + " is larger than the "
                    + (size > d.capacity ? "dst" : "src") + " array");
        cl_context ctx = nullptr;
        check_cl(clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof(ctx), &ctx, nullptr),
                "clGetCommandQueueInfo(CL_QUEUE_CONTEXT)");
        for (auto *op : {&d, &s})
            if (!op->is_host_array) {
                size_t available = usm::bytes_available(ctx, op->ptr);
                if (available < size)
                    throw_invalid_argument(std::string(op == &d ? "dst" : "src")
                            + (available ? " has fewer than size bytes left in "
                                           "its USM allocation"
                                         : " is not a USM allocation of the "
                                           "queue's context"));
            }
        // Host arrays may be freed once we return: copy them synchronously.
        bool blocking = d.is_host_array || s.is_host_array;
        const usm::api_t &api = usm::api_for(ctx);
        cl_event event = nullptr;
        cl_int err;
        {
            py::gil_scoped_release release;
            err = api.enqueue_memcpy(q, blocking, d.ptr, s.ptr, size,
                    static_cast<cl_uint>(wait_list.size()),
                    wait_list.empty() ? nullptr : wait_list.data(), &event);
        }
        check_cl(err, "clEnqueueMemcpyINTEL");
        return cl_handles::owned_event(event);
    },
            py::arg("queue"), py::arg("dst"), py::arg("src"), py::arg("size"),
            py::arg("deps") = py::tuple(),
            "Copy `size` bytes from `src` to `dst` on `queue` after the events "
            "in `deps`; returns the copy's pyopencl.Event. Either side is a USM "
            "pointer (an int or a typed pointer such as dnnl.usm.allocation) or a "
            "C-contiguous NumPy array; with an array the copy "
            "completes before memcpy returns.");
    m.def("fill",
            [](cl_handles::queue_arg queue, const pointer_arg &ptr_arg, py::bytes pattern,
                    size_t size, const cl_handles::event_list_arg &deps) {
        cl_command_queue q = queue.get("queue");
        const std::vector<cl_event> &wait_list = deps.get("deps");
        void *ptr = ptr_arg.get("ptr");
        if (!ptr) throw_invalid_argument("ptr is a NULL pointer"); // as for memcpy
        std::string pat = pattern;
        if (pat.empty() || size % pat.size() != 0)
            throw_invalid_argument(
                    "size must be a multiple of the non-empty "
                    "pattern's length");
        cl_context ctx = nullptr;
        check_cl(clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof(ctx), &ctx, nullptr),
                "clGetCommandQueueInfo(CL_QUEUE_CONTEXT)");
        if (usm::bytes_available(ctx, ptr) < size)
            throw_invalid_argument(
                    "fill(): ptr is not a USM allocation of the "
                    "queue's context with size bytes left");
        cl_event event = nullptr;
        if (size == 0) // nothing to fill (the CPU runtime's fill gives no event): a marker
            check_cl(clEnqueueMarkerWithWaitList(q, static_cast<cl_uint>(wait_list.size()),
                             wait_list.empty() ? nullptr : wait_list.data(), &event),
                    "clEnqueueMarkerWithWaitList");
        else
            check_cl(usm::api_for(ctx).enqueue_fill(q, ptr, pat.data(), pat.size(), size,
                             static_cast<cl_uint>(wait_list.size()),
                             wait_list.empty() ? nullptr : wait_list.data(), &event),
                    "clEnqueueMemFillINTEL");
        return cl_handles::owned_event(event);
    },
            py::arg("queue"), py::arg("ptr"), py::arg("pattern"), py::arg("size"),
            py::arg("deps") = py::tuple(),
            "Fill `size` bytes at `ptr` with repeats of `pattern` (bytes); "
            "returns the pyopencl.Event.");
}

} // namespace dnnl_ocl_interop
