// dnnl.ops calls run from C++: a plan Python decided (dnnl_ocl_interop/ops:
// the planners, _run for the first call of a signature) becomes a step (the
// cached primitive and how each argument is taken from an array), and a
// call of a known signature runs it without Python: the signature is read
// here, its bound call found, memory on each array found (or made by
// Python's _array_memory on a miss), the primitive executed after the
// arrays' pending events, and the result given the primitive's event.
//
// Shared state: the process-wide use clock and bound-call hit count
// (atomics); the Python helpers and tables set once at import
// (set_helpers, before any call), the tables read by one dict operation
// each with a reference of the caller's own (arrays/py_refs.hpp);
// everything else is per object (a step, a bound call: immutable once
// made, but for a step's use stamp, atomic), or the memories kept on an
// array (arrays/array_memories: its shelf's mutex). Calls keep the GIL
// where there is one (submitting only enqueues kernels: docs/api.md,
// Threads and the GIL); on a free-threaded Python threads run them at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

#include <CL/cl.h>
#include <pybind11/pybind11.h>

#include "core/objects.hpp"
#include "core/primitive_objects.hpp"
#include "oneapi/dnnl/dnnl.hpp"

namespace dnnl_ocl_interop {
namespace launches {

// When an ops cache entry was last used (a stamp of one process-wide clock),
// and whether it has left the cache: the cache (ops/_cache.py) evicts the
// entry of the oldest stamp, and a bound call of an evicted entry is
// planned again instead of run.
struct use {
    std::atomic<uint64_t> stamp {0};
    std::atomic<bool> evicted {false};
    void touch();
};

// One argument of a step, taken from an array.
struct operand_spec {
    int arg;
    pybind11::object name;  // for messages: "a", "post_ops[1]", ...
    pybind11::object token; // _array_memory.memory_key of the engine and descriptor
    pybind11::object facts; // _array_memory.facts of the descriptor (for Python's checks)
};

// An ops cache entry's primitive and how its arguments are taken from arrays.
struct step {
    pybind11::object primitive; // dnnl primitive (a primitive_object)
    const primitive_object *prim = nullptr;
    pybind11::object engine; // dnnl.engine
    const engine_object *engine_ptr = nullptr;
    std::vector<operand_spec> operands;
    // The destination: its argument, memory key, descriptor, and the array
    // a new result is (shape, byte strides, dtype).
    int dst_arg = 0;
    pybind11::object dst_token, dst_facts, dst_shape, dst_strides, dst_dtype;
    dnnl::memory::desc dst_desc;
    std::vector<int> in_place; // arguments oneDNN computes in place (out= may be them)
    pybind11::object op;       // the operation's name, for messages
    pybind11::object use_object;
    use *use_ptr = nullptr;
};

// The arrays of one execution of a step and what it makes of them.
struct arguments {
    std::vector<dnnl_exec_arg_t> args;
    std::vector<dnnl::memory> held; // the memories of `args`, held for the call
    std::vector<cl_event> deps;
};

// A step run on arrays given per call: which of the call's arrays each
// operand is, out= (or a new result), whose queue runs the call, and the
// scale factors given as numbers (memory made once).
struct bound_call {
    pybind11::object step_object;
    const step *s = nullptr;
    std::vector<Py_ssize_t> indexes;
    Py_ssize_t out = -1;
    Py_ssize_t holder = 0;
    std::vector<std::pair<int, pybind11::object>> scalars;
    Py_ssize_t needed = 0; // arrays a call must give

    // The call on `arrays`; with `ctx` None a bound call (its context found
    // by the holder's queue, a hit counted), which gives a null object when
    // it cannot run here (no context for the queue yet, its entry evicted):
    // the caller plans it.
    pybind11::object run(pybind11::handle arrays, pybind11::handle ctx_given) const;
};

// Memory for operand `op` on `array`: kept on it, or made by Python's
// helper, which names the operand in its errors.
dnnl::memory memory_for(PyObject *array, const operand_spec &op, const step &s);

// Memory for operand `op` on `array` (kept, or made by Python's helper,
// which names the operand in its errors), added to `into` with the array's
// pending events.
void take_operand(PyObject *array, const operand_spec &op, const step &s, arguments &into);

// A new result array for `s` on `queue` (made as Python's new_array makes
// it, with `holder`'s allocator), its memory made and kept on it, added to
// `into`.
pybind11::object new_result(const step &s, PyObject *holder, pybind11::handle queue,
        pybind11::handle ctx, arguments &into);

// Executes `prim` on `stream` with `into`: on an in-order stream after the
// events its queue does not order already (the binding's barrier makes it
// wait for them), on an out-of-order one after all; returns the primitive's
// event, or on an in-order stream a marker's enqueued after it (owned).
cl_event submit(const primitive_object &prim, const stream_object &stream, arguments &into);

// Appends `array`'s pending events (pyopencl Events) to `deps` (borrowed
// handles: the caller holds the array, which holds its events).
void add_events(PyObject *array, std::vector<cl_event> &deps);

// What submit() does before executing: `deps` narrowed to the events an
// in-order stream's queue does not order already, checked to be of the
// stream's context, and waited for by the binding's barrier where oneDNN
// needs it; they are to be given to the execute too.
void order_after(const stream_object &stream, std::vector<cl_event> &deps);

// Executes `prim` on `stream` with `args` after `deps` (recorded when
// profiling); oneDNN's event (owned), or null on an in-order stream.
cl_event execute(const primitive_object &prim, const stream_object &stream,
        const std::vector<dnnl_exec_arg_t> &args, const std::vector<cl_event> &deps);

// `event`, or on an in-order stream (null event) a marker's enqueued after
// everything before it (owned).
cl_event marker_after(const stream_object &stream, cl_event event);

// `array.events[:] = [event]`, the event (owned) wrapped as a pyopencl.Event.
void give_event(PyObject *array, cl_event event);

// pyopencl.array.Array (looked up once, kept for the process).
PyObject *pyopencl_array_type();

// The Python helpers and tables the calls use (set once, at import).
struct helpers {
    pybind11::object memory_of;      // (array, name, engine, facts, token) -> dnnl.memory
    pybind11::object overlap;        // (op, in_place, arg, name, array, out) -> None or raises
    pybind11::object new_array;      // (queue, cl_context, shape, dtype, allocator) -> array
    pybind11::object element_offset; // (array) -> int
    pybind11::object contexts;       // {cl_command_queue handle: ops context}
    pybind11::object bound;          // {signature: bound call}
};
const helpers &python_helpers();

void bind(pybind11::module_ &m);

} // namespace launches
} // namespace dnnl_ocl_interop
