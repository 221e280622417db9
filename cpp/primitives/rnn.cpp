// Recurrent families: vanilla RNN, LSTM, GRU, linear-before-reset GRU, AUGRU and linear-before-reset AUGRU, forward and backward.
#include "common/enum_caster.hpp" // first: see the header

#include <string>

#include "primitives/family.hpp"

namespace py = pybind11;
using namespace pybind11::literals;

namespace dnnl_ocl_interop {
using namespace family_args;

namespace {

struct named_arg {
    const char *query;
    int arg;
    const char *doc;
};

// The C++ rnn_primitive_desc_base's descriptor queries: each is the
// descriptor of one execution argument (zero where the cell has none).
#define RNN_ARG(name, arg, what) \
    {#name "_desc", DNNL_ARG_##arg, what " memory descriptor (zero if none)."}
const named_arg rnn_args[] = {
        RNN_ARG(src_layer, SRC_LAYER, "Source layer"),
        RNN_ARG(augru_attention, AUGRU_ATTENTION, "AUGRU attention"),
        RNN_ARG(src_iter, SRC_ITER, "Source iteration"),
        RNN_ARG(src_iter_c, SRC_ITER_C, "Source cell state"),
        RNN_ARG(weights_layer, WEIGHTS_LAYER, "Weights layer"),
        RNN_ARG(weights_iter, WEIGHTS_ITER, "Weights iteration"),
        RNN_ARG(weights_peephole, WEIGHTS_PEEPHOLE, "Peephole weights"),
        RNN_ARG(weights_projection, WEIGHTS_PROJECTION, "Projection weights"),
        RNN_ARG(dst_layer, DST_LAYER, "Destination layer"),
        RNN_ARG(dst_iter, DST_ITER, "Destination iteration"),
        RNN_ARG(dst_iter_c, DST_ITER_C, "Destination cell state"),
        RNN_ARG(diff_src_layer, DIFF_SRC_LAYER, "Diff source layer"),
        RNN_ARG(diff_augru_attention, DIFF_AUGRU_ATTENTION, "Diff AUGRU attention"),
        RNN_ARG(diff_src_iter, DIFF_SRC_ITER, "Diff source iteration"),
        RNN_ARG(diff_src_iter_c, DIFF_SRC_ITER_C, "Diff source cell state"),
        RNN_ARG(diff_weights_layer, DIFF_WEIGHTS_LAYER, "Diff weights layer"),
        RNN_ARG(diff_weights_iter, DIFF_WEIGHTS_ITER, "Diff weights iteration"),
        RNN_ARG(diff_weights_peephole, DIFF_WEIGHTS_PEEPHOLE, "Diff peephole weights"),
        RNN_ARG(diff_weights_projection, DIFF_WEIGHTS_PROJECTION, "Diff projection weights"),
        RNN_ARG(diff_dst_layer, DIFF_DST_LAYER, "Diff destination layer"),
        RNN_ARG(diff_dst_iter, DIFF_DST_ITER, "Diff destination iteration"),
        RNN_ARG(diff_dst_iter_c, DIFF_DST_ITER_C, "Diff destination cell state"),
};
#undef RNN_ARG

void bind_rnn_base(py::module_ &m) {
    py::class_<rnn_primitive_desc_object, primitive_desc_object> base(m, "rnn_primitive_desc_base",
            "Base of the RNN primitive descriptors: the per-argument descriptor "
            "queries of the C++ rnn_primitive_desc_base.");
    for (const named_arg &a : rnn_args) {
        int arg = a.arg;
        base.def(a.query, [arg](const rnn_primitive_desc_object &p) {
            return p.pd.query_md(dnnl::query::exec_arg_md, arg);
        }, a.doc);
    }
}

// The AUGRU descriptors' names for the attention argument.
template <typename Class>
void add_attention_queries(Class &pd) {
    pd.def("attention_desc", [](const primitive_desc_object &p) {
        return p.pd.query_md(dnnl::query::exec_arg_md, DNNL_ARG_AUGRU_ATTENTION);
    }, "Attention memory descriptor.");
    pd.def("diff_attention_desc", [](const primitive_desc_object &p) {
        return p.pd.query_md(dnnl::query::exec_arg_md, DNNL_ARG_DIFF_AUGRU_ATTENTION);
    }, "Diff attention memory descriptor (zero for a forward descriptor).");
}

// GRU and linear-before-reset GRU have the same C++ overloads, and so have
// AUGRU and its linear-before-reset form: one definition for each pair.
template <typename Fwd, typename Bwd>
void bind_gru_cells(py::module_ &m, const std::string &name, const char *forward_doc,
        const char *backward_doc) {
    auto fwd = bind_family<Fwd>(m, (name + "_forward").c_str(), forward_doc);
    constructor<Fwd, prop_kind, direction, md, md, md, md, md, md, md>(fwd, "prop_kind"_a,
            "direction"_a, "src_layer_desc"_a, "src_iter_desc"_a, "weights_layer_desc"_a,
            "weights_iter_desc"_a, "bias_desc"_a, "dst_layer_desc"_a, "dst_iter_desc"_a);
    auto bwd = bind_family<Bwd>(m, (name + "_backward").c_str(), backward_doc);
    constructor<Bwd, prop_kind, direction, md, md, md, md, md, md, md, md, md, md, md, md, md, md,
            hint<Fwd>>(bwd, "prop_kind"_a, "direction"_a, "src_layer_desc"_a, "src_iter_desc"_a,
            "weights_layer_desc"_a, "weights_iter_desc"_a, "bias_desc"_a, "dst_layer_desc"_a,
            "dst_iter_desc"_a, "diff_src_layer_desc"_a, "diff_src_iter_desc"_a,
            "diff_weights_layer_desc"_a, "diff_weights_iter_desc"_a, "diff_bias_desc"_a,
            "diff_dst_layer_desc"_a, "diff_dst_iter_desc"_a, "hint_fwd_pd"_a);
}

template <typename Fwd, typename Bwd>
void bind_augru_cells(py::module_ &m, const std::string &name, const char *forward_doc,
        const char *backward_doc) {
    auto fwd = bind_family<Fwd>(m, (name + "_forward").c_str(), forward_doc);
    constructor<Fwd, prop_kind, direction, md, md, md, md, md, md, md, md>(fwd, "prop_kind"_a,
            "direction"_a, "src_layer_desc"_a, "src_iter_desc"_a, "attention_desc"_a,
            "weights_layer_desc"_a, "weights_iter_desc"_a, "bias_desc"_a, "dst_layer_desc"_a,
            "dst_iter_desc"_a);
    add_attention_queries(fwd);
    auto bwd = bind_family<Bwd>(m, (name + "_backward").c_str(), backward_doc);
    constructor<Bwd, prop_kind, direction, md, md, md, md, md, md, md, md, md, md, md, md, md, md,
            md, md, hint<Fwd>>(bwd, "prop_kind"_a, "direction"_a, "src_layer_desc"_a,
            "src_iter_desc"_a, "attention_desc"_a, "weights_layer_desc"_a, "weights_iter_desc"_a,
            "bias_desc"_a, "dst_layer_desc"_a, "dst_iter_desc"_a, "diff_src_layer_desc"_a,
            "diff_src_iter_desc"_a, "diff_attention_desc"_a, "diff_weights_layer_desc"_a,
            "diff_weights_iter_desc"_a, "diff_bias_desc"_a, "diff_dst_layer_desc"_a,
            "diff_dst_iter_desc"_a, "hint_fwd_pd"_a);
    add_attention_queries(bwd);
}

} // namespace

void bind_rnn(py::module_ &m) {
    bind_rnn_base(m);
    {
        using P = dnnl::vanilla_rnn_forward;
        auto pd = bind_family<P>(m, "vanilla_rnn_forward",
                "Forward vanilla RNN (activation: eltwise_relu, eltwise_tanh or "
                "eltwise_logistic).");
        constructor<P, prop_kind, algorithm, direction, md, md, md, md, md, md, md>(pd,
                "prop_kind"_a, "activation"_a, "direction"_a, "src_layer_desc"_a, "src_iter_desc"_a,
                "weights_layer_desc"_a, "weights_iter_desc"_a, "bias_desc"_a, "dst_layer_desc"_a,
                "dst_iter_desc"_a);
        constructor<P, prop_kind, algorithm, direction, md, md, md, md, md, md, md, float>(pd,
                "prop_kind"_a, "activation"_a, "direction"_a, "src_layer_desc"_a, "src_iter_desc"_a,
                "weights_layer_desc"_a, "weights_iter_desc"_a, "bias_desc"_a, "dst_layer_desc"_a,
                "dst_iter_desc"_a, "alpha"_a);
    }
    {
        using P = dnnl::vanilla_rnn_backward;
        auto pd = bind_family<P>(m, "vanilla_rnn_backward", "Vanilla RNN gradients.");
        constructor<P, prop_kind, algorithm, direction, md, md, md, md, md, md, md, md, md, md, md,
                md, md, md, hint<dnnl::vanilla_rnn_forward>>(pd, "prop_kind"_a, "activation"_a,
                "direction"_a, "src_layer_desc"_a, "src_iter_desc"_a, "weights_layer_desc"_a,
                "weights_iter_desc"_a, "bias_desc"_a, "dst_layer_desc"_a, "dst_iter_desc"_a,
                "diff_src_layer_desc"_a, "diff_src_iter_desc"_a, "diff_weights_layer_desc"_a,
                "diff_weights_iter_desc"_a, "diff_bias_desc"_a, "diff_dst_layer_desc"_a,
                "diff_dst_iter_desc"_a, "hint_fwd_pd"_a);
        constructor<P, prop_kind, algorithm, direction, md, md, md, md, md, md, md, md, md, md, md,
                md, md, md, float, hint<dnnl::vanilla_rnn_forward>>(pd, "prop_kind"_a,
                "activation"_a, "direction"_a, "src_layer_desc"_a, "src_iter_desc"_a,
                "weights_layer_desc"_a, "weights_iter_desc"_a, "bias_desc"_a, "dst_layer_desc"_a,
                "dst_iter_desc"_a, "diff_src_layer_desc"_a, "diff_src_iter_desc"_a,
                "diff_weights_layer_desc"_a, "diff_weights_iter_desc"_a, "diff_bias_desc"_a,
                "diff_dst_layer_desc"_a, "diff_dst_iter_desc"_a, "alpha"_a, "hint_fwd_pd"_a);
    }
    {
        using P = dnnl::lstm_forward;
        auto pd = bind_family<P>(m, "lstm_forward",
                "Forward LSTM, optionally with peephole and projection weights.");
        constructor<P, prop_kind, direction, md, md, md, md, md, md, md, md, md, md, md>(pd,
                "prop_kind"_a, "direction"_a, "src_layer_desc"_a, "src_iter_desc"_a,
                "src_iter_c_desc"_a, "weights_layer_desc"_a, "weights_iter_desc"_a,
                "weights_peephole_desc"_a, "weights_projection_desc"_a, "bias_desc"_a,
                "dst_layer_desc"_a, "dst_iter_desc"_a, "dst_iter_c_desc"_a);
        constructor<P, prop_kind, direction, md, md, md, md, md, md, md, md, md, md>(pd,
                "prop_kind"_a, "direction"_a, "src_layer_desc"_a, "src_iter_desc"_a,
                "src_iter_c_desc"_a, "weights_layer_desc"_a, "weights_iter_desc"_a,
                "weights_peephole_desc"_a, "bias_desc"_a, "dst_layer_desc"_a, "dst_iter_desc"_a,
                "dst_iter_c_desc"_a);
        constructor<P, prop_kind, direction, md, md, md, md, md, md, md, md, md>(pd, "prop_kind"_a,
                "direction"_a, "src_layer_desc"_a, "src_iter_desc"_a, "src_iter_c_desc"_a,
                "weights_layer_desc"_a, "weights_iter_desc"_a, "bias_desc"_a, "dst_layer_desc"_a,
                "dst_iter_desc"_a, "dst_iter_c_desc"_a);
    }
    {
        using P = dnnl::lstm_backward;
        auto pd = bind_family<P>(m, "lstm_backward",
                "LSTM gradients, optionally with peephole and projection weights.");
        constructor<P, prop_kind, direction, md, md, md, md, md, md, md, md, md, md, md, md, md, md,
                md, md, md, md, md, md, md, md, hint<dnnl::lstm_forward>>(pd, "prop_kind"_a,
                "direction"_a, "src_layer_desc"_a, "src_iter_desc"_a, "src_iter_c_desc"_a,
                "weights_layer_desc"_a, "weights_iter_desc"_a, "weights_peephole_desc"_a,
                "weights_projection_desc"_a, "bias_desc"_a, "dst_layer_desc"_a, "dst_iter_desc"_a,
                "dst_iter_c_desc"_a, "diff_src_layer_desc"_a, "diff_src_iter_desc"_a,
                "diff_src_iter_c_desc"_a, "diff_weights_layer_desc"_a, "diff_weights_iter_desc"_a,
                "diff_weights_peephole_desc"_a, "diff_weights_projection_desc"_a,
                "diff_bias_desc"_a, "diff_dst_layer_desc"_a, "diff_dst_iter_desc"_a,
                "diff_dst_iter_c_desc"_a, "hint_fwd_pd"_a);
        constructor<P, prop_kind, direction, md, md, md, md, md, md, md, md, md, md, md, md, md, md,
                md, md, md, md, md, md, hint<dnnl::lstm_forward>>(pd, "prop_kind"_a, "direction"_a,
                "src_layer_desc"_a, "src_iter_desc"_a, "src_iter_c_desc"_a, "weights_layer_desc"_a,
                "weights_iter_desc"_a, "weights_peephole_desc"_a, "bias_desc"_a, "dst_layer_desc"_a,
                "dst_iter_desc"_a, "dst_iter_c_desc"_a, "diff_src_layer_desc"_a,
                "diff_src_iter_desc"_a, "diff_src_iter_c_desc"_a, "diff_weights_layer_desc"_a,
                "diff_weights_iter_desc"_a, "diff_weights_peephole_desc"_a, "diff_bias_desc"_a,
                "diff_dst_layer_desc"_a, "diff_dst_iter_desc"_a, "diff_dst_iter_c_desc"_a,
                "hint_fwd_pd"_a);
        constructor<P, prop_kind, direction, md, md, md, md, md, md, md, md, md, md, md, md, md, md,
                md, md, md, md, hint<dnnl::lstm_forward>>(pd, "prop_kind"_a, "direction"_a,
                "src_layer_desc"_a, "src_iter_desc"_a, "src_iter_c_desc"_a, "weights_layer_desc"_a,
                "weights_iter_desc"_a, "bias_desc"_a, "dst_layer_desc"_a, "dst_iter_desc"_a,
                "dst_iter_c_desc"_a, "diff_src_layer_desc"_a, "diff_src_iter_desc"_a,
                "diff_src_iter_c_desc"_a, "diff_weights_layer_desc"_a, "diff_weights_iter_desc"_a,
                "diff_bias_desc"_a, "diff_dst_layer_desc"_a, "diff_dst_iter_desc"_a,
                "diff_dst_iter_c_desc"_a, "hint_fwd_pd"_a);
    }
    bind_gru_cells<dnnl::gru_forward, dnnl::gru_backward>(m, "gru", "Forward GRU.",
            "GRU gradients.");
    bind_gru_cells<dnnl::lbr_gru_forward, dnnl::lbr_gru_backward>(m, "lbr_gru",
            "Forward linear-before-reset GRU.", "Linear-before-reset GRU gradients.");
    bind_augru_cells<dnnl::augru_forward, dnnl::augru_backward>(m, "augru",
            "Forward AUGRU (GRU with an attention input).", "AUGRU gradients.");
    bind_augru_cells<dnnl::lbr_augru_forward, dnnl::lbr_augru_backward>(m, "lbr_augru",
            "Forward linear-before-reset AUGRU.", "Linear-before-reset AUGRU gradients.");
}

} // namespace dnnl_ocl_interop
