// Normalization families: batch, layer and group normalization and LRN, forward and backward.
#include "common/enum_caster.hpp" // first: see the header

#include "primitives/family.hpp"

namespace py = pybind11;
using namespace pybind11::literals;

namespace dnnl_ocl_interop {
using namespace family_args;

namespace {

// C++ has get_flags() on the normalization descriptors only.
template <typename Class>
void add_get_flags(Class &pd) {
    pd.def("get_flags", [](const primitive_desc_object &p) {
        unsigned value = 0;
        dnnl::error::wrap_c_api(dnnl_primitive_desc_query(p.pd.get(), dnnl_query_flags, 0, &value),
                "could not query the normalization flags");
        return static_cast<flags>(value);
    }, "The normalization flags the descriptor was created with.");
}

} // namespace

void bind_normalizations(py::module_ &m) {
    {
        using P = dnnl::batch_normalization_forward;
        auto pd = bind_family<P>(m, "batch_normalization_forward",
                "Forward batch normalization over the channel dimension.");
        add_get_flags(pd);
        constructor<P, prop_kind, md, md, float, flags>(pd, "prop_kind"_a, "src_desc"_a,
                "dst_desc"_a, "epsilon"_a, "flags"_a);
    }
    {
        using P = dnnl::batch_normalization_backward;
        auto pd = bind_family<P>(m, "batch_normalization_backward",
                "Batch normalization gradients (diff_src; with prop_kind.backward also diff scale "
                "and shift).");
        add_get_flags(pd);
        constructor<P, prop_kind, md, md, md, float, flags,
                hint<dnnl::batch_normalization_forward>>(pd, "prop_kind"_a, "diff_src_desc"_a,
                "diff_dst_desc"_a, "src_desc"_a, "epsilon"_a, "flags"_a, "hint_fwd_pd"_a);
    }
    {
        using P = dnnl::layer_normalization_forward;
        auto pd = bind_family<P>(m, "layer_normalization_forward",
                "Forward layer normalization over the last dimension.");
        add_get_flags(pd);
        constructor<P, prop_kind, md, md, md, float, flags>(pd, "prop_kind"_a, "src_desc"_a,
                "dst_desc"_a, "stat_desc"_a, "epsilon"_a, "flags"_a);
        constructor<P, prop_kind, md, md, float, flags>(pd, "prop_kind"_a, "src_desc"_a,
                "dst_desc"_a, "epsilon"_a, "flags"_a);
        constructor<P, prop_kind, md, md, md, dt, float, flags>(pd, "prop_kind"_a, "src_desc"_a,
                "dst_desc"_a, "stat_desc"_a, "scale_shift_data_type"_a, "epsilon"_a, "flags"_a);
        constructor<P, prop_kind, md, md, dt, float, flags>(pd, "prop_kind"_a, "src_desc"_a,
                "dst_desc"_a, "scale_shift_data_type"_a, "epsilon"_a, "flags"_a);
    }
    {
        using P = dnnl::layer_normalization_backward;
        auto pd = bind_family<P>(m, "layer_normalization_backward",
                "Layer normalization gradients (diff_src; with prop_kind.backward also diff scale "
                "and shift).");
        add_get_flags(pd);
        constructor<P, prop_kind, md, md, md, md, float, flags,
                hint<dnnl::layer_normalization_forward>>(pd, "prop_kind"_a, "diff_src_desc"_a,
                "diff_dst_desc"_a, "src_desc"_a, "stat_desc"_a, "epsilon"_a, "flags"_a,
                "hint_fwd_pd"_a);
        constructor<P, prop_kind, md, md, md, float, flags,
                hint<dnnl::layer_normalization_forward>>(pd, "prop_kind"_a, "diff_src_desc"_a,
                "diff_dst_desc"_a, "src_desc"_a, "epsilon"_a, "flags"_a, "hint_fwd_pd"_a);
        constructor<P, prop_kind, md, md, md, md, dt, dt, float, flags,
                hint<dnnl::layer_normalization_forward>>(pd, "prop_kind"_a, "diff_src_desc"_a,
                "diff_dst_desc"_a, "src_desc"_a, "stat_desc"_a, "diff_scale_shift_data_type"_a,
                "scale_shift_data_type"_a, "epsilon"_a, "flags"_a, "hint_fwd_pd"_a);
        constructor<P, prop_kind, md, md, md, dt, dt, float, flags,
                hint<dnnl::layer_normalization_forward>>(pd, "prop_kind"_a, "diff_src_desc"_a,
                "diff_dst_desc"_a, "src_desc"_a, "diff_scale_shift_data_type"_a,
                "scale_shift_data_type"_a, "epsilon"_a, "flags"_a, "hint_fwd_pd"_a);
    }
    {
        using P = dnnl::group_normalization_forward;
        auto pd = bind_family<P>(m, "group_normalization_forward",
                "Forward group normalization: channels split into groups, each normalized over its "
                "channels and spatial dimensions.");
        add_get_flags(pd);
        constructor<P, prop_kind, md, md, dim, float, flags>(pd, "prop_kind"_a, "src_desc"_a,
                "dst_desc"_a, "groups"_a, "epsilon"_a, "flags"_a);
    }
    {
        using P = dnnl::group_normalization_backward;
        auto pd = bind_family<P>(m, "group_normalization_backward",
                "Group normalization gradients.");
        add_get_flags(pd);
        constructor<P, prop_kind, md, md, md, dim, float, flags,
                hint<dnnl::group_normalization_forward>>(pd, "prop_kind"_a, "diff_src_desc"_a,
                "diff_dst_desc"_a, "src_desc"_a, "groups"_a, "epsilon"_a, "flags"_a,
                "hint_fwd_pd"_a);
    }
    {
        using P = dnnl::lrn_forward;
        auto pd = bind_family<P>(m, "lrn_forward",
                "Forward local response normalization (across or within channels).");
        constructor<P, prop_kind, algorithm, md, md, dim, float, float, float>(pd, "prop_kind"_a,
                "algorithm"_a, "src_desc"_a, "dst_desc"_a, "local_size"_a, "alpha"_a, "beta"_a,
                "k"_a);
    }
    {
        using P = dnnl::lrn_backward;
        auto pd = bind_family<P>(m, "lrn_backward",
                "Local response normalization gradient with respect to the source.");
        constructor<P, algorithm, md, md, md, dim, float, float, float, hint<dnnl::lrn_forward>>(pd,
                "algorithm"_a, "diff_src_desc"_a, "diff_dst_desc"_a, "src_desc"_a, "local_size"_a,
                "alpha"_a, "beta"_a, "k"_a, "hint_fwd_pd"_a);
    }
}

} // namespace dnnl_ocl_interop
