#include "common/enum_caster.hpp" // first: see the header

#include "common/cl_handles.hpp"
#include "common/errors.hpp"
#include "common/workarounds.hpp"
#include "common/py_values.hpp"
#include "core/primitive_objects.hpp"
#include "graph/allocator.hpp"
#include "graph/graph_objects.hpp"
#include "core/profiling.hpp"
#include "core/ocl_objects.hpp"
#include "graph/pool.hpp"
#include "oneapi/dnnl/dnnl_graph_ocl.hpp"

namespace py = pybind11;
namespace goi = dnnl::graph::ocl_interop;

namespace dnnl_ocl_interop {

using graph_allocator::allocator_object;

cl_event execute_partition(const compiled_partition_object &cp, stream_object &s,
        const graph_execution &ex, std::vector<cl_event> deps,
        const dnnl::graph::tensor *scratchpad) {
    if (s.out_of_order && cp.host_scalar_input) {
        std::string why = workarounds::out_of_order_host_scalar_refusal();
        if (!why.empty()) {
            status_error refused(dnnl_unimplemented, why);
            refused.known_problem = "graph-host-scalar-null-event";
            throw refused;
        }
    }
    check_same_context(deps, s.engine);
    wait_in_order(s, deps);
    // A partition starting with a no-op step turns "no dependencies" into a
    // NULL event, passed on as a wait list, which the queue refuses (known
    // problem graph-noop-null-event). A marker keeps it valid.
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
        return graph_allocator::with_callbacks(cp.engine, [&] {
            return scratchpad
                    ? goi::execute(partition, s.stream, ex.inputs, outputs, *scratchpad, deps)
                    : goi::execute(partition, s.stream, ex.inputs, outputs, deps);
        }, &s);
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
            "to them).");
#ifdef DNNL_OCL_INTEROP_TEST_HOOKS // test-only entry points, not in released wheels
    allocator.def("_malloc_and_free",
            [](const allocator_object &self, size_t size, size_t alignment,
                    cl_handles::device_arg device, cl_handles::context_arg context, size_t count) {
        graph_allocator::malloc_and_free(self, size, alignment, device.get("device"),
                context.get("context"), count);
    },
            py::arg("size"), py::arg("alignment"), py::arg("device"), py::arg("context"),
            py::arg("count") = 1,
            "For tests: `count` mallocs, then their frees, made as oneDNN "
            "makes them, failures raised as from compile (oneDNN 3.13 asks "
            "for no alignment on OpenCL, and makes one allocation per call; "
            "this asks for `alignment`, `count` times).");
    allocator.def("_host_malloc_and_free",
            [](const allocator_object &self, size_t size, size_t alignment, size_t count) {
        graph_allocator::host_malloc_and_free(self, size, alignment, count);
    }, py::arg("size"), py::arg("alignment"), py::arg("count") = 1,
            "For tests: `count` host_mallocs, then their host_frees, made as "
            "oneDNN makes them for CPU engines, failures raised as from compile.");
#endif

    graph.def("make_engine_with_allocator",
            [](dnnl::engine::kind kind, size_t index, const allocator_object &alloc) {
        fork_guard::check();
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
            py::kw_only(), py::arg("in_order_events") = false,
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
            "non-zero `alignment`, or that oneDNN still holds) is raised from "
            "that call as dnnl.runtime_error chained to it (dnnl.out_of_memory "
            "for a MemoryError); KeyboardInterrupt, SystemExit "
            "and GeneratorExit are raised from it unchanged. There is no limit "
            "on live allocators, and each gets only its own calls: the mallocs "
            "of its engines' compile, execute and tensor calls, and the frees "
            "of what it handed out.\n"
            "in_order_events: memory an execute on an in-order stream allocated "
            "and frees when it ends (its scratchpad) is passed to free with the "
            "event of a marker enqueued on the stream's queue after the "
            "execute's work, where oneDNN passes None (for pools that reuse "
            "memory on other queues without waiting).");

    // dnnl.graph.allocators.caching_pool's engine: the pool's policy in C++
    // (graph/pool.hpp) and the allocator that serves it without Python.
    struct pool_object {
        std::shared_ptr<graph_pool::caching_pool> pool;
        allocator_object allocator;
    };
    py::class_<pool_object> pool(m, "_caching_pool",
            "The engine of dnnl.graph.allocators.caching_pool (use that): the "
            "pool's policy in C++, and an allocator that serves it without "
            "Python.");
    pool.def(py::init([](size_t granularity, bool reuse_without_event) {
        if (granularity == 0) throw_invalid_argument("granularity must be positive");
        auto p = std::make_shared<graph_pool::caching_pool>(granularity, reuse_without_event);
        return pool_object {p, graph_allocator::make_caching_pool(p)};
    }),
            py::arg("granularity"), py::arg("reuse_without_event"));
    pool.def_property_readonly("allocator", [](const pool_object &p) { return p.allocator; },
            "The allocator for make_engine_with_allocator.");
    auto stat = [&](const char *name, size_t graph_pool::statistics::*field, const char *doc) {
        pool.def_property_readonly(name,
                [field](const pool_object &p) { return p.pool->stats().*field; }, doc);
    };
    stat("live_bytes", &graph_pool::statistics::live_bytes,
            "Bytes handed out now (rounded sizes).");
    stat("peak_bytes", &graph_pool::statistics::peak_bytes, "Most bytes handed out at once.");
    stat("allocations", &graph_pool::statistics::allocations, "Blocks handed out.");
    stat("frees", &graph_pool::statistics::frees, "Blocks given back.");
    stat("hits", &graph_pool::statistics::hits, "Allocations served from the cache.");
    stat("misses", &graph_pool::statistics::misses, "Allocations that went to the device.");
    pool.def_property_readonly("cached_bytes", [](const pool_object &p) {
        return p.pool->cached_bytes();
    }, "Bytes held in the cache, free for reuse.");
    pool.def_property_readonly("sizes", [](const pool_object &p) {
        py::dict out;
        for (auto &entry : p.pool->live_sizes())
            out[py::int_(reinterpret_cast<uintptr_t>(entry.first))] = entry.second;
        return out;
    }, "{pointer: rounded size} of the blocks handed out now.");
    pool.def_property("limit_bytes", [](const pool_object &p) -> py::object {
        auto limit = p.pool->limit();
        return limit.first ? py::object(py::int_(limit.second)) : py::object(py::none());
    }, [](pool_object &p, py::object value) {
        if (value.is_none()) return p.pool->set_limit(false, 0);
        if (!is_int(value)) throw_type_error("limit_bytes", "an int or None", value);
        if (value.cast<py::int_>() < py::int_(0))
            throw_invalid_argument(
                    "limit_bytes must not be negative, not " + std::string(py::str(value)));
        p.pool->set_limit(true, value.cast<size_t>());
    }, "The bound on device memory the pool holds (None: no bound).");
    pool.def("release", [](pool_object &p) {
        py::gil_scoped_release release; // waits for the blocks' events
        p.pool->release();
    }, "Free every cached block now, waiting for its event.");
#ifdef DNNL_OCL_INTEROP_TEST_HOOKS // test and benchmark entry points, not in released wheels
    pool.def("_cached", [](const pool_object &p) {
        py::list out;
        for (auto &entry : p.pool->cached())
            out.append(py::make_tuple(reinterpret_cast<uintptr_t>(entry.first),
                    reinterpret_cast<uintptr_t>(entry.second)));
        return out;
    }, "For tests: (pointer, event handle or 0) of each cached block.");

    m.def("_trace_allocators",
            [](bool on) {
        auto records = graph_allocator::trace(on);
        py::list out;
        for (auto &r : records) out.append(py::make_tuple(r.first, r.second));
        return out;
    }, py::arg("on"),
            "For benchmarks/allocator_breakdown.py: switches the recording of "
            "(stage, time.perf_counter_ns()-comparable nanoseconds) at each step "
            "of graph calls and allocator callbacks on or off; returns the "
            "records made so far, and forgets them.");
    m.def("_live_allocations", &graph_allocator::live_allocations,
            "For tests: how many allocations made by Python graph allocators (or "
            "by the binding in place of a failed one) oneDNN holds now.");
    m.def("_live_allocators", &graph_allocator::live_allocators,
            "For tests: how many Python graph allocators are alive (held by "
            "Python objects, by engines, or by allocations oneDNN holds).");
#endif

    m.def("make_engine_with_allocator",
            [](cl_handles::device_arg device, cl_handles::context_arg context,
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
    },
            py::arg("device"), py::arg("context"), py::arg("allocator"),
            py::arg("cache_blob") = py::none(),
            "A GPU engine on the user's device and context whose graph memory "
            "comes from `allocator`. The engine, and everything made on it, "
            "keeps the allocator's callables alive.");

    m.def("execute",
            [](const compiled_partition_object &cp, stream_object &s, py::handle inputs,
                    py::handle outputs, cl_handles::event_list_arg &deps, py::handle scratchpad) {
        graph_execution ex = graph_execution_args(cp, s, inputs, outputs);
        deps.get("deps");                                      // raises on a bad item
        std::vector<cl_event> events = std::move(deps.events); // the caster's, not a copy
        const dnnl::graph::tensor *pad = scratchpad_arg(cp, scratchpad);
        cl_event event = execute_partition(cp, s, ex, std::move(events), pad);
        return cl_handles::owned_event(event);
    },
            py::arg("compiled_partition"), py::arg("stream"), py::arg("inputs"), py::arg("outputs"),
            py::arg("deps") = py::tuple(), py::arg("scratchpad") = py::none(),
            "Execute after the events in `deps`; returns the partition's event "
            "(a pyopencl.Event owned by the caller), or None when oneDNN "
            "returns none. `scratchpad`: None (oneDNN allocates it) or a tensor "
            "on the partition's engine with room for "
            "compiled_partition.get_scratchpad_logical_tensor(). The GIL is "
            "released; the engine's allocator may be called.");
}

} // namespace dnnl_ocl_interop
