// Execution-argument constants, post-ops and primitive attributes.
#include "common/enum_caster.hpp" // first: see the header

#include <algorithm>
#include <climits>
#include <string>

#include <pybind11/native_enum.h>
#include <pybind11/stl.h>

#include "common/errors.hpp"
#include "core/primitive_objects.hpp"

namespace py = pybind11;

namespace dnnl_ocl_interop {
namespace {

struct arg_constant {
    const char *name;
    int value;
};

#define ARG(name) {"ARG_" #name, DNNL_ARG_##name}
const arg_constant arg_constants[] = {ARG(SRC), ARG(SRC_0), ARG(SRC_1), ARG(SRC_2), ARG(SRC_3),
        ARG(FROM), ARG(SRC_LAYER), ARG(SRC_ITER), ARG(SRC_ITER_C), ARG(AUGRU_ATTENTION), ARG(DST),
        ARG(DST_0), ARG(DST_1), ARG(DST_2), ARG(TO), ARG(DST_LAYER), ARG(DST_ITER), ARG(DST_ITER_C),
        ARG(WEIGHTS), ARG(WEIGHTS_0), ARG(WEIGHTS_1), ARG(WEIGHTS_2), ARG(WEIGHTS_3),
        ARG(WEIGHTS_LAYER), ARG(WEIGHTS_ITER), ARG(WEIGHTS_PEEPHOLE), ARG(WEIGHTS_PROJECTION),
        ARG(BIAS), ARG(REDUCE), ARG(MEAN), ARG(VARIANCE), ARG(SCALE), ARG(SHIFT), ARG(WORKSPACE),
        ARG(SCRATCHPAD), ARG(DIFF_SRC), ARG(DIFF_SRC_0), ARG(DIFF_SRC_1), ARG(DIFF_SRC_2),
        ARG(DIFF_SRC_3), ARG(DIFF_SRC_LAYER), ARG(DIFF_SRC_ITER), ARG(DIFF_SRC_ITER_C),
        ARG(DIFF_AUGRU_ATTENTION), ARG(DIFF_DST), ARG(DIFF_DST_0), ARG(DIFF_DST_1), ARG(DIFF_DST_2),
        ARG(DIFF_DST_LAYER), ARG(DIFF_DST_ITER), ARG(DIFF_DST_ITER_C), ARG(DIFF_WEIGHTS),
        ARG(DIFF_WEIGHTS_0), ARG(DIFF_WEIGHTS_1), ARG(DIFF_WEIGHTS_2), ARG(DIFF_WEIGHTS_3),
        ARG(DIFF_WEIGHTS_LAYER), ARG(DIFF_WEIGHTS_ITER), ARG(DIFF_WEIGHTS_PEEPHOLE),
        ARG(DIFF_WEIGHTS_PROJECTION), ARG(DIFF_BIAS), ARG(DIFF_SCALE), ARG(DIFF_SHIFT),
        ARG(ATTR_DROPOUT_MASK), ARG(ATTR_DROPOUT_PROBABILITY), ARG(ATTR_DROPOUT_SEED),
        ARG(ATTR_DROPOUT_OFFSET), ARG(ATTR_ROUNDING_SEED), ARG(ATTR_PRECOMPUTED_REDUCTIONS),
        ARG(MULTIPLE_SRC), ARG(MULTIPLE_DST), ARG(ATTR_SCALES), ARG(ATTR_ZERO_POINTS),
        ARG(ATTR_POST_OP_DW), ARG(ATTR_MULTIPLE_POST_OP_BASE), ARG(UNDEF)};
#undef ARG

// Records (or, set again, updates) an execution argument the attributes ask
// for, and what oneDNN reads there (quantization_arg).
void add_quantization_arg(attr_object &a, int arg, bool on_host, dnnl::memory::data_type data_type,
        int mask = -1, const dnnl::memory::dims &groups = {}) {
    quantization_arg entry {arg, on_host, mask, groups, data_type};
    for (auto &q : a.quantization_args)
        if (q.arg == arg) {
            q = std::move(entry);
            return;
        }
    a.quantization_args.push_back(std::move(entry));
}

void remove_quantization_arg(attr_object &a, int arg) {
    auto &args = a.quantization_args;
    args.erase(std::remove_if(args.begin(), args.end(),
                       [&](const quantization_arg &q) { return q.arg == arg; }),
            args.end());
}

// Dropout's inputs, as the latest set_dropout asks for them.
void set_dropout_args(attr_object &a, dnnl::memory::data_type seed_dt, bool use_offset,
        bool on_host) {
    using dt = dnnl::memory::data_type;
    add_quantization_arg(a, DNNL_ARG_ATTR_DROPOUT_PROBABILITY, on_host, dt::f32);
    add_quantization_arg(a, DNNL_ARG_ATTR_DROPOUT_SEED, on_host, seed_dt);
    if (use_offset)
        add_quantization_arg(a, DNNL_ARG_ATTR_DROPOUT_OFFSET, on_host, dt::s64);
    else
        remove_quantization_arg(a, DNNL_ARG_ATTR_DROPOUT_OFFSET);
}

void bind_post_ops(py::module_ &m) {
    py::class_<dnnl::post_ops> po(m, "post_ops",
            "Operations fused after a primitive (dnnl::post_ops): eltwise, "
            "binary (its second input passed as "
            "ARG_ATTR_MULTIPLE_POST_OP(index) | ARG_SRC_1) and sum.");
    po.def(py::init<>());
    po.def("__len__", &dnnl::post_ops::len);
    po.def("len", &dnnl::post_ops::len, "Number of post-ops.");
    po.def("kind", &dnnl::post_ops::kind, py::arg("index"),
            "Primitive kind of the index-th post-op.");
    po.def("append_eltwise", &dnnl::post_ops::append_eltwise, py::arg("algorithm"),
            py::arg("alpha") = 0.f, py::arg("beta") = 0.f, "Append an elementwise operation.");
    po.def("append_binary",
            py::overload_cast<dnnl::algorithm, const dnnl::memory::desc &>(
                    &dnnl::post_ops::append_binary),
            py::arg("algorithm"), py::arg("src1_desc"),
            "Append a binary operation with a second input of `src1_desc`.");
    po.def("append_binary",
            py::overload_cast<dnnl::algorithm, const dnnl::memory::desc &,
                    const dnnl::memory::desc &>(&dnnl::post_ops::append_binary),
            py::arg("algorithm"), py::arg("src1_desc"), py::arg("src2_desc"),
            "Append a ternary binary operation (binary_select: src2 is the "
            "condition, passed as ARG_ATTR_MULTIPLE_POST_OP(index) | ARG_SRC_2).");
    po.def("append_prelu", &dnnl::post_ops::append_prelu, py::arg("mask"),
            "Append a PReLU; its weights are passed as "
            "ARG_ATTR_MULTIPLE_POST_OP(index) | ARG_WEIGHTS, `mask` selecting the "
            "destination dimensions they vary along.");
    po.def("get_params_prelu", [](const dnnl::post_ops &p, int index) {
        int mask;
        p.get_params_prelu(index, mask);
        return mask;
    }, py::arg("index"), "Mask of a PReLU post-op.");
    po.def("append_dw", &dnnl::post_ops::append_dw, py::arg("weights_data_type"),
            py::arg("bias_data_type"), py::arg("dst_data_type"), py::arg("kernel_size"),
            py::arg("stride_size"), py::arg("padding_l_size"),
            "Append a depthwise convolution (after a 1x1 convolution); its "
            "weights and bias are passed as ARG_ATTR_POST_OP_DW | ARG_WEIGHTS / "
            "ARG_BIAS.");
    po.def("get_params_dw",
            [](const dnnl::post_ops &p, int index) {
        dnnl::memory::data_type wei, bias, dst;
        dnnl::memory::dim kernel, stride, padding;
        p.get_params_dw(index, wei, bias, dst, kernel, stride, padding);
        return py::make_tuple(wei, bias, dst, kernel, stride, padding);
    }, py::arg("index"),
            "(weights_data_type, bias_data_type, dst_data_type, "
            "kernel_size, stride_size, padding_l_size) of a depthwise post-op.");
    po.def("append_sum", &dnnl::post_ops::append_sum, py::arg("scale") = 1.f,
            py::arg("zero_point") = 0,
            py::arg_v("data_type", dnnl::memory::data_type::undef, "memory.data_type.undef"),
            "Accumulate into the destination: dst = scale * (dst - zero_point) "
            "+ result.");
    po.def("get_params_eltwise", [](const dnnl::post_ops &p, int index) {
        dnnl::algorithm alg;
        float alpha, beta;
        p.get_params_eltwise(index, alg, alpha, beta);
        return py::make_tuple(alg, alpha, beta);
    }, py::arg("index"), "(algorithm, alpha, beta) of an eltwise post-op.");
    po.def("get_params_binary", [](const dnnl::post_ops &p, int index) {
        dnnl::algorithm alg;
        dnnl::memory::desc src1;
        p.get_params_binary(index, alg, src1);
        return py::make_tuple(alg, src1);
    }, py::arg("index"), "(algorithm, src1_desc) of a binary post-op.");
    po.def("get_params_sum", [](const dnnl::post_ops &p, int index) {
        float scale;
        int32_t zero_point;
        dnnl::memory::data_type dt;
        p.get_params_sum(index, scale, zero_point, dt);
        return py::make_tuple(scale, zero_point, dt);
    }, py::arg("index"), "(scale, zero_point, data_type) of a sum post-op.");
}

void bind_attr(py::module_ &m) {
    py::class_<attr_object> attr(m, "primitive_attr",
            "Primitive attributes (dnnl::primitive_attr): post-ops, scales, "
            "zero points, fpmath and scratchpad modes.");
    attr.def(py::init<>());
    attr.def("set_post_ops", [](attr_object &a, const dnnl::post_ops &ops) {
        a.attr.set_post_ops(ops);
    }, py::arg("ops"), "Operations applied to the primitive's result (a copy of `ops`).");
    attr.def("get_post_ops", [](const attr_object &a) { return a.attr.get_post_ops(); },
            "A copy of the post-ops.");
    attr.def("set_scales_mask",
            [](attr_object &a, int arg, int mask) {
        a.attr.set_scales_mask(arg, mask);
        add_quantization_arg(a, DNNL_ARG_ATTR_SCALES | arg, false, dnnl::memory::data_type::f32,
                mask);
    }, py::arg("arg"), py::arg("mask"),
            "Scale argument `arg` (e.g. ARG_SRC) by f32 factors passed at "
            "execution as ARG_ATTR_SCALES | arg; `mask` selects the dimensions "
            "with their own factor (0: one factor).");
    attr.def("set_scales",
            [](attr_object &a, int arg, int mask, const dnnl::memory::dims &groups,
                    dnnl::memory::data_type data_type, bool is_on_host,
                    dnnl::quantization_mode qmode) {
        a.attr.set_scales(arg, mask, groups, data_type, is_on_host, qmode);
        add_quantization_arg(a, DNNL_ARG_ATTR_SCALES | arg, is_on_host, data_type, mask, groups);
    },
            py::arg("arg"), py::arg("mask"), py::arg("groups") = dnnl::memory::dims(),
            py::arg_v("data_type", dnnl::memory::data_type::f32, "memory.data_type.f32"),
            py::arg("is_on_host") = false,
            py::arg_v("qmode", dnnl::quantization_mode::static_sazp,
                    "quantization_mode.static_sazp"),
            "Like set_scales_mask, with groups, the factors' data type, whether "
            "the (single) factor is host-scalar memory, and the quantization mode.");
    attr.def("set_host_scale",
            [](attr_object &a, int arg, dnnl::memory::data_type data_type) {
        a.attr.set_host_scale(arg, data_type);
        add_quantization_arg(a, DNNL_ARG_ATTR_SCALES | arg, /*on_host=*/true, data_type);
    }, py::arg("arg"), py::arg_v("data_type", dnnl::memory::data_type::f32, "memory.data_type.f32"),
            "One scale factor of argument `arg`, passed at execution as host-scalar "
            "memory (memory(memory.desc.host_scalar(data_type), value)) under "
            "ARG_ATTR_SCALES | arg.");
    attr.def("set_zero_points_mask",
            [](attr_object &a, int arg, int mask) {
        a.attr.set_zero_points_mask(arg, mask);
        add_quantization_arg(a, DNNL_ARG_ATTR_ZERO_POINTS | arg, false,
                dnnl::memory::data_type::s32, mask);
    }, py::arg("arg"), py::arg("mask"),
            "Zero points of argument `arg`, passed at execution as s32 "
            "ARG_ATTR_ZERO_POINTS | arg.");
    attr.def("set_zero_points",
            [](attr_object &a, int arg, int mask, const dnnl::memory::dims &groups,
                    dnnl::memory::data_type data_type, bool is_on_host) {
        a.attr.set_zero_points(arg, mask, groups, data_type, is_on_host);
        add_quantization_arg(a, DNNL_ARG_ATTR_ZERO_POINTS | arg, is_on_host, data_type, mask,
                groups);
    },
            py::arg("arg"), py::arg("mask"), py::arg("groups") = dnnl::memory::dims(),
            py::arg_v("data_type", dnnl::memory::data_type::s32, "memory.data_type.s32"),
            py::arg("is_on_host") = false,
            "Like set_zero_points_mask, with groups, the zero points' data type and "
            "whether the (single) zero point is host-scalar memory.");
    attr.def("set_host_zero_point",
            [](attr_object &a, int arg, dnnl::memory::data_type data_type) {
        a.attr.set_host_zero_point(arg, data_type);
        add_quantization_arg(a, DNNL_ARG_ATTR_ZERO_POINTS | arg, /*on_host=*/true, data_type);
    }, py::arg("arg"), py::arg_v("data_type", dnnl::memory::data_type::s32, "memory.data_type.s32"),
            "One zero point of argument `arg`, passed at execution as host-scalar "
            "memory under ARG_ATTR_ZERO_POINTS | arg.");
    attr.def("set_precomputed_reductions",
            [](attr_object &a, int arg, int mask, const dnnl::memory::dims &groups,
                    dnnl::memory::data_type data_type) {
        a.attr.set_precomputed_reductions(arg, mask, groups, data_type);
        add_quantization_arg(a, DNNL_ARG_ATTR_PRECOMPUTED_REDUCTIONS | arg, false, data_type, mask,
                groups);
    },
            py::arg("arg"), py::arg("mask"), py::arg("groups") = dnnl::memory::dims(),
            py::arg_v("data_type", dnnl::memory::data_type::s32, "memory.data_type.s32"),
            "Reductions of argument `arg` computed ahead, passed at execution as "
            "ARG_ATTR_PRECOMPUTED_REDUCTIONS | arg.");
    attr.def("set_rounding_mode",
            [](attr_object &a, int arg, dnnl::rounding_mode mode) {
        a.attr.set_rounding_mode(arg, mode);
        if (mode == dnnl::rounding_mode::stochastic)
            add_quantization_arg(a, DNNL_ARG_ATTR_ROUNDING_SEED, false,
                    dnnl::memory::data_type::s32);
    }, py::arg("arg"), py::arg("mode"),
            "Rounding of the argument `arg` the primitive writes; stochastic "
            "rounding takes an s32 seed as ARG_ATTR_ROUNDING_SEED.");
    attr.def("get_rounding_mode", [](const attr_object &a, int arg) {
        return a.attr.get_rounding_mode(arg);
    }, py::arg("arg"), "Rounding mode of argument `arg`.");
    attr.def("set_dropout",
            [](attr_object &a, const dnnl::memory::desc &mask_desc) {
        a.attr.set_dropout(mask_desc);
        set_dropout_args(a, dnnl::memory::data_type::s32, /*use_offset=*/false, /*on_host=*/false);
    }, py::arg("mask_desc"),
            "Dropout on the destination: probability (f32) and seed (s32) passed "
            "at execution as ARG_ATTR_DROPOUT_PROBABILITY and ARG_ATTR_DROPOUT_SEED; "
            "the mask is written to ARG_ATTR_DROPOUT_MASK unless `mask_desc` is "
            "the zero descriptor.");
    attr.def("set_dropout",
            [](attr_object &a, const dnnl::memory::desc &mask_desc, dnnl::memory::data_type seed_dt,
                    bool use_offset, bool use_host_scalars) {
        a.attr.set_dropout(mask_desc, seed_dt, use_offset, use_host_scalars);
        set_dropout_args(a, seed_dt, use_offset, use_host_scalars);
    },
            py::arg("mask_desc"), py::arg("seed_dt"), py::arg("use_offset"),
            py::arg("use_host_scalars") = false,
            "Dropout with the seed's data type (s32 or s64), with `use_offset` an "
            "s64 ARG_ATTR_DROPOUT_OFFSET, and with `use_host_scalars` the "
            "probability, seed and offset passed as host-scalar memory.");
    attr.def("get_dropout", [](const attr_object &a) {
        dnnl::memory::desc mask;
        a.attr.get_dropout(mask);
        return mask;
    }, "The dropout mask descriptor (zero if none).");
    attr.def("set_accumulation_mode", [](attr_object &a, dnnl::accumulation_mode mode) {
        a.attr.set_accumulation_mode(mode);
    }, py::arg("mode"), "Data type the primitive may accumulate in.");
    attr.def("get_accumulation_mode", [](const attr_object &a) {
        return a.attr.get_accumulation_mode();
    }, "The accumulation mode.");
    attr.def("set_deterministic", [](attr_object &a, bool value) {
        a.attr.set_deterministic(value);
    }, py::arg("value"), "Ask for run-to-run identical results.");
    attr.def("get_deterministic", [](const attr_object &a) { return a.attr.get_deterministic(); },
            "Whether deterministic results were asked for.");
    attr.def("set_rnn_data_qparams",
            [](attr_object &a, float scale, float shift) {
        a.attr.set_rnn_data_qparams(scale, shift);
    }, py::arg("scale"), py::arg("shift"),
            "Quantization of an int8 RNN's data: u8 = scale * f32 + shift.");
    attr.def("get_rnn_data_qparams", [](attr_object &a) {
        float scale, shift;
        a.attr.get_rnn_data_qparams(scale, shift);
        return py::make_tuple(scale, shift);
    }, "(scale, shift) of an int8 RNN's data.");
    attr.def("set_rnn_weights_qparams",
            [](attr_object &a, int mask, const std::vector<float> &scales) {
        a.attr.set_rnn_weights_qparams(mask, scales);
    }, py::arg("mask"), py::arg("scales"), "Scales of an int8 RNN's weights.");
    attr.def("get_rnn_weights_qparams", [](attr_object &a) {
        int mask;
        std::vector<float> scales;
        a.attr.get_rnn_weights_qparams(mask, scales);
        return py::make_tuple(mask, scales);
    }, "(mask, scales) of an int8 RNN's weights.");
    attr.def("set_rnn_weights_projection_qparams",
            [](attr_object &a, int mask, const std::vector<float> &scales) {
        a.attr.set_rnn_weights_projection_qparams(mask, scales);
    }, py::arg("mask"), py::arg("scales"), "Scales of an int8 LSTM's projection weights.");
    attr.def("get_rnn_weights_projection_qparams", [](attr_object &a) {
        int mask;
        std::vector<float> scales;
        a.attr.get_rnn_weights_projection_qparams(mask, scales);
        return py::make_tuple(mask, scales);
    }, "(mask, scales) of an int8 LSTM's projection weights.");
    attr.def("set_fpmath_mode",
            [](attr_object &a, dnnl::fpmath_mode mode, bool apply_to_int) {
        a.attr.set_fpmath_mode(mode, apply_to_int);
    }, py::arg("mode"), py::arg("apply_to_int") = false,
            "Allow implicit down-conversions for floating-point math (and, with "
            "`apply_to_int`, for integer primitives' computation).");
    attr.def("get_fpmath_mode", [](const attr_object &a) { return a.attr.get_fpmath_mode(); },
            "The fpmath mode.");
    attr.def("get_fpmath_mode_apply_to_int",
            [](const attr_object &a) {
        dnnl::fpmath_mode mode;
        bool apply_to_int;
        a.attr.get_fpmath_mode(mode, apply_to_int);
        return apply_to_int;
    },
            "Whether the fpmath mode applies to integer primitives too (C++'s "
            "get_fpmath_mode(mode, apply_to_int)).");
    attr.def("set_scratchpad_mode",
            [](attr_object &a, dnnl::scratchpad_mode mode) { a.attr.set_scratchpad_mode(mode); },
            py::arg("mode"),
            "scratchpad_mode.library (oneDNN manages it) or scratchpad_mode.user "
            "(pass ARG_SCRATCHPAD of pd.scratchpad_desc() at execution).");
    attr.def("get_scratchpad_mode", [](const attr_object &a) {
        return a.attr.get_scratchpad_mode();
    }, "The scratchpad mode.");
}

} // namespace

std::string arg_name(int arg) {
    for (const auto &c : arg_constants)
        if (c.value == arg) return c.name;
    int base = DNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE;
    if (arg >= DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) && arg < (base << 1) * 32)
        return "ARG_ATTR_MULTIPLE_POST_OP(" + std::to_string(arg / base - 1) + ") | "
                + arg_name(arg % base);
    for (int flag : {DNNL_ARG_ATTR_SCALES, DNNL_ARG_ATTR_ZERO_POINTS,
                 DNNL_ARG_ATTR_PRECOMPUTED_REDUCTIONS, DNNL_ARG_ATTR_POST_OP_DW})
        if (arg & flag) return arg_name(flag) + " | " + arg_name(arg & ~flag);
    if (arg > DNNL_ARG_MULTIPLE_SRC && arg < DNNL_ARG_MULTIPLE_DST)
        return "ARG_MULTIPLE_SRC + " + std::to_string(arg - DNNL_ARG_MULTIPLE_SRC);
    return "argument " + std::to_string(arg);
}

void bind_attributes(py::module_ &m) {
    for (const auto &c : arg_constants) m.attr(c.name) = c.value;
    m.def("ARG_ATTR_MULTIPLE_POST_OP",
            [](int index) {
        // C's macro multiplies in int: a negative index gives ARG_UNDEF or
        // another argument's value, a large one overflows.
        constexpr int largest = INT_MAX / DNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE - 1;
        if (index < 0 || index > largest)
            throw_invalid_argument("ARG_ATTR_MULTIPLE_POST_OP(index): index must be from 0 to "
                    + std::to_string(largest) + " (a post-op's position), not "
                    + std::to_string(index));
        return DNNL_ARG_ATTR_MULTIPLE_POST_OP(index);
    }, py::arg("index"),
            "Base of the arguments of the index-th post-op; add "
            "ARG_SRC_1 for a binary post-op's input.");
    bind_post_ops(m);
    bind_attr(m);
}

} // namespace dnnl_ocl_interop
