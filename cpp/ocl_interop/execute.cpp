#include "ocl_interop/ocl_interop.hpp"
#include "common/cl_handles.hpp"
#include "common/errors.hpp"
#include "common/workarounds.hpp"
#include "core/primitive_objects.hpp"
#include "ocl_interop/profiling.hpp"
#include "oneapi/dnnl/dnnl_ocl.hpp"

namespace py = pybind11;
namespace oi = dnnl::ocl_interop;

namespace dnnl_ocl_interop {

// oneDNN hands dependencies to the engine's queue; an event of another
// context there is undefined behaviour (the CPU runtime crashes), so each one
// is checked first, at the cost of an OpenCL query per dependency.
void check_same_context(const std::vector<cl_event> &events, const dnnl::engine &engine) {
    if (events.empty()) return;
    cl_context context = oi::get_context(engine);
    for (size_t i = 0; i < events.size(); ++i) {
        cl_context event_context = nullptr;
        check_cl(clGetEventInfo(events[i], CL_EVENT_CONTEXT, sizeof(event_context),
                         &event_context, nullptr),
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
    check_cl(clEnqueueBarrierWithWaitList(queue, static_cast<cl_uint>(events.size()),
                     events.data(), nullptr),
            "clEnqueueBarrierWithWaitList");
}

void bind_ocl_interop_execute(py::module_ &m) {
    m.def("execute", [](const primitive_object &p, const stream_object &s, py::handle args,
                             const cl_handles::event_list_arg &deps) {
        auto converted = execution_args(p, s, args);
        const std::vector<cl_event> &events = deps.get("deps");
        check_same_context(events, s.engine);
        wait_in_order(s, events);
        cl_event event = nullptr;
        // The GIL is kept, as in primitive.execute (core/primitive.cpp).
        auto submit = [&] {
            dnnl_status_t status = dnnl_ocl_interop_primitive_execute(p.primitive.get(),
                    s.stream.get(), static_cast<int>(converted.size()), converted.data(),
                    events.empty() ? nullptr : events.data(), static_cast<int>(events.size()),
                    &event);
            dnnl::error::wrap_c_api(status, "could not execute a primitive");
            return 0;
        };
        if (profiling::active()) // the one test when no dnnl.profiling recorder is active
            profiling::recorded(s, p.subject(), submit);
        else
            submit();
        return cl_handles::owned_event(event);
    }, py::arg("primitive"), py::arg("stream"), py::arg("args"),
            py::arg("deps") = py::tuple(),
            "Submit `primitive` to `stream` with `args` ({ARG_*: memory}) after "
            "the OpenCL events in `deps` (pyopencl.Event or int; None entries, "
            "as execute returns on in-order streams, are skipped). Returns the "
            "primitive's event as a pyopencl.Event owned by the caller on an "
            "out-of-order stream, and None on an in-order stream, where oneDNN "
            "returns no event: there, order follows the queue, and you must "
            "call stream.wait() (or finish the queue) before reading results.");
}

} // namespace dnnl_ocl_interop
