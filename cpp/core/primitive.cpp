// primitive_desc and primitive base classes; argument checks for execute();
// primitive cache blobs.
#include "common/enum_caster.hpp" // first: see the header

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <mutex>

#include <pybind11/stl.h>

#include "common/cache_blobs.hpp"
#include "common/data_types.hpp"
#include "common/errors.hpp"
#include "common/workarounds.hpp"
#include "common/fork_guard.hpp"
#include "common/memory_descs.hpp"
#include "common/post_ops.hpp"
#include "common/reasons.hpp"
#include "core/primitive_objects.hpp"
#include "core/profiling.hpp"
#include "common/storage_checks.hpp"

namespace py = pybind11;

namespace dnnl_ocl_interop {
namespace {

// Arguments a primitive may read or write; the descriptor says which
// it does (a zero exec_arg_md means "not used").
const int candidate_args[] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_SRC_2, DNNL_ARG_SRC_3,
        DNNL_ARG_DST_0, DNNL_ARG_DST_1, DNNL_ARG_DST_2, DNNL_ARG_WEIGHTS_0, DNNL_ARG_WEIGHTS_1,
        DNNL_ARG_WEIGHTS_2, DNNL_ARG_WEIGHTS_3, DNNL_ARG_BIAS, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE,
        DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_WORKSPACE, DNNL_ARG_SCRATCHPAD,
        DNNL_ARG_DIFF_SRC_0, DNNL_ARG_DIFF_SRC_1, DNNL_ARG_DIFF_SRC_2, DNNL_ARG_DIFF_SRC_3,
        DNNL_ARG_DIFF_DST_0, DNNL_ARG_DIFF_DST_1, DNNL_ARG_DIFF_DST_2, DNNL_ARG_DIFF_WEIGHTS_0,
        DNNL_ARG_DIFF_WEIGHTS_1, DNNL_ARG_DIFF_WEIGHTS_2, DNNL_ARG_DIFF_WEIGHTS_3,
        DNNL_ARG_DIFF_BIAS, DNNL_ARG_DIFF_SCALE, DNNL_ARG_DIFF_SHIFT, DNNL_ARG_ATTR_DROPOUT_MASK};

// exec_arg_md also describes arguments some configurations do not use;
// for those, oneDNN's own arg_usage() decides by the flags, the propagation
// kind or the algorithm. This mirrors it where the two differ.
bool is_used(const dnnl::primitive_desc_base &pd, int arg) {
    using kind = dnnl::primitive::kind;
    kind k = pd.get_kind();
    bool backward = pd.get_prop_kind() == dnnl::prop_kind::backward
            || pd.get_prop_kind() == dnnl::prop_kind::backward_data;
    if (k == kind::eltwise && backward) {
        using a = dnnl::algorithm;
        a alg = pd.get_algorithm();
        bool use_dst = alg == a::eltwise_relu_use_dst_for_bwd
                || alg == a::eltwise_tanh_use_dst_for_bwd || alg == a::eltwise_elu_use_dst_for_bwd
                || alg == a::eltwise_sqrt_use_dst_for_bwd
                || alg == a::eltwise_logistic_use_dst_for_bwd
                || alg == a::eltwise_exp_use_dst_for_bwd
                || alg == a::eltwise_clip_v2_use_dst_for_bwd;
        if (arg == DNNL_ARG_SRC) return !use_dst;
        if (arg == DNNL_ARG_DST) return use_dst;
        return true;
    }
    if (k != kind::batch_normalization && k != kind::layer_normalization
            && k != kind::group_normalization)
        return true;
    unsigned flags = 0;
    dnnl_primitive_desc_query(pd.get(), dnnl_query_flags, 0, &flags);
    if (arg == DNNL_ARG_SCALE || arg == DNNL_ARG_DIFF_SCALE) return flags & dnnl_use_scale;
    if (arg == DNNL_ARG_SHIFT || arg == DNNL_ARG_DIFF_SHIFT)
        return (flags & dnnl_use_shift) && !(arg == DNNL_ARG_SHIFT && backward);
    if (arg == DNNL_ARG_SRC_1 || arg == DNNL_ARG_DIFF_SRC_1)
        return k == kind::batch_normalization && (flags & dnnl_fuse_norm_add_relu);
    if (arg == DNNL_ARG_MEAN && k == kind::layer_normalization && (flags & dnnl_rms_norm))
        return false;
    if ((arg == DNNL_ARG_MEAN || arg == DNNL_ARG_VARIANCE) && !backward)
        return (flags & dnnl_use_global_stats)
                || pd.get_prop_kind() == dnnl::prop_kind::forward_training;
    return true;
}

// oneDNN executes on memory of any descriptor: its kernels address the
// primitive's descriptor within the memory's storage, or the memory's own
// descriptor where the primitive's has runtime dimensions. So the binding
// refuses only what would make oneDNN address past the storage: why, or ""
// when `given` fits.
std::string unfit_descriptor(const dnnl::memory::desc &expected, const dnnl::memory::desc &given) {
    if (has_runtime_values(expected.get())) {
        if (given.get_ndims() != expected.get_ndims()
                || given.get_data_type() != expected.get_data_type())
            return "whose number of dimensions or data type differs from the primitive's "
                   "(which has runtime dimensions)";
        auto want = expected.get_dims(), have = given.get_dims();
        for (size_t d = 0; d < want.size(); ++d)
            if (have[d] == DNNL_RUNTIME_DIM_VAL
                    || (want[d] != DNNL_RUNTIME_DIM_VAL && want[d] != have[d]))
                return "whose dimensions do not fill the primitive's runtime dimensions";
        return "";
    }
    size_t needed = addressed_bytes(expected.get()), available = addressed_bytes(given.get());
    if (available < needed)
        return "with " + std::to_string(available) + " bytes where the primitive addresses "
                + std::to_string(needed);
    return "";
}

// Where a matmul has runtime dimensions, oneDNN takes each size from one
// argument and addresses the others by it (M and N from dst, K from src):
// an argument smaller than another in a shared dimension would be read or
// written past its storage. Why the given dimensions disagree, or "".
std::string runtime_dims_disagree(dnnl::primitive::kind kind,
        const std::vector<std::pair<int, dnnl::memory::dims>> &given) {
    auto dims_of = [&](int arg) -> const dnnl::memory::dims * {
        for (const auto &g : given)
            if (g.first == arg) return &g.second;
        return nullptr;
    };
    auto text = [](const dnnl::memory::dims &d) {
        std::string t = "[";
        for (size_t i = 0; i < d.size(); ++i) t += (i ? ", " : "") + std::to_string(d[i]);
        return t + "]";
    };
    // oneDNN 3.13's OpenCL GPU implementations take runtime dimensions for
    // matmul only (its reorders refuse them).
    if (kind != dnnl::primitive::kind::matmul) return "";
    const auto *src = dims_of(DNNL_ARG_SRC), *wei = dims_of(DNNL_ARG_WEIGHTS),
               *dst = dims_of(DNNL_ARG_DST);
    if (!src || !wei || !dst) return ""; // each was checked against the primitive's rank
    size_t n = dst->size();
    if (n < 2 || src->size() != n || wei->size() != n) return "";
    std::string shapes = ": src " + text(*src) + ", weights " + text(*wei) + ", dst " + text(*dst);
    if ((*src)[n - 2] != (*dst)[n - 2]) return "src and dst differ in M" + shapes;
    if ((*src)[n - 1] != (*wei)[n - 2]) return "src and weights differ in K" + shapes;
    if ((*wei)[n - 1] != (*dst)[n - 1]) return "weights and dst differ in N" + shapes;
    for (size_t d = 0; d + 2 < n; ++d)
        if (((*src)[d] != (*dst)[d] && (*src)[d] != 1)
                || ((*wei)[d] != (*dst)[d] && (*wei)[d] != 1))
            return "batch dimension " + std::to_string(d) + " of src or weights is neither 1 "
                   "nor dst's" + shapes;
    // Bias and binary post-op inputs broadcast to dst: each dimension 1 or dst's.
    for (const auto &g : given) {
        if (g.first == DNNL_ARG_SRC || g.first == DNNL_ARG_WEIGHTS || g.first == DNNL_ARG_DST)
            continue;
        if (g.second.size() != n) continue;
        for (size_t d = 0; d < n; ++d)
            if (g.second[d] != 1 && g.second[d] != (*dst)[d])
                return arg_name(g.first) + " " + text(g.second) + " does not broadcast to dst "
                        + text(*dst);
    }
    return "";
}

// How many values oneDNN reads for an argument qualified per `mask` (and
// `groups`, in the last two dimensions) of the argument `base` of `pd`, as
// oneDNN's quant_entry_t::get_md shapes them; 0 where that is not known
// (the argument has no descriptor or runtime dimensions, odd groups).
dnnl_dim_t values_per_mask(const dnnl::primitive_desc_base &pd, int base, int mask,
        const dnnl::memory::dims &groups) {
    if (mask == 0 && groups.empty()) return 1;
    const_dnnl_memory_desc_t md
            = dnnl_primitive_desc_query_md(pd.get(), dnnl_query_exec_arg_md, base);
    int ndims = 0;
    const dnnl_dims_t *dims = nullptr;
    if (!md || dnnl_memory_desc_query(md, dnnl_query_ndims_s32, &ndims) != dnnl_success
            || ndims == 0 || dnnl_memory_desc_query(md, dnnl_query_dims, &dims) != dnnl_success
            || has_runtime_values(md) || (!groups.empty() && (groups.size() != 2 || ndims < 2)))
        return 0;
    dnnl::memory::dims shape(ndims, 1);
    for (int d = 0; d < ndims; ++d)
        if (mask & (1 << d)) shape[d] = (*dims)[d];
    for (size_t g = 0; g < groups.size(); ++g) {
        if (groups[g] <= 0) return 0;
        shape[ndims - 2 + g] /= groups[g];
    }
    dnnl_dim_t values = 1;
    for (auto n : shape)
        if (n <= 0 || __builtin_mul_overflow(values, n, &values)) return 0;
    return values;
}

// Built once per primitive, so oneDNN's C queries are used: they answer
// without the clones (and allocations) of the C++ wrappers'.
std::vector<expected_arg> expected_args(const dnnl::primitive_desc_base &pd,
        const std::vector<quantization_arg> &quantization_args) {
    std::vector<expected_arg> args;
    auto add_if_used = [&](int arg) {
        const_dnnl_memory_desc_t md
                = dnnl_primitive_desc_query_md(pd.get(), dnnl_query_exec_arg_md, arg);
        int ndims = 0;
        if (!md || dnnl_memory_desc_query(md, dnnl_query_ndims_s32, &ndims) != dnnl_success
                || ndims == 0 || !is_used(pd, arg))
            return;
        dnnl_memory_desc_t copy;
        dnnl::error::wrap_c_api(dnnl_memory_desc_clone(&copy, md),
                "could not copy a memory descriptor");
        dnnl::memory::desc desc(copy);
        bool host_scalar = desc.get_format_kind() == dnnl::memory::format_kind::host_scalar;
        args.push_back({arg, std::move(desc), host_scalar});
    };
    for (int arg : candidate_args) add_if_used(arg);
    int n_inputs = dnnl_primitive_desc_query_s32(pd.get(), dnnl_query_num_of_inputs_s32, 0);
    for (int i = 0; i < n_inputs; ++i) add_if_used(DNNL_ARG_MULTIPLE_SRC + i);
    const_dnnl_post_ops_t ops = post_ops_of(pd.get());
    if (!ops) throw status_error(dnnl_runtime_error, "could not get the primitive's post-ops");
    for (int i = 0; i < dnnl_post_ops_len(ops); ++i) {
        // oneDNN answers the exec_arg_md query for any post-op index (from
        // whatever the entry holds): each kind's inputs are added by kind.
        dnnl_primitive_kind_t kind = dnnl_post_ops_get_kind(ops, i);
        if (kind == dnnl_prelu) {
            // oneDNN has no descriptor for these weights: f32 values shaped
            // by the post-op's mask over the destination's dimensions.
            int mask = 0;
            expected_arg weights {DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_WEIGHTS, {}};
            if (dnnl_post_ops_get_params_prelu(ops, i, &mask) == dnnl_success) {
                weights.values = values_per_mask(pd, DNNL_ARG_DST, mask, {});
                weights.value_type = dnnl::memory::data_type::f32;
            }
            args.push_back(std::move(weights));
        } else if (kind == dnnl_convolution) { // depthwise
            add_if_used(DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS);
            add_if_used(DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS);
        } else {
            for (int arg : binary_post_op_inputs(ops, i)) add_if_used(arg);
        }
    }
    for (const auto &q : quantization_args) {
        expected_arg e {q.arg, dnnl::memory::desc(), q.on_host};
        e.value_type = q.data_type;
        const int qualifiers = DNNL_ARG_ATTR_SCALES | DNNL_ARG_ATTR_ZERO_POINTS
                | DNNL_ARG_ATTR_PRECOMPUTED_REDUCTIONS;
        e.values = q.mask < 0 ? 1 : values_per_mask(pd, q.arg & ~qualifiers, q.mask, q.groups);
        args.push_back(std::move(e));
    }
    // A reorder reads its source on its source engine and writes its
    // destination on its destination engine (two engines for a cross-engine
    // reorder; oneDNN then copies through the host).
    if (pd.get_kind() == dnnl::primitive::kind::reorder)
        for (auto &e : args) {
            dnnl_query_t q = e.arg == DNNL_ARG_FROM ? dnnl_query_reorder_src_engine
                    : e.arg == DNNL_ARG_TO          ? dnnl_query_reorder_dst_engine
                                                    : dnnl_query_undef;
            dnnl_engine_t engine = nullptr;
            if (q != dnnl_query_undef
                    && dnnl_primitive_desc_query(pd.get(), q, 0, &engine) == dnnl_success)
                e.engine = engine;
        }
    return args;
}

struct named_desc {
    const char *name;
    int arg;
    const char *doc;
};
const named_desc named_descs[] = {
        {"bias_desc", DNNL_ARG_BIAS, "Bias memory descriptor (zero if none)."},
        {"diff_bias_desc", DNNL_ARG_DIFF_BIAS, "Diff bias memory descriptor (zero if none)."},
        {"mean_desc", DNNL_ARG_MEAN, "Mean memory descriptor of a normalization (zero if none)."},
        {"variance_desc", DNNL_ARG_VARIANCE,
                "Variance memory descriptor of a normalization (zero if none)."},
};

dnnl::memory::desc query(const primitive_desc_object &p, dnnl::query what, int index) {
    if (what == dnnl::query::exec_arg_md && workarounds::post_op_input_missing(p.pd, index))
        return {};
    return p.pd.query_md(what, index);
}

primitive_object with_args(const primitive_desc_object &pd, dnnl::primitive primitive) {
    return primitive_object {pd.engine, pd.other_engine, std::move(primitive),
            pd.quantization_args};
}

// ---------------------------------------------------------------- cache blobs
// (framed and checked by common/cache_blobs)

// dnnl::primitive_desc_base::get_cache_blob_id(), for a primitive's own
// descriptor as well (which is not a primitive_desc_base): empty for
// descriptors oneDNN cannot identify, as oneDNN answers. With
// `for_a_blob`, an empty id is refused: a blob framed with it would match
// any such descriptor.
std::vector<uint8_t> cache_blob_id(const_dnnl_primitive_desc_t pd, bool for_a_blob = true) {
    dnnl_dim_t size = 0;
    const uint8_t *id = nullptr;
    dnnl::error::wrap_c_api(
            dnnl_primitive_desc_query(pd, dnnl_query_cache_blob_id_size_s64, 0, &size),
            "could not get size of cache blob ID from a primitive descriptor");
    dnnl::error::wrap_c_api(dnnl_primitive_desc_query(pd, dnnl_query_cache_blob_id, 0, &id),
            "could not get cache blob ID from a primitive descriptor");
    if (size == 0 && !for_a_blob) return {};
    if (size == 0)
        throw status_error(dnnl_unimplemented,
                "oneDNN gives this primitive descriptor no cache blob id, so it has no cache blob");
    return std::vector<uint8_t>(id, id + size);
}

} // namespace

dnnl::primitive_desc_base refuse_known_wrong(dnnl::primitive_desc_base pd, bool allow_empty,
        const std::function<workarounds::refusal(const dnnl::primitive_desc_base &)> &also) {
    auto verdict = [&](const dnnl::primitive_desc_base &d) {
        workarounds::refusal found = workarounds::known_wrong(d);
        if (!found && also) found = also(d);
        return found;
    };
    workarounds::refusal first = verdict(pd);
    if (!first) return pd;
    // Another implementation may be right: take the next that is not known
    // wrong (oneDNN's own implementation iteration, as C++'s next_impl()).
    while (dnnl_primitive_desc_next_impl(pd.get()) == dnnl_success)
        if (!verdict(pd)) return pd;
    if (allow_empty) return dnnl::primitive_desc_base();
    status_error refused(dnnl_unimplemented, first.why);
    refused.known_problem = first.id ? first.id : "";
    refused.arguments = first.args;
    throw refused;
}

const argument_checks &primitive_object::checks() const {
    return *checks_.get([&] {
        // The primitive's own descriptor (an equal one's, from oneDNN's cache).
        dnnl::primitive_desc_base pd(
                const_cast<dnnl_primitive_desc_t>(primitive.get_primitive_desc()), /*weak=*/true);
        auto checks = std::make_shared<argument_checks>();
        checks->args = expected_args(pd, quantization_args);
        checks->copies_within_one_memory_kind = workarounds::copies_within_one_memory_kind(pd);
        checks->dense_at_execute = workarounds::dense_at_execute(pd);
        checks->kind = pd.get_kind();
        checks->runtime_dims_agree
                = std::any_of(checks->args.begin(), checks->args.end(), [](const expected_arg &e) {
            return !e.desc.is_zero() && has_runtime_values(e.desc.get());
        });
        return std::shared_ptr<const argument_checks>(std::move(checks));
    });
}

const char *const primitive_from_cache_blob_doc
        = "The primitive for a descriptor, its kernels loaded from `cache_blob` (bytes "
          "from get_cache_blob() of a primitive made from an equal descriptor, in this "
          "or another process) instead of compiled; None compiles them. A blob that is "
          "not one, is damaged, or belongs to another descriptor, device or oneDNN "
          "version raises dnnl.error (invalid_arguments) before oneDNN reads it. The "
          "GIL is released while oneDNN loads the kernels.";

void execute_primitive(const primitive_object &p, const stream_object &s, py::handle args) {
    auto converted = execution_args(p, s, args);
    // Submitting only enqueues kernels (microseconds) and calls no Python: the
    // GIL is kept. Dropping it would let a busy Python thread keep it for a
    // switch interval (5 ms) per call (benchmarks/run.py measures).
    auto submit = [&] {
        dnnl::error::wrap_c_api(dnnl_primitive_execute(p.primitive.get(), s.stream.get(),
                                        static_cast<int>(converted.size()), converted.data()),
                "could not execute a primitive");
        return 0;
    };
    if (profiling::active()) { // the one test when no dnnl.profiling recorder is active
        profiling::recorded(s, p.subject(), submit);
        return;
    }
    submit();
}

std::shared_ptr<const profiling::subject> primitive_object::subject() const {
    return subject_.get(
            [&] { return profiling::primitive_subject(primitive.get_primitive_desc()); });
}

namespace {

// The persistent cache installed for the process (dnnl.cache.install): a
// Python callable taking the descriptor and returning its primitive. A
// creation it makes itself (on a miss) is not handed back to it. Read and
// replaced under `creation_hook_mutex` (held for no Python call: a reader
// takes its own reference), since threads create primitives at once with no
// GIL to order them on a free-threaded Python.
std::mutex creation_hook_mutex;
PyObject *creation_hook = nullptr;
thread_local bool in_creation_hook = false;

py::object installed_hook() {
    std::lock_guard<std::mutex> lock(creation_hook_mutex);
    return py::reinterpret_borrow<py::object>(creation_hook); // (None: a null handle)
}

primitive_object compile_primitive(const primitive_desc_object &pd) {
    dnnl::primitive primitive;
    {
        py::gil_scoped_release release; // compiles kernels
        // oneDNN's reasons for a refusal go with the exception (common/verbose).
        primitive = verbose::creating([&] { return dnnl::primitive(pd.pd.get()); });
    }
    return with_args(pd, std::move(primitive));
}

} // namespace

void set_creation_hook(py::object hook) {
    if (!hook.is_none() && !PyCallable_Check(hook.ptr()))
        throw_type_error("hook", "a callable or None", hook);
    PyObject *old = nullptr;
    {
        std::lock_guard<std::mutex> lock(creation_hook_mutex);
        old = creation_hook;
        creation_hook = hook.is_none() ? nullptr : hook.release().ptr();
    }
    Py_XDECREF(old); // outside the lock: the last reference may run Python
}

primitive_object make_primitive(const primitive_desc_object &pd) {
    fork_guard::check();
    if (in_creation_hook) return compile_primitive(pd);
    py::object hook = installed_hook();
    if (!hook) return compile_primitive(pd);
    // The descriptor's own Python object (the family's class), which the
    // hook hands back to the family to build from a blob or compile.
    py::object pd_object = py::cast(&pd, py::return_value_policy::reference);
    in_creation_hook = true;
    py::object made;
    try {
        made = hook(pd_object);
    } catch (...) {
        in_creation_hook = false;
        throw;
    }
    in_creation_hook = false;
    py::detail::make_caster<primitive_object> caster;
    if (!caster.load(made, false))
        throw_type_error("the installed persistent cache's primitive", "a dnnl.primitive", made);
    return py::detail::cast_op<const primitive_object &>(caster);
}

primitive_object make_primitive(const primitive_desc_object &pd, const optional_bytes &cache_blob) {
    fork_guard::check();
    if (cache_blob.is_none()) return make_primitive(pd);
    std::vector<uint8_t> blob = cache_blobs::unframe(cache_blobs::kind::primitive,
            bytes_arg(cache_blob, "cache_blob"), cache_blob_id(pd.pd.get()));
    dnnl_primitive_t created = nullptr;
    {
        py::gil_scoped_release release; // builds the kernels' programs from their binaries
        // A primitive without kernels has an empty blob, which oneDNN
        // refuses: there is nothing to load, so it is made as without one.
        verbose::creating([&] {
            dnnl::error::wrap_c_api(blob.empty() ? dnnl_primitive_create(&created, pd.pd.get())
                                                 : dnnl_primitive_create_from_cache_blob(&created,
                                                           pd.pd.get(), blob.size(), blob.data()),
                    "could not create a primitive from a cache blob");
            return 0;
        });
    }
    return with_args(pd, dnnl::primitive(created));
}

std::vector<dnnl_exec_arg_t> execution_args(const primitive_object &p, const stream_object &stream,
        py::handle args) {
    fork_guard::check(); // every execute starts here
    if (!PyDict_Check(args.ptr())) throw_type_error("args", "a dict of {ARG_*: dnnl.memory}", args);
    if (stream.engine.get() != p.engine.get())
        throw_invalid_argument("the stream is on another engine than the primitive");
    const argument_checks &checks = p.checks();
    std::vector<dnnl_exec_arg_t> converted;
    converted.reserve(PyDict_Size(args.ptr()));
    std::vector<std::pair<int, dnnl::memory::dims>> runtime_dims; // where runtime_dims_agree
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(args.ptr(), &pos, &key, &value)) {
        if (!PyLong_Check(key)) throw_type_error("args keys", "ARG_* ints", key);
        int overflow = 0;
        long long key_value = PyLong_AsLongLongAndOverflow(key, &overflow);
        if (overflow || key_value < INT_MIN || key_value > INT_MAX)
            throw_invalid_argument(
                    "args key " + std::string(py::str(key)) + " is not an ARG_* value");
        int arg = static_cast<int>(key_value);
        py::detail::make_caster<memory_object> caster;
        if (!caster.load(value, /*convert=*/false))
            throw_type_error("args[" + arg_name(arg) + "]", "a dnnl.memory", value);
        const memory_object &mem = py::detail::cast_op<const memory_object &>(caster);
        const expected_arg *expected = nullptr;
        for (const auto &e : checks.args)
            if (e.arg == arg) expected = &e;
        // oneDNN ignores arguments a primitive does not use (a scratchpad
        // passed to every primitive of a chain, the RNN examples' empty
        // iteration memories): so does the binding, checking nothing of them.
        if (!expected) continue;
        if (mem.host_scalar != expected->host_scalar)
            throw_invalid_argument(arg_name(arg)
                    + (expected->host_scalar
                                    ? " must be host-scalar memory (memory(memory.desc."
                                      "host_scalar(data_type), value)), as the attributes say"
                                    : " is host-scalar memory, where the primitive reads memory "
                                      "on its engine (primitive_attr.set_host_scale and "
                                      "set_host_zero_point ask for host scalars)"));
        if (mem.host_scalar) { // on no engine, holding its value
            converted.push_back({arg, mem.memory.get()});
            continue;
        }
        if (expected->engine ? mem.engine.get() != expected->engine
                             : mem.engine.get() != p.engine.get())
            throw_invalid_argument(arg_name(arg) + " is memory on another engine than the "
                    + (!expected->engine                   ? "primitive's"
                                    : arg == DNNL_ARG_FROM ? "reorder's source engine"
                                                           : "reorder's destination engine"));
        // What oneDNN addresses by: the memory's dimensions where the
        // primitive's are given at execution, the primitive's elsewhere.
        if (checks.runtime_dims_agree && !expected->desc.is_zero())
            runtime_dims.emplace_back(arg,
                    has_runtime_values(expected->desc.get()) ? mem.desc.get_dims()
                                                             : expected->desc.get_dims());
        if (!expected->desc.is_zero() && mem.desc != expected->desc) {
            std::string why = unfit_descriptor(expected->desc, mem.desc);
            if (!why.empty())
                throw_invalid_argument(arg_name(arg) + " has a memory descriptor other than "
                        "the primitive's, " + why + " (query the primitive's with its "
                        "descriptor's *_desc() or query_md(exec_arg_md, arg))");
        }
        if (expected->values > 0) {
            // Values oneDNN reads without a descriptor: bits / 8, rounded up.
            const size_t needed = (static_cast<size_t>(expected->values)
                                                  * data_types::bits(expected->value_type)
                                          + 7)
                    / 8;
            const size_t held = addressed_bytes(mem.desc.get());
            if (held < needed)
                throw_invalid_argument(arg_name(arg) + " holds " + std::to_string(held)
                        + " bytes, where the primitive reads " + std::to_string(expected->values)
                        + " " + data_types::name(expected->value_type)
                        + (expected->values == 1 ? " value (" : " values (")
                        + std::to_string(needed) + " bytes), as its attributes ask");
        }
        if (!checks.dense_at_execute.empty()
                && std::find(checks.dense_at_execute.begin(), checks.dense_at_execute.end(), arg)
                        != checks.dense_at_execute.end()) {
            std::string why = workarounds::not_dense_at_execute(arg, mem.desc);
            if (!why.empty()) throw_invalid_argument(arg_name(arg) + ": " + why);
        }
        for (int i = 0; i < mem.num_handles; ++i)
            if (!mem.memory.get_data_handle(i))
                throw_invalid_argument(arg_name(arg) + " has no storage"
                        + (i ? " for buffer " + std::to_string(i) : std::string())
                        + " (dnnl.MEMORY_NONE)");
        converted.push_back({arg, mem.memory.get()});
    }
    if (checks.runtime_dims_agree) {
        std::string why = runtime_dims_disagree(checks.kind, runtime_dims);
        if (!why.empty()) throw_invalid_argument("runtime dimensions: " + why);
    }
    if (checks.copies_within_one_memory_kind) {
        const memory_object *from = nullptr, *to = nullptr;
        PyObject *key2, *value2;
        Py_ssize_t pos2 = 0;
        while (PyDict_Next(args.ptr(), &pos2, &key2, &value2)) {
            long k = PyLong_AsLong(key2);
            auto &m = py::handle(value2).cast<const memory_object &>();
            if (k == DNNL_ARG_FROM) from = &m;
            if (k == DNNL_ARG_TO) to = &m;
        }
        if (from && to && is_usm(from->memory) != is_usm(to->memory)) {
            status_error refused(dnnl_unimplemented,
                    "reorder: oneDNN chose gpu:direct_copy, which does not copy between "
                    "buffer and USM memory (known problem reorder-direct-copy-memory-kinds); "
                    "use memory of one kind on both sides, or dnnl.usm.memcpy");
            refused.known_problem = "reorder-direct-copy-memory-kinds";
            refused.arguments = {DNNL_ARG_FROM, DNNL_ARG_TO};
            throw refused;
        }
    }
    if (converted.size() != checks.args.size()) // each given one is expected and keys are unique
        for (const auto &e : checks.args)
            if (std::none_of(converted.begin(), converted.end(),
                        [&](const dnnl_exec_arg_t &a) { return a.arg == e.arg; }))
                throw_invalid_argument("missing argument " + arg_name(e.arg));
    return converted;
}

void bind_primitive_base(py::module_ &m) {
    py::class_<primitive_desc_object> pd(m, "primitive_desc",
            "Base of every primitive descriptor: the chosen implementation and "
            "the memory descriptors it expects.");
    pd.def("src_desc", [](const primitive_desc_object &p, int i) {
        return query(p, dnnl::query::src_md, i);
    }, py::arg("index") = 0, "Source memory descriptor (zero if none).");
    pd.def("dst_desc", [](const primitive_desc_object &p, int i) {
        return query(p, dnnl::query::dst_md, i);
    }, py::arg("index") = 0, "Destination memory descriptor.");
    pd.def("weights_desc",
            [](const primitive_desc_object &p, int i) {
        return query(p, dnnl::query::weights_md, i);
    }, py::arg("index") = 0,
            "Weights memory descriptor (index 1: bias, "
            "where the primitive has one).");
    pd.def("diff_src_desc", [](const primitive_desc_object &p, int i) {
        return query(p, dnnl::query::diff_src_md, i);
    }, py::arg("index") = 0, "Diff source memory descriptor (zero if none).");
    pd.def("diff_dst_desc", [](const primitive_desc_object &p, int i) {
        return query(p, dnnl::query::diff_dst_md, i);
    }, py::arg("index") = 0, "Diff destination memory descriptor (zero if none).");
    pd.def("diff_weights_desc", [](const primitive_desc_object &p, int i) {
        return query(p, dnnl::query::diff_weights_md, i);
    }, py::arg("index") = 0, "Diff weights memory descriptor (zero if none).");
    // Named arguments' descriptors, as the C++ families' bias_desc(),
    // mean_desc() ... give them.
    for (const auto &named : named_descs) {
        int arg = named.arg;
        pd.def(named.name, [arg](const primitive_desc_object &p) {
            return p.pd.query_md(dnnl::query::exec_arg_md, arg);
        }, named.doc);
    }
    pd.def("workspace_desc",
            [](const primitive_desc_object &p) { return query(p, dnnl::query::workspace_md, 0); },
            "Workspace memory descriptor (zero if none): forward training passes "
            "it to backward as ARG_WORKSPACE.");
    pd.def("scratchpad_desc",
            [](const primitive_desc_object &p) { return query(p, dnnl::query::scratchpad_md, 0); },
            "Scratchpad memory descriptor: what to pass as ARG_SCRATCHPAD in "
            "scratchpad_mode.user (zero otherwise).");
    pd.def("scratchpad_engine", [](const primitive_desc_object &p) { return p.engine; },
            "The engine the scratchpad lives on (the primitive's).");
    pd.def("query_md", &query, py::arg("what"), py::arg("index") = 0,
            "Memory descriptor for a query; query.exec_arg_md with an ARG_* "
            "index gives any execution argument's descriptor.");
    pd.def("impl_info_str", [](const primitive_desc_object &p) { return p.pd.impl_info_str(); },
            "Name of the implementation oneDNN chose.");
    pd.def("get_kind", [](const primitive_desc_object &p) { return p.pd.get_kind(); },
            "Primitive kind.");
    pd.def("__bool__", [](const primitive_desc_object &p) { return bool(p.pd); },
            "False for the empty descriptor a constructor returns with "
            "allow_empty=True when oneDNN has no implementation.");
    pd.def("get_engine", [](const primitive_desc_object &p) { return p.engine; },
            "The engine the primitive runs on.");
    pd.def("get_scratchpad_mode", [](const primitive_desc_object &p) {
        return p.pd.get_primitive_attr().get_scratchpad_mode();
    }, "The scratchpad mode of the descriptor's attributes.");
    pd.def("get_primitive_attr", [](const primitive_desc_object &p) {
        return attr_object {p.pd.get_primitive_attr(), p.quantization_args};
    }, "A copy of the attributes the descriptor was created with.");
    pd.def("get_prop_kind", [](const primitive_desc_object &p) { return p.pd.get_prop_kind(); },
            "Propagation kind (prop_kind.undef where the family has none).");
    pd.def("get_algorithm", [](const primitive_desc_object &p) { return p.pd.get_algorithm(); },
            "Algorithm (algorithm.undef where the family has none).");
    pd.def("get_cell_kind", [](const primitive_desc_object &p) { return p.pd.get_cell_kind(); },
            "RNN cell kind (algorithm.vanilla_lstm ...; undef for other families).");
    pd.def("get_activation_kind", [](const primitive_desc_object &p) {
        return p.pd.get_activation_kind();
    }, "Vanilla RNN activation (algorithm.undef for other families).");
    pd.def("get_direction", [](const primitive_desc_object &p) { return p.pd.get_direction(); },
            "RNN direction (rnn_direction.undef for other families).");
    // Numeric parameters: oneDNN answers 0 or [] where a family has none.
    pd.def("get_alpha", [](const primitive_desc_object &p) { return p.pd.get_alpha(); },
            "The alpha parameter (eltwise, LRN, vanilla RNN).");
    pd.def("get_beta", [](const primitive_desc_object &p) { return p.pd.get_beta(); },
            "The beta parameter (eltwise, LRN).");
    pd.def("get_epsilon", [](const primitive_desc_object &p) { return p.pd.get_epsilon(); },
            "Epsilon of a normalization.");
    pd.def("get_k", [](const primitive_desc_object &p) { return p.pd.get_k(); }, "LRN k.");
    pd.def("get_p", [](const primitive_desc_object &p) { return p.pd.get_p(); },
            "Reduction p (Lp norms).");
    pd.def("get_axis", [](const primitive_desc_object &p) { return p.pd.get_axis(); },
            "Axis of softmax or shuffle.");
    pd.def("get_local_size", [](const primitive_desc_object &p) { return p.pd.get_local_size(); },
            "LRN local size.");
    pd.def("get_group_size", [](const primitive_desc_object &p) { return p.pd.get_group_size(); },
            "Shuffle group size, or group normalization's number of groups.");
    pd.def("get_factors", [](const primitive_desc_object &p) { return p.pd.get_factors(); },
            "Resampling factors per spatial dimension.");
    pd.def("get_strides", [](const primitive_desc_object &p) { return p.pd.get_strides(); },
            "Strides per spatial dimension (convolution-like and pooling).");
    pd.def("get_dilations", [](const primitive_desc_object &p) { return p.pd.get_dilations(); },
            "Dilations per spatial dimension.");
    pd.def("get_padding_l", [](const primitive_desc_object &p) { return p.pd.get_padding_l(); },
            "Left (front, top) padding per spatial dimension.");
    pd.def("get_padding_r", [](const primitive_desc_object &p) { return p.pd.get_padding_r(); },
            "Right (back, bottom) padding per spatial dimension.");
    pd.def("query_s64", [](const primitive_desc_object &p, dnnl::query what) {
        return p.pd.query_s64(what);
    }, py::arg("what"), "An integer query (query.*_s64; 0 where the descriptor has none).");
    pd.def("get_flags",
            [](const primitive_desc_object &p) {
        unsigned value = 0;
        dnnl_primitive_desc_query(p.pd.get(), dnnl_query_flags, 0, &value);
        return value;
    },
            "The descriptor's flags as an int (normalization descriptors return "
            "normalization_flags).");
    pd.def("get_kernel", [](const primitive_desc_object &p) { return p.pd.get_kernel(); },
            "Pooling kernel per spatial dimension.");
    pd.def("next_impl",
            [](primitive_desc_object &p) {
        fork_guard::check();
        dnnl_status_t status;
        {
            py::gil_scoped_release release;
            status = dnnl_primitive_desc_next_impl(p.pd.get());
        }
        if (status == dnnl_last_impl_reached) return false;
        dnnl::error::wrap_c_api(status, "could not advance to the next implementation");
        return true;
    },
            "Step to oneDNN's next implementation for the same descriptor: True if "
            "there was one (the descriptor now describes it), False at the last.");
    pd.def("get_cache_blob_id",
            [](const primitive_desc_object &p) {
        return to_bytes(cache_blob_id(p.pd.get(), /*for_a_blob=*/false));
    },
            "Identifies the descriptor (operation, attributes, implementation), device "
            "and oneDNN version a primitive cache blob is valid for (bytes): a key to "
            "store blobs under. Empty, as oneDNN answers, for a descriptor oneDNN cannot "
            "identify: such a primitive has no cache blob (get_cache_blob refuses).");

    // C++ names the base dnnl::primitive_desc_base.
    m.attr("primitive_desc_base") = pd;

    m.def("_set_primitive_creation_hook", &set_creation_hook, py::arg("hook"),
            "For dnnl.cache.install: `hook(pd)` returns the primitive of every descriptor "
            "the process makes a primitive of (dnnl.<family>(pd), dnnl.primitive(pd), "
            "dnnl.reorder(src, dst)); a primitive the hook makes itself with "
            "dnnl.<family>(pd) is compiled without calling it again. None removes it.");

    py::class_<primitive_object> prim(m, "primitive",
            "Base of every primitive: execute it on a stream with its arguments.");
    prim.attr("kind") = m.attr("primitive_kind"); // dnnl::primitive::kind
    prim.def(py::init([](const primitive_desc_object &pd) { return make_primitive(pd); }),
            py::arg("pd"),
            "The primitive for any descriptor, as C++'s primitive(const primitive_desc &) "
            "(a family's own class, dnnl.<family>(pd), is the usual way).");
    prim.def(py::init([](const primitive_desc_object &pd, const optional_bytes &cache_blob) {
        return make_primitive(pd, cache_blob);
    }),
            py::arg("pd"), py::arg("cache_blob"), primitive_from_cache_blob_doc);
    prim.def("execute", &execute_primitive, py::arg("stream"), py::arg("args"),
            "Submit the primitive to `stream` with `args` ({ARG_*: memory}). "
            "Arguments are checked first: every one the primitive uses must be "
            "given, with the descriptor it expects, on its engine. Returns "
            "once submitted; call stream.wait() before reading results. "
            "On an out-of-order stream use dnnl.ocl_interop.execute to get "
            "the event.");
    prim.def("get_kind", [](const primitive_object &p) { return p.primitive.get_kind(); },
            "Primitive kind.");
    prim.def("get_cache_blob",
            [](const primitive_object &p) {
        fork_guard::check();
        std::vector<uint8_t> blob;
        {
            py::gil_scoped_release release; // oneDNN reads the kernels' binaries back
            blob = cache_blobs::frame(cache_blobs::kind::primitive,
                    cache_blob_id(p.primitive.get_primitive_desc()), p.primitive.get_cache_blob());
        }
        return to_bytes(blob);
    },
            "The primitive's compiled kernels as bytes, for dnnl.<family>(pd, cache_blob) "
            "with a descriptor whose get_cache_blob_id() is this primitive's: oneDNN's "
            "blob behind a header naming that id and a checksum, which the constructor "
            "checks.");
}

} // namespace dnnl_ocl_interop
