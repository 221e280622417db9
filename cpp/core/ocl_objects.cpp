#include "common/enum_caster.hpp" // first: see the header

#include "core/ocl_objects.hpp"

#include <chrono>
#include <string>

#include "common/cache_blobs.hpp"
#include "common/errors.hpp"
#include "common/py_values.hpp"
#include "common/workarounds.hpp"
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
    if (clEnqueueMarkerWithWaitList(queue, 0, nullptr, &marker) != CL_SUCCESS || !marker)
        return false;
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

// oneDNN hands dependencies to the engine's queue; an event of another
// context there is undefined behaviour (the CPU runtime crashes), so each one
// is checked first, at the cost of an OpenCL query per dependency.
void check_same_context(const std::vector<cl_event> &events, const dnnl::engine &engine) {
    if (events.empty()) return;
    cl_context context = oi::get_context(engine);
    for (size_t i = 0; i < events.size(); ++i) {
        cl_context event_context = nullptr;
        check_cl(clGetEventInfo(events[i], CL_EVENT_CONTEXT, sizeof(event_context), &event_context,
                         nullptr),
                "clGetEventInfo(CL_EVENT_CONTEXT)");
        if (event_context != context)
            throw_invalid_argument("deps[" + std::to_string(i)
                    + "] is an event of another OpenCL context than the engine's");
    }
}

// oneDNN 3.13 enqueues its kernels on an in-order stream with no wait list
// (src/gpu/intel/ocl/kernel.cpp:219-240): the dependencies given to execute
// are dropped, and the kernels run before events of other queues or user
// events complete. A barrier waiting for them, on the stream's queue first,
// holds back what oneDNN enqueues after it.
void wait_in_order(const stream_object &stream, const std::vector<cl_event> &events) {
    if (stream.out_of_order || events.empty() || !workarounds::inorder_execute_needs_barrier())
        return;
    cl_command_queue queue = oi::get_command_queue(stream.stream);
    check_cl(clEnqueueBarrierWithWaitList(queue, static_cast<cl_uint>(events.size()), events.data(),
                     nullptr),
            "clEnqueueBarrierWithWaitList");
}

std::vector<uint8_t> engine_cache_blob_payload(py::handle cache_blob, cl_device_id device) {
    return cache_blobs::unframe(cache_blobs::kind::engine, bytes_arg(cache_blob, "cache_blob"),
            oi::get_engine_cache_blob_id(device));
}

} // namespace dnnl_ocl_interop
