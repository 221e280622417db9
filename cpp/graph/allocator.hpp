// The allocator trampoline: oneDNN's graph allocators (OpenCL and host) are a
// pair of plain C function pointers with no user data, called from compile and
// execute. Every Python allocator shares one pair of functions (one pair for
// OpenCL, one for host), so any number of allocators can be alive:
// - a malloc goes to the allocator of the engine whose binding call is running
//   on the calling thread (with_callbacks names it): oneDNN 3.13 asks for
//   memory only inside the compile, execute or tensor call of that engine, on
//   its thread (docs/api.md, "How a call finds its allocator", has the proof
//   from oneDNN's sources);
// - a free goes to the allocator that handed the pointer out, found in a table
//   of live allocations (context, pointer) -> allocator, wherever and whenever
//   oneDNN frees it.
// A caching pool's allocator (make_caching_pool) is served there in C++,
// without the GIL.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <CL/cl.h>
#include <pybind11/pybind11.h>

#include "common/fork_guard.hpp"
#include "oneapi/dnnl/dnnl_graph.hpp"

namespace dnnl_ocl_interop {

struct engine_object;
struct stream_object;
namespace graph_pool {
class caching_pool;
}

namespace graph_allocator {

struct state; // the Python callables of one allocator

// dnnl.graph.allocator: shared by the engines made with it, which keep the
// state alive (engine_object::callbacks) as long as oneDNN may call it; each
// allocation not yet freed keeps it too, so a late free (oneDNN's constant
// cache, a tensor that outlives everything) still reaches its callable.
// `callbacks` is empty for oneDNN's default allocator.
struct allocator_object {
    dnnl::graph::allocator allocator;
    std::shared_ptr<state> callbacks;
};

// dnnl.graph.ocl_interop.make_allocator: OpenCL callables
//   malloc(size, alignment, device, context) -> int, free(ptr, device, context, event).
// With `in_order_events`, memory freed at the end of the execute on an
// in-order stream that allocated it (where oneDNN passes no event) gets the
// event of a marker enqueued on the stream's queue then, instead of None.
allocator_object make(pybind11::object malloc_fn, pybind11::object free_fn, bool in_order_events);

// dnnl.graph.allocator(host_malloc, host_free): host callables
//   host_malloc(size, alignment) -> int, host_free(ptr);
// oneDNN calls them for CPU engines only (its OpenCL memory comes from the
// default OpenCL allocator).
allocator_object make_host(pybind11::object malloc_fn, pybind11::object free_fn);

// dnnl.graph.allocators.caching_pool's allocator: `pool`'s policy, which the
// trampoline serves without Python (graph/pool.hpp); it asks for marker
// events on in-order executes when the pool does not reuse blocks freed
// without an event.
allocator_object make_caching_pool(std::shared_ptr<graph_pool::caching_pool> pool);

// dnnl.graph.allocator(): oneDNN's default allocator, no Python callables.
allocator_object make_default();

// For tests: `count` mallocs, then their frees, made as oneDNN makes them
// (through the shared trampoline) inside one call naming the allocator, as
// with_callbacks does for an engine of `context`. oneDNN 3.13 asks for no
// alignment on OpenCL, and for one allocation per call here; this asks for
// `alignment`, `count` times.
void malloc_and_free(const allocator_object &allocator, size_t size, size_t alignment,
        cl_device_id device, cl_context context, size_t count);

// The same for a host allocator.
void host_malloc_and_free(const allocator_object &allocator, size_t size, size_t alignment,
        size_t count);

// For tests: how many allocations made through Python allocators (and the
// binding's stand-ins) oneDNN has not freed yet.
size_t live_allocations();
// For tests: how many Python allocators are alive (held by Python, by
// engines, or by allocations oneDNN has not freed).
size_t live_allocators();

// For the benchmarks' breakdown (benchmarks/allocator_breakdown.py): while on,
// the trampoline and with_callbacks record (stage, steady-clock ns) at each
// step of a call. trace(on) switches it and returns the records so far
// (clearing them). Off by default: one relaxed atomic load per step.
std::vector<std::pair<const char *, long long>> trace(bool on);
extern std::atomic<bool> tracing;
void record_trace(const char *stage);
inline void trace_mark(const char *stage) {
    if (tracing.load(std::memory_order_relaxed)) record_trace(stage);
}

// Runs `call` (a oneDNN call that may call allocators), with the GIL released,
// as a call of `engine`: oneDNN's mallocs on this thread during it go to the
// engine's allocator. A Python exception, or a bad pointer, from any
// allocator callback during the call is raised from here as dnnl.error
// chained to it, whether or not oneDNN itself failed. A BaseException that is
// not an Exception (KeyboardInterrupt, SystemExit, GeneratorExit) is raised as
// it is, and no malloc is called again during the call (oneDNN gets the
// binding's memory instead).
// `stream`: the stream of an execute (its in-order queue gets the markers of
// in_order_events), else nullptr.
template <typename F>
auto with_callbacks(const engine_object &engine, F &&call, const stream_object *stream = nullptr)
        -> decltype(call());

// Implementation detail of with_callbacks.
struct call_scope {
    // `allocator`: the engine's callbacks (empty: not a Python allocator),
    // `context`: the engine's context, which oneDNN must pass to malloc.
    call_scope(const std::shared_ptr<void> &allocator, cl_context context);
    call_scope(const engine_object &engine, const stream_object *stream);
    ~call_scope();
    // Raises the first interrupt as it is, else the first recorded callback
    // failure, chained; `onednn_failure` is the message of oneDNN's own error,
    // if any.
    void raise_recorded(const char *onednn_failure);
    std::vector<std::pair<std::string, pybind11::object>> failures;
    pybind11::object interrupt;             // the first non-Exception BaseException
    const std::shared_ptr<void> *allocator; // the engine's, alive for the call
    cl_context context;
    const stream_object *stream = nullptr; // an execute's, else none
    unsigned long long serial;             // tells this call from any other
    call_scope *outer;
};

template <typename F>
auto run_in_scope(call_scope &scope, F &&call) -> decltype(call()) {
    try {
        auto result = [&] {
            pybind11::gil_scoped_release release;
            trace_mark("with_callbacks: GIL released, oneDNN called");
            auto r = call();
            trace_mark("with_callbacks: oneDNN returned");
            return r;
        }();
        trace_mark("with_callbacks: GIL taken back");
        scope.raise_recorded(nullptr);
        return result;
    } catch (const dnnl::error &e) {
        scope.raise_recorded(e.what());
        throw;
    }
}

template <typename F>
auto with_callbacks(const engine_object &engine, F &&call, const stream_object *stream)
        -> decltype(call()) {
    fork_guard::check(); // graph compile, tensors and execute start here
    trace_mark("with_callbacks: entered (arguments converted)");
    call_scope scope(engine, stream);
    return run_in_scope(scope, std::forward<F>(call));
}

} // namespace graph_allocator
} // namespace dnnl_ocl_interop
