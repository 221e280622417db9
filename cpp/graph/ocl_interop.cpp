#include "common/cl_handles.hpp"
#include "common/errors.hpp"
#include "common/workarounds.hpp"
#include "common/py_values.hpp"
#include "core/primitive_objects.hpp"
#include "graph/allocator.hpp"
#include "graph/graph_objects.hpp"
#include "ocl_interop/profiling.hpp"
#include "ocl_interop/ocl_interop.hpp"
#include "oneapi/dnnl/dnnl_graph_ocl.hpp"

namespace py = pybind11;
namespace goi = dnnl::graph::ocl_interop;

namespace dnnl_ocl_interop {

using graph_allocator::allocator_object;


cl_event execute_partition(const compiled_partition_object &cp, stream_object &s,
        const graph_execution &ex, std::vector<cl_event> deps,
        const dnnl::graph::tensor *scratchpad) {
    // A partition starting with a no-op step turns "no dependencies" into a
    // NULL event, passed on as a wait list, which the queue refuses (known
    // problem graph-noop-null-event). A marker keeps it valid.
    check_same_context(deps, s.engine);
    cl_event marker = nullptr;
    if (deps.empty() && s.out_of_order && workarounds::graph_needs_dependency_marker()) {
        cl_command_queue queue = dnnl::ocl_interop::get_command_queue(s.stream);
        check_cl(clEnqueueMarkerWithWaitList(queue, 0, nullptr, &marker),
                "clEnqueueMarkerWithWaitList");
        deps.push_back(marker);
    }
    auto &partition = const_cast<dnnl::graph::compiled_partition &>(cp.partition);
    auto &outputs = const_cast<std::vector<dnnl::graph::tensor> &>(ex.outputs);
    cl_event event = nullptr;
    auto submit = [&] {
        return graph_allocator::with_callbacks([&] {
            return scratchpad
                    ? goi::execute(partition, s.stream, ex.inputs, outputs, *scratchpad, deps)
                    : goi::execute(partition, s.stream, ex.inputs, outputs, deps);
        });
    };
    try {
        // The one test when no dnnl.profiling recorder is active.
        event = profiling::active() ? profiling::recorded(s, cp.subject(), submit) : submit();
    } catch (...) {
        if (marker) clReleaseEvent(marker);
        throw;
    }
    // A partition of no-ops returns its dependency: then the marker's
    // reference is what the caller gets.
    if (marker && event != marker) clReleaseEvent(marker);
    return event;
}

void bind_graph_ocl_interop(py::module_ &graph, py::module_ &m) {
    py::class_<allocator_object> allocator(graph, "allocator",
            "A graph allocator (dnnl::graph::allocator): where oneDNN gets the "
            "memory of compiled partitions and MEMORY_ALLOCATE tensors on the "
            "engines made with it. OpenCL ones come from "
            "dnnl.graph.ocl_interop.make_allocator.");
    allocator.def(py::init(&graph_allocator::make_default),
            "oneDNN's default allocator: USM device memory from oneDNN itself on "
            "OpenCL engines (aligned host memory on CPU engines).");
    allocator.def(py::init(&graph_allocator::make_host), py::arg("host_malloc"),
            py::arg("host_free"),
            "An allocator of host memory for CPU engines:\n"
            "  host_malloc(size, alignment) -> int\n"
            "    returns a host pointer with at least `size` bytes;\n"
            "  host_free(ptr) -> None\n"
            "    releases it.\n"
            "oneDNN calls them only for CPU engines (this oneDNN has none); on "
            "OpenCL engines its memory comes from the default OpenCL allocator. "
            "Called with the GIL held; failures are raised as from "
            "ocl_interop.make_allocator's callables (dnnl.runtime_error chained "
            "to them). Shares the 64 slots of ocl_interop.make_allocator.");
#ifdef DNNL_OCL_INTEROP_TEST_HOOKS // test-only entry points, not in released wheels
    allocator.def("_malloc_and_free", [](const allocator_object &self, size_t size,
                                             size_t alignment, cl_handles::device_arg device,
                                             cl_handles::context_arg context, size_t count) {
                graph_allocator::malloc_and_free(self, size, alignment, device.get("device"),
                        context.get("context"), count);
            }, py::arg("size"), py::arg("alignment"), py::arg("device"), py::arg("context"),
                    py::arg("count") = 1,
                    "For tests: `count` mallocs, then their frees, made as oneDNN "
                    "makes them, failures raised as from compile (oneDNN 3.13 asks "
                    "for no alignment on OpenCL, and makes one allocation per call; "
                    "this asks for `alignment`, `count` times).");
    allocator.def("_host_malloc_and_free", [](const allocator_object &self, size_t size,
                                                  size_t alignment, size_t count) {
                graph_allocator::host_malloc_and_free(self, size, alignment, count);
            }, py::arg("size"), py::arg("alignment"), py::arg("count") = 1,
                    "For tests: `count` host_mallocs, then their host_frees, made as "
                    "oneDNN makes them for CPU engines, failures raised as from compile.");
#endif

    graph.def("make_engine_with_allocator", [](dnnl::engine::kind kind, size_t index,
                                                    const allocator_object &alloc) {
        dnnl::engine engine;
        {
            py::gil_scoped_release release; // queries and may set up the device
            engine = dnnl::graph::make_engine_with_allocator(kind, index, alloc.allocator);
        }
        return engine_object(engine, alloc.callbacks);
    }, py::arg("kind"), py::arg("index"), py::arg("allocator"),
            "An engine on the `index`-th device of `kind` that oneDNN enumerates "
            "itself (as dnnl.engine(kind, index)) whose graph memory comes from "
            "`allocator`. The engine, and everything made on it, keeps the "
            "allocator's callables alive.");

    m.def("make_allocator", &graph_allocator::make, py::arg("malloc"), py::arg("free"),
            "An allocator that oneDNN calls for graph memory on OpenCL devices:\n"
            "  malloc(size, alignment, device: pyopencl.Device, context: pyopencl.Context) -> int\n"
            "    returns a USM pointer of `context` with at least `size` bytes;\n"
            "  free(ptr, device, context, event: pyopencl.Event | None) -> None\n"
            "    releases it once `event` has completed (with None, in-order work\n"
            "    may still use it: free it only after that work is done, e.g.\n"
            "    with a blocking USM free).\n"
            "Called with the GIL held, from the compile, execute or tensor call "
            "that needs memory; an exception (or a return that is not a USM "
            "pointer of the context with `size` bytes and a multiple of a "
            "non-zero `alignment`) is raised from that call as "
            "dnnl.runtime_error chained to it (dnnl.out_of_memory for a "
            "MemoryError); KeyboardInterrupt, SystemExit "
            "and GeneratorExit are raised from it unchanged. Each allocator "
            "gets only its own calls. At most 64 allocators are alive at once.");

    m.def("make_engine_with_allocator", [](cl_handles::device_arg device,
                                                 cl_handles::context_arg context,
                                                 const allocator_object &alloc, const optional_bytes &cache_blob) {
        fork_guard::check();
        cl_device_id dev = device.get("device");
        cl_context ctx = context.get("context");
        dnnl::engine engine;
        if (cache_blob.is_none()) {
            py::gil_scoped_release release;
            engine = goi::make_engine_with_allocator(dev, ctx, alloc.allocator);
        } else {
            std::vector<uint8_t> blob = engine_cache_blob_payload(cache_blob, dev);
            py::gil_scoped_release release;
            engine = goi::make_engine_with_allocator(dev, ctx, alloc.allocator, blob);
        }
        return engine_object(engine, alloc.callbacks);
    }, py::arg("device"), py::arg("context"), py::arg("allocator"),
            py::arg("cache_blob") = py::none(),
            "A GPU engine on the user's device and context whose graph memory "
            "comes from `allocator`. The engine, and everything made on it, "
            "keeps the allocator's callables alive.");

    m.def("execute", [](const compiled_partition_object &cp, stream_object &s,
                             py::handle inputs, py::handle outputs,
                             cl_handles::event_list_arg &deps, py::handle scratchpad) {
        graph_execution ex = graph_execution_args(cp, s, inputs, outputs);
        deps.get("deps"); // raises on a bad item
        std::vector<cl_event> events = std::move(deps.events); // the caster's, not a copy
        const dnnl::graph::tensor *pad = scratchpad_arg(cp, scratchpad);
        cl_event event = execute_partition(cp, s, ex, std::move(events), pad);
        return cl_handles::owned_event(event);
    }, py::arg("compiled_partition"), py::arg("stream"), py::arg("inputs"),
            py::arg("outputs"), py::arg("deps") = py::tuple(), py::arg("scratchpad") = py::none(),
            "Execute after the events in `deps`; returns the partition's event "
            "(a pyopencl.Event owned by the caller), or None when oneDNN "
            "returns none. `scratchpad`: None (oneDNN allocates it) or a tensor "
            "on the partition's engine with room for "
            "compiled_partition.get_scratchpad_logical_tensor(). The GIL is "
            "released; the engine's allocator may be called.");
}

} // namespace dnnl_ocl_interop
