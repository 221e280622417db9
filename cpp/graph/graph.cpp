// dnnl.graph: logical tensors, ops, graphs, partitions, compiled partitions
// and tensors. Calls that may reach a graph allocator go through
// graph_allocator::with_callbacks.
#include "common/enum_caster.hpp" // first: see the header

#include <algorithm>
#include <type_traits>
#include <cmath>
#include <limits>
#include <mutex>
#include <optional>
#include <unordered_set>

#include <pybind11/native_enum.h>
#include <pybind11/stl.h>

#include "common/data_types.hpp"
#include "common/memory_descs.hpp"
#include "common/errors.hpp"
#include "common/py_values.hpp"
#include "common/reasons.hpp"
#include "common/workarounds.hpp"
#include "graph/allocator.hpp"
#include "graph/graph_objects.hpp"
#include "core/profiling.hpp"
#include "oneapi/dnnl/dnnl_debug.h"
#include "common/usm_api.hpp"
#include "oneapi/dnnl/dnnl_ocl.hpp"

namespace py = pybind11;
namespace g = dnnl::graph;
using lt = g::logical_tensor;

namespace dnnl_ocl_interop {
namespace {

// The opaque layout ids oneDNN has handed out in this process (by
// query_logical_tensor, the only call that makes them). oneDNN's
// logical_tensor takes any id, and every later use of an id it never made
// (get_mem_size, a tensor, a compile) dereferences a backend or layout that
// does not exist: a crash. Ids are indices oneDNN never reuses.
struct layout_ids {
    std::mutex lock;
    std::unordered_set<size_t> handed_out;

    static layout_ids &instance() {
        static auto *ids = new layout_ids; // never destroyed: used at exit
        return *ids;
    }
    void note(const lt &t) {
        if (t.get_layout_type() != lt::layout_type::opaque) return;
        std::lock_guard<std::mutex> guard(lock);
        handed_out.insert(t.get_layout_id());
    }
    void check(size_t id) {
        std::lock_guard<std::mutex> guard(lock);
        if (!handed_out.count(id))
            throw_invalid_argument("logical_tensor(): layout_id " + std::to_string(id)
                    + " was not handed out by a compiled partition of this process "
                      "(query_logical_tensor gives the ids of opaque layouts)");
    }
};

void bind_logical_tensor(py::module_ &m) {
    py::class_<lt> cls(m, "logical_tensor",
            "Metadata of a tensor in a graph (dnnl::graph::logical_tensor): id, "
            "data type, dims and layout. Values, not handles: copies are equal.");
    // Members from the headers (core/enums.cpp); what a data type is lives
    // in the data-type table (common/data_types.cpp).
#define VALUE(member) .value(#member, E::member)
    {
        using E = lt::data_type;
        py::native_enum<E>(cls, "data_type", "enum.Enum", "Element data types of logical tensors.")
#include "onednn_enum_graph_data_type.inc"
                .finalize();
    }
    {
        using E = lt::layout_type;
        py::native_enum<E>(cls, "layout_type", "enum.Enum",
                "Layout kinds of logical tensors: undef, any, strided, opaque.")
#include "onednn_enum_layout_type.inc"
                .finalize();
    }
    {
        using E = lt::property_type;
        py::native_enum<E>(cls, "property_type", "enum.Enum",
                "Whether a tensor's data changes between executions: undef, variable, "
                "constant, host_scalar.")
#include "onednn_enum_property_type.inc"
                .finalize();
    }
#undef VALUE
    using dims = lt::dims;
    auto ptype = py::arg_v("property_type", lt::property_type::undef,
            "logical_tensor.property_type.undef");
    cls.def(py::init<size_t, lt::data_type, lt::layout_type>(), py::arg("tid"),
            py::arg("data_type"),
            py::arg_v("layout_type", lt::layout_type::undef, "logical_tensor.layout_type.undef"),
            "Unknown rank and dims.");
    cls.def(py::init<size_t, lt::data_type, int32_t, lt::layout_type, lt::property_type>(),
            py::arg("tid"), py::arg("data_type"), py::arg("ndims"), py::arg("layout_type"), ptype,
            "Known rank, unknown dims.");
    cls.def(py::init<size_t, lt::data_type, const dims &, lt::layout_type, lt::property_type>(),
            py::arg("tid"), py::arg("data_type"), py::arg("dims"), py::arg("layout_type"), ptype,
            "Known dims (an empty list is a scalar).");
    cls.def(py::init([](size_t tid, lt::data_type data_type, const dims &dims_, const dims &strides,
                             lt::property_type property) {
        // oneDNN reads as many strides as there are dims (its own TODO: "They
        // should be same"): fewer would be read past the list.
        if (strides.size() != dims_.size())
            throw_invalid_argument("logical_tensor(): " + std::to_string(strides.size())
                    + " strides for " + std::to_string(dims_.size()) + " dims");
        return lt(tid, data_type, dims_, strides, property);
    }),
            py::arg("tid"), py::arg("data_type"), py::arg("dims"), py::arg("strides"), ptype,
            "Known dims and strides (strided layout), one stride per dim.");
    cls.def(py::init([](size_t tid, lt::data_type data_type, const dims &dims_, size_t layout_id,
                             lt::property_type property) {
        layout_ids::instance().check(layout_id);
        return lt(tid, data_type, dims_, layout_id, property);
    }),
            py::arg("tid"), py::arg("data_type"), py::arg("dims"), py::arg("layout_id"), ptype,
            "Known dims in an opaque layout chosen by a compiled partition "
            "(`layout_id` as its query_logical_tensor gave it).");
#ifdef DNNL_OCL_INTEROP_TEST_HOOKS // test-only entry point, not in released wheels
    cls.def_static("_note_layout_id",
            [](size_t layout_id) {
        std::lock_guard<std::mutex> guard(layout_ids::instance().lock);
        layout_ids::instance().handed_out.insert(layout_id);
    }, py::arg("layout_id"),
            "For tests: take `layout_id` as handed out (a device whose partitions "
            "resolve every layout to strided hands out none). Only its getters "
            "are safe on an id oneDNN did not make.");
#endif
    cls.def(py::init<const lt &>(), py::arg("other"), "A copy of `other`.");
    cls.def("get_id", &lt::get_id, "The tensor id.");
    cls.def("get_data_type", &lt::get_data_type, "The element data type.");
    cls.def("get_dims", &lt::get_dims, "The dimensions (raises when they are unknown).");
    cls.def("get_layout_type", &lt::get_layout_type, "undef, any, strided or opaque.");
    cls.def("get_layout_id", &lt::get_layout_id,
            "The opaque layout's id (only for layout_type.opaque).");
    cls.def("get_strides", &lt::get_strides, "The strides (only for layout_type.strided).");
    cls.def("get_property_type", &lt::get_property_type,
            "undef, variable, constant or host_scalar.");
    cls.def("get_mem_size", &lt::get_mem_size, "Bytes a tensor of it needs.");
    cls.def("is_equal", &lt::is_equal, py::arg("other"),
            "Whether `other` describes the same tensor (id, type, dims, layout, property).");
    cls.def("__eq__", [](const lt &a, const lt &b) { return a.is_equal(b); }, py::is_operator());
    cls.attr("__hash__") = py::none();
    cls.def("__repr__", [](const lt &t) {
        std::string s = "<dnnl.graph.logical_tensor id=" + std::to_string(t.get_id()) + " dims=[";
        try {
            auto d = t.get_dims();
            for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
        } catch (const dnnl::error &) { s += "?"; } // unknown rank
        return s + "]>";
    });
}

void set_attr(g::op &op, g::op::attr name, py::handle value);

// Values that do not fit the C type (an int beyond 64 bits) are a ValueError.
void set_attr_checked(g::op &op, g::op::attr name, py::handle value) {
    try {
        set_attr(op, name, value);
    } catch (const py::cast_error &) {
        throw_invalid_argument("set_attr(): value out of range for its C type (s64 or f32)");
    }
}

void set_attr(g::op &op, g::op::attr name, py::handle value) {
    if (PyBool_Check(value.ptr())) {
        op.set_attr<bool>(name, value.cast<bool>());
    } else if (PyLong_Check(value.ptr())) {
        op.set_attr<int64_t>(name, value.cast<int64_t>());
    } else if (PyFloat_Check(value.ptr())) {
        op.set_attr<float>(name, value.cast<float>());
    } else if (PyUnicode_Check(value.ptr())) {
        op.set_attr<std::string>(name, value.cast<std::string>());
    } else if (PyList_Check(value.ptr()) || PyTuple_Check(value.ptr())) {
        auto seq = py::reinterpret_borrow<py::sequence>(value);
        bool all_ints = std::all_of(seq.begin(), seq.end(), is_int);
        bool all_numbers = std::all_of(seq.begin(), seq.end(),
                [&](py::handle h) { return is_int(h) || PyFloat_Check(h.ptr()); });
        if (!all_numbers)
            throw py::type_error("set_attr(): a list value must hold only ints or floats");
        if (all_ints)
            op.set_attr<std::vector<int64_t>>(name, value.cast<std::vector<int64_t>>());
        else
            op.set_attr<std::vector<float>>(name, value.cast<std::vector<float>>());
    } else {
        throw_type_error("set_attr(): value", "bool, int, float, str, or a list of ints or floats",
                value);
    }
}

void bind_op(py::module_ &m) {
    py::class_<op_object> cls(m, "op", "An operation of a graph (dnnl::graph::op).");
    using k = g::op::kind;
    {
        using E = k; // members from the headers (core/enums.cpp)
#define VALUE(member) .value(#member, E::member)
        py::native_enum<E>(cls, "kind", "enum.Enum",
                "Op kinds of the graph API (MatMul, SoftMax, ...).")
#include "onednn_enum_op_kind.inc"
                .finalize();
    }
    {
        using E = g::op::attr;
        py::native_enum<E>(cls, "attr", "enum.Enum", "Op attribute names, for op.set_attr.")
#include "onednn_enum_op_attr.inc"
                .finalize();
#undef VALUE
    }
    cls.def(py::init<size_t, k, const std::string &>(), py::arg("id"), py::arg("kind"),
            py::arg("verbose_name") = "");
    cls.def(py::init<size_t, k, const std::vector<lt> &, const std::vector<lt> &,
                    const std::string &>(),
            py::arg("id"), py::arg("kind"), py::arg("inputs"), py::arg("outputs"),
            py::arg("verbose_name") = "");
    cls.def("add_input", [](op_object &op, const lt &t) {
        op.add_input(t);
        op.facts.inputs.push_back(t.get_id());
    }, py::arg("tensor"), "Append an input logical tensor.");
    cls.def("add_inputs", [](op_object &op, const std::vector<lt> &ts) {
        op.add_inputs(ts);
        op_object::note(op.facts.inputs, ts);
    }, py::arg("tensors"), "Append input logical tensors.");
    cls.def("add_output", [](op_object &op, const lt &t) {
        op.add_output(t);
        op.facts.outputs.push_back(t.get_id());
    }, py::arg("tensor"), "Append an output logical tensor.");
    cls.def("add_outputs", [](op_object &op, const std::vector<lt> &ts) {
        op.add_outputs(ts);
        op_object::note(op.facts.outputs, ts);
    }, py::arg("tensors"), "Append output logical tensors.");
    cls.def("set_attr",
            [](op_object &op, g::op::attr name, py::handle value) -> op_object & {
        set_attr_checked(op, name, value);
        return op;
    }, py::arg("name"), py::arg("value"), py::return_value_policy::reference_internal,
            "Set an attribute; the value's Python type picks the C type: bool, "
            "int (s64), float (f32), str, list of ints (s64[]) or of floats (f32[]).");
}

void bind_graph_and_partition(py::module_ &m) {
    {
        using E = g::partition::policy; // members from the headers (core/enums.cpp)
#define VALUE(member) .value(#member, E::member)
        py::native_enum<E>(m, "partition_policy", "enum.Enum",
                "How get_partitions() groups ops: fusion or debug (one op per partition).")
#include "onednn_enum_partition_policy.inc"
                .finalize();
#undef VALUE
    }

    py::class_<partition_object> part(m, "partition",
            "A part of a graph oneDNN can compile and run as one kernel or fused set.");
    part.attr("policy") = m.attr("partition_policy");
    part.def(py::init([](const op_object &op, dnnl::engine::kind kind) {
        // oneDNN's reasons for a refused op go with the exception (common/verbose).
        return partition_object(verbose::creating([&] { return g::partition(op, kind); }),
                {op.facts});
    }),
            py::arg("op"), py::arg("engine_kind"),
            "A partition of the one op `op` (copied) for engines of `engine_kind`, "
            "without a graph.");
    part.def("is_supported", &g::partition::is_supported,
            "Whether the engine kind can compile and run the partition.");
    part.def("get_input_ports", &g::partition::get_input_ports,
            "The partition's input logical tensors.");
    part.def("get_output_ports", &g::partition::get_output_ports,
            "The partition's output logical tensors.");
    part.def("get_ops_num", &g::partition::get_ops_num, "How many ops the partition fuses.");
    part.def("get_ops", &g::partition::get_ops, "Ids of the partition's ops.");
    part.def("get_id", &g::partition::get_id, "The partition id.");
    part.def("get_engine_kind", &g::partition::get_engine_kind,
            "The engine kind the partition was made for.");
    part.def("compile",
            [](const partition_object &p, const std::vector<lt> &inputs,
                    const std::vector<lt> &outputs, const engine_object &engine) {
        // oneDNN's reasons for a refusal go with the exception (common/verbose).
        g::compiled_partition cp = verbose::creating([&] {
            return graph_allocator::with_callbacks(engine,
                    [&] { return p.compile(inputs, outputs, engine); });
        });
        compiled_partition_object compiled(cp, engine, inputs, outputs);
        std::vector<lt> ports[2]; // compiled_ports: the inputs, then the outputs
        for (size_t i = 0; i < compiled.compiled_ports.size(); ++i)
            ports[i < compiled.inputs.size() ? 0 : 1].push_back(compiled.compiled_ports[i].logical);
        workarounds::refusal found
                = workarounds::known_wrong_partition(p.ops, ports[0], ports[1], engine);
        if (found) {
            status_error refused(dnnl_unimplemented, found.why);
            refused.known_problem = found.id;
            throw refused;
        }
        return compiled;
    },
            py::arg("inputs"), py::arg("outputs"), py::arg("engine"),
            "Compile for `engine` with these input and output logical tensors "
            "(layout_type.any lets oneDNN choose; query the result). The GIL is "
            "released; the engine's allocator may be called.");

    py::class_<graph_object> graph(m, "graph", "A graph of ops to partition (dnnl::graph::graph).");
    graph.def(py::init<dnnl::engine::kind>(), py::arg("engine_kind"));
    graph.def(py::init<dnnl::engine::kind, dnnl::fpmath_mode>(), py::arg("engine_kind"),
            py::arg("fpmath_mode"));
    graph.def("add_op",
            [](graph_object &gr, const op_object &op, bool allow_exception) {
        // oneDNN's reasons for a refused op go with the exception (common/verbose).
        auto status = verbose::creating(
                [&] { return static_cast<dnnl_status_t>(gr.add_op(op, allow_exception)); });
        // oneDNN keeps the first op of an id (and answers success for the next)
        if (status == dnnl_success) gr.ops.emplace(op.facts.id, op.facts);
        return status;
    }, py::arg("op"), py::arg("allow_exception") = true,
            "Add an op (copied) to the graph; returns status.success. When the op "
            "is refused (schema check, finalized graph), raises dnnl.error, or "
            "with allow_exception=False returns oneDNN's status instead.");
    graph.def("finalize", &g::graph::finalize,
            "Close the graph to new ops; needed before get_partitions().");
    graph.def("is_finalized", &g::graph::is_finalized, "Whether finalize() was called.");
    graph.def("get_partitions",
            [](graph_object &gr, g::partition::policy policy) {
        std::vector<g::partition> parts;
        {
            py::gil_scoped_release release;
            parts = gr.get_partitions(policy);
        }
        std::vector<partition_object> objects;
        for (auto &p : parts) {
            std::vector<op_facts> ops;
            for (size_t id : p.get_ops()) {
                auto found = gr.ops.find(id);
                if (found != gr.ops.end()) ops.push_back(found->second);
            }
            objects.emplace_back(std::move(p), std::move(ops));
        }
        return objects;
    }, py::arg_v("policy", g::partition::policy::fusion, "partition.policy.fusion"),
            "Partition the finalized graph; the GIL is released.");
    graph.def("set_fpmath_mode", &g::graph::set_fpmath_mode, py::arg("mode"),
            py::arg("apply_to_int") = false,
            "Allow implicit down-conversions in the graph's floating-point math (and, "
            "with `apply_to_int`, in integer ops).");
    graph.def("get_fpmath_mode", [](const graph_object &gr) {
        dnnl::fpmath_mode mode;
        bool apply_to_int;
        gr.get_fpmath_mode(mode, apply_to_int);
        return py::make_tuple(mode, apply_to_int);
    }, "(fpmath_mode, apply_to_int)");
}

bool is_host_scalar(const lt &desc) {
    return desc.get_property_type() == lt::property_type::host_scalar;
}

} // namespace

// Bytes from the handle on that a tensor of `desc` addresses. For a strided
// layout: up to its furthest element (add_furthest_offset, the rule memory
// descriptors take too) + 1 elements.
// get_mem_size() counts max(dim * stride) elements, which a view into a
// larger allocation (stacked Q/K/V, combined gate/up weights) overstates.
// Other layouts (opaque, any, unknown dims): get_mem_size().
size_t addressed_bytes(const lt &desc) {
    if (desc.get_layout_type() != lt::layout_type::strided) return desc.get_mem_size();
    size_t bits = data_types::bits(desc.get_data_type());
    lt::dims dims, strides;
    try {
        dims = desc.get_dims();
        strides = desc.get_strides();
    } catch (const dnnl::error &) {
        return desc.get_mem_size(); // unknown rank
    }
    if (bits == 0 || dims.empty() || strides.size() != dims.size()) return desc.get_mem_size();
    for (auto dim : dims) {
        if (dim == 0) return 0;
        if (dim < 0) return desc.get_mem_size(); // unknown dims
    }
    unsigned long long furthest = 0; // element offset of the furthest element
    if (!add_furthest_offset(static_cast<int>(dims.size()), dims.data(), strides.data(), furthest))
        return SIZE_MAX;
    uint64_t total_bits = 0;
    if (__builtin_mul_overflow(furthest + 1, static_cast<uint64_t>(bits), &total_bits))
        return SIZE_MAX;
    return static_cast<size_t>((total_bits + 7) / 8);
}

namespace {

void check_tensor_storage(const lt &desc, const engine_object &engine, void *handle) {
    if (handle == DNNL_MEMORY_ALLOCATE || handle == DNNL_MEMORY_NONE) return;
    if (engine.get_kind() != dnnl::engine::kind::gpu) return;
    cl_context context = dnnl::ocl_interop::get_context(engine);
    size_t available = usm::bytes_available(context, handle);
    if (available == 0)
        throw_invalid_argument("handle is not a USM allocation of the engine's OpenCL context");
    size_t needed = addressed_bytes(desc);
    if (available < needed)
        throw_invalid_argument("USM allocation has " + std::to_string(available)
                + " bytes from the handle on, but the logical tensor addresses "
                + std::to_string(needed));
}

// make_scalar_tensor's value, stored as the logical tensor's data type (the
// types oneDNN 3.13 keeps in a host-scalar tensor).
union scalar_value {
    int32_t s32;
    int64_t s64;
    float f32;
};

scalar_value scalar_from(const lt &desc, py::handle value) {
    scalar_value v {};
    auto dt = desc.get_data_type();
    bool is_bool = PyBool_Check(value.ptr());
    if (dt == lt::data_type::f32) {
        if (is_bool
                || (!PyFloat_Check(value.ptr()) && !PyLong_Check(value.ptr())
                        && !PyIndex_Check(value.ptr()) && !py::hasattr(value, "__float__"))
                || PyUnicode_Check(value.ptr()) || PyBytes_Check(value.ptr()))
            throw_type_error("make_scalar_tensor(): scalar", "a real number for an f32 scalar",
                    value);
        double d = py::float_(py::reinterpret_borrow<py::object>(value));
        if (std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max())
            throw_invalid_argument("make_scalar_tensor(): scalar " + std::string(py::repr(value))
                    + " is out of range for f32");
        v.f32 = static_cast<float>(d);
    } else if (dt == lt::data_type::s32 || dt == lt::data_type::s64) {
        if (is_bool || !PyIndex_Check(value.ptr()))
            throw_type_error("make_scalar_tensor(): scalar", "an int for an s32 or s64 scalar",
                    value);
        py::int_ i = py::reinterpret_steal<py::int_>(PyNumber_Index(value.ptr()));
        if (!i) throw py::error_already_set();
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
        bool s32 = dt == lt::data_type::s32;
        if (overflow || (s32 && (x < INT32_MIN || x > INT32_MAX)))
            throw_invalid_argument("make_scalar_tensor(): scalar " + std::string(py::repr(i))
                    + " is out of range for " + (s32 ? "s32" : "s64"));
        if (s32)
            v.s32 = static_cast<int32_t>(x);
        else
            v.s64 = static_cast<int64_t>(x);
    } else {
        throw_invalid_argument(
                "make_scalar_tensor(): a host-scalar tensor holds s32, s64 or f32 "
                "(what oneDNN 3.13 stores), not "
                + std::string(py::str(py::cast(dt))));
    }
    return v;
}

void bind_tensor(py::module_ &m) {
    py::class_<tensor_object> cls(m, "tensor",
            "Data for a logical tensor on an engine (dnnl::graph::tensor), or a "
            "host scalar (make_scalar_tensor).");
    cls.def(py::init([](const lt &desc, const engine_object &engine, py::handle handle) {
        py::object owner;
        void *h = memory_handle_from(handle, "handle", /*accept_mem_object=*/false, nullptr,
                &owner);
        if (is_host_scalar(desc))
            throw_invalid_argument(
                    "a logical tensor of property_type.host_scalar makes a "
                    "tensor with tensor.make_scalar_tensor, not on an engine");
        auto layout = desc.get_layout_type();
        if (h != DNNL_MEMORY_NONE
                && (layout == lt::layout_type::any || layout == lt::layout_type::undef))
            throw_invalid_argument(std::string("a logical tensor of layout_type.")
                    + (layout == lt::layout_type::any ? "any" : "undef")
                    + " has no size to allocate or check: make the tensor with the compiled "
                      "partition's query_logical_tensor(id)");
        check_tensor_storage(desc, engine, h);
        g::tensor t = graph_allocator::with_callbacks(engine, [&] {
            return h == DNNL_MEMORY_ALLOCATE ? g::tensor(desc, engine) : g::tensor(desc, engine, h);
        });
        return tensor_object(t, engine, keep_alive(std::move(owner)));
    }),
            py::arg("logical_tensor"), py::arg("engine"), py::arg("handle") = memory_allocate,
            "`handle`: dnnl.MEMORY_ALLOCATE (the default: the engine's allocator "
            "provides logical_tensor.get_mem_size() bytes), dnnl.MEMORY_NONE, or a "
            "USM pointer of the engine's context (an int, or a typed pointer such as "
            "dnnl.usm.allocation, which the tensor keeps alive) with room, from the "
            "pointer on, for every element the logical tensor addresses (for "
            "strided layouts the furthest element, so a view into a larger "
            "allocation is taken). oneDNN does not free a user pointer.");
    cls.def_static("make_scalar_tensor",
            [](const lt &desc, py::handle scalar) {
        if (!is_host_scalar(desc))
            throw_invalid_argument(
                    "make_scalar_tensor(): the logical tensor must have "
                    "property_type.host_scalar, not "
                    + std::string(py::str(py::cast(desc.get_property_type()))));
        scalar_value value = scalar_from(desc, scalar);
        // oneDNN copies the value into the tensor.
        return tensor_object(g::tensor::make_scalar_tensor(desc, &value), engine_object());
    }, py::arg("logical_tensor"), py::arg("scalar"),
            "A host-scalar tensor holding `scalar` (copied), for an input port of "
            "property_type.host_scalar: an int for s32 and s64, a real number for "
            "f32 (the types oneDNN 3.13 stores). It has no engine and no data "
            "handle.");
    cls.def("get_data_handle", [](const tensor_object &t) {
        return reinterpret_cast<uintptr_t>(t.tensor.get_data_handle());
    }, "The tensor's USM pointer (int; 0 when it has none, and for host scalars).");
    cls.def("set_data_handle",
            [](tensor_object &t, py::handle handle) {
        py::object owner;
        void *h = memory_handle_from(handle, "handle", false, nullptr, &owner);
        if (h == DNNL_MEMORY_ALLOCATE)
            throw_invalid_argument("set_data_handle() takes a USM pointer or dnnl.MEMORY_NONE");
        if (is_host_scalar(t.logical))
            throw_invalid_argument("set_data_handle(): a host-scalar tensor has no data handle");
        check_tensor_storage(t.logical, t.engine, h);
        t.tensor.set_data_handle(h);
        t.handle_owner = keep_alive(std::move(owner));
    }, py::arg("handle"),
            "Point the tensor at a USM pointer of its engine's context "
            "(checked to hold what the logical tensor addresses) or "
            "dnnl.MEMORY_NONE.");
    cls.def("get_engine", [](const tensor_object &t) -> std::optional<engine_object> {
        if (!t.engine) return std::nullopt;
        return t.engine;
    }, "The engine the tensor lives on (None for a host scalar).");
    cls.def("get_logical_tensor", [](const tensor_object &t) { return t.logical; },
            "The logical tensor the tensor was made for.");

    auto cp = py::reinterpret_borrow<py::class_<compiled_partition_object>>(
            m.attr("compiled_partition"));
    cp.def("query_logical_tensor", [](const compiled_partition_object &c, size_t tid) {
        lt queried = c.partition.query_logical_tensor(tid);
        layout_ids::instance().note(queried);
        return queried;
    }, py::arg("tid"), "The logical tensor of id `tid` as compiled (layout and dims resolved).");
    cp.def("get_inplace_ports", [](const compiled_partition_object &c) {
        return c.partition.get_inplace_ports();
    }, "(input id, output id) pairs that may share memory.");
    cp.def_readwrite("_label", &compiled_partition_object::label,
            "What a dnnl.profiling recorder calls the partition's executes ('partition' "
            "unless named, as dnnl.graph.patterns names its own).");
    cp.def("get_scratchpad_logical_tensor",
            [](const compiled_partition_object &c) {
        return c.partition.get_scratchpad_logical_tensor();
    },
            "The scratchpad execute() may be given: u8, strided, one dimension of "
            "its size in bytes (0 when the partition needs none), id 2**64-1.");
    cp.def("execute",
            [](const compiled_partition_object &c, stream_object &s, py::handle inputs,
                    py::handle outputs, py::handle scratchpad) {
        graph_execution ex = graph_execution_args(c, s, inputs, outputs);
        const g::tensor *pad = scratchpad_arg(c, scratchpad);
        if (s.out_of_order) {
            cl_event event = execute_partition(c, s, ex, {}, pad);
            if (event) clReleaseEvent(event); // the user waits on the stream
            return;
        }
        auto submit = [&] {
            return graph_allocator::with_callbacks(c.engine, [&] {
                c.partition.execute(s.stream, ex.inputs, ex.outputs, pad ? *pad : g::tensor());
                return 0;
            }, &s);
        };
        if (profiling::active()) // the one test when no dnnl.profiling recorder is active
            profiling::recorded(s, c.subject(), submit);
        else
            submit();
    },
            py::arg("stream"), py::arg("inputs"), py::arg("outputs"),
            py::arg("scratchpad") = py::none(),
            "Execute with tensors for every input and output port, checked "
            "first. `scratchpad`: None (oneDNN allocates it) or a tensor on the "
            "partition's engine with room for get_scratchpad_logical_tensor(). "
            "Returns once submitted; wait on the stream for results.");
}

} // namespace

std::shared_ptr<const profiling::subject> compiled_partition_object::subject() const {
    return subject_.get([&] {
        auto what = std::make_shared<profiling::subject>();
        what->kind = "partition";
        what->name = label;
        for (const auto *ports : {&inputs, &outputs})
            for (const lt &port : *ports) {
                lt compiled = partition.query_logical_tensor(port.get_id());
                std::string dims
                        = dnnl_dt2str(static_cast<dnnl_data_type_t>(compiled.get_data_type()));
                bool first = true;
                for (auto d : compiled.get_dims()) {
                    dims += (first ? " " : "x") + std::to_string(d);
                    first = false;
                }
                what->shapes += (what->shapes.empty() ? "" : ", ")
                        + std::string(ports == &inputs ? "in " : "out ")
                        + std::to_string(port.get_id()) + " " + dims;
            }
        return std::shared_ptr<const profiling::subject>(std::move(what));
    });
}

compiled_partition_object::compiled_partition_object(g::compiled_partition partition,
        engine_object engine, std::vector<lt> inputs, std::vector<lt> outputs)
    : engine(std::move(engine))
    , partition(std::move(partition))
    , inputs(std::move(inputs))
    , outputs(std::move(outputs))
    , scratchpad_size(this->partition.get_scratchpad_logical_tensor().get_mem_size()) {
    for (auto *ports : {&this->inputs, &this->outputs}) {
        // oneDNN takes logical tensors that are none of the partition's ports
        // at compile and answers them undefined: execute() wants no tensor for them.
        std::vector<lt> kept;
        for (const lt &port : *ports) {
            lt compiled = this->partition.query_logical_tensor(port.get_id());
            if (compiled.get_data_type() == lt::data_type::undef) continue;
            kept.push_back(port);
            compiled_ports.push_back({port.get_id(), compiled, addressed_bytes(compiled)});
        }
        *ports = std::move(kept);
    }
    host_scalar_input = std::any_of(this->inputs.begin(), this->inputs.end(), is_host_scalar);
}

namespace {

// How a tensor's logical tensor describes other data than its port as
// compiled (data type, dimensions, layout, strides where a dimension has
// more than one element), or "". Read from the C structs: this runs for
// every tensor of every execute.
// The C struct a logical_tensor holds (its one, private, member; the getters
// copy vectors).
const dnnl_graph_logical_tensor_t &c_struct(const lt &t) {
    static_assert(std::is_standard_layout<lt>::value
                    && sizeof(lt) == sizeof(dnnl_graph_logical_tensor_t),
            "dnnl::graph::logical_tensor holds one dnnl_graph_logical_tensor_t");
    return reinterpret_cast<const dnnl_graph_logical_tensor_t &>(t);
}

std::string unlike_compiled(const lt &given, const lt &compiled) {
    const dnnl_graph_logical_tensor_t &a = c_struct(given), &b = c_struct(compiled);
    auto type = [](dnnl_data_type_t t) { return std::string(data_types::name(t)); };
    if (a.data_type != b.data_type) return type(a.data_type) + " where it is " + type(b.data_type);
    auto dims = [](const dnnl_graph_logical_tensor_t &t) {
        std::string text;
        for (int d = 0; d < t.ndims; ++d) text += (d ? "x" : "") + std::to_string(t.dims[d]);
        return text.empty() ? std::string("0-d") : text;
    };
    if (a.ndims != b.ndims || !std::equal(a.dims, a.dims + std::max(a.ndims, 0), b.dims))
        return "dims " + dims(a) + " where they are " + dims(b);
    if (a.layout_type != b.layout_type)
        return "another layout type (" + std::to_string(a.layout_type) + " where it is "
                + std::to_string(b.layout_type) + ")";
    if (a.layout_type == dnnl_graph_layout_type_opaque && a.layout.layout_id != b.layout.layout_id)
        return "another opaque layout id";
    if (a.layout_type == dnnl_graph_layout_type_strided
            && std::find(a.dims, a.dims + a.ndims, 0) == a.dims + a.ndims)
        for (int d = 0; d < a.ndims; ++d)
            if (a.dims[d] > 1 && a.layout.strides[d] != b.layout.strides[d]) {
                std::string why = "strides";
                for (int i = 0; i < a.ndims; ++i)
                    why += (i ? "," : " ") + std::to_string(a.layout.strides[i]);
                why += " where they are";
                for (int i = 0; i < b.ndims; ++i)
                    why += (i ? "," : " ") + std::to_string(b.layout.strides[i]);
                return why;
            }
    return "";
}

} // namespace

graph_execution graph_execution_args(const compiled_partition_object &cp,
        const stream_object &stream, py::handle inputs, py::handle outputs) {
    fork_guard::check(); // both graph executes start here
    if (stream.engine.get() != cp.engine.get())
        throw_invalid_argument("the stream is on another engine than the compiled partition");
    graph_execution ex;
    // Tensors go to oneDNN in the order the ports were compiled, which is
    // how it matches them: placed here by logical tensor id, so any order
    // works and a tensor is never read as another port's.
    auto convert = [&](py::handle list, const std::vector<lt> &ports, const char *what,
                           std::vector<g::tensor> &into) {
        if (!PyList_Check(list.ptr()) && !PyTuple_Check(list.ptr()))
            throw_type_error(what, "a list of dnnl.graph.tensor", list);
        // Items borrowed in place (a list or tuple), each loaded once.
        const auto count = static_cast<size_t>(PySequence_Fast_GET_SIZE(list.ptr()));
        if (count != ports.size())
            throw_invalid_argument(std::string(what) + ": " + std::to_string(count)
                    + " tensors for " + std::to_string(ports.size()) + " ports");
        into.assign(ports.size(), g::tensor());
        for (size_t i = 0; i < count; ++i) {
            // Built only for an error: this loop runs on every execute().
            auto name = [&] { return std::string(what) + "[" + std::to_string(i) + "]"; };
            // A reference of its own: a failed load may run Python code (a
            // metaclass's __getattr__) that empties the list.
            auto item = py::reinterpret_borrow<py::object>(
                    PySequence_Fast_GET_ITEM(list.ptr(), static_cast<Py_ssize_t>(i)));
            py::detail::make_caster<tensor_object> caster;
            if (!caster.load(item, false)) throw_type_error(name(), "a dnnl.graph.tensor", item);
            const auto &t = py::detail::cast_op<const tensor_object &>(caster);
            const lt &given = t.logical;
            bool scalar = is_host_scalar(given);
            if (!scalar && t.engine.get() != cp.engine.get())
                throw_invalid_argument(name() + " is on another engine than the partition");
            auto port = std::find_if(ports.begin(), ports.end(),
                    [&](const lt &p) { return p.get_id() == given.get_id(); });
            if (port == ports.end())
                throw_invalid_argument(name() + " has logical tensor id "
                        + std::to_string(given.get_id()) + ", not one of the partition's " + what);
            size_t slot = static_cast<size_t>(port - ports.begin());
            if (into[slot])
                throw_invalid_argument(name() + ": two tensors for logical tensor id "
                        + std::to_string(given.get_id()));
            // oneDNN reads a host scalar's value on the host and passes any
            // other tensor's handle to the device: a mix-up would have one
            // side dereference the other's pointer.
            if (scalar != is_host_scalar(*port))
                throw_invalid_argument(name()
                        + (scalar ? " is a host scalar, but the partition's port is not host_scalar"
                                  : " is not a host scalar (tensor.make_scalar_tensor), but the "
                                    "partition's port is host_scalar"));
            if (scalar) {
                if (given.get_data_type() != port->get_data_type())
                    throw_invalid_argument(name() + " is a host scalar of "
                            + std::string(py::str(py::cast(given.get_data_type())))
                            + ", the port's is "
                            + std::string(py::str(py::cast(port->get_data_type()))));
                into[slot] = t.tensor;
                continue;
            }
            if (!t.tensor.get_data_handle())
                throw_invalid_argument(name() + " has no storage (dnnl.MEMORY_NONE)");
            size_t needed = 0;
            for (const auto &compiled : cp.compiled_ports)
                if (compiled.id == given.get_id()) {
                    needed = compiled.bytes;
                    std::string why = unlike_compiled(given, compiled.logical);
                    if (!why.empty())
                        throw_invalid_argument(name() + " describes other data than its port was "
                                "compiled for (" + why + "); oneDNN's kernels would read it as "
                                "compiled: make it of compiled_partition.query_logical_tensor("
                                + std::to_string(given.get_id()) + ")");
                    break;
                }
            size_t holds = t.addressed;
            if (holds < needed)
                throw_invalid_argument(name() + " addresses " + std::to_string(holds)
                        + " bytes, the compiled partition needs " + std::to_string(needed));
            into[slot] = t.tensor;
        }
    };
    convert(inputs, cp.inputs, "inputs", ex.inputs);
    convert(outputs, cp.outputs, "outputs", ex.outputs);
    return ex;
}

const g::tensor *scratchpad_arg(const compiled_partition_object &cp, py::handle scratchpad) {
    if (scratchpad.is_none()) return nullptr;
    if (!py::isinstance<tensor_object>(scratchpad))
        throw_type_error("scratchpad", "a dnnl.graph.tensor or None", scratchpad);
    const auto &t = scratchpad.cast<const tensor_object &>();
    if (is_host_scalar(t.logical))
        throw_invalid_argument("scratchpad is a host scalar, not memory on the engine");
    if (t.engine.get() != cp.engine.get())
        throw_invalid_argument("scratchpad is on another engine than the partition");
    // oneDNN takes the user's scratchpad as it is: it neither checks its size
    // nor whether it has storage.
    if (cp.scratchpad_size > 0) {
        if (!t.tensor.get_data_handle())
            throw_invalid_argument("scratchpad has no storage (dnnl.MEMORY_NONE)");
        size_t holds = t.addressed;
        if (holds < cp.scratchpad_size)
            throw_invalid_argument("scratchpad addresses " + std::to_string(holds)
                    + " bytes, the compiled partition needs " + std::to_string(cp.scratchpad_size)
                    + " (get_scratchpad_logical_tensor())");
    }
    return &t.tensor;
}

void bind_graph(py::module_ &m) {
    // dnnl::graph uses these names of dnnl:: (graph::status has the same values).
    py::module_ parent = py::module_::import("dnnl_ocl_interop._core");
    for (const char *name : {"engine", "stream", "fpmath_mode", "status"})
        m.attr(name) = parent.attr(name);
    bind_logical_tensor(m);
    bind_op(m);
    // Registered before partition.compile, so its signature names the class.
    py::class_<compiled_partition_object>(m, "compiled_partition",
            "A compiled partition, ready to execute (dnnl::graph::compiled_partition).");
    bind_graph_and_partition(m);
    bind_tensor(m);
    {
        using E = g::graph_dump_mode; // members from the headers (core/enums.cpp)
#define VALUE(member) .value(#member, E::member)
        py::native_enum<E>(m, "graph_dump_mode", "enum.IntFlag",
                "What set_dump_mode() has oneDNN write, combinable with |: none, "
                "subgraph (each partition, as compiled), graph (the graph, when partitioned).")
#include "onednn_enum_graph_dump_mode.inc"
                .finalize();
#undef VALUE
    }
    m.def("set_dump_mode",
            [](g::graph_dump_mode modes) {
        auto status = static_cast<dnnl_status_t>(g::set_dump_mode(modes));
        if (status != dnnl_success)
            throw status_error(status, "set_dump_mode(): oneDNN refused the modes "
                    + std::to_string(static_cast<unsigned>(modes))
                    + " (bits other than subgraph | graph, or graph dumps disabled in "
                      "this oneDNN build)");
    }, py::arg("modes"),
            "Have oneDNN write graphs as JSON files in the current directory (as "
            "ONEDNN_GRAPH_DUMP, which it overrides): graph-<id>.json when a graph "
            "is partitioned (graph), graph-<partition id>-<hash>.json when a "
            "partition is compiled (subgraph); none stops. Raises dnnl.error "
            "(invalid_arguments) for other bits.");
    m.def("set_constant_tensor_cache", &g::set_constant_tensor_cache, py::arg("flag"),
            "Enable (1) or disable (0) the constant tensor cache.");
    m.def("get_constant_tensor_cache", &g::get_constant_tensor_cache,
            "Whether the constant tensor cache is enabled (1) or not (0).");
    m.def("set_constant_tensor_cache_capacity", &g::set_constant_tensor_cache_capacity,
            py::arg("kind"), py::arg("size"), "Capacity in megabytes for engines of `kind`.");
    m.def("get_constant_tensor_cache_capacity", &g::get_constant_tensor_cache_capacity,
            py::arg("kind"), "Capacity in megabytes of the constant tensor cache for `kind`.");
    m.def("set_compiled_partition_cache_capacity", &g::set_compiled_partition_cache_capacity,
            py::arg("capacity"),
            "How many compiled partitions oneDNN keeps cached (0 empties and disables it).");
    m.def("get_compiled_partition_cache_capacity", &g::get_compiled_partition_cache_capacity,
            "How many compiled partitions oneDNN keeps cached.");
}

} // namespace dnnl_ocl_interop
