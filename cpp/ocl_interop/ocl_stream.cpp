#include "common/enum_caster.hpp" // first: see the header

#include "ocl_interop/ocl_bindings.hpp"

#include "common/cl_handles.hpp"
#include "common/errors.hpp"
#include "common/fork_guard.hpp"
#include "common/reasons.hpp"
#include "core/objects.hpp"
#include "oneapi/dnnl/dnnl_ocl.hpp"

namespace py = pybind11;
namespace oi = dnnl::ocl_interop;

namespace dnnl_ocl_interop {

void bind_ocl_interop_stream(py::module_ &m) {
    m.def("make_stream",
            [](const engine_object &engine, cl_handles::queue_arg queue) {
        fork_guard::check();
        cl_command_queue q = queue.get("queue");
        // oneDNN says why it refuses a queue only in its verbose output
        dnnl::stream stream = verbose::creating([&] { return oi::make_stream(engine, q); });
        cl_command_queue_properties props = 0;
        check_cl(clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof(props), &props, nullptr),
                "clGetCommandQueueInfo(CL_QUEUE_PROPERTIES)");
        return stream_object {engine, stream,
                (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) != 0};
    }, py::arg("engine"), py::arg("queue"),
            "A stream on the user's OpenCL `queue` (pyopencl.CommandQueue or "
            "int), which must belong to the engine's context and device. oneDNN "
            "retains the queue. The stream is out-of-order when the queue is. When "
            "the queue was made with profiling enabled, oneDNN profiles the stream "
            "(get_profiling_data); it refuses an out-of-order queue with profiling "
            "enabled (dnnl.error, invalid_arguments; its reasons say why).");
    m.def("get_command_queue",
            [](const stream_object &stream) {
        return cl_handles::retained_queue(oi::get_command_queue(stream.stream));
    }, py::arg("stream"),
            "The stream's OpenCL queue (a new "
            "pyopencl.CommandQueue holding its own reference).");
}

} // namespace dnnl_ocl_interop
