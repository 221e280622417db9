#include "common/enum_caster.hpp" // first: see the header

#include "ocl_interop/ocl_bindings.hpp"
#include "common/cl_handles.hpp"
#include "common/errors.hpp"
#include "core/ocl_objects.hpp"
#include "core/primitive_objects.hpp"
#include "core/profiling.hpp"
#include "oneapi/dnnl/dnnl_ocl.hpp"

namespace py = pybind11;
namespace oi = dnnl::ocl_interop;

namespace dnnl_ocl_interop {

void bind_ocl_interop_execute(py::module_ &m) {
    m.def("execute",
            [](const primitive_object &p, const stream_object &s, py::handle args,
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
    },
            py::arg("primitive"), py::arg("stream"), py::arg("args"), py::arg("deps") = py::tuple(),
            "Submit `primitive` to `stream` with `args` ({ARG_*: memory}) after "
            "the OpenCL events in `deps` (pyopencl.Event or int; None entries, "
            "as execute returns on in-order streams, are skipped). Returns the "
            "primitive's event as a pyopencl.Event owned by the caller on an "
            "out-of-order stream, and None on an in-order stream, where oneDNN "
            "returns no event: there, order follows the queue, and you must "
            "call stream.wait() (or finish the queue) before reading results.");
}

} // namespace dnnl_ocl_interop
