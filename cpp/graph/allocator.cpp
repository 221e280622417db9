#include "common/enum_caster.hpp" // first: see the header

#include "graph/allocator.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "common/cl_handles.hpp"
#include "common/errors.hpp"
#include "common/py_values.hpp"
#include "core/objects.hpp"
#include "graph/pool.hpp"
#include "oneapi/dnnl/dnnl_graph_ocl.hpp"
#include "oneapi/dnnl/dnnl_ocl.hpp"
#include "common/usm_api.hpp"

namespace py = pybind11;

namespace dnnl_ocl_interop {
namespace graph_allocator {

struct state {
    py::object malloc_fn, free_fn;
    bool host = false;            // host_malloc(size, alignment), host_free(ptr)
    bool in_order_events = false; // see make()
    // A caching pool's policy, served without Python (make_caching_pool);
    // then the callables are empty.
    std::shared_ptr<graph_pool::caching_pool> pool;
    // pyopencl objects for the (device, context) oneDNN passes, made once:
    // wrapping handles on every allocation would dominate its cost. Threads
    // calling one allocator at once (without a GIL to order them, on a
    // free-threaded Python) copy them out under `handles_mutex`, which is held
    // for no Python call (handles_for).
    std::mutex handles_mutex;
    cl_device_id device = nullptr;
    cl_context context = nullptr;
    py::object py_device, py_context;

    state();
    ~state();
};

namespace {

thread_local call_scope *current_scope = nullptr;

// ----------------------------------------------------------- live allocations

// What oneDNN has been given and not freed yet: the allocator that handed it
// out (kept alive by the entry), or the binding itself (a stand-in after a
// failed malloc, `owner` of the allocator that failed or empty).
struct allocation {
    std::shared_ptr<state> owner;
    bool stand_in;
    unsigned long long call; // the serial of the call_scope that allocated it (0: none)
};

// Keyed by (context, pointer): USM pointers of different contexts may
// coincide; host allocations have no context.
struct live_key {
    cl_context context;
    void *ptr;
    bool operator==(const live_key &other) const {
        return context == other.context && ptr == other.ptr;
    }
};
struct live_key_hash {
    size_t operator()(const live_key &k) const {
        return std::hash<void *>()(k.ptr) * 31 + std::hash<void *>()(k.context);
    }
};

std::mutex live_mutex;
// Never destroyed: oneDNN may free memory while the process exits, after
// static destructors ran. Entries are only moved out under the mutex; the
// states they hold are released outside it (a state's destructor takes the
// GIL, and a thread holding the GIL may be waiting for the mutex).
auto &live = *new std::unordered_map<live_key, allocation, live_key_hash>();

// false when (context, ptr) is live already: the allocator handed the same
// memory out twice.
bool add_live(cl_context context, void *ptr, std::shared_ptr<state> owner, bool stand_in) {
    unsigned long long call = current_scope ? current_scope->serial : 0;
    std::lock_guard<std::mutex> lock(live_mutex);
    return live.emplace(live_key {context, ptr}, allocation {std::move(owner), stand_in, call})
            .second;
}

// The entry of (context, ptr), taken out of the table; `found` false when
// there is none.
allocation take_live(cl_context context, void *ptr, bool &found) {
    std::lock_guard<std::mutex> lock(live_mutex);
    auto it = live.find(live_key {context, ptr});
    found = it != live.end();
    if (!found) return {};
    allocation entry = std::move(it->second);
    live.erase(it);
    return entry;
}

// ----------------------------------------------------------------- failures

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

py::object as_int(size_t value) {
    PyObject *result = PyLong_FromSize_t(value);
    if (!result) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(result);
}
py::object as_int(void *ptr) {
    return as_int(static_cast<size_t>(reinterpret_cast<uintptr_t>(ptr)));
}

// fn(args...) through vectorcall: no argument tuple and no casters on every
// allocation (error_already_set when it raises).
template <typename... Args>
py::object call(const py::object &fn, const Args &...args) {
    PyObject *argv[] = {args.ptr()...};
    PyObject *result = PyObject_Vectorcall(fn.ptr(), argv, sizeof...(Args), nullptr);
    if (!result) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(result);
}

// A pointer malloc returned that oneDNN cannot use goes back to the
// allocator's free before the call falls back to the binding's memory. The
// refusal is what the call raises; when giving the pointer back fails too,
// the message says so and the free's exception is the refusal's context (so
// neither hides the other).
template <typename GiveBack>
py::object refusal_after_give_back(std::string reason, const char *free_name,
        const GiveBack &give_back) {
    py::object free_failure;
    try {
        give_back();
    } catch (py::error_already_set &e) {
        free_failure = raised(e);
    } catch (const std::exception &e) {
        free_failure = make_exception(PyExc_RuntimeError, e.what());
    }
    if (free_failure && is_interrupt(free_failure)) // the program stops: it leaves as it is
        record("the allocator's free raised", free_failure);
    reason += std::string(" (it was passed back to ") + free_name;
    if (!free_failure) return make_exception(PyExc_ValueError, reason + ")");
    reason += std::string(", which raised ") + Py_TYPE(free_failure.ptr())->tp_name + ": "
            + std::string(py::str(free_failure)) + ")";
    py::object refusal = make_exception(PyExc_ValueError, reason);
    PyException_SetContext(refusal.ptr(), free_failure.release().ptr()); // steals
    return refusal;
}

struct handles {
    py::object device, context;
};

// The pyopencl objects of (device, context) for a callback of `s`: the cached
// ones, or new ones that replace them (the replaced ones are dropped outside
// the lock: their last reference may run Python).
handles handles_for(state &s, cl_device_id device, cl_context context) {
    {
        std::lock_guard<std::mutex> lock(s.handles_mutex);
        if (s.device == device && s.context == context && s.py_device && s.py_context)
            return {s.py_device, s.py_context};
    }
    handles made {cl_handles::retained_device(device), cl_handles::retained_context(context)};
    handles replaced;
    {
        std::lock_guard<std::mutex> lock(s.handles_mutex);
        replaced = {std::move(s.py_device), std::move(s.py_context)};
        s.py_device = made.device;
        s.py_context = made.context;
        s.device = device;
        s.context = context;
    }
    return made;
}

// The allocator of the binding call running on this thread, if it is a
// Python allocator of this kind.
std::shared_ptr<state> scope_allocator(bool host) {
    if (!current_scope || !current_scope->allocator || !*current_scope->allocator) return nullptr;
    auto s = std::static_pointer_cast<state>(*current_scope->allocator);
    return s->host == host ? s : nullptr;
}

// oneDNN does not check for a failed allocation: it would run its kernels on a
// NULL buffer. After a failure the binding allocates the memory itself (and
// frees it when oneDNN releases it), so the call completes safely and then
// raises the recorded failure.
void *stand_in(std::shared_ptr<state> owner, size_t size, size_t alignment, cl_device_id device,
        cl_context context) {
    try {
        cl_int err = CL_SUCCESS;
        void *ptr = usm::api_for(context).device_alloc(context, device, nullptr, size,
                static_cast<cl_uint>(alignment), &err);
        if (err == CL_SUCCESS && ptr) {
            add_live(context, ptr, std::move(owner), true);
            return ptr;
        }
    } catch (const std::exception &) {}
    return nullptr; // truly out of memory: nothing safer is possible
}

// oneDNN asked for memory when no call of an engine with a Python allocator
// runs on this thread, or for another context than the engine's: not what
// oneDNN 3.13 does (see allocator.hpp). The binding's memory stands in.
void *unexpected_malloc(size_t size, size_t alignment, cl_device_id device, cl_context context) {
    record("the graph allocator was called unexpectedly",
            make_exception(PyExc_RuntimeError,
                    current_scope && current_scope->allocator && *current_scope->allocator
                            ? "oneDNN asked for memory of another context than the engine's "
                              "during a call of that engine (no Python allocator was called)"
                            : "oneDNN asked for memory outside any call of an engine with a "
                              "Python allocator on this thread (no Python allocator was "
                              "called)"));
    return stand_in(nullptr, size, alignment, device, context);
}

cl_event end_of_call_marker(unsigned long long allocated_in);
cl_command_queue in_order_queue_of_call();

// A caching pool's malloc: no GIL, no Python, unless it fails (then the
// failure is recorded as a MemoryError or RuntimeError and the binding's
// memory stands in, as for a Python malloc).
void *pool_allocate(const std::shared_ptr<state> &s, size_t size, size_t alignment,
        cl_device_id device, cl_context context) {
    std::string error;
    bool exhausted = false;
    void *ptr = s->pool->malloc(size, alignment, device, context, in_order_queue_of_call(), error,
            exhausted);
    if (ptr && add_live(context, ptr, s, false)) {
        trace_mark("malloc: return to oneDNN");
        return ptr;
    }
    py::gil_scoped_acquire gil;
    if (ptr) { // cannot happen: the pool hands out only what it holds
        s->pool->free(ptr, context, nullptr, false, nullptr);
        error = "the pool handed out a pointer oneDNN holds already";
    }
    record("the caching pool's malloc failed",
            make_exception(exhausted ? PyExc_MemoryError : PyExc_RuntimeError, error));
    return stand_in(s, size, alignment, device, context);
}

void *allocate(size_t size, size_t alignment, cl_device_id device, cl_context context) {
    trace_mark("malloc: called by oneDNN");
    if (interpreter_finalizing()) return nullptr;
    {
        std::shared_ptr<state> s = scope_allocator(false); // no GIL needed: all C++
        if (s && s->pool && current_scope->context == context && !current_scope->interrupt)
            return pool_allocate(s, size, alignment, device, context);
    }
    py::gil_scoped_acquire gil;
    trace_mark("malloc: GIL taken");
    std::shared_ptr<state> s = scope_allocator(false);
    if (!s || current_scope->context != context)
        return unexpected_malloc(size, alignment, device, context);
    // The program is stopping: no more Python until oneDNN returns.
    if (current_scope->interrupt) return stand_in(s, size, alignment, device, context);
    auto failed = [&](const char *what, py::object exc) {
        record(what, std::move(exc));
        return stand_in(s, size, alignment, device, context);
    };
    handles h;
    auto give_back
            = [&](void *ptr) { call(s->free_fn, as_int(ptr), h.device, h.context, py::none()); };
    try {
        h = handles_for(*s, device, context);
        trace_mark("malloc: callable called");
        py::object result
                = call(s->malloc_fn, as_int(size), as_int(alignment), h.device, h.context);
        trace_mark("malloc: callable returned");
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
        if (available < size)
            return failed("the allocator's malloc failed",
                    refusal_after_give_back("malloc returned a USM pointer with "
                                    + std::to_string(available) + " bytes left for a "
                                    + std::to_string(size) + "-byte request",
                            "free", [&] { give_back(ptr); }));
        // oneDNN's kernels may rely on the alignment it asked for.
        if (alignment > 1 && reinterpret_cast<uintptr_t>(ptr) % alignment != 0)
            return failed("the allocator's malloc failed",
                    refusal_after_give_back(
                            "malloc returned a pointer that is not aligned to the requested "
                                    + std::to_string(alignment) + " bytes",
                            "free", [&] { give_back(ptr); }));
        trace_mark("malloc: pointer checked");
        if (!add_live(context, ptr, s, false))
            return failed("the allocator's malloc failed",
                    make_exception(PyExc_ValueError,
                            "malloc returned a pointer that oneDNN holds already (handed out "
                            "before and not freed yet; it was not used, nor passed to free)"));
        trace_mark("malloc: return to oneDNN");
        return ptr;
    } catch (py::error_already_set &e) {
        return failed("the allocator's malloc raised", raised(e));
    } catch (const std::exception &e) {
        return failed("the allocator's malloc failed",
                make_exception(PyExc_RuntimeError, e.what()));
    }
}

void deallocate(void *buf, cl_device_id device, cl_context context, cl_event event) {
    trace_mark("free: called by oneDNN");
    if (!buf || interpreter_finalizing()) return;
    bool found = false;
    allocation entry = take_live(context, buf, found);
    if (!found) return;   // handed out by no Python allocator: nothing to call
    if (entry.stand_in) { // ours, not the Python allocator's
        if (event) clWaitForEvents(1, &event);
        try {
            usm::api_for(context).blocking_free(context, buf);
        } catch (const std::exception &) {}
        return; // (the owner's last reference takes the GIL itself: ~state)
    }
    if (entry.owner->pool) { // a caching pool: no GIL, no Python
        bool marker = !event && entry.owner->in_order_events;
        cl_event done = marker ? end_of_call_marker(entry.call) : event;
        // (the queue matters only for a block freed without an event)
        entry.owner->pool->free(buf, context, done, marker,
                done ? nullptr : in_order_queue_of_call());
        trace_mark("free: return to oneDNN");
        return;
    }
    py::gil_scoped_acquire gil;
    trace_mark("free: GIL taken");
    state &s = *entry.owner;
    try {
        handles h = handles_for(s, device, context);
        py::object py_event = event || !s.in_order_events
                ? py::object(cl_handles::retained_event(event))
                : py::object(cl_handles::owned_event(end_of_call_marker(entry.call)));
        trace_mark("free: callable called");
        call(s.free_fn, as_int(buf), h.device, h.context, py_event);
        trace_mark("free: callable returned");
    } catch (py::error_already_set &e) {
        record("the allocator's free raised", raised(e));
    } catch (const std::exception &e) {
        record("the allocator's free failed", make_exception(PyExc_RuntimeError, e.what()));
    }
    entry.owner.reset(); // may be the last reference: under the GIL
    trace_mark("free: return to oneDNN");
}

// The in-order queue of the execute running on this thread, if any.
cl_command_queue in_order_queue_of_call() {
    if (!current_scope || !current_scope->stream || current_scope->stream->out_of_order)
        return nullptr;
    return dnnl::ocl_interop::get_command_queue(current_scope->stream->stream);
}

// For an allocator with in_order_events, freeing without an event: a marker
// (owned by the caller) on the in-order queue of the execute running on this
// thread, when that execute allocated the memory (so only its work, all
// enqueued on that queue by now, can still use it); else null.
cl_event end_of_call_marker(unsigned long long allocated_in) {
    if (!current_scope || current_scope->serial != allocated_in) return nullptr;
    cl_command_queue queue = in_order_queue_of_call();
    if (!queue) return nullptr;
    cl_event marker = nullptr;
    if (clEnqueueMarkerWithWaitList(queue, 0, nullptr, &marker) != CL_SUCCESS) return nullptr;
    return marker; // null as oneDNN passed: the allocator's rule for no event holds
}

// A host allocator: oneDNN asks it for CPU engines' memory, with the same
// contract (no check for a failed allocation), so a failure is recorded and
// the binding's own aligned host memory is used instead.
void *host_stand_in(std::shared_ptr<state> owner, size_t size, size_t alignment) {
    void *ptr = nullptr;
    size_t align = std::max(alignment, sizeof(void *));
    if (posix_memalign(&ptr, align, std::max<size_t>(size, 1)) != 0) return nullptr;
    add_live(nullptr, ptr, std::move(owner), true);
    return ptr;
}

void *host_allocate(size_t size, size_t alignment) {
    if (interpreter_finalizing()) return nullptr;
    py::gil_scoped_acquire gil;
    std::shared_ptr<state> s = scope_allocator(true);
    if (!s) {
        record("the graph allocator was called unexpectedly",
                make_exception(PyExc_RuntimeError,
                        "oneDNN asked for host memory outside any call of an engine with a "
                        "Python host allocator on this thread (no Python allocator was called)"));
        return host_stand_in(nullptr, size, alignment);
    }
    if (current_scope->interrupt) return host_stand_in(s, size, alignment);
    auto failed = [&](const char *what, py::object exc) {
        record(what, std::move(exc));
        return host_stand_in(s, size, alignment);
    };
    try {
        py::object result = call(s->malloc_fn, as_int(size), as_int(alignment));
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
        if (alignment > 1 && reinterpret_cast<uintptr_t>(ptr) % alignment != 0)
            return failed("the allocator's host_malloc failed",
                    refusal_after_give_back(
                            "host_malloc returned a pointer that is not aligned to the "
                            "requested "
                                    + std::to_string(alignment) + " bytes",
                            "host_free", [&] { call(s->free_fn, as_int(ptr)); }));
        if (!add_live(nullptr, ptr, s, false))
            return failed("the allocator's host_malloc failed",
                    make_exception(PyExc_ValueError,
                            "host_malloc returned a pointer that oneDNN holds already (handed "
                            "out before and not freed yet; it was not used, nor passed to "
                            "host_free)"));
        return ptr;
    } catch (py::error_already_set &e) {
        return failed("the allocator's host_malloc raised", raised(e));
    } catch (const std::exception &e) {
        return failed("the allocator's host_malloc failed",
                make_exception(PyExc_RuntimeError, e.what()));
    }
}

void host_deallocate(void *buf) {
    if (!buf || interpreter_finalizing()) return;
    py::gil_scoped_acquire gil;
    bool found = false;
    allocation entry = take_live(nullptr, buf, found);
    if (!found) return;
    if (entry.stand_in) { // ours, not the Python allocator's
        std::free(buf);
        return;
    }
    try {
        call(entry.owner->free_fn, as_int(buf));
    } catch (py::error_already_set &e) {
        record("the allocator's host_free raised", raised(e));
    } catch (const std::exception &e) {
        record("the allocator's host_free failed", make_exception(PyExc_RuntimeError, e.what()));
    }
    entry.owner.reset(); // may be the last reference: under the GIL
}

// The callables' state; `who` names the call in errors.
std::shared_ptr<state> make_state(py::object malloc_fn, py::object free_fn, bool host,
        bool in_order_events = false) {
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
    s->in_order_events = in_order_events;
    return s;
}

// ------------------------------------------------------------------- tracing

std::mutex trace_mutex;
std::vector<std::pair<const char *, long long>> trace_log;

} // namespace

std::atomic<bool> tracing {false};

void record_trace(const char *stage) {
    auto now = std::chrono::steady_clock::now().time_since_epoch();
    long long ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
    std::lock_guard<std::mutex> lock(trace_mutex);
    trace_log.emplace_back(stage, ns);
}

std::vector<std::pair<const char *, long long>> trace(bool on) {
    std::lock_guard<std::mutex> lock(trace_mutex);
    tracing.store(on);
    std::vector<std::pair<const char *, long long>> records;
    records.swap(trace_log);
    return records;
}

std::atomic<size_t> states {0};

state::state() {
    ++states;
}

state::~state() {
    --states;
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

namespace {
cl_context context_of(const engine_object &engine) {
    if (!engine.callbacks || engine.get_kind() != dnnl::engine::kind::gpu) return nullptr;
    return dnnl::ocl_interop::get_context(engine);
}
} // namespace

std::atomic<unsigned long long> calls {0};

call_scope::call_scope(const std::shared_ptr<void> &allocator, cl_context context)
    : allocator(&allocator), context(context), serial(++calls), outer(current_scope) {
    current_scope = this;
}
call_scope::call_scope(const engine_object &engine, const stream_object *stream)
    : call_scope(engine.callbacks, context_of(engine)) {
    this->stream = stream;
}
call_scope::~call_scope() {
    current_scope = outer;
}

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

allocator_object make(py::object malloc_fn, py::object free_fn, bool in_order_events) {
    auto s = make_state(std::move(malloc_fn), std::move(free_fn), false, in_order_events);
    return {dnnl::graph::ocl_interop::make_allocator(&allocate, &deallocate), s};
}

allocator_object make_host(py::object malloc_fn, py::object free_fn) {
    auto s = make_state(std::move(malloc_fn), std::move(free_fn), true);
    return {dnnl::graph::allocator(&host_allocate, &host_deallocate), s};
}

allocator_object make_caching_pool(std::shared_ptr<graph_pool::caching_pool> pool) {
    auto s = std::make_shared<state>();
    s->in_order_events = !pool->reuse_without_event();
    s->pool = std::move(pool);
    return {dnnl::graph::ocl_interop::make_allocator(&allocate, &deallocate), s};
}

allocator_object make_default() {
    return {dnnl::graph::allocator(), nullptr};
}

size_t live_allocators() {
    return states.load();
}

size_t live_allocations() {
    std::lock_guard<std::mutex> lock(live_mutex);
    return live.size();
}

namespace {
const std::shared_ptr<state> &callbacks_of(const allocator_object &allocator, bool host) {
    if (!allocator.callbacks)
        throw_invalid_argument("oneDNN's default allocator has no Python callables");
    if (allocator.callbacks->host != host)
        throw_invalid_argument(host ? "not a host allocator (it has OpenCL callables)"
                                    : "not an OpenCL allocator (it has host callables)");
    return allocator.callbacks;
}

// Runs `call` as a call of an engine of `context` whose allocator is `allocator`.
template <typename F>
void as_call_of(const std::shared_ptr<state> &allocator, cl_context context, F &&call) {
    fork_guard::check();
    std::shared_ptr<void> callbacks = allocator;
    call_scope scope(callbacks, context);
    run_in_scope(scope, [&] {
        call();
        return 0;
    });
}
} // namespace

void malloc_and_free(const allocator_object &allocator, size_t size, size_t alignment,
        cl_device_id device, cl_context context, size_t count) {
    as_call_of(callbacks_of(allocator, false), context, [&] {
        std::vector<void *> ptrs;
        for (size_t i = 0; i < count; ++i)
            ptrs.push_back(allocate(size, alignment, device, context));
        for (void *ptr : ptrs) deallocate(ptr, device, context, nullptr);
    });
}

void host_malloc_and_free(const allocator_object &allocator, size_t size, size_t alignment,
        size_t count) {
    as_call_of(callbacks_of(allocator, true), nullptr, [&] {
        std::vector<void *> ptrs;
        for (size_t i = 0; i < count; ++i) ptrs.push_back(host_allocate(size, alignment));
        for (void *ptr : ptrs) host_deallocate(ptr);
    });
}

} // namespace graph_allocator
} // namespace dnnl_ocl_interop
