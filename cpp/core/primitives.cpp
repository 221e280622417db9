// The primitive families: dnnl.<name>.primitive_desc(...) and dnnl.<name>(pd),
// with constructors mirroring the C++ overloads.
#include <algorithm>
#include <cstring>
#include <string>

#include <pybind11/stl.h>

#include "common/errors.hpp"
#include "core/primitive_objects.hpp"

namespace py = pybind11;
using dnnl::algorithm;
using dnnl::prop_kind;
using md = dnnl::memory::desc;
using dims = dnnl::memory::dims;

namespace dnnl_ocl_interop {
namespace {

// One C++ type per family, so each gets its own Python class.
enum family {
    f_matmul, f_convolution_forward, f_inner_product_forward, f_eltwise_forward,
    f_binary, f_reorder, f_softmax_forward, f_pooling_forward,
    f_layer_normalization_forward, f_batch_normalization_forward, f_concat, f_sum
};
template <int F> struct typed_pd : primitive_desc_object {};
template <int F> struct typed_primitive : primitive_object {};

// Builds descriptor PD(engine, args..., attr) with the GIL released. Args are
// always given explicitly, so the pack may precede `attr`.
template <int F, typename PD, typename... Args>
typed_pd<F> create(const engine_object &engine, const Args &...args, const attr_object &attr) {
    py::gil_scoped_release release;
    return typed_pd<F> {{engine, PD(engine, args..., attr.attr), attr.quantization_args}};
}

template <int F>
py::class_<typed_pd<F>, primitive_desc_object> bind_family(
        py::module_ &m, const char *name, const char *doc) {
    py::class_<typed_primitive<F>, primitive_object> prim(m, name, doc);
    py::class_<typed_pd<F>, primitive_desc_object> pd(prim, "primitive_desc",
            (std::string("Descriptor of a ") + name + " primitive: its constructors take the "
             "engine, then the arguments of the C++ dnnl::" + name + "::primitive_desc "
             "overloads in their order, then an optional primitive_attr.")
                    .c_str());
    prim.def(py::init([](const typed_pd<F> &pd) {
        return typed_primitive<F> {make_primitive(pd)};
    }), py::arg("pd"), py::keep_alive<1, 2>(),
            "The primitive for a descriptor (kernels are compiled here).");
    // From a cache blob: the logic is make_primitive's (core/primitive.cpp).
    prim.def(py::init([](const typed_pd<F> &pd, const optional_bytes &cache_blob) {
        return typed_primitive<F> {make_primitive(pd, cache_blob)};
    }), py::arg("pd"), py::arg("cache_blob"), py::keep_alive<1, 2>(),
            primitive_from_cache_blob_doc);
    return pd;
}

#define ATTR py::arg_v("attr", attr_object(), "primitive_attr()")

void bind_matmul(py::module_ &m) {
    using PD = dnnl::matmul::primitive_desc;
    auto pd = bind_family<f_matmul>(m, "matmul", "dst = src x weights (+ bias).");
    pd.def(py::init(&create<f_matmul, PD, md, md, md>), py::arg("engine"),
            py::arg("src_desc"), py::arg("weights_desc"), py::arg("dst_desc"), ATTR);
    pd.def(py::init(&create<f_matmul, PD, md, md, md, md>), py::arg("engine"),
            py::arg("src_desc"), py::arg("weights_desc"), py::arg("bias_desc"),
            py::arg("dst_desc"), ATTR);
}

void bind_convolution(py::module_ &m) {
    using PD = dnnl::convolution_forward::primitive_desc;
    constexpr int F = f_convolution_forward;
    auto pd = bind_family<F>(m, "convolution_forward", "Forward convolution.");
    pd.def(py::init(&create<F, PD, prop_kind, algorithm, md, md, md, md, dims, dims, dims>),
            py::arg("engine"), py::arg("prop_kind"), py::arg("algorithm"),
            py::arg("src_desc"), py::arg("weights_desc"), py::arg("bias_desc"),
            py::arg("dst_desc"), py::arg("strides"), py::arg("padding_l"),
            py::arg("padding_r"), ATTR);
    pd.def(py::init(&create<F, PD, prop_kind, algorithm, md, md, md, dims, dims, dims>),
            py::arg("engine"), py::arg("prop_kind"), py::arg("algorithm"),
            py::arg("src_desc"), py::arg("weights_desc"), py::arg("dst_desc"),
            py::arg("strides"), py::arg("padding_l"), py::arg("padding_r"), ATTR);
    pd.def(py::init(&create<F, PD, prop_kind, algorithm, md, md, md, md, dims, dims, dims, dims>),
            py::arg("engine"), py::arg("prop_kind"), py::arg("algorithm"),
            py::arg("src_desc"), py::arg("weights_desc"), py::arg("bias_desc"),
            py::arg("dst_desc"), py::arg("strides"), py::arg("dilates"),
            py::arg("padding_l"), py::arg("padding_r"), ATTR);
    pd.def(py::init(&create<F, PD, prop_kind, algorithm, md, md, md, dims, dims, dims, dims>),
            py::arg("engine"), py::arg("prop_kind"), py::arg("algorithm"),
            py::arg("src_desc"), py::arg("weights_desc"), py::arg("dst_desc"),
            py::arg("strides"), py::arg("dilates"), py::arg("padding_l"),
            py::arg("padding_r"), ATTR);
}

void bind_inner_product(py::module_ &m) {
    using PD = dnnl::inner_product_forward::primitive_desc;
    constexpr int F = f_inner_product_forward;
    auto pd = bind_family<F>(m, "inner_product_forward", "Forward inner product.");
    pd.def(py::init(&create<F, PD, prop_kind, md, md, md, md>), py::arg("engine"),
            py::arg("prop_kind"), py::arg("src_desc"), py::arg("weights_desc"),
            py::arg("bias_desc"), py::arg("dst_desc"), ATTR);
    pd.def(py::init(&create<F, PD, prop_kind, md, md, md>), py::arg("engine"),
            py::arg("prop_kind"), py::arg("src_desc"), py::arg("weights_desc"),
            py::arg("dst_desc"), ATTR);
}

void bind_eltwise(py::module_ &m) {
    using PD = dnnl::eltwise_forward::primitive_desc;
    constexpr int F = f_eltwise_forward;
    auto pd = bind_family<F>(m, "eltwise_forward", "Forward elementwise operation.");
    pd.def(py::init(&create<F, PD, prop_kind, algorithm, md, md, float, float>),
            py::arg("engine"), py::arg("prop_kind"), py::arg("algorithm"),
            py::arg("src_desc"), py::arg("dst_desc"), py::arg("alpha") = 0.f,
            py::arg("beta") = 0.f, ATTR);
}

void bind_binary(py::module_ &m) {
    using PD = dnnl::binary::primitive_desc;
    auto pd = bind_family<f_binary>(m, "binary", "dst = src0 op src1 (op: algorithm.binary_*).");
    pd.def(py::init(&create<f_binary, PD, algorithm, md, md, md>), py::arg("engine"),
            py::arg("algorithm"), py::arg("src0"), py::arg("src1"), py::arg("dst"), ATTR);
    pd.def(py::init(&create<f_binary, PD, algorithm, md, md, md, md>), py::arg("engine"),
            py::arg("algorithm"), py::arg("src0"), py::arg("src1"), py::arg("src2"),
            py::arg("dst"), ATTR);
}

void bind_reorder(py::module_ &m) {
    using PD = dnnl::reorder::primitive_desc;
    auto pd = bind_family<f_reorder>(m, "reorder",
            "Copy between layouts, data types (with scales/zero points) or engines.");
    auto make = [](const engine_object &src_engine, const md &src, const engine_object &dst_engine,
                        const md &dst, const attr_object &attr) -> typed_pd<f_reorder> {
        py::gil_scoped_release release;
        PD desc(src_engine, src, dst_engine, dst, attr.attr);
        // The reorder runs on the GPU engine of the two.
        const engine_object &runs_on
                = src_engine.get_kind() == dnnl::engine::kind::gpu ? src_engine : dst_engine;
        return typed_pd<f_reorder> {{runs_on, desc, attr.quantization_args}};
    };
    pd.def(py::init(make), py::arg("src_engine"), py::arg("src_desc"),
            py::arg("dst_engine"), py::arg("dst_desc"), ATTR);
    pd.def(py::init([make](const memory_object &src, const memory_object &dst,
                            const attr_object &attr) {
        return make(src.engine, src.desc, dst.engine, dst.desc, attr);
    }), py::arg("src"), py::arg("dst"), ATTR);
}

void bind_softmax(py::module_ &m) {
    using PD = dnnl::softmax_forward::primitive_desc;
    constexpr int F = f_softmax_forward;
    auto pd = bind_family<F>(m, "softmax_forward", "Forward softmax (or logsoftmax) along an axis.");
    pd.def(py::init(&create<F, PD, prop_kind, algorithm, md, md, int>), py::arg("engine"),
            py::arg("prop_kind"), py::arg("algorithm"), py::arg("src_desc"),
            py::arg("dst_desc"), py::arg("axis"), ATTR);
}

void bind_pooling(py::module_ &m) {
    using PD = dnnl::pooling_forward::primitive_desc;
    constexpr int F = f_pooling_forward;
    auto pd = bind_family<F>(m, "pooling_forward", "Forward pooling.");
    pd.def(py::init(&create<F, PD, prop_kind, algorithm, md, md, dims, dims, dims, dims, dims>),
            py::arg("engine"), py::arg("prop_kind"), py::arg("algorithm"),
            py::arg("src_desc"), py::arg("dst_desc"), py::arg("strides"),
            py::arg("kernel"), py::arg("dilation"), py::arg("padding_l"),
            py::arg("padding_r"), ATTR);
}

void bind_normalizations(py::module_ &m) {
    using nf = dnnl::normalization_flags;
    {
        using PD = dnnl::layer_normalization_forward::primitive_desc;
        constexpr int F = f_layer_normalization_forward;
        auto pd = bind_family<F>(m, "layer_normalization_forward",
                "Forward layer normalization over the last dimension.");
        pd.def(py::init(&create<F, PD, prop_kind, md, md, md, float, nf>), py::arg("engine"),
                py::arg("prop_kind"), py::arg("src_desc"), py::arg("dst_desc"),
                py::arg("stat_desc"), py::arg("epsilon"), py::arg("flags"), ATTR);
        pd.def(py::init(&create<F, PD, prop_kind, md, md, float, nf>), py::arg("engine"),
                py::arg("prop_kind"), py::arg("src_desc"), py::arg("dst_desc"),
                py::arg("epsilon"), py::arg("flags"), ATTR);
        pd.def(py::init(&create<F, PD, prop_kind, md, md, md, dnnl::memory::data_type, float, nf>),
                py::arg("engine"), py::arg("prop_kind"), py::arg("src_desc"),
                py::arg("dst_desc"), py::arg("stat_desc"),
                py::arg("scale_shift_data_type"), py::arg("epsilon"), py::arg("flags"), ATTR);
    }
    {
        using PD = dnnl::batch_normalization_forward::primitive_desc;
        constexpr int F = f_batch_normalization_forward;
        auto pd = bind_family<F>(m, "batch_normalization_forward",
                "Forward batch normalization over the channel dimension.");
        pd.def(py::init(&create<F, PD, prop_kind, md, md, float, nf>), py::arg("engine"),
                py::arg("prop_kind"), py::arg("src_desc"), py::arg("dst_desc"),
                py::arg("epsilon"), py::arg("flags"), ATTR);
    }
}

// oneDNN 3.13's "ocl:many_inputs" sum (chosen when the first scale is 1)
// scales source i by scales[i-1]: its kernel indexes scales from input 1, its
// scale buffer starts at input 0. Unless all scales are equal that gives wrong
// sums, so the binding refuses it (sum has no other implementation to step to).
typed_pd<f_sum> avoid_shifted_scales(typed_pd<f_sum> pd, const std::vector<float> &scales) {
    bool all_equal = std::all_of(scales.begin(), scales.end(),
            [&](float s) { return s == scales.front(); });
    if (!all_equal && std::strcmp(pd.pd.impl_info_str(), "ocl:many_inputs") == 0)
        throw status_error(dnnl_unimplemented,
                "sum: oneDNN chose ocl:many_inputs, which applies scales to the wrong "
                "sources when they differ (oneDNN 3.13); use a first scale other than 1, "
                "equal scales, or binary primitives");
    return pd;
}

void bind_concat_sum(py::module_ &m) {
    using mds = std::vector<md>;
    {
        using PD = dnnl::concat::primitive_desc;
        auto pd = bind_family<f_concat>(m, "concat",
                "Concatenate sources (ARG_MULTIPLE_SRC + i) along a dimension.");
        pd.def(py::init(&create<f_concat, PD, md, int, mds>), py::arg("engine"),
                py::arg("dst"), py::arg("concat_dimension"), py::arg("srcs"), ATTR);
        pd.def(py::init(&create<f_concat, PD, int, mds>), py::arg("engine"),
                py::arg("concat_dimension"), py::arg("srcs"), ATTR);
    }
    {
        using PD = dnnl::sum::primitive_desc;
        using floats = std::vector<float>;
        auto pd = bind_family<f_sum>(m, "sum",
                "dst = sum of scales[i] * src_i (sources as ARG_MULTIPLE_SRC + i).");
        pd.def(py::init([](const engine_object &e, const md &dst, const floats &scales,
                                const mds &srcs, const attr_object &attr) {
            return avoid_shifted_scales(create<f_sum, PD, md, floats, mds>(e, dst, scales, srcs, attr),
                    scales);
        }), py::arg("engine"), py::arg("dst"), py::arg("scales"), py::arg("srcs"), ATTR);
        pd.def(py::init([](const engine_object &e, const floats &scales, const mds &srcs,
                                const attr_object &attr) {
            return avoid_shifted_scales(create<f_sum, PD, floats, mds>(e, scales, srcs, attr),
                    scales);
        }), py::arg("engine"), py::arg("scales"), py::arg("srcs"), ATTR);
    }
}

#undef ATTR

} // namespace

void bind_primitives(py::module_ &m) {
    bind_matmul(m);
    bind_convolution(m);
    bind_inner_product(m);
    bind_eltwise(m);
    bind_binary(m);
    bind_reorder(m);
    bind_softmax(m);
    bind_pooling(m);
    bind_normalizations(m);
    bind_concat_sum(m);
}

} // namespace dnnl_ocl_interop
