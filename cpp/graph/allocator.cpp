#include "graph/allocator.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <unordered_set>
#include <utility>

#include "common/cl_handles.hpp"
#include "common/errors.hpp"
#include "common/py_values.hpp"
#include "oneapi/dnnl/dnnl_graph_ocl.hpp"
#include "usm/usm_api.hpp"

namespace py = pybind11;

namespace dnnl_ocl_interop {
namespace graph_allocator {

constexpr size_t slot_count = 64;

struct state {
    py::object malloc_fn, free_fn;
    bool host = false; // host_malloc(size, alignment), host_free(ptr)
    size_t slot = SIZE_MAX;
    // pyopencl objects for the (device, context) oneDNN passes, made once:
    // wrapping handles on every allocation would dominate its cost.
    cl_device_id device = nullptr;
    cl_context context = nullptr;
    py::object py_device, py_context;
    // Allocations the binding made itself after the Python malloc failed
    // (USM device memory, or host memory for a host allocator; guarded by
    // the GIL, which every callback holds).
    std::unordered_set<void *> fallbacks;

    ~state();
};

namespace {

std::array<std::atomic<state *>, slot_count> slots {};
std::mutex slots_mutex;

thread_local call_scope *current_scope = nullptr;

// KeyboardInterrupt, SystemExit, GeneratorExit: not failures to wrap, but the
// program stopping; they leave the API call as they are.
bool is_interrupt(py::handle exc) {
    return PyObject_IsInstance(exc.ptr(), PyExc_Exception) != 1;
}

// A callback failure: kept for the API call running on this thread, or
// reported as unraisable when oneDNN calls outside any (e.g. while an engine
// is destroyed).
void record(const std::string &what, py::object exc) {
    if (current_scope) {
        if (!is_interrupt(exc))
            current_scope->failures.emplace_back(what, std::move(exc));
        else if (!current_scope->interrupt)
            current_scope->interrupt = std::move(exc);
        return;
    }
    PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(exc.ptr())), exc.ptr());
    PyErr_WriteUnraisable(py::str("dnnl_ocl_interop graph allocator").ptr());
}

// The exception a callable raised, with its traceback on it (before Python
// 3.12 the error indicator keeps the traceback apart from the exception).
py::object raised(const py::error_already_set &e) {
    auto tb = py::reinterpret_steal<py::object>(PyException_GetTraceback(e.value().ptr()));
    if (!tb && e.trace()) PyException_SetTraceback(e.value().ptr(), e.trace().ptr());
    return e.value();
}

py::object make_exception(PyObject *type, const std::string &message) {
    return py::reinterpret_borrow<py::object>(type)(message);
}

void cache_handles(state &s, cl_device_id device, cl_context context) {
    if (s.device != device || !s.py_device) {
        s.py_device = cl_handles::retained_device(device);
        s.device = device;
    }
    if (s.context != context || !s.py_context) {
        s.py_context = cl_handles::retained_context(context);
        s.context = context;
    }
}

// oneDNN does not check for a failed allocation: it would run its kernels on a
// NULL buffer. After a failure the binding allocates the memory itself (and
// frees it when oneDNN releases it), so the call completes safely and then
// raises the recorded failure.
void *fallback(state &s, size_t size, size_t alignment, cl_device_id device,
        cl_context context) {
    try {
        cl_int err = CL_SUCCESS;
        void *ptr = usm::api_for(context).device_alloc(context, device, nullptr, size,
                static_cast<cl_uint>(alignment), &err);
        if (err == CL_SUCCESS && ptr) {
            s.fallbacks.insert(ptr);
            return ptr;
        }
    } catch (const std::exception &) {}
    return nullptr; // truly out of memory: nothing safer is possible
}

void *allocate(size_t slot, size_t size, size_t alignment, cl_device_id device,
        cl_context context) {
    state *s = slots[slot].load();
    if (!s || interpreter_finalizing()) return nullptr;
    py::gil_scoped_acquire gil;
    // The program is stopping: no more Python until oneDNN returns.
    if (current_scope && current_scope->interrupt)
        return fallback(*s, size, alignment, device, context);
    auto failed = [&](const char *what, py::object exc) {
        record(what, std::move(exc));
        return fallback(*s, size, alignment, device, context);
    };
    try {
        cache_handles(*s, device, context);
        py::object result = s->malloc_fn(size, alignment, s->py_device, s->py_context);
        if (!is_int(result))
            return failed("the allocator's malloc failed",
                    make_exception(PyExc_TypeError,
                            type_mismatch("malloc's return value", "an int USM pointer", result)));
        void *ptr = nullptr;
        if (!int_to_pointer(result, ptr))
            return failed("the allocator's malloc failed",
                    make_exception(PyExc_ValueError,
                            "malloc returned " + std::string(py::str(result))
                                    + ", which is not a pointer (0 to 2**64-1)"));
        if (!ptr)
            return failed("the allocator's malloc failed",
                    make_exception(PyExc_MemoryError,
                            "malloc returned 0 for " + std::to_string(size) + " bytes"));
        size_t available = usm::bytes_available(context, ptr);
        if (available == 0)
            return failed("the allocator's malloc failed",
                    make_exception(PyExc_ValueError,
                            "malloc returned a pointer that is not a USM allocation of "
                            "the engine's context (it was not used, nor passed to free)"));
        if (available < size) {
            s->free_fn(reinterpret_cast<uintptr_t>(ptr), s->py_device, s->py_context, py::none());
            return failed("the allocator's malloc failed",
                    make_exception(PyExc_ValueError,
                            "malloc returned a USM pointer with " + std::to_string(available)
                                    + " bytes left for a " + std::to_string(size)
                                    + "-byte request (it was passed back to free)"));
        }
        // oneDNN's kernels may rely on the alignment it asked for.
        if (alignment > 1 && reinterpret_cast<uintptr_t>(ptr) % alignment != 0) {
            s->free_fn(reinterpret_cast<uintptr_t>(ptr), s->py_device, s->py_context, py::none());
            return failed("the allocator's malloc failed",
                    make_exception(PyExc_ValueError,
                            "malloc returned a pointer that is not aligned to the requested "
                                    + std::to_string(alignment)
                                    + " bytes (it was passed back to free)"));
        }
        return ptr;
    } catch (py::error_already_set &e) {
        return failed("the allocator's malloc raised", raised(e));
    } catch (const std::exception &e) {
        return failed("the allocator's malloc failed", make_exception(PyExc_RuntimeError, e.what()));
    }
}

void deallocate(size_t slot, void *buf, cl_device_id device, cl_context context,
        cl_event event) {
    state *s = slots[slot].load();
    if (!s || !buf || interpreter_finalizing()) return;
    py::gil_scoped_acquire gil;
    if (s->fallbacks.erase(buf)) { // ours, not the Python allocator's
        py::gil_scoped_release release;
        if (event) clWaitForEvents(1, &event);
        try {
            usm::api_for(context).blocking_free(context, buf);
        } catch (const std::exception &) {}
        return;
    }
    try {
        cache_handles(*s, device, context);
        s->free_fn(reinterpret_cast<uintptr_t>(buf), s->py_device, s->py_context,
                cl_handles::retained_event(event));
    } catch (py::error_already_set &e) {
        record("the allocator's free raised", raised(e));
    } catch (const std::exception &e) {
        record("the allocator's free failed", make_exception(PyExc_RuntimeError, e.what()));
    }
}

// A host allocator: oneDNN asks it for CPU engines' memory, with the same
// contract (no check for a failed allocation), so a failure is recorded and
// the binding's own aligned host memory is used instead.
void *host_fallback(state &s, size_t size, size_t alignment) {
    void *ptr = nullptr;
    size_t align = std::max(alignment, sizeof(void *));
    if (posix_memalign(&ptr, align, std::max<size_t>(size, 1)) != 0) return nullptr;
    s.fallbacks.insert(ptr);
    return ptr;
}

void *host_allocate(size_t slot, size_t size, size_t alignment) {
    state *s = slots[slot].load();
    if (!s || interpreter_finalizing()) return nullptr;
    py::gil_scoped_acquire gil;
    if (current_scope && current_scope->interrupt) return host_fallback(*s, size, alignment);
    auto failed = [&](const char *what, py::object exc) {
        record(what, std::move(exc));
        return host_fallback(*s, size, alignment);
    };
    try {
        py::object result = s->malloc_fn(size, alignment);
        if (!is_int(result))
            return failed("the allocator's host_malloc failed",
                    make_exception(PyExc_TypeError,
                            type_mismatch("host_malloc's return value", "an int pointer", result)));
        void *ptr = nullptr;
        if (!int_to_pointer(result, ptr))
            return failed("the allocator's host_malloc failed",
                    make_exception(PyExc_ValueError,
                            "host_malloc returned " + std::string(py::str(result))
                                    + ", which is not a pointer (0 to 2**64-1)"));
        if (!ptr)
            return failed("the allocator's host_malloc failed",
                    make_exception(PyExc_MemoryError,
                            "host_malloc returned 0 for " + std::to_string(size) + " bytes"));
        if (alignment > 1 && reinterpret_cast<uintptr_t>(ptr) % alignment != 0) {
            s->free_fn(reinterpret_cast<uintptr_t>(ptr));
            return failed("the allocator's host_malloc failed",
                    make_exception(PyExc_ValueError,
                            "host_malloc returned a pointer that is not aligned to the "
                            "requested " + std::to_string(alignment)
                                    + " bytes (it was passed back to host_free)"));
        }
        return ptr;
    } catch (py::error_already_set &e) {
        return failed("the allocator's host_malloc raised", raised(e));
    } catch (const std::exception &e) {
        return failed("the allocator's host_malloc failed",
                make_exception(PyExc_RuntimeError, e.what()));
    }
}

void host_deallocate(size_t slot, void *buf) {
    state *s = slots[slot].load();
    if (!s || !buf || interpreter_finalizing()) return;
    py::gil_scoped_acquire gil;
    if (s->fallbacks.erase(buf)) { // ours, not the Python allocator's
        std::free(buf);
        return;
    }
    try {
        s->free_fn(reinterpret_cast<uintptr_t>(buf));
    } catch (py::error_already_set &e) {
        record("the allocator's host_free raised", raised(e));
    } catch (const std::exception &e) {
        record("the allocator's host_free failed", make_exception(PyExc_RuntimeError, e.what()));
    }
}

template <size_t I>
void *allocate_in_slot(size_t size, size_t alignment, cl_device_id device, cl_context context) {
    return allocate(I, size, alignment, device, context);
}
template <size_t I>
void deallocate_in_slot(void *buf, cl_device_id device, cl_context context, cl_event event) {
    deallocate(I, buf, device, context, event);
}

template <size_t I>
void *host_allocate_in_slot(size_t size, size_t alignment) {
    return host_allocate(I, size, alignment);
}
template <size_t I>
void host_deallocate_in_slot(void *buf) {
    host_deallocate(I, buf);
}

template <size_t... I>
constexpr std::array<std::pair<dnnl_graph_ocl_allocate_f, dnnl_graph_ocl_deallocate_f>, slot_count>
trampolines(std::index_sequence<I...>) {
    return {{{&allocate_in_slot<I>, &deallocate_in_slot<I>}...}};
}
constexpr auto slot_functions = trampolines(std::make_index_sequence<slot_count>());

template <size_t... I>
constexpr std::array<std::pair<dnnl_graph_host_allocate_f, dnnl_graph_host_deallocate_f>, slot_count>
host_trampolines(std::index_sequence<I...>) {
    return {{{&host_allocate_in_slot<I>, &host_deallocate_in_slot<I>}...}};
}
constexpr auto host_slot_functions = host_trampolines(std::make_index_sequence<slot_count>());

// The callables' state, in a free slot of the table. `who` names the call in
// errors.
std::shared_ptr<state> claim_slot(
        py::object malloc_fn, py::object free_fn, bool host, const char *who) {
    const char *malloc_name = host ? "host_malloc" : "malloc";
    const char *free_name = host ? "host_free" : "free";
    if (!PyCallable_Check(malloc_fn.ptr()))
        throw py::type_error(std::string(malloc_name) + " must be callable");
    if (!PyCallable_Check(free_fn.ptr()))
        throw py::type_error(std::string(free_name) + " must be callable");
    auto s = std::make_shared<state>();
    s->malloc_fn = std::move(malloc_fn);
    s->free_fn = std::move(free_fn);
    s->host = host;
    std::lock_guard<std::mutex> lock(slots_mutex);
    size_t i = 0;
    while (i < slot_count && slots[i].load()) ++i;
    if (i == slot_count)
        throw status_error(dnnl_out_of_memory,
                std::string(who) + ": " + std::to_string(slot_count)
                        + " allocators are alive already; drop unused ones "
                          "(and the engines made with them)");
    s->slot = i;
    slots[i].store(s.get());
    return s;
}

} // namespace

state::~state() {
    if (slot < slot_count) slots[slot].store(nullptr);
    if (interpreter_finalizing()) { // the interpreter is going: leave the objects to it
        malloc_fn.release();
        free_fn.release();
        py_device.release();
        py_context.release();
        return;
    }
    py::gil_scoped_acquire gil;
    malloc_fn = py::object();
    free_fn = py::object();
    py_device = py::object();
    py_context = py::object();
}

call_scope::call_scope() : outer(current_scope) { current_scope = this; }
call_scope::~call_scope() { current_scope = outer; }

void call_scope::raise_recorded(const char *onednn_failure) {
    if (interrupt) { // unchanged: the same object, its traceback, nothing chained
        current_scope = outer;
        PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(interrupt.ptr())), interrupt.ptr());
        throw py::error_already_set();
    }
    if (failures.empty()) return;
    current_scope = outer;
    auto &first = failures.front();
    std::string message = first.first + ": " + std::string(py::str(first.second));
    if (onednn_failure) message += " (oneDNN: " + std::string(onednn_failure) + ")";
    // A malloc that ran out of memory (MemoryError, dnnl.out_of_memory among
    // them) is what oneDNN calls out_of_memory; any other failure runtime_error.
    bool exhausted = PyErr_GivenExceptionMatches(first.second.ptr(), PyExc_MemoryError);
    throw_chained(exhausted ? dnnl_out_of_memory : dnnl_runtime_error, message, first.second);
}

allocator_object make(py::object malloc_fn, py::object free_fn) {
    auto s = claim_slot(std::move(malloc_fn), std::move(free_fn), false, "make_allocator()");
    auto fns = slot_functions[s->slot];
    return {dnnl::graph::ocl_interop::make_allocator(fns.first, fns.second), s};
}

allocator_object make_host(py::object malloc_fn, py::object free_fn) {
    auto s = claim_slot(std::move(malloc_fn), std::move(free_fn), true, "allocator()");
    auto fns = host_slot_functions[s->slot];
    return {dnnl::graph::allocator(fns.first, fns.second), s};
}

allocator_object make_default() {
    return {dnnl::graph::allocator(), nullptr};
}

namespace {
const state &callbacks_of(const allocator_object &allocator, bool host) {
    if (!allocator.callbacks)
        throw_invalid_argument("oneDNN's default allocator has no Python callables");
    if (allocator.callbacks->host != host)
        throw_invalid_argument(host ? "not a host allocator (it has OpenCL callables)"
                                    : "not an OpenCL allocator (it has host callables)");
    return *allocator.callbacks;
}
} // namespace

void malloc_and_free(const allocator_object &allocator, size_t size, size_t alignment,
        cl_device_id device, cl_context context, size_t count) {
    auto fns = slot_functions[callbacks_of(allocator, false).slot];
    with_callbacks([&] {
        std::vector<void *> ptrs;
        for (size_t i = 0; i < count; ++i) ptrs.push_back(fns.first(size, alignment, device, context));
        for (void *ptr : ptrs) fns.second(ptr, device, context, nullptr);
        return 0;
    });
}

void host_malloc_and_free(
        const allocator_object &allocator, size_t size, size_t alignment, size_t count) {
    auto fns = host_slot_functions[callbacks_of(allocator, true).slot];
    with_callbacks([&] {
        std::vector<void *> ptrs;
        for (size_t i = 0; i < count; ++i) ptrs.push_back(fns.first(size, alignment));
        for (void *ptr : ptrs) fns.second(ptr);
        return 0;
    });
}

} // namespace graph_allocator
} // namespace dnnl_ocl_interop
