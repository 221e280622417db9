#include "common/enum_caster.hpp" // first: see the header

#include "arrays/launches.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include <pybind11/stl.h>

#include "arrays/array_memories.hpp"
#include "arrays/arrays_bindings.hpp"
#include "arrays/py_names.hpp"
#include "arrays/py_refs.hpp"
#include "arrays/replays.hpp"
#include "common/cl_handles.hpp"
#include "common/errors.hpp"
#include "common/fork_guard.hpp"
#include "common/storage_checks.hpp"
#include "core/ocl_objects.hpp"
#include "core/profiling.hpp"
#include "oneapi/dnnl/dnnl_ocl.hpp"

namespace py = pybind11;
namespace oi = dnnl::ocl_interop;

namespace dnnl_ocl_interop {
namespace launches {
namespace {

std::atomic<uint64_t> use_clock {0};
// Whether this thread is capturing ops calls (ops/_capture.py): its calls
// are planned and run through Python's run, which records them, instead of
// by their bound calls.
thread_local bool capturing = false;
std::atomic<uint64_t> bound_hits {0};
#ifdef DNNL_OCL_INTEROP_TEST_HOOKS
// Executes submitted, and the dependencies they were given (after the
// in-order filter): what tests/test_ops.py checks of in-order chains.
std::atomic<uint64_t> submitted {0}, deps_given {0};
#endif

// Never destroyed: the Python objects it holds must not be released after
// the interpreter is gone (at the process's exit).
helpers &mutable_helpers() {
    static helpers *const h = new helpers();
    return *h;
}

using py_refs::attribute;

void add_events_of(PyObject *array, std::vector<cl_event> &deps) {
    py::object events = attribute(array, names().events);
    // A tuple of its items (one operation on pyopencl's list: another
    // thread may change it while this one reads), or of any sequence.
    py::object copy = py::reinterpret_steal<py::object>(PyList_Check(events.ptr())
                    ? PyList_AsTuple(events.ptr())
                    : PySequence_Tuple(events.ptr()));
    if (!copy) throw py::error_already_set();
    PyObject *seq = copy.ptr();
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject *event = PyTuple_GET_ITEM(seq, i);
        if (event == Py_None) continue;
        void *handle = PyLong_AsVoidPtr(attribute(event, names().int_ptr).ptr());
        if (!handle && PyErr_Occurred()) throw py::error_already_set();
        deps.push_back(static_cast<cl_event>(handle));
    }
}

// The events an in-order queue does not order already: of another queue
// and not complete. (Each is asked of the driver; ops' own markers and the
// arrays pyopencl wrote on the queue are of it.)
void keep_foreign(std::vector<cl_event> &deps, cl_command_queue queue) {
    auto ordered = [queue](cl_event event) {
        cl_command_queue of = nullptr;
        check_cl(clGetEventInfo(event, CL_EVENT_COMMAND_QUEUE, sizeof(of), &of, nullptr),
                "clGetEventInfo(CL_EVENT_COMMAND_QUEUE)");
        if (of == queue) return true;
        cl_int status = CL_QUEUED;
        check_cl(clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status,
                         nullptr),
                "clGetEventInfo(CL_EVENT_COMMAND_EXECUTION_STATUS)");
        return status == CL_COMPLETE;
    };
    deps.erase(std::remove_if(deps.begin(), deps.end(), ordered), deps.end());
}

cl_mem mem_of(PyObject *array) {
    return cl_handles::to_mem(attribute(array, names().base_data), "base_data");
}

// A step made from Python's entry (ops/_run.py, _entry).
step make_step(py::object primitive, py::object engine, py::list operands, py::tuple dst,
        std::vector<int> in_place, py::object op, py::object use_object) {
    step s;
    s.prim = &primitive.cast<const primitive_object &>();
    s.primitive = std::move(primitive);
    s.engine_ptr = &engine.cast<const engine_object &>();
    s.engine = std::move(engine);
    for (py::handle item : operands) {
        auto t = item.cast<py::tuple>();
        s.operands.push_back({t[0].cast<int>(), t[1], t[2], t[3]});
    }
    if (dst.size() != 6) throw_invalid_argument("dst: (arg, token, facts, shape, strides, dtype)");
    s.dst_arg = dst[0].cast<int>();
    s.dst_token = dst[1];
    s.dst_facts = dst[2];
    s.dst_desc = dst[2].attr("desc").cast<dnnl::memory::desc>();
    s.dst_shape = dst[3];
    s.dst_strides = dst[4];
    s.dst_dtype = dst[5];
    s.in_place = std::move(in_place);
    s.op = std::move(op);
    s.use_ptr = &use_object.cast<use &>();
    s.use_object = std::move(use_object);
    return s;
}

} // namespace

py::object bound_call::run(py::handle arrays_object, py::handle ctx_given) const {
    PyObject *seq = arrays_object.ptr();
    if (!PyList_Check(seq) && !PyTuple_Check(seq))
        throw_type_error("arrays", "a list or tuple", arrays_object);
    if (PySequence_Fast_GET_SIZE(seq) < needed)
        throw_invalid_argument("arrays: " + std::to_string(needed) + " needed");
    PyObject **items = PySequence_Fast_ITEMS(seq);
    const auto &n = names();
    PyObject *holder_array = items[holder];
    py::object queue = attribute(holder_array, n.queue);
    py::object ctx;
    if (ctx_given.is_none()) {
        if (queue.is_none()) return {};
        ctx = py_refs::dict_get(python_helpers().contexts.ptr(),
                attribute(queue.ptr(), n.int_ptr).ptr());
        if (!ctx) return {};
        if (attribute(ctx.ptr(), n.engine).ptr() != s->engine.ptr()
                || s->use_ptr->evicted.load(std::memory_order_relaxed))
            return {};
        s->use_ptr->touch();
        bound_hits.fetch_add(1, std::memory_order_relaxed);
    } else {
        ctx = py::reinterpret_borrow<py::object>(ctx_given);
    }
    fork_guard::check();
    py::object stream_py = attribute(ctx.ptr(), n.stream);
    const auto &stream = stream_py.cast<const stream_object &>();
    arguments call;
    call.args.reserve(s->operands.size() + 1 + scalars.size());
    for (size_t i = 0; i < s->operands.size(); ++i)
        take_operand(items[indexes[i]], s->operands[i], *s, call);
    py::object result;
    if (out >= 0) {
        PyObject *out_array = items[out];
        operand_spec dst {s->dst_arg, py::str("out"), s->dst_token, s->dst_facts};
        take_operand(out_array, dst, *s, call);
        // out= sharing a cl_mem with an operand (found by comparing roots,
        // kept on each array), refused unless oneDNN computes in place
        // there (Python's overlap decides, from the bytes each spans).
        uintptr_t root = array_memories::storage_of(out_array).root;
        for (size_t i = 0; i < s->operands.size(); ++i) {
            PyObject *array = items[indexes[i]];
            if (array_memories::storage_of(array).root != root) continue;
            const operand_spec &op = s->operands[i];
            python_helpers().overlap(s->op, py::cast(s->in_place), op.arg, op.name,
                    py::handle(array), py::handle(out_array));
        }
        result = py::reinterpret_borrow<py::object>(out_array);
    } else {
        result = new_result(*s, holder_array, queue, ctx, call);
    }
    for (const auto &scalar : scalars) {
        const auto &memory = scalar.second.cast<const memory_object &>().memory;
        call.args.push_back({scalar.first, memory.get()});
    }
    give_event(result.ptr(), submit(*s->prim, stream, call));
    return result;
}

namespace {

// What a call's arguments say of it (see signature()): false where a value
// has no part in a signature.
struct signer {
    PyObject *array_type;
    py::list key;
    py::list arrays;
    std::vector<PyObject *> seen; // the arrays, by identity

    bool add(PyObject *values) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(values);
        PyObject **items = PySequence_Fast_ITEMS(values);
        for (Py_ssize_t i = 0; i < n; ++i)
            if (!add_one(items[i])) return false;
        return true;
    }

    bool add_one(PyObject *value) {
        PyTypeObject *kind = Py_TYPE(value);
        auto append = [this](py::handle item) {
            if (PyList_Append(key.ptr(), item.ptr())) throw py::error_already_set();
        };
        if (reinterpret_cast<PyObject *>(kind) == array_type) {
            auto found = std::find(seen.begin(), seen.end(), value);
            if (found != seen.end()) {
                append(py::int_(found - seen.begin()));
                return true;
            }
            seen.push_back(value);
            arrays.append(py::handle(value));
            const auto &n = names();
            py::object offset = attribute(value, n.offset);
            int nonzero = PyObject_IsTrue(offset.ptr());
            if (nonzero < 0) throw py::error_already_set();
            // (a view's offset matters only as its sub-memory offset: 0
            // unless it starts between two aligned bytes)
            if (nonzero) offset = python_helpers().element_offset(py::handle(value));
            py::object queue = attribute(value, n.queue);
            append(py::make_tuple(attribute(value, n.shape), attribute(value, n.strides),
                    attribute(value, n.dtype), offset,
                    queue.is_none() ? queue : attribute(queue.ptr(), n.int_ptr)));
            return true;
        }
        if (kind == &PyLong_Type || kind == &PyFloat_Type || kind == &PyBool_Type
                || kind == &PyUnicode_Type || value == Py_None || kind == &PyType_Type) {
            append(py::handle(reinterpret_cast<PyObject *>(kind)));
            append(py::handle(value));
            return true;
        }
        if (kind == &PyTuple_Type) {
            append(py::make_tuple(py::handle(reinterpret_cast<PyObject *>(kind)),
                    PyTuple_GET_SIZE(value)));
            return add(value);
        }
        if (kind == &PyList_Type) { // read as a tuple of its items: one operation on the list
            auto items = py::reinterpret_steal<py::object>(PyList_AsTuple(value));
            if (!items) throw py::error_already_set();
            append(py::make_tuple(py::handle(reinterpret_cast<PyObject *>(kind)),
                    PyTuple_GET_SIZE(items.ptr())));
            return add(items.ptr());
        }
        static PyObject *const enum_type
                = py::object(py::module_::import("enum").attr("Enum")).release().ptr();
        static PyObject *const name_attribute = PyUnicode_InternFromString("_name_");
        if (PyType_IsSubtype(kind, reinterpret_cast<PyTypeObject *>(enum_type))) {
            append(py::handle(reinterpret_cast<PyObject *>(kind)));
            append(attribute(value, name_attribute));
            return true;
        }
        static PyObject *const numpy_types = [] {
            py::module_ np = py::module_::import("numpy");
            return py::make_tuple(np.attr("dtype"), np.attr("generic")).release().ptr();
        }();
        int numpy_value = PyObject_IsInstance(value, numpy_types);
        if (numpy_value < 0) throw py::error_already_set();
        if (numpy_value) {
            append(py::handle(reinterpret_cast<PyObject *>(kind)));
            append(py::handle(value));
            return true;
        }
        return false;
    }
};

// (signature, arrays) of a call, or None.
py::object signature(py::handle planner, py::handle args, py::handle kwargs) {
    signer sign {pyopencl_array_type(), py::list(), py::list(), {}};
    sign.key.append(planner);
    py::object values = py::reinterpret_borrow<py::object>(args);
    bool has_kwargs = !kwargs.is_none() && PyDict_Size(kwargs.ptr()) > 0;
    if (has_kwargs) {
        py::tuple names_of(PyDict_Size(kwargs.ptr()));
        py::list all = py::reinterpret_steal<py::list>(PySequence_List(args.ptr()));
        if (!all) throw py::error_already_set();
        PyObject *name, *value;
        Py_ssize_t pos = 0, i = 0;
        while (PyDict_Next(kwargs.ptr(), &pos, &name, &value)) {
            names_of[i++] = py::handle(name);
            all.append(py::handle(value));
        }
        sign.key.append(names_of);
        values = all;
    }
    if (!PyTuple_Check(values.ptr()) && !PyList_Check(values.ptr()))
        throw_type_error("args", "a tuple", values);
    if (!sign.add(values.ptr())) return py::none();
    return py::make_tuple(py::reinterpret_steal<py::tuple>(PyList_AsTuple(sign.key.ptr())),
            sign.arrays);
}

} // namespace

PyObject *pyopencl_array_type() {
    static PyObject *const type
            = py::object(py::module_::import("pyopencl.array").attr("Array")).release().ptr();
    return type;
}

void use::touch() {
    stamp.store(use_clock.fetch_add(1, std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

const helpers &python_helpers() {
    return mutable_helpers();
}

dnnl::memory memory_for(PyObject *array, const operand_spec &op, const step &s) {
    dnnl::memory memory;
    if (!array_memories::find(array, op.token.ptr(), s.engine.ptr(), memory)) {
        py::object made = python_helpers().memory_of(py::handle(array), op.name, s.engine, op.facts,
                op.token);
        memory = made.cast<const memory_object &>().memory;
    }
    return memory;
}

void take_operand(PyObject *array, const operand_spec &op, const step &s, arguments &into) {
    dnnl::memory memory = memory_for(array, op, s);
    into.args.push_back({op.arg, memory.get()});
    into.held.push_back(std::move(memory));
    add_events_of(array, into.deps);
}

py::object new_result(const step &s, PyObject *holder, py::handle queue, py::handle ctx,
        arguments &into) {
    const auto &n = names();
    py::object array = python_helpers().new_array(queue, attribute(ctx.ptr(), n.cl_context),
            s.dst_shape, s.dst_dtype, attribute(holder, n.allocator));
    cl_mem mem = mem_of(array.ptr());
    check_user_handle(s.dst_desc, *s.engine_ptr, /*usm=*/false, mem, 0, /*known_mem_object=*/true);
    dnnl::memory memory
            = oi::make_memory(s.dst_desc, *s.engine_ptr, oi::memory_kind::buffer, {mem});
    array_memories::keep_made(array, s.dst_token, s.engine, memory);
    into.args.push_back({s.dst_arg, memory.get()});
    into.held.push_back(std::move(memory));
    return array;
}

void add_events(PyObject *array, std::vector<cl_event> &deps) {
    add_events_of(array, deps);
}

void order_after(const stream_object &stream, std::vector<cl_event> &deps) {
    if (!stream.out_of_order && !deps.empty())
        keep_foreign(deps, oi::get_command_queue(stream.stream));
    check_same_context(deps, stream.engine);
    wait_in_order(stream, deps);
}

cl_event execute(const primitive_object &prim, const stream_object &stream,
        const std::vector<dnnl_exec_arg_t> &args, const std::vector<cl_event> &deps) {
#ifdef DNNL_OCL_INTEROP_TEST_HOOKS
    submitted.fetch_add(1);
    deps_given.fetch_add(deps.size());
#endif
    cl_event event = nullptr;
    // The GIL is kept, as in primitive.execute (core/primitive.cpp).
    auto run = [&] {
        dnnl::error::wrap_c_api(dnnl_ocl_interop_primitive_execute(prim.primitive.get(),
                                        stream.stream.get(), static_cast<int>(args.size()),
                                        args.data(), deps.empty() ? nullptr : deps.data(),
                                        static_cast<int>(deps.size()), &event),
                "could not execute a primitive");
        return 0;
    };
    if (profiling::active())
        profiling::recorded(stream, prim.subject(), run);
    else
        run();
    return event;
}

cl_event marker_after(const stream_object &stream, cl_event event) {
    if (event) return event;
    cl_event marker = nullptr; // in-order: a marker stands for what was enqueued before it
    check_cl(clEnqueueMarkerWithWaitList(oi::get_command_queue(stream.stream), 0, nullptr, &marker),
            "clEnqueueMarkerWithWaitList");
    return marker;
}

cl_event submit(const primitive_object &prim, const stream_object &stream, arguments &into) {
    order_after(stream, into.deps);
    return marker_after(stream, execute(prim, stream, into.args, into.deps));
}

void give_event(PyObject *array, cl_event event) {
    py::object wrapped = cl_handles::owned_event(event);
    py::object events = attribute(array, names().events);
    // The primitive waited for the array's events: they are done when it
    // is. One event, so pyopencl's add_event never needs to wait.
    py::list one(1);
    one[0] = wrapped;
    if (PyList_Check(events.ptr())) {
        if (PyList_SetSlice(events.ptr(), 0, PY_SSIZE_T_MAX, one.ptr()))
            throw py::error_already_set();
    } else {
        if (PyObject_SetAttr(array, names().events, one.ptr())) throw py::error_already_set();
    }
}

void bind(py::module_ &m) {
    py::class_<use>(m, "use",
            "When a dnnl.ops cache entry was last used (a stamp of one process-wide clock) "
            "and whether it has left the cache.")
            .def(py::init<>())
            .def("touch", &use::touch, "Stamp it now.")
            .def_property_readonly("stamp", [](const use &u) { return u.stamp.load(); })
            .def("evict", [](use &u) { u.evicted.store(true); },
                    "Mark it evicted: its bound calls are planned again.")
            .def_property_readonly("evicted", [](const use &u) { return u.evicted.load(); });
    m.def("bound_hits", [] { return bound_hits.load(); },
            "Calls run by their binding since the last reset_bound_hits().");
    m.def("reset_bound_hits", [] { bound_hits.store(0); });
#ifdef DNNL_OCL_INTEROP_TEST_HOOKS // test-only entry point, not in released wheels
    m.def("_submitted", [] { return py::make_tuple(submitted.load(), deps_given.load()); },
            "(executes submitted by launches, the dependencies they were given in all).");
#endif

    py::class_<step>(m, "step",
            "A dnnl.ops cache entry's primitive and how its arguments are taken from arrays.")
            .def(py::init(&make_step), py::arg("primitive"), py::arg("engine"), py::arg("operands"),
                    py::arg("dst"), py::arg("in_place"), py::arg("op"), py::arg("use"),
                    "operands: [(arg, name, token, facts)]; dst: (arg, token, facts, shape, "
                    "byte strides, dtype) of a new result.")
            .def_property_readonly("use", [](const step &s) {
        return s.use_object;
    }).def_property_readonly("engine", [](const step &s) { return s.engine; });

    py::class_<bound_call>(m, "bound_call",
            "A step run on a call's arrays (operands by index, out= or a new result, the "
            "array whose queue runs it, scale factors given as numbers).")
            .def(py::init([](py::object step_object, std::vector<Py_ssize_t> indexes,
                                  Py_ssize_t out, Py_ssize_t holder, py::list scalars) {
        bound_call b;
        b.s = &step_object.cast<const step &>();
        b.step_object = std::move(step_object);
        if (indexes.size() != b.s->operands.size())
            throw_invalid_argument("indexes: one per operand of the step");
        b.indexes = std::move(indexes);
        b.out = out;
        b.holder = holder;
        for (py::handle item : scalars) {
            auto t = item.cast<py::tuple>();
            t[1].cast<const memory_object &>(); // checked here, not per call
            b.scalars.emplace_back(t[0].cast<int>(), t[1]);
        }
        Py_ssize_t most = std::max(out, holder);
        for (Py_ssize_t i : b.indexes) most = std::max(most, i);
        if (holder < 0) throw_invalid_argument("holder: an index");
        b.needed = most + 1;
        return b;
    }),
                    py::arg("step"), py::arg("indexes"), py::arg("out"), py::arg("holder"),
                    py::arg("scalars"))
            .def("__call__", &bound_call::run, py::arg("arrays"), py::arg("ctx") = py::none(),
                    "Run on `arrays`: with `ctx` (an ops context) as planned; without, as a "
                    "bound call (None when it cannot run here: plan it).")
            .def_property_readonly("step", [](const bound_call &b) { return b.step_object; })
            .def_property_readonly("indexes", [](const bound_call &b) { return b.indexes; },
                    "Which of a call's arrays each operand of the step is.")
            .def_property_readonly("out", [](const bound_call &b) { return b.out; },
                    "Which of a call's arrays out= is (-1: a new result).");

    m.def("set_helpers",
            [](py::object memory_of, py::object overlap, py::object new_array,
                    py::object element_offset, py::dict contexts, py::dict bound) {
        helpers &h = mutable_helpers();
        h.memory_of = std::move(memory_of);
        h.overlap = std::move(overlap);
        h.new_array = std::move(new_array);
        h.element_offset = std::move(element_offset);
        h.contexts = std::move(contexts);
        h.bound = std::move(bound);
    },
            py::arg("memory_of"), py::arg("overlap"), py::arg("new_array"),
            py::arg("element_offset"), py::arg("contexts"), py::arg("bound"),
            "The Python helpers and tables of dnnl.ops the calls use (set once, at import).");
    m.def("set_capturing", [](bool on) { capturing = on; }, py::arg("on"),
            "Whether this thread's ops calls are planned (and recorded by ops/_run.py) "
            "instead of run by their bound calls.");
    m.def("signature", &signature, py::arg("planner"), py::arg("args"), py::arg("kwargs"),
            "(signature, arrays) of a call of `planner`, or None if it has none: see "
            "dnnl_ocl_interop/ops/_call.py.");
    m.def("dispatch",
            [](py::handle planner, py::handle args, py::handle kwargs) -> py::object {
        py::object signed_call = signature(planner, args, kwargs);
        if (signed_call.is_none() || capturing) return signed_call;
        PyObject *key = PyTuple_GET_ITEM(signed_call.ptr(), 0);
        py::object keep = py_refs::dict_get(python_helpers().bound.ptr(),
                key); // ours: another thread may drop it
        if (!keep) return signed_call;
        py::object result = keep.cast<const bound_call &>().run(
                PyTuple_GET_ITEM(signed_call.ptr(), 1), py::none());
        return result ? result : signed_call;
    }, py::arg("planner"), py::arg("args"), py::arg("kwargs"),
            "Run the bound call of this call's signature: its result; or (signature, arrays) "
            "when none runs it (plan it), or None when the call has no signature.");
}

} // namespace launches
void bind_arrays(py::module_ &m) {
    array_memories::bind(m);
    launches::bind(m);
    replays::bind(m);
}

} // namespace dnnl_ocl_interop
