// Matrix-product families: matmul, convolution, deconvolution and inner product, forward and backward.
#include "common/enum_caster.hpp" // first: see the header

#include <string>

#include "primitives/family.hpp"

namespace py = pybind11;
using namespace pybind11::literals;

namespace dnnl_ocl_interop {
using namespace family_args;

namespace {

// Convolution and deconvolution have the same C++ overloads in each direction
// (with and without bias, with and without dilates): one definition for both.
template <typename Fwd, typename BwdData, typename BwdWeights>
void bind_spatial_products(py::module_ &m, const std::string &name, const char *forward_doc,
        const char *backward_data_doc, const char *backward_weights_doc) {
    {
        using P = Fwd;
        auto pd = bind_family<P>(m, (name + "_forward").c_str(), forward_doc);
        constructor<P, prop_kind, algorithm, md, md, md, md, dims, dims, dims>(pd, "prop_kind"_a,
                "algorithm"_a, "src_desc"_a, "weights_desc"_a, "bias_desc"_a, "dst_desc"_a,
                "strides"_a, "padding_l"_a, "padding_r"_a);
        constructor<P, prop_kind, algorithm, md, md, md, dims, dims, dims>(pd, "prop_kind"_a,
                "algorithm"_a, "src_desc"_a, "weights_desc"_a, "dst_desc"_a, "strides"_a,
                "padding_l"_a, "padding_r"_a);
        constructor<P, prop_kind, algorithm, md, md, md, md, dims, dims, dims, dims>(pd,
                "prop_kind"_a, "algorithm"_a, "src_desc"_a, "weights_desc"_a, "bias_desc"_a,
                "dst_desc"_a, "strides"_a, "dilates"_a, "padding_l"_a, "padding_r"_a);
        constructor<P, prop_kind, algorithm, md, md, md, dims, dims, dims, dims>(pd, "prop_kind"_a,
                "algorithm"_a, "src_desc"_a, "weights_desc"_a, "dst_desc"_a, "strides"_a,
                "dilates"_a, "padding_l"_a, "padding_r"_a);
    }
    {
        using P = BwdData;
        auto pd = bind_family<P>(m, (name + "_backward_data").c_str(), backward_data_doc);
        constructor<P, algorithm, md, md, md, dims, dims, dims, hint<Fwd>>(pd, "algorithm"_a,
                "diff_src_desc"_a, "weights_desc"_a, "diff_dst_desc"_a, "strides"_a, "padding_l"_a,
                "padding_r"_a, "hint_fwd_pd"_a);
        constructor<P, algorithm, md, md, md, dims, dims, dims, dims, hint<Fwd>>(pd, "algorithm"_a,
                "diff_src_desc"_a, "weights_desc"_a, "diff_dst_desc"_a, "strides"_a, "dilates"_a,
                "padding_l"_a, "padding_r"_a, "hint_fwd_pd"_a);
    }
    {
        using P = BwdWeights;
        auto pd = bind_family<P>(m, (name + "_backward_weights").c_str(), backward_weights_doc);
        constructor<P, algorithm, md, md, md, md, dims, dims, dims, hint<Fwd>>(pd, "algorithm"_a,
                "src_desc"_a, "diff_weights_desc"_a, "diff_bias_desc"_a, "diff_dst_desc"_a,
                "strides"_a, "padding_l"_a, "padding_r"_a, "hint_fwd_pd"_a);
        constructor<P, algorithm, md, md, md, dims, dims, dims, hint<Fwd>>(pd, "algorithm"_a,
                "src_desc"_a, "diff_weights_desc"_a, "diff_dst_desc"_a, "strides"_a, "padding_l"_a,
                "padding_r"_a, "hint_fwd_pd"_a);
        constructor<P, algorithm, md, md, md, md, dims, dims, dims, dims, hint<Fwd>>(pd,
                "algorithm"_a, "src_desc"_a, "diff_weights_desc"_a, "diff_bias_desc"_a,
                "diff_dst_desc"_a, "strides"_a, "dilates"_a, "padding_l"_a, "padding_r"_a,
                "hint_fwd_pd"_a);
        constructor<P, algorithm, md, md, md, dims, dims, dims, dims, hint<Fwd>>(pd, "algorithm"_a,
                "src_desc"_a, "diff_weights_desc"_a, "diff_dst_desc"_a, "strides"_a, "dilates"_a,
                "padding_l"_a, "padding_r"_a, "hint_fwd_pd"_a);
    }
}

} // namespace

void bind_convolution_like(py::module_ &m) {
    {
        using P = dnnl::matmul;
        auto pd = bind_family<P>(m, "matmul",
                "dst = src x weights (+ bias), batched over leading dimensions.");
        constructor<P, md, md, md>(pd, "src_desc"_a, "weights_desc"_a, "dst_desc"_a);
        constructor<P, md, md, md, md>(pd, "src_desc"_a, "weights_desc"_a, "bias_desc"_a,
                "dst_desc"_a);
    }
    bind_spatial_products<dnnl::convolution_forward, dnnl::convolution_backward_data,
            dnnl::convolution_backward_weights>(m, "convolution",
            "Forward convolution (direct, Winograd or auto).",
            "Convolution gradient with respect to the source (diff_src from diff_dst and weights).",
            "Convolution gradient with respect to weights and bias.");
    bind_spatial_products<dnnl::deconvolution_forward, dnnl::deconvolution_backward_data,
            dnnl::deconvolution_backward_weights>(m, "deconvolution",
            "Forward deconvolution (transposed convolution).",
            "Deconvolution gradient with respect to the source.",
            "Deconvolution gradient with respect to weights and bias.");
    {
        using P = dnnl::inner_product_forward;
        auto pd = bind_family<P>(m, "inner_product_forward",
                "Forward inner product (fully connected layer).");
        constructor<P, prop_kind, md, md, md, md>(pd, "prop_kind"_a, "src_desc"_a, "weights_desc"_a,
                "bias_desc"_a, "dst_desc"_a);
        constructor<P, prop_kind, md, md, md>(pd, "prop_kind"_a, "src_desc"_a, "weights_desc"_a,
                "dst_desc"_a);
    }
    {
        using P = dnnl::inner_product_backward_data;
        auto pd = bind_family<P>(m, "inner_product_backward_data",
                "Inner product gradient with respect to the source.");
        constructor<P, md, md, md, hint<dnnl::inner_product_forward>>(pd, "diff_src_desc"_a,
                "weights_desc"_a, "diff_dst_desc"_a, "hint_fwd_pd"_a);
    }
    {
        using P = dnnl::inner_product_backward_weights;
        auto pd = bind_family<P>(m, "inner_product_backward_weights",
                "Inner product gradient with respect to weights and bias.");
        constructor<P, md, md, md, md, hint<dnnl::inner_product_forward>>(pd, "src_desc"_a,
                "diff_weights_desc"_a, "diff_bias_desc"_a, "diff_dst_desc"_a, "hint_fwd_pd"_a);
        constructor<P, md, md, md, hint<dnnl::inner_product_forward>>(pd, "src_desc"_a,
                "diff_weights_desc"_a, "diff_dst_desc"_a, "hint_fwd_pd"_a);
    }
}

} // namespace dnnl_ocl_interop
