// The allocator trampoline: oneDNN's graph allocators (OpenCL and host) are a
// pair of plain C function pointers with no user data, called from compile and
// execute. Each Python allocator takes one slot of a fixed table of trampoline
// functions, so several allocators on several engines each get their own calls.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CL/cl.h>
#include <pybind11/pybind11.h>

#include "common/fork_guard.hpp"
#include "oneapi/dnnl/dnnl_graph.hpp"

namespace dnnl_ocl_interop {
namespace graph_allocator {

struct state; // the Python callables of one allocator and its slot

// dnnl.graph.allocator: shared by the engines made with it, which keep the
// state alive (engine_object::callbacks) as long as oneDNN may call it.
// `callbacks` is empty for oneDNN's default allocator.
struct allocator_object {
    dnnl::graph::allocator allocator;
    std::shared_ptr<state> callbacks;
};

// dnnl.graph.ocl_interop.make_allocator: OpenCL callables
//   malloc(size, alignment, device, context) -> int, free(ptr, device, context, event).
allocator_object make(pybind11::object malloc_fn, pybind11::object free_fn);

// dnnl.graph.allocator(host_malloc, host_free): host callables
//   host_malloc(size, alignment) -> int, host_free(ptr);
// oneDNN calls them for CPU engines only (its OpenCL memory comes from the
// default OpenCL allocator).
allocator_object make_host(pybind11::object malloc_fn, pybind11::object free_fn);

// dnnl.graph.allocator(): oneDNN's default allocator, no Python callables.
allocator_object make_default();

// For tests: `count` mallocs, then their frees, made as oneDNN makes them
// (through the allocator's slot) inside one with_callbacks. oneDNN 3.13 asks
// for no alignment on OpenCL, and for one allocation per call here; this asks
// for `alignment`, `count` times.
void malloc_and_free(const allocator_object &allocator, size_t size, size_t alignment,
        cl_device_id device, cl_context context, size_t count);

// The same for a host allocator (through its host slot).
void host_malloc_and_free(
        const allocator_object &allocator, size_t size, size_t alignment, size_t count);

// Runs `call` (a oneDNN call that may call allocators), with the GIL released.
// A Python exception, or a bad pointer, from any allocator callback during the
// call is raised from here as dnnl.error chained to it, whether or not oneDNN
// itself failed. A BaseException that is not an Exception (KeyboardInterrupt,
// SystemExit, GeneratorExit) is raised as it is, and no malloc is called
// again during the call (oneDNN gets the binding's memory instead).
template <typename F>
auto with_callbacks(F &&call) -> decltype(call());

// Implementation detail of with_callbacks.
struct call_scope {
    call_scope();
    ~call_scope();
    // Raises the first interrupt as it is, else the first recorded callback
    // failure, chained; `onednn_failure` is the message of oneDNN's own error,
    // if any.
    void raise_recorded(const char *onednn_failure);
    std::vector<std::pair<std::string, pybind11::object>> failures;
    pybind11::object interrupt; // the first non-Exception BaseException
    call_scope *outer;
};

template <typename F>
auto with_callbacks(F &&call) -> decltype(call()) {
    fork_guard::check(); // graph compile, tensors and execute start here
    call_scope scope;
    try {
        auto result = [&] {
            pybind11::gil_scoped_release release;
            return call();
        }();
        scope.raise_recorded(nullptr);
        return result;
    } catch (const dnnl::error &e) {
        scope.raise_recorded(e.what());
        throw;
    }
}

} // namespace graph_allocator
} // namespace dnnl_ocl_interop
