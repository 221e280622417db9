#include "ocl_interop/ocl_interop.hpp"

#include <chrono>

#include "common/cl_handles.hpp"
#include "common/errors.hpp"
#include "common/fork_guard.hpp"
#include "common/verbose.hpp"
#include "core/objects.hpp"
#include "oneapi/dnnl/dnnl_ocl.hpp"

namespace py = pybind11;
namespace oi = dnnl::ocl_interop;

namespace dnnl_ocl_interop {

bool queue_profiles(const dnnl::stream &stream) {
    cl_command_queue_properties props = 0;
    if (clGetCommandQueueInfo(oi::get_command_queue(stream), CL_QUEUE_PROPERTIES, sizeof(props),
                &props, nullptr)
            != CL_SUCCESS)
        return false;
    return (props & CL_QUEUE_PROFILING_ENABLE) != 0;
}

bool finishes_soon(const dnnl::stream &stream) {
    // How long stream.wait polls with the GIL held before it releases it:
    // longer than an execute and wait of a small primitive on the emulated
    // device (about 6 µs), far shorter than a switch interval (5 ms), which
    // is what a thread busy in Python may otherwise cost.
    constexpr auto poll_for = std::chrono::microseconds(25);
    cl_command_queue queue = oi::get_command_queue(stream);
    cl_event marker = nullptr;
    if (clEnqueueMarkerWithWaitList(queue, 0, nullptr, &marker) != CL_SUCCESS || !marker) return false;
    clFlush(queue);
    bool done = false;
    auto until = std::chrono::steady_clock::now() + poll_for;
    do {
        cl_int status = CL_QUEUED;
        if (clGetEventInfo(marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status,
                    nullptr)
                != CL_SUCCESS)
            break;
        done = status == CL_COMPLETE;
    } while (!done && std::chrono::steady_clock::now() < until);
    clReleaseEvent(marker);
    return done;
}

void bind_ocl_interop_stream(py::module_ &m) {
    m.def("make_stream", [](const engine_object &engine, cl_handles::queue_arg queue) {
        fork_guard::check();
        cl_command_queue q = queue.get("queue");
        // oneDNN says why it refuses a queue only in its verbose output
        dnnl::stream stream = verbose::creating([&] { return oi::make_stream(engine, q); });
        cl_command_queue_properties props = 0;
        check_cl(clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof(props), &props, nullptr),
                "clGetCommandQueueInfo(CL_QUEUE_PROPERTIES)");
        return stream_object {engine, stream, (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) != 0};
    }, py::arg("engine"), py::arg("queue"),
            "A stream on the user's OpenCL `queue` (pyopencl.CommandQueue or "
            "int), which must belong to the engine's context and device. oneDNN "
            "retains the queue. The stream is out-of-order when the queue is. When "
            "the queue was made with profiling enabled, oneDNN profiles the stream "
            "(get_profiling_data); it refuses an out-of-order queue with profiling "
            "enabled (dnnl.error, invalid_arguments; its reasons say why).");
    m.def("get_command_queue", [](const stream_object &stream) {
        return cl_handles::retained_queue(oi::get_command_queue(stream.stream));
    }, py::arg("stream"), "The stream's OpenCL queue (a new "
                          "pyopencl.CommandQueue holding its own reference).");
}

} // namespace dnnl_ocl_interop
