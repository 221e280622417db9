// Elementwise-like families: eltwise, binary, PReLU, softmax and shuffle, forward and backward.
#include "common/enum_caster.hpp" // first: see the header

#include <string>

#include "primitives/family.hpp"

namespace py = pybind11;
using namespace pybind11::literals;

namespace dnnl_ocl_interop {
using namespace family_args;

void bind_elementwise(py::module_ &m) {
    {
        using P = dnnl::eltwise_forward;
        auto pd = bind_family<P>(m, "eltwise_forward",
                "Forward elementwise operation (algorithm.eltwise_*).");
        constructor<P, prop_kind, algorithm, md, md>(pd, "prop_kind"_a, "algorithm"_a, "src_desc"_a,
                "dst_desc"_a);
        constructor<P, prop_kind, algorithm, md, md, float>(pd, "prop_kind"_a, "algorithm"_a,
                "src_desc"_a, "dst_desc"_a, "alpha"_a);
        constructor<P, prop_kind, algorithm, md, md, float, float>(pd, "prop_kind"_a, "algorithm"_a,
                "src_desc"_a, "dst_desc"_a, "alpha"_a, "beta"_a);
    }
    {
        using P = dnnl::eltwise_backward;
        auto pd = bind_family<P>(m, "eltwise_backward",
                "Elementwise operation gradient; data_desc is the source, or the destination for "
                "the *_use_dst_for_bwd algorithms.");
        constructor<P, algorithm, md, md, md, hint<dnnl::eltwise_forward>>(pd, "algorithm"_a,
                "diff_src_desc"_a, "diff_dst_desc"_a, "data_desc"_a, "hint_fwd_pd"_a);
        constructor<P, algorithm, md, md, md, float, hint<dnnl::eltwise_forward>>(pd, "algorithm"_a,
                "diff_src_desc"_a, "diff_dst_desc"_a, "data_desc"_a, "alpha"_a, "hint_fwd_pd"_a);
        constructor<P, algorithm, md, md, md, float, float, hint<dnnl::eltwise_forward>>(pd,
                "algorithm"_a, "diff_src_desc"_a, "diff_dst_desc"_a, "data_desc"_a, "alpha"_a,
                "beta"_a, "hint_fwd_pd"_a);
    }
    {
        using P = dnnl::binary;
        auto pd = bind_family<P>(m, "binary",
                "dst = src0 op src1 (op: algorithm.binary_*; binary_select takes src2 as "
                "condition).");
        constructor<P, algorithm, md, md, md>(pd, "algorithm"_a, "src0"_a, "src1"_a, "dst"_a);
        constructor<P, algorithm, md, md, md, md>(pd, "algorithm"_a, "src0"_a, "src1"_a, "src2"_a,
                "dst"_a);
        // C++'s binary descriptor names its sources.
        for (int i = 0; i < 3; ++i)
            pd.def(("src" + std::to_string(i) + "_desc").c_str(),
                    [i](const primitive_desc_object &p) {
                return p.pd.query_md(dnnl::query::src_md, i);
            }, ("Source " + std::to_string(i) + " memory descriptor (zero if none).").c_str());
    }
    {
        using P = dnnl::prelu_forward;
        auto pd = bind_family<P>(m, "prelu_forward",
                "Forward PReLU: dst = src if src > 0 else weights * src (weights broadcast).");
        constructor<P, prop_kind, md, md, md>(pd, "prop_kind"_a, "src_desc"_a, "weight_desc"_a,
                "dst_desc"_a);
    }
    {
        using P = dnnl::prelu_backward;
        auto pd = bind_family<P>(m, "prelu_backward",
                "PReLU gradients with respect to source and weights.");
        constructor<P, md, md, md, md, md, hint<dnnl::prelu_forward>>(pd, "src_desc"_a,
                "weight_desc"_a, "diff_src_desc"_a, "diff_weights_desc"_a, "diff_dst_desc"_a,
                "hint_fwd_pd"_a);
    }
    {
        using P = dnnl::softmax_forward;
        auto pd = bind_family<P>(m, "softmax_forward",
                "Forward softmax (or logsoftmax) along an axis.");
        constructor<P, prop_kind, algorithm, md, md, int>(pd, "prop_kind"_a, "algorithm"_a,
                "src_desc"_a, "dst_desc"_a, "axis"_a);
    }
    {
        using P = dnnl::softmax_backward;
        auto pd = bind_family<P>(m, "softmax_backward",
                "Softmax (or logsoftmax) gradient with respect to the source, from the forward "
                "destination.");
        constructor<P, algorithm, md, md, md, int, hint<dnnl::softmax_forward>>(pd, "algorithm"_a,
                "diff_src_desc"_a, "diff_dst_desc"_a, "dst_desc"_a, "axis"_a, "hint_fwd_pd"_a);
    }
    {
        using P = dnnl::shuffle_forward;
        auto pd = bind_family<P>(m, "shuffle_forward",
                "Forward channel shuffle along an axis in groups.");
        constructor<P, prop_kind, md, md, int, int>(pd, "prop_kind"_a, "src_desc"_a, "dst_desc"_a,
                "axis"_a, "group_size"_a);
    }
    {
        using P = dnnl::shuffle_backward;
        auto pd = bind_family<P>(m, "shuffle_backward",
                "Channel shuffle gradient (the inverse shuffle).");
        constructor<P, md, md, int, int, hint<dnnl::shuffle_forward>>(pd, "diff_src_desc"_a,
                "diff_dst_desc"_a, "axis"_a, "group_size"_a, "hint_fwd_pd"_a);
    }
}

} // namespace dnnl_ocl_interop
