// Data-movement families: reorder (between layouts, data types and engines),
// concat and sum.
#include "common/enum_caster.hpp" // first: see the header

#include <algorithm>
#include <cstring>

#include "common/reasons.hpp"
#include "common/workarounds.hpp"
#include "primitives/family.hpp"

namespace py = pybind11;
using namespace pybind11::literals;

namespace dnnl_ocl_interop {
using namespace family_args;

namespace {

// A sum whose implementation applies `scales` to the wrong sources (known
// problem sum-many-inputs-scales; sum has no other implementation to step
// to) is refused as any known-wrong descriptor is.
typed_pd<dnnl::sum> avoid_shifted_scales(typed_pd<dnnl::sum> pd, const floats &scales,
        bool allow_empty) {
    pd.pd = refuse_known_wrong(pd.pd, allow_empty, [&](const dnnl::primitive_desc_base &d) {
        return workarounds::known_wrong_sum(d, scales);
    });
    return pd;
}

void bind_reorder(py::module_ &m) {
    using P = dnnl::reorder;
    auto pd = bind_family<P>(m, "reorder",
            "Copy between layouts, data types (with scales/zero points) or engines.");
    auto make = [](const engine_object &src_engine, const md &src, const engine_object &dst_engine,
                        const md &dst, const std::optional<attr_object> &attr, bool allow_empty) {
        fork_guard::check();
        attr_object fresh; // C++'s default_attr(), per call (see create())
        const attr_object &a = attr ? *attr : fresh;
        int dst_zero_points_mask = -1;
        for (const auto &q : a.quantization_args)
            if (q.arg == (DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST)) dst_zero_points_mask = q.mask;
        dnnl::primitive_desc_base desc;
        {
            py::gil_scoped_release release;
            desc = refuse_known_wrong(verbose::creating([&] {
                return P::primitive_desc(src_engine, src, dst_engine, dst, a.attr, allow_empty);
            }),
                    allow_empty, [&](const dnnl::primitive_desc_base &d) {
                return workarounds::known_wrong_reorder(d, dst_zero_points_mask);
            });
        }
        // The reorder runs on the GPU engine of the two (the source's when
        // both are), and keeps the other alive.
        const bool on_src = src_engine.get_kind() == dnnl::engine::kind::gpu;
        typed_pd<P> result = adopt<P>(on_src ? src_engine : dst_engine, desc, a.quantization_args);
        if (src_engine.get() != dst_engine.get())
            result.other_engine = on_src ? dst_engine : src_engine;
        return result;
    };
    // The engines of the descriptor's memory, as oneDNN reports them.
    auto engine_of = [](const typed_pd<P> &pd, dnnl_query_t what) {
        dnnl_engine_t engine = nullptr;
        dnnl::error::wrap_c_api(dnnl_primitive_desc_query(pd.pd.get(), what, 0, &engine),
                "could not query a reorder's engine");
        return pd.other_engine && pd.other_engine.get() == engine ? pd.other_engine : pd.engine;
    };
    pd.def("get_src_engine", [engine_of](const typed_pd<P> &pd) {
        return engine_of(pd, dnnl_query_reorder_src_engine);
    }, "The engine of the reorder's source memory.");
    pd.def("get_dst_engine",
            [engine_of](
                    const typed_pd<P> &pd) { return engine_of(pd, dnnl_query_reorder_dst_engine); },
            "The engine of the reorder's destination memory (another than the source's for "
            "a reorder between two engines).");
    pd.def(py::init(make), "src_engine"_a, "src_desc"_a, "dst_engine"_a, "dst_desc"_a, attr_arg(),
            allow_empty_arg());
    pd.def(py::init([make](const memory_object &src, const memory_object &dst,
                            const std::optional<attr_object> &attr, bool allow_empty) {
        return make(src.engine, src.desc, dst.engine, dst.desc, attr, allow_empty);
    }),
            "src"_a, "dst"_a, attr_arg(), allow_empty_arg());
    // C++'s convenience forms: reorder(src, dst[, attr]) and
    // reorder.execute(stream, src, dst).
    py::class_<typed_primitive<P>, primitive_object> prim = m.attr("reorder");
    prim.def(py::init([make](const memory_object &src, const memory_object &dst,
                              const std::optional<attr_object> &attr) {
        return typed_primitive<P> {
                make_primitive(make(src.engine, src.desc, dst.engine, dst.desc, attr, false))};
    }),
            "src"_a, "dst"_a, attr_arg(),
            "The reorder from memory `src` to memory `dst` (their descriptors and engines).");
    prim.def("execute",
            [](const typed_primitive<P> &p, const stream_object &s, const memory_object &src,
                    const memory_object &dst) {
        py::dict args;
        args[py::int_(DNNL_ARG_FROM)] = py::cast(src);
        args[py::int_(DNNL_ARG_TO)] = py::cast(dst);
        execute_primitive(p, s, args);
    },
            "stream"_a, "src"_a, "dst"_a, "Copy `src` into `dst` on `stream`.");
    prim.def("execute", &execute_primitive, "stream"_a, "args"_a,
            "Submit with `args` ({ARG_FROM: memory, ARG_TO: memory}), as every primitive.");
}

} // namespace

void bind_data_movement(py::module_ &m) {
    bind_reorder(m);
    {
        using P = dnnl::concat;
        auto pd = bind_family<P>(m, "concat",
                "Concatenate sources (ARG_MULTIPLE_SRC + i) along a dimension.");
        constructor<P, md, int, mds>(pd, "dst"_a, "concat_dimension"_a, "srcs"_a);
        constructor<P, int, mds>(pd, "concat_dimension"_a, "srcs"_a);
    }
    {
        using P = dnnl::sum;
        auto pd = bind_family<P>(m, "sum",
                "dst = sum of scales[i] * src_i (sources as ARG_MULTIPLE_SRC + i).");
        pd.def(py::init([](const engine_object &e, const md &dst, const floats &scales,
                                const mds &srcs, const std::optional<attr_object> &attr,
                                bool allow_empty) {
            return avoid_shifted_scales(
                    create<P, md, floats, mds>(e, dst, scales, srcs, attr, allow_empty), scales,
                    allow_empty);
        }),
                "engine"_a, "dst"_a, "scales"_a, "srcs"_a, attr_arg(), allow_empty_arg());
        pd.def(py::init([](const engine_object &e, const floats &scales, const mds &srcs,
                                const std::optional<attr_object> &attr, bool allow_empty) {
            return avoid_shifted_scales(create<P, floats, mds>(e, scales, srcs, attr, allow_empty),
                    scales, allow_empty);
        }),
                "engine"_a, "scales"_a, "srcs"_a, attr_arg(), allow_empty_arg());
    }
}

} // namespace dnnl_ocl_interop
