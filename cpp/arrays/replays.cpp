#include "common/enum_caster.hpp" // first: see the header

#include "arrays/replays.hpp"

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <pybind11/stl.h>

#include "arrays/array_memories.hpp"
#include "arrays/launches.hpp"
#include "arrays/py_names.hpp"
#include "arrays/py_refs.hpp"
#include "common/errors.hpp"
#include "common/fork_guard.hpp"

namespace py = pybind11;

namespace dnnl_ocl_interop {
namespace replays {
namespace {

using launches::bound_call;
using launches::operand_spec;
using launches::step;
using py_refs::attribute;

uintptr_t handle_of(PyObject *object) { // a pyopencl object's int_ptr
    void *handle = PyLong_AsVoidPtr(attribute(object, names().int_ptr).ptr());
    if (!handle && PyErr_Occurred()) throw py::error_already_set();
    return reinterpret_cast<uintptr_t>(handle);
}

// One captured launch: its bound call, and which slot of the program each
// of its operands and its destination is.
struct launch {
    py::object bound_object;
    const bound_call *bound = nullptr;
    std::vector<Py_ssize_t> operand_slots;
    Py_ssize_t dst_slot = 0;
    operand_spec dst; // the destination taken as an operand (its memory key and facts)
};

// Where a replay puts an input's memory: step, position in its arguments,
// and the memory found for it this replay.
struct input_use {
    size_t step_index, position;
    Py_ssize_t slot;
    const operand_spec *spec;
};

// What a program keeps for one queue (see the header).
struct queue_set {
    py::object queue, ctx, stream_py;
    const stream_object *stream = nullptr;
    uintptr_t cl_context = 0;
    std::vector<py::object> arrays;                 // per slot; None for the inputs
    std::vector<std::vector<dnnl_exec_arg_t>> args; // per step; inputs' places empty
    std::vector<input_use> uses;                    // sorted by step
    std::vector<bool> takes_input;                  // per step
    std::vector<dnnl::memory> held;
    std::vector<uintptr_t> roots; // storage of the results made inside
    // One replay at a time on these results, from reading the events it
    // waits for to giving its own (waited for with the GIL released).
    std::mutex order;
    bool first = true;       // no replay yet: wait for the results' own pending work
    cl_event last = nullptr; // out-of-order: the last replay's event (owned)
    ~queue_set() {
        if (last) clReleaseEvent(last);
    }
};

struct program {
    std::vector<launch> launches;
    Py_ssize_t inputs = 0, slots = 0;
    std::vector<py::object> input_facts; // per input: (shape, strides, dtype, element offset)
    std::vector<Py_ssize_t> constants, outputs;
    std::vector<Py_ssize_t> written; // inputs and captured arrays a launch writes (out=)
    bool writes_inputs = false;
    bool single = true;
    // Python's (ops/_capture.py): refuse(program, reason, index, array)
    // raises naming the input; prepare(program, queue) -> (ctx, arrays of
    // the slots) for a queue without a set.
    py::object refuse, prepare;
    std::mutex mutex;
    std::unordered_map<uintptr_t, std::shared_ptr<queue_set>> sets;

    py::object replay(py::handle self, py::args args);
    std::shared_ptr<queue_set> set_for(py::handle self, PyObject *queue);
    std::shared_ptr<queue_set> build(py::object queue, py::object ctx, py::list arrays) const;
    [[noreturn]] void refused(py::handle self, const char *reason, Py_ssize_t index,
            PyObject *array) const;
};

void program::refused(py::handle self, const char *reason, Py_ssize_t index,
        PyObject *array) const {
    refuse(self, reason, index, py::handle(array));
    throw_invalid_argument(std::string("inputs[") + std::to_string(index) + "]: " + reason);
}

std::shared_ptr<queue_set> program::build(py::object queue, py::object ctx, py::list arrays) const {
    if (static_cast<Py_ssize_t>(arrays.size()) != slots)
        throw_invalid_argument("arrays: " + std::to_string(slots) + " needed");
    auto set = std::make_shared<queue_set>();
    const auto &n = names();
    set->queue = std::move(queue);
    set->stream_py = attribute(ctx.ptr(), n.stream);
    set->stream = &set->stream_py.cast<const stream_object &>();
    set->cl_context = handle_of(attribute(ctx.ptr(), n.cl_context).ptr());
    set->ctx = std::move(ctx);
    for (py::handle a : arrays) set->arrays.push_back(py::reinterpret_borrow<py::object>(a));
    auto add = [&](size_t k, Py_ssize_t slot, const operand_spec &spec, const step &s,
                       std::vector<dnnl_exec_arg_t> &args) {
        if (slot < inputs) {
            set->uses.push_back({k, args.size(), slot, &spec});
            args.push_back({spec.arg, nullptr});
            return;
        }
        dnnl::memory memory = launches::memory_for(set->arrays[slot].ptr(), spec, s);
        args.push_back({spec.arg, memory.get()});
        set->held.push_back(std::move(memory));
    };
    for (size_t k = 0; k < launches.size(); ++k) {
        const launch &l = launches[k];
        const step &s = *l.bound->s;
        std::vector<dnnl_exec_arg_t> args;
        for (size_t i = 0; i < s.operands.size(); ++i)
            add(k, l.operand_slots[i], s.operands[i], s, args);
        add(k, l.dst_slot, l.dst, s, args);
        for (const auto &scalar : l.bound->scalars)
            args.push_back(
                    {scalar.first, scalar.second.cast<const memory_object &>().memory.get()});
        set->args.push_back(std::move(args));
    }
    set->takes_input.assign(launches.size(), false);
    for (const auto &use : set->uses) set->takes_input[use.step_index] = true;
    std::vector<bool> constant(slots, false);
    for (Py_ssize_t slot : constants) constant[slot] = true;
    for (Py_ssize_t slot = inputs; slot < slots; ++slot)
        if (!constant[slot])
            set->roots.push_back(array_memories::storage_of(set->arrays[slot]).root);
    return set;
}

std::shared_ptr<queue_set> program::set_for(py::handle self, PyObject *queue) {
    uintptr_t handle = handle_of(queue);
    {
        std::lock_guard<std::mutex> lock(mutex);
        auto found = sets.find(handle);
        if (found != sets.end()) return found->second;
    }
    py::tuple made = prepare(self, py::handle(queue));
    auto set = build(py::reinterpret_borrow<py::object>(queue), made[0], made[1]);
    std::shared_ptr<queue_set> kept;
    {
        std::lock_guard<std::mutex> lock(mutex);
        auto found = sets.find(handle);
        if (found != sets.end())
            kept = found->second; // another thread's first (ours goes after the unlock)
        else
            kept = sets.emplace(handle, set).first->second;
    }
    return kept;
}

// Whether `a` and `b` are equal (Python's ==).
bool equal(PyObject *a, PyObject *b) {
    if (a == b) return true;
    int same = PyObject_RichCompareBool(a, b, Py_EQ);
    if (same < 0) throw py::error_already_set();
    return same == 1;
}

py::object program::replay(py::handle self, py::args args) {
    PyObject *given = args.ptr();
    Py_ssize_t count = PyTuple_GET_SIZE(given);
    if (count != inputs) refused(self, "count", count, Py_None);
    PyObject **in = &PyTuple_GET_ITEM(given, 0);
    const auto &n = names();
    fork_guard::check();
    for (Py_ssize_t i = 0; i < inputs; ++i) {
        PyObject *a = in[i];
        if (Py_TYPE(a) != reinterpret_cast<PyTypeObject *>(launches::pyopencl_array_type())) {
            int is_array = PyObject_IsInstance(a, launches::pyopencl_array_type());
            if (is_array < 0) throw py::error_already_set();
            if (!is_array) refused(self, "type", i, a);
        }
        PyObject *facts = input_facts[i].ptr();
        if (!equal(attribute(a, n.shape).ptr(), PyTuple_GET_ITEM(facts, 0))
                || !equal(attribute(a, n.strides).ptr(), PyTuple_GET_ITEM(facts, 1))
                || !equal(attribute(a, n.dtype).ptr(), PyTuple_GET_ITEM(facts, 2)))
            refused(self, "layout", i, a);
        py::object offset = attribute(a, n.offset);
        int nonzero = PyObject_IsTrue(offset.ptr());
        if (nonzero < 0) throw py::error_already_set();
        if (nonzero) offset = launches::python_helpers().element_offset(py::handle(a));
        if (!equal(offset.ptr(), PyTuple_GET_ITEM(facts, 3))) refused(self, "layout", i, a);
    }
    py::object queue = attribute(in[0], n.queue);
    if (queue.is_none()) refused(self, "queue", 0, in[0]);
    std::shared_ptr<queue_set> set = set_for(self, queue.ptr());
    const stream_object &stream = *set->stream;
    std::vector<uintptr_t> input_roots;
    for (Py_ssize_t i = 0; i < inputs; ++i) {
        PyObject *a = in[i];
        if (i > 0 && handle_of(attribute(a, n.context).ptr()) != set->cl_context)
            refused(self, "context", i, a);
        uintptr_t root = array_memories::storage_of(py::handle(a)).root;
        if (std::find(set->roots.begin(), set->roots.end(), root) != set->roots.end())
            refused(self, "aliases", i, a);
        // (a launch writes an input: another input may not share its storage,
        // as an eager call's out= may not share an operand's)
        if (writes_inputs
                && std::find(input_roots.begin(), input_roots.end(), root) != input_roots.end())
            refused(self, "aliases_input", i, a);
        input_roots.push_back(root);
    }
    std::vector<dnnl::memory> memories; // the inputs' (made by Python on a miss)
    memories.reserve(set->uses.size());
    for (const auto &use : set->uses) {
        const launch &l = launches[use.step_index];
        memories.push_back(launches::memory_for(in[use.slot], *use.spec, *l.bound->s));
    }

    std::unique_lock<std::mutex> one_at_a_time(set->order, std::try_to_lock);
    if (!one_at_a_time.owns_lock()) { // another replay on these results: wait without the GIL
        py::gil_scoped_release unlocked;
        one_at_a_time.lock();
    }
    // What the first launch waits for, each retained while it is used:
    // another thread may drop an array's events meanwhile.
    std::vector<cl_event> deps;
    for (Py_ssize_t i = 0; i < inputs; ++i) launches::add_events(in[i], deps);
    for (Py_ssize_t slot : constants) // captured by reference: their pending work first
        launches::add_events(set->arrays[slot].ptr(), deps);
    if (set->first) // the capture's (or the allocation's) work on the results
        for (Py_ssize_t slot = inputs; slot < slots; ++slot)
            launches::add_events(set->arrays[slot].ptr(), deps);
    if (stream.out_of_order && set->last) // the last replay wrote the results this one writes
        deps.push_back(set->last);
    for (cl_event event : deps) clRetainEvent(event);
    struct release_all {
        std::vector<cl_event> events;
        ~release_all() {
            for (cl_event event : events) clReleaseEvent(event);
        }
    } retained {deps};

    cl_event previous = nullptr; // owned: the last launch's event (out-of-order)
    struct release_on_exit {
        cl_event &event;
        ~release_on_exit() {
            if (event) clReleaseEvent(event);
        }
    } release_previous {previous};
    launches::order_after(stream, deps);
    std::vector<dnnl_exec_arg_t> patched;
    std::vector<cl_event> after;
    size_t next_use = 0;
    try {
        for (size_t k = 0; k < launches.size(); ++k) {
            const std::vector<dnnl_exec_arg_t> *args = &set->args[k];
            if (set->takes_input[k]) {
                patched = *args;
                for (; next_use < set->uses.size() && set->uses[next_use].step_index == k;
                        ++next_use)
                    patched[set->uses[next_use].position].memory = memories[next_use].get();
                args = &patched;
            }
            // The first launch after the inputs' and captured arrays' events;
            // on an out-of-order queue each later one after the one before.
            const std::vector<cl_event> *wait = &after;
            after.clear();
            if (k == 0)
                wait = &deps;
            else if (stream.out_of_order && previous)
                after.push_back(previous);
            cl_event event = launches::execute(*launches[k].bound->s->prim, stream, *args, *wait);
            if (stream.out_of_order) {
                if (previous) clReleaseEvent(previous);
                previous = event;
            }
        }
    } catch (...) {
        // what was launched is still the last work on these results
        if (stream.out_of_order && previous) {
            if (set->last) clReleaseEvent(set->last);
            set->last = previous;
            previous = nullptr;
        }
        throw;
    }
    cl_event done = launches::marker_after(stream, previous);
    previous = nullptr; // `done` owns it now (or is the marker)
    if (stream.out_of_order) {
        clRetainEvent(done);
        if (set->last) clReleaseEvent(set->last);
        set->last = done;
    }
    set->first = false;
    // The outputs, and the inputs and captured arrays a launch wrote, wait
    // for the replay from now on: each gets a reference to its event.
    size_t receivers = outputs.size() + written.size();
    for (size_t r = 1; r < receivers; ++r) clRetainEvent(done);
    py::tuple results(outputs.size());
    for (size_t o = 0; o < outputs.size(); ++o) {
        PyObject *array = set->arrays[outputs[o]].ptr();
        launches::give_event(array, done);
        results[o] = py::handle(array);
    }
    for (Py_ssize_t slot : written)
        launches::give_event(slot < inputs ? in[slot] : set->arrays[slot].ptr(), done);
    one_at_a_time.unlock();
    if (single) return results[0];
    return std::move(results);
}

} // namespace

void bind(py::module_ &m) {
    py::class_<program>(m, "replay_program", py::dynamic_attr(),
            "A captured sequence of dnnl.ops launches, replayed in one call (ops/_capture.py "
            "makes it; see cpp/arrays/replays.hpp).")
            .def(py::init([](py::list launches_given, Py_ssize_t inputs, py::list input_facts,
                                  Py_ssize_t slots, std::vector<Py_ssize_t> constants,
                                  std::vector<Py_ssize_t> outputs, bool single, py::object refuse,
                                  py::object prepare) {
        auto p = std::make_unique<program>();
        p->inputs = inputs;
        p->slots = slots;
        if (inputs < 1 || static_cast<Py_ssize_t>(input_facts.size()) != inputs)
            throw_invalid_argument("input_facts: one (shape, strides, dtype, offset) per input");
        for (py::handle f : input_facts) {
            auto t = f.cast<py::tuple>();
            if (t.size() != 4)
                throw_invalid_argument("input_facts: (shape, strides, dtype, offset)");
            p->input_facts.push_back(std::move(t));
        }
        auto check_slot = [&](Py_ssize_t slot) {
            if (slot < 0 || slot >= slots) throw_invalid_argument("a slot out of range");
        };
        for (py::handle item : launches_given) {
            auto t = item.cast<py::tuple>();
            launch l;
            l.bound = &t[0].cast<const bound_call &>();
            l.bound_object = t[0];
            l.operand_slots = t[1].cast<std::vector<Py_ssize_t>>();
            l.dst_slot = t[2].cast<Py_ssize_t>();
            const step &s = *l.bound->s;
            if (l.operand_slots.size() != s.operands.size())
                throw_invalid_argument("a launch's slots: one per operand of its step");
            for (Py_ssize_t slot : l.operand_slots) check_slot(slot);
            check_slot(l.dst_slot);
            l.dst = {s.dst_arg, py::str("out"), s.dst_token, s.dst_facts};
            p->launches.push_back(std::move(l));
        }
        if (p->launches.empty()) throw_invalid_argument("launches: none were captured");
        for (Py_ssize_t slot : constants) check_slot(slot);
        for (Py_ssize_t slot : outputs) check_slot(slot);
        if (outputs.empty() || (single && outputs.size() != 1))
            throw_invalid_argument("outputs: one, or any number when not single");
        std::vector<bool> is_constant(slots, false), is_output(slots, false), seen(slots, false);
        for (Py_ssize_t slot : constants) is_constant[slot] = true;
        for (Py_ssize_t slot : outputs) is_output[slot] = true;
        for (const launch &l : p->launches) {
            Py_ssize_t slot = l.dst_slot;
            if ((slot < inputs || is_constant[slot]) && !is_output[slot] && !seen[slot]) {
                seen[slot] = true;
                p->written.push_back(slot);
            }
            if (slot < inputs) p->writes_inputs = true;
        }
        p->constants = std::move(constants);
        p->outputs = std::move(outputs);
        p->single = single;
        p->refuse = std::move(refuse);
        p->prepare = std::move(prepare);
        return p;
    }),
                    py::arg("launches"), py::arg("inputs"), py::arg("input_facts"),
                    py::arg("slots"), py::arg("constants"), py::arg("outputs"), py::arg("single"),
                    py::arg("refuse"), py::arg("prepare"),
                    "launches: [(bound call, operand slots, destination slot)]; slots: inputs "
                    "first, then the arrays captured by reference and the results made inside.")
            .def("__call__",
                    [](py::handle self, py::args args) {
        return self.cast<program &>().replay(self, std::move(args));
    },
                    "Replay on new inputs (arrays of the captured shapes, strides, dtypes and "
                    "context): the outputs, on the first input's queue.")
            .def("_queues",
                    [](program &p) {
        std::lock_guard<std::mutex> lock(p.mutex);
        return p.sets.size();
    }, "How many queues the program keeps results on.")
            .def("_release",
                    [](program &p) {
        std::unordered_map<uintptr_t, std::shared_ptr<queue_set>> gone;
        {
            std::lock_guard<std::mutex> lock(p.mutex);
            gone.swap(p.sets);
        }
        // An out-of-order queue's last replay may still be writing results
        // that a new set on that queue (the capture's arrays) writes again.
        py::gil_scoped_release unlocked;
        for (auto &entry : gone) {
            std::lock_guard<std::mutex> lock(entry.second->order);
            if (entry.second->last)
                check_cl(clWaitForEvents(1, &entry.second->last), "clWaitForEvents");
        }
    },
                    "Forget every queue's results (the arrays and memories the program keeps), "
                    "after "
                    "their last replays on out-of-order queues complete.");
}

} // namespace replays
} // namespace dnnl_ocl_interop
