// Families that change the spatial shape: pooling, resampling (forward and backward) and reduction.
#include "common/enum_caster.hpp" // first: see the header

#include "primitives/family.hpp"

namespace py = pybind11;
using namespace pybind11::literals;

namespace dnnl_ocl_interop {
using namespace family_args;

void bind_spatial(py::module_ &m) {
    {
        using P = dnnl::pooling_forward;
        auto pd = bind_family<P>(m, "pooling_forward",
                "Forward pooling (max or average); max pooling for training keeps a workspace.");
        constructor<P, prop_kind, algorithm, md, md, dims, dims, dims, dims, dims>(pd,
                "prop_kind"_a, "algorithm"_a, "src_desc"_a, "dst_desc"_a, "strides"_a, "kernel"_a,
                "dilation"_a, "padding_l"_a, "padding_r"_a);
    }
    {
        using P = dnnl::pooling_backward;
        auto pd = bind_family<P>(m, "pooling_backward",
                "Pooling gradient with respect to the source (max pooling needs the forward "
                "workspace).");
        constructor<P, algorithm, md, md, dims, dims, dims, dims, dims,
                hint<dnnl::pooling_forward>>(pd, "algorithm"_a, "diff_src_desc"_a,
                "diff_dst_desc"_a, "strides"_a, "kernel"_a, "dilation"_a, "padding_l"_a,
                "padding_r"_a, "hint_fwd_pd"_a);
    }
    {
        using P = dnnl::resampling_forward;
        auto pd = bind_family<P>(m, "resampling_forward",
                "Forward resampling (nearest or linear) by factors or to a destination shape.");
        constructor<P, prop_kind, algorithm, md, md>(pd, "prop_kind"_a, "algorithm"_a, "src_desc"_a,
                "dst_desc"_a);
        constructor<P, prop_kind, algorithm, floats, md>(pd, "prop_kind"_a, "algorithm"_a,
                "factors"_a, "src_desc"_a);
        constructor<P, prop_kind, algorithm, floats, md, md>(pd, "prop_kind"_a, "algorithm"_a,
                "factors"_a, "src_desc"_a, "dst_desc"_a);
    }
    {
        using P = dnnl::resampling_backward;
        auto pd = bind_family<P>(m, "resampling_backward",
                "Resampling gradient with respect to the source.");
        constructor<P, algorithm, md, md, hint<dnnl::resampling_forward>>(pd, "algorithm"_a,
                "diff_src_desc"_a, "diff_dst_desc"_a, "hint_fwd_pd"_a);
        constructor<P, algorithm, floats, md, md, hint<dnnl::resampling_forward>>(pd, "algorithm"_a,
                "factors"_a, "diff_src_desc"_a, "diff_dst_desc"_a, "hint_fwd_pd"_a);
    }
    {
        using P = dnnl::reduction;
        auto pd = bind_family<P>(m, "reduction",
                "Reduction (sum, mean, max, min, mul, Lp norms) over the dimensions where dst has "
                "size 1.");
        constructor<P, algorithm, md, md, float, float>(pd, "algorithm"_a, "src_desc"_a,
                "dst_desc"_a, "p"_a, "eps"_a);
    }
}

} // namespace dnnl_ocl_interop
