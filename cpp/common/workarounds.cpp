#include "common/workarounds.hpp"
#include "common/data_types.hpp"
#include "common/memory_descs.hpp"
#include "common/post_ops.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>

namespace dnnl_ocl_interop {
namespace workarounds {
namespace {

std::atomic<bool> enabled {true};

bool older_than(const dnnl_version_t &v, const version &w) {
    if (v.major != w.major) return v.major < w.major;
    if (v.minor != w.minor) return v.minor < w.minor;
    return v.patch < w.patch;
}

const problem *find(const char *id) {
    for (const problem &p : problems())
        if (std::strcmp(p.id, id) == 0) return &p;
    return nullptr;
}

bool is_gpu(const dnnl::primitive_desc_base &pd) {
    return pd.get_engine().get_kind() == dnnl::engine::kind::gpu;
}

// Every element of `md` lies where a dense layout puts it, from the handle
// on: no gaps between them and no sub-memory offset. Read through the C API
// in place: these checks run at every primitive descriptor creation, and the
// C++ API's getters copy (query_md clones the descriptor, get_padded_dims
// makes a vector).
bool dense_from_the_handle(const_dnnl_memory_desc_t md) {
    int ndims = 0;
    if (!md || dnnl_memory_desc_query(md, dnnl_query_ndims_s32, &ndims) != dnnl_success
            || ndims == 0)
        return true; // a zero descriptor: nothing is read
    dnnl_format_kind_t format_kind = dnnl_format_kind_undef;
    if (dnnl_memory_desc_query(md, dnnl_query_format_kind, &format_kind) != dnnl_success
            || format_kind != dnnl_blocked || has_runtime_values(md))
        return true; // (runtime values: known only at execute, see dense_at_execute)
    dnnl_dim_t offset = 0;
    if (dnnl_memory_desc_query(md, dnnl_query_submemory_offset_s64, &offset) == dnnl_success
            && offset != 0)
        return false;
    const dnnl_dims_t *padded = nullptr;
    dnnl_data_type_t data_type = dnnl_data_type_undef;
    dnnl_memory_desc_query(md, dnnl_query_padded_dims, &padded);
    dnnl_memory_desc_query(md, dnnl_query_data_type, &data_type);
    size_t elements = 1;
    for (int i = 0; i < ndims; ++i) elements *= static_cast<size_t>((*padded)[i]);
    // By bits: 4-bit types hold two elements a byte (dnnl_data_type_size says 1).
    size_t bits = data_types::bits(data_type);
    return dnnl_memory_desc_get_size(md) == (elements * bits + 7) / 8;
}

// The descriptor `pd` gives for (what, index), in place (see above).
const_dnnl_memory_desc_t md_of(const dnnl::primitive_desc_base &pd, dnnl::query what, int index) {
    return dnnl_primitive_desc_query_md(pd.get(), dnnl::convert_to_c(what), index);
}

// The dimensions oneDNN's ocl:custom reorder takes for the innermost two of
// a layout: those of smallest stride among the dimensions of more than one
// padded element (get_Nth_last_dim_or_block in its custom.cpp). Only plain
// layouts (blocked without inner blocks, whose blocks are adjacent, and
// known before execute) are looked at.
struct innermost_dims {
    bool plain = false;
    int dim = -1, next = -1;
    dnnl_dim_t stride = 1, size = 1, next_stride = 0;
};

innermost_dims custom_innermost(const_dnnl_memory_desc_t md) {
    innermost_dims found;
    int ndims = 0, nblks = 0;
    dnnl_format_kind_t kind = dnnl_format_kind_undef;
    if (!md || dnnl_memory_desc_query(md, dnnl_query_ndims_s32, &ndims) != dnnl_success
            || dnnl_memory_desc_query(md, dnnl_query_format_kind, &kind) != dnnl_success
            || kind != dnnl_blocked || has_runtime_values(md))
        return found;
    dnnl_memory_desc_query(md, dnnl_query_inner_nblks_s32, &nblks);
    if (nblks > 0) return found;
    found.plain = true;
    const dnnl_dims_t *padded = nullptr, *strides = nullptr;
    dnnl_memory_desc_query(md, dnnl_query_padded_dims, &padded);
    dnnl_memory_desc_query(md, dnnl_query_strides, &strides);
    for (int d = 0; d < ndims; ++d) {
        if ((*padded)[d] == 1) continue;
        if (found.dim < 0 || (*strides)[d] < (*strides)[found.dim]) {
            found.next = found.dim;
            found.dim = d;
        } else if (found.next < 0 || (*strides)[d] < (*strides)[found.next]) {
            found.next = d;
        }
    }
    if (found.dim >= 0) {
        found.stride = (*strides)[found.dim];
        found.size = (*padded)[found.dim];
    }
    if (found.next >= 0) found.next_stride = (*strides)[found.next];
    return found;
}

// Why oneDNN's ocl:custom reorder from `src` to `dst` would misaddress one
// of them, or "". Its kernels take the innermost dimension as contiguous
// whatever its stride; and its xb_to_xab_xba kernel, which it picks for a
// reorder whose two sides have different innermost dimensions (a
// transpose), groups an innermost dimension of fewer than 16 elements with
// the next one into bursts of 16 contiguous elements. (Its pad_innermost
// kernel, picked where both sides share the innermost dimension, addresses
// the rows through their strides.)
std::string custom_reorder_misreads(const_dnnl_memory_desc_t src, const_dnnl_memory_desc_t dst) {
    const innermost_dims sides[2] = {custom_innermost(src), custom_innermost(dst)};
    const char *names[2] = {"the source's", "the destination's"};
    for (int i = 0; i < 2; ++i)
        if (sides[i].plain && sides[i].dim >= 0 && sides[i].stride != 1)
            return std::string(names[i]) + " innermost dimension (stride "
                    + std::to_string(sides[i].stride) + ") as if its stride were 1";
    if (!sides[0].plain || !sides[1].plain || sides[0].dim < 0 || sides[1].dim < 0
            || sides[0].dim == sides[1].dim)
        return "";
    for (int i = 0; i < 2; ++i)
        if (sides[i].next >= 0 && sides[i].size < 16 && sides[i].next_stride != sides[i].size)
            return std::string(names[i]) + " two innermost dimensions ("
                    + std::to_string(sides[i].size) + " elements, then a stride of "
                    + std::to_string(sides[i].next_stride) + ") as if they were contiguous";
    return "";
}

// The plain row-major layout of its dims (format tag ab, abc, ...), dense
// from the handle on.
bool row_major(const dnnl::memory::desc &md) {
    if (md.is_zero() || md.get_format_kind() != dnnl::memory::format_kind::blocked
            || md.get_inner_nblks() != 0 || md.get_submemory_offset() != 0)
        return false;
    auto dims = md.get_dims();
    auto strides = md.get_strides();
    dnnl::memory::dim expected = 1;
    for (size_t i = dims.size(); i-- > 0;) {
        if (dims[i] != 1 && strides[i] != expected) return false;
        expected *= dims[i];
    }
    return true;
}

// The arguments GPU implementations read as dense from the handle on
// (matmul, convolution, inner product, eltwise and binary measured, with
// every implementation they offered but one matmul variant): the bias and
// every binary post-op input.
std::vector<int> dense_operand_args(const dnnl::primitive_desc_base &pd) {
    std::vector<int> args {DNNL_ARG_BIAS};
    const_dnnl_post_ops_t ops = post_ops_of(pd.get());
    for (int i = 0; ops && i < dnnl_post_ops_len(ops); ++i)
        for (int arg : binary_post_op_inputs(ops, i)) args.push_back(arg);
    return args;
}

// The refusal for such an argument that is not dense from its handle on.
std::string not_dense(int arg) {
    std::string what = arg == DNNL_ARG_BIAS
            ? std::string("the bias")
            : "the input of binary post-op "
                    + std::to_string(arg / DNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE - 1);
    return what + " is not dense from its handle on, and oneDNN's GPU implementations "
                  "read it as if it were (known problem dense-bias-post-op-inputs): copy it "
                  "into dense memory first (dnnl.ops does so)";
}

// Why a descriptor's bias or binary post-op inputs would be read wrong.
// (Those with runtime values pass here: their memory is checked at execute.)
std::string dense_operands_problem(const dnnl::primitive_desc_base &pd) {
    for (int arg : dense_operand_args(pd))
        if (!dense_from_the_handle(md_of(pd, dnnl::query::exec_arg_md, arg))) return not_dense(arg);
    return "";
}

// Forward softmax: ocl:xe and ocl:reusable read their data as the plain
// row-major layout whatever it is; ocl:simple honours a layout that source
// and destination share; none handles a source and destination of different
// layouts (measured with every implementation oneDNN offered).
std::string softmax_problem(const dnnl::primitive_desc_base &pd) {
    auto src = pd.query_md(dnnl::query::src_md, 0), dst = pd.query_md(dnnl::query::dst_md, 0);
    if (row_major(src) && row_major(dst)) return "";
    if (src == dst && std::strncmp(pd.impl_info_str(), "ocl:simple", 10) == 0) return "";
    return std::string("softmax: oneDNN's GPU implementation ") + pd.impl_info_str()
            + (src == dst ? " reads a layout other than the plain row-major one as if it were"
                          : " reads a source and destination of different layouts wrongly")
            + " (known problem softmax-layouts): give source and destination the same layout "
              "(a plain one, or the same strides) or reorder first (dnnl.ops does so)";
}

std::string offsets_or_gaps(const char *family, const char *arg) {
    return std::string(family) + ": oneDNN's GPU implementations ignore " + arg
            + "'s strides and sub-memory offset (they address its elements as if it were dense "
              "from the handle on), so results would be wrong";
}

} // namespace

// Measured with oneDNN 3.13.1 (the pinned release) and read in upstream's
// main of 2026-11: none is fixed there, so none has a `fixed` release yet.
const std::vector<problem> &problems() {
    static const std::vector<problem> list = {
            {"sum-many-inputs-scales",
                    "sum's ocl:many_inputs applies scales[i-1] to source i", {0, 0, 0}},
            {"reorder-ref-dst-zero-points",
                    "reorder's ocl:ref applies the first destination zero point everywhere",
                    {0, 0, 0}},
            {"reorder-custom-innermost-stride",
                    "reorder's ocl:custom reads or writes the innermost dimension of its "
                    "source or destination as if its stride were 1",
                    {0, 0, 0}},
            {"concat-simple-strided-dst",
                    "concat's ocl:simple writes a destination whose innermost dimension has a "
                    "stride other than 1 as if it were 1, and into the gaps of a destination "
                    "concatenated along another dimension than its innermost",
                    {0, 0, 0}},
            {"inner-product-dst-strides",
                    "inner product's ocl:ref writes its destination as row-major whatever its layout",
                    {0, 0, 0}},
            {"reorder-direct-copy-memory-kinds",
                    "reorder's gpu:direct_copy copies nothing between buffer and USM memory",
                    {0, 0, 0}},
            {"eltwise-strides",
                    "GPU eltwise ignores strides and sub-memory offsets", {0, 0, 0}},
            {"rnn-offsets", "GPU RNNs ignore sub-memory offsets", {0, 0, 0}},
            {"submemory-offsets",
                    "GPU implementations of most primitives address an argument from its handle, "
                    "ignoring its descriptor's sub-memory offset",
                    {0, 0, 0}},
            {"sum-many-inputs-dense",
                    "sum's ocl:many_inputs reads and writes layouts that are not dense as if they "
                    "were",
                    {0, 0, 0}},
            {"group-normalization-layouts",
                    "GPU group normalization computes wrong between a source and destination of "
                    "different layouts",
                    {0, 0, 0}},
            {"batch-normalization-stats-strides",
                    "GPU batch normalization computing its statistics misreads a source that is "
                    "not dense",
                    {0, 0, 0}},
            {"reduction-combined-strides",
                    "reduction's ocl:combined reads a source with gaps between its elements as "
                    "if it were dense",
                    {0, 0, 0}},
            {"softmax-layouts",
                    "GPU softmax reads layouts other than the plain one as if they were plain",
                    {0, 0, 0}},
            {"dense-bias-post-op-inputs",
                    "GPU primitives read a strided bias or binary post-op input as dense",
                    {0, 0, 0}},
            {"post-op-inputs-uninitialized",
                    "the exec_arg_md query for an input a post-op does not have (the second "
                    "input of a binary post-op other than select, an input of a non-binary "
                    "post-op) answers from an uninitialized descriptor",
                    {0, 0, 0}},
            {"group-normalization-strides",
                    "GPU group normalization misreads a strided source and writes out of bounds",
                    {0, 0, 0}},
            {"inorder-execute-drops-deps",
                    "primitive and partition executes on an in-order stream enqueue their "
                    "kernels without waiting for their dependencies",
                    {0, 0, 0}},
            {"graph-noop-null-event",
                    "a partition starting with a no-op step passes a NULL event as a wait list "
                    "on an out-of-order queue without dependencies",
                    {0, 0, 0}},
            {"graph-host-scalar-null-event",
                    "a partition with a host-scalar input passes a NULL event on as a wait list "
                    "after copying the scalar, on an out-of-order queue",
                    {0, 0, 0}},
            {"stream-profiling-without-order",
                    "a stream made with the profiling flag alone is not marked in-order, and "
                    "ocl_interop execute then crashes",
                    {0, 0, 0}},
    };
    return list;
}

bool applies(const char *id) {
    if (!enabled.load(std::memory_order_relaxed)) return false;
    const problem *p = find(id);
    if (!p) return false;
    if (p->fixed.major == 0) return true;
    return older_than(*dnnl::version(), p->fixed);
}

void set_enabled(bool on) { enabled.store(on); }

// Why oneDNN's chosen concat implementation would compute wrong results, or
// "". ocl:simple writes the destination's innermost dimension as if its
// stride were 1. ref:any copies each source into its piece of the
// destination with a reorder (gpu/generic/ref_concat.hpp), a known-wrong one
// where that reorder is ocl:custom of a layout it misaddresses: the same
// reorders are made here and checked.
static std::string concat_problem(const dnnl::primitive_desc_base &pd) {
    const char *impl = pd.impl_info_str();
    const_dnnl_memory_desc_t dst = md_of(pd, dnnl::query::dst_md, 0);
    if (std::strncmp(impl, "ocl:simple", 10) == 0 && applies("concat-simple-strided-dst")) {
        const innermost_dims inner = custom_innermost(dst);
        if (inner.plain && inner.dim >= 0 && inner.stride != 1)
            return "concat: oneDNN chose " + std::string(impl) + ", which would write the "
                    "destination's innermost dimension (stride " + std::to_string(inner.stride)
                    + ") as if its stride were 1 (known problem concat-simple-strided-dst): "
                      "concatenate into dense memory and copy it into place (a binary multiply "
                      "by 1 copies right; dnnl.ops does so)";
        // Into gaps along any other axis than the innermost one, it writes
        // the gaps (measured: rows of 8 in rows of 11, concatenated along 0)
        int axis = -1;
        const dnnl_dims_t *dst_dims = nullptr, *src_dims = nullptr;
        int ndims = 0;
        dnnl_memory_desc_query(dst, dnnl_query_ndims_s32, &ndims);
        dnnl_memory_desc_query(dst, dnnl_query_dims, &dst_dims);
        if (const_dnnl_memory_desc_t src = md_of(pd, dnnl::query::src_md, 0)) {
            dnnl_memory_desc_query(src, dnnl_query_dims, &src_dims);
            for (int d = 0; d < ndims && src_dims && dst_dims && axis < 0; ++d)
                if ((*src_dims)[d] != (*dst_dims)[d]) axis = d;
        }
        if (inner.plain && axis >= 0 && axis != inner.dim && !dense_from_the_handle(dst))
            return "concat: oneDNN chose " + std::string(impl) + ", which writes into the gaps "
                    "of a destination that is not dense when the concatenation axis (" +
                    std::to_string(axis) + ") is not its innermost dimension (known problem "
                    "concat-simple-strided-dst): concatenate into dense memory and copy it into "
                    "place";
    }
    if (std::strcmp(impl, "ref:any") != 0 || !applies("reorder-custom-innermost-stride")) return "";
    using owned_md = std::unique_ptr<dnnl_memory_desc, decltype(&dnnl_memory_desc_destroy)>;
    // The reorder oneDNN would make from `from` to `to`, if it is a known-wrong one.
    auto wrong_copy = [&](const_dnnl_memory_desc_t from, const_dnnl_memory_desc_t to) {
        dnnl_primitive_desc_t made = nullptr;
        if (dnnl_reorder_primitive_desc_create(&made, from, pd.get_engine().get(), to,
                    pd.get_engine().get(), nullptr)
                != dnnl_success)
            return std::string();
        return known_wrong_reorder(dnnl::primitive_desc_base(made), -1); // owns it
    };
    int inputs = 0, ndims = 0;
    dnnl_primitive_desc_query(pd.get(), dnnl_query_num_of_inputs_s32, 0, &inputs);
    dnnl_memory_desc_query(dst, dnnl_query_ndims_s32, &ndims);
    const dnnl_dims_t *dst_dims = nullptr;
    dnnl_data_type_t type = dnnl_data_type_undef;
    dnnl_memory_desc_query(dst, dnnl_query_dims, &dst_dims);
    dnnl_memory_desc_query(dst, dnnl_query_data_type, &type);
    // Where the destination takes no pieces (sub-memories), ref:any
    // concatenates into a dense temporary destination and reorders that
    // into the destination (its tent_dst_md_).
    const_dnnl_memory_desc_t target = dst;
    owned_md temporary(nullptr, dnnl_memory_desc_destroy);
    for (int pass = 0; pass < 2; ++pass) {
        dnnl_dims_t offsets = {0};
        bool pieces = true;
        for (int i = 0; i < inputs && pieces; ++i) {
            const_dnnl_memory_desc_t src = md_of(pd, dnnl::query::src_md, i);
            const dnnl_dims_t *dims = nullptr;
            dnnl_memory_desc_query(src, dnnl_query_dims, &dims);
            int axis = 0; // the dimension a source is shorter in than the destination
            while (axis < ndims && (*dims)[axis] == (*dst_dims)[axis]) ++axis;
            if (axis == ndims) axis = 0;
            dnnl_memory_desc_t made = nullptr;
            pieces = dnnl_memory_desc_create_submemory(&made, target, *dims, offsets) == dnnl_success;
            owned_md piece(made, dnnl_memory_desc_destroy);
            if (!pieces) break;
            std::string why = wrong_copy(src, piece.get());
            if (!why.empty())
                return "concat: oneDNN chose ref:any, which copies source " + std::to_string(i)
                        + " into its place with a reorder it cannot do right: " + why;
            offsets[axis] += (*dims)[axis];
        }
        if (pieces) break;
        if (pass == 1 || temporary) return "";
        dnnl_dims_t strides;
        dnnl_dim_t step = 1;
        for (int d = ndims; d-- > 0;) {
            strides[d] = step;
            step *= (*dst_dims)[d];
        }
        dnnl_memory_desc_t made = nullptr;
        if (dnnl_memory_desc_create_with_strides(&made, ndims, *dst_dims, type, strides)
                != dnnl_success)
            return "";
        temporary.reset(made);
        target = temporary.get();
    }
    if (temporary) {
        std::string why = wrong_copy(temporary.get(), dst);
        if (!why.empty())
            return "concat: oneDNN chose ref:any, which copies its dense result into the "
                   "destination with a reorder it cannot do right: " + why;
    }
    return "";
}

// The first argument of `pd` with a sub-memory offset that oneDNN's chosen
// GPU implementation ignores, or "". Measured (oneDNN 3.13.1; probes of
// every family with sub-memory views): binary, softmax, layer and batch
// normalization, lrn, pooling, resampling, reduction, prelu, matmul, inner
// product, deconvolution, the weights of convolution, ocl:simple concat and
// reorder-based shuffle address the argument from its handle (writing
// outside a destination view); reorders, a forward convolution's source and
// destination, shuffle's ocl:ref, concat's ref:any and sum's ref:any and
// reorder+post_ops honour the offset. Eltwise, group normalization, RNNs
// and post-op inputs have problems of their own that cover it.
std::string ignored_offset(const dnnl::primitive_desc_base &pd) {
    using kind = dnnl::primitive::kind;
    const kind k = pd.get_kind();
    const char *impl = pd.impl_info_str();
    if (k == kind::reorder || k == kind::eltwise || k == kind::group_normalization
            || k == kind::rnn || (k == kind::shuffle && std::strncmp(impl, "ocl:ref", 7) == 0)
            || (k == kind::concat && std::strcmp(impl, "ref:any") == 0)
            || (k == kind::sum && (std::strcmp(impl, "ref:any") == 0
                                          || std::strncmp(impl, "reorder+post_ops", 16) == 0)))
        return "";
    const bool forward_convolution = k == kind::convolution
            && (pd.get_prop_kind() == dnnl::prop_kind::forward_training
                    || pd.get_prop_kind() == dnnl::prop_kind::forward_inference);
    const struct {
        dnnl::query what;
        const char *name;
    } args[] = {{dnnl::query::src_md, "src"}, {dnnl::query::weights_md, "weights"},
            {dnnl::query::dst_md, "dst"}, {dnnl::query::diff_src_md, "diff_src"},
            {dnnl::query::diff_weights_md, "diff_weights"}, {dnnl::query::diff_dst_md, "diff_dst"}};
    for (const auto &a : args) {
        if (forward_convolution && a.what != dnnl::query::weights_md) continue;
        for (int i = 0; i < 4096; ++i) { // (concat and sum take many sources)
            const_dnnl_memory_desc_t md = md_of(pd, a.what, i);
            int ndims = 0;
            if (!md || dnnl_memory_desc_query(md, dnnl_query_ndims_s32, &ndims) != dnnl_success
                    || ndims == 0)
                break;
            dnnl_dim_t offset = 0;
            dnnl_memory_desc_query(md, dnnl_query_submemory_offset_s64, &offset);
            if (offset != 0)
                return std::string("oneDNN's GPU implementation ") + impl + " addresses "
                        + a.name + (i ? " " + std::to_string(i) : std::string()) + " from its "
                        "handle, ignoring its sub-memory offset of " + std::to_string(offset)
                        + " elements, so it would read or write other elements (known problem "
                          "submemory-offsets): give that argument memory of its own (a reorder "
                          "copies a view right), or memory whose handle is the view's first "
                          "element (an OpenCL sub-buffer or a USM pointer: dnnl.arrays does "
                          "so)";
        }
    }
    return "";
}

std::string known_wrong(const dnnl::primitive_desc_base &pd) {
    if (!pd || !is_gpu(pd)) return "";
    if (applies("submemory-offsets")) {
        std::string why = ignored_offset(pd);
        if (!why.empty()) return why;
    }
    using kind = dnnl::primitive::kind;
    kind k = pd.get_kind();
    if (k == kind::eltwise && applies("eltwise-strides")) {
        const struct {
            dnnl::query what;
            const char *name;
        } args[] = {{dnnl::query::src_md, "src"}, {dnnl::query::dst_md, "dst"},
                {dnnl::query::diff_src_md, "diff_src"}, {dnnl::query::diff_dst_md, "diff_dst"}};
        for (const auto &a : args)
            if (!dense_from_the_handle(md_of(pd, a.what, 0)))
                return offsets_or_gaps("eltwise", a.name)
                        + " (known problem eltwise-strides): reorder the data into dense memory "
                          "first (dnnl.ops does so)";
    }
    if (k == kind::softmax && pd.get_prop_kind() != dnnl::prop_kind::backward_data
            && pd.get_prop_kind() != dnnl::prop_kind::backward && applies("softmax-layouts")) {
        std::string why = softmax_problem(pd);
        if (!why.empty()) return why;
    }
    if (k == kind::concat) {
        std::string why = concat_problem(pd);
        if (!why.empty()) return why;
    }
    if (k == kind::inner_product && applies("inner-product-dst-strides")
            && std::strncmp(pd.impl_info_str(), "ocl:ref", 7) == 0) {
        // Any layout other than row-major from the handle on, blocked ones
        // included (its kernel writes dst[mb * OC + oc], ip/ref.cl)
        auto dst = pd.query_md(dnnl::query::dst_md);
        if (!dst.is_zero() && dst.get_format_kind() == dnnl::memory::format_kind::blocked
                && !has_runtime_values(dst.get()) && !row_major(dst))
            return "inner product: oneDNN chose ocl:ref, which writes dst as if it were "
                   "row-major from the handle on, whatever its layout (known problem "
                   "inner-product-dst-strides): give it a dense destination and reorder the "
                   "result into place (dnnl.ops does so)";
    }
    if (k == kind::group_normalization && applies("group-normalization-strides")) {
        for (auto what : {dnnl::query::src_md, dnnl::query::dst_md, dnnl::query::diff_src_md,
                     dnnl::query::diff_dst_md})
            if (!dense_from_the_handle(md_of(pd, what, 0)))
                return "group normalization: oneDNN's GPU implementation misreads data that is "
                       "not dense from its handle on, and writes out of bounds (known problem "
                       "group-normalization-strides): reorder the data into dense memory first "
                       "(dnnl.ops does so)";
    }
    if (k == kind::sum && applies("sum-many-inputs-dense")
            && std::strcmp(pd.impl_info_str(), "ocl:many_inputs") == 0) {
        int inputs = 0;
        dnnl_primitive_desc_query(pd.get(), dnnl_query_num_of_inputs_s32, 0, &inputs);
        bool dense = dense_from_the_handle(md_of(pd, dnnl::query::dst_md, 0));
        for (int i = 0; i < inputs && dense; ++i)
            dense = dense_from_the_handle(md_of(pd, dnnl::query::src_md, i));
        if (!dense)
            return "sum: oneDNN chose ocl:many_inputs, which reads and writes layouts that are "
                   "not dense from their handle on as if they were, writing outside the "
                   "destination's elements (known problem sum-many-inputs-dense): give the sum "
                   "dense memory, or sources of another layout than the destination's";
    }
    if (k == kind::group_normalization && applies("group-normalization-layouts")
            && pd.get_prop_kind() != dnnl::prop_kind::backward
            && pd.get_prop_kind() != dnnl::prop_kind::backward_data) {
        auto src = pd.query_md(dnnl::query::src_md, 0), dst = pd.query_md(dnnl::query::dst_md, 0);
        if (!src.is_zero() && !dst.is_zero() && src != dst)
            return "group normalization: oneDNN's GPU implementation computes wrong between a "
                   "source and a destination of different layouts (known problem "
                   "group-normalization-layouts): give both the same layout and reorder the "
                   "result";
    }
    if (k == kind::batch_normalization && applies("batch-normalization-stats-strides")
            && pd.get_prop_kind() != dnnl::prop_kind::backward
            && pd.get_prop_kind() != dnnl::prop_kind::backward_data) {
        unsigned flags = 0;
        dnnl_primitive_desc_query(pd.get(), dnnl_query_flags, 0, &flags);
        if (!(flags & dnnl_use_global_stats)
                && !dense_from_the_handle(md_of(pd, dnnl::query::src_md, 0)))
            return "batch normalization: oneDNN's GPU implementation misreads a source that is "
                   "not dense from its handle on when it computes the statistics (known problem "
                   "batch-normalization-stats-strides): give it a dense source, or the "
                   "statistics (normalization_flags.use_global_stats)";
    }
    if (k == kind::reduction && applies("reduction-combined-strides")
            && std::strncmp(pd.impl_info_str(), "ocl:combined", 12) == 0
            && !dense_from_the_handle(md_of(pd, dnnl::query::src_md, 0)))
        // Its phases step through the source's blocks as if each came right
        // after the one inside it (reduction/utils.cpp, generate_phases)
        return "reduction: oneDNN chose ocl:combined, which reads a source that is not dense "
               "from its handle on as if it were (known problem reduction-combined-strides): "
               "give it a dense source";
    if (applies("dense-bias-post-op-inputs")) {
        std::string why = dense_operands_problem(pd);
        if (!why.empty()) return why;
    }
    if (k == kind::rnn && applies("rnn-offsets")) {
        // Every argument descriptor of the RNN, whichever cell: a non-zero
        // sub-memory offset anywhere is read (or written) from the handle.
        for (int arg : {DNNL_ARG_SRC_LAYER, DNNL_ARG_AUGRU_ATTENTION, DNNL_ARG_SRC_ITER,
                     DNNL_ARG_SRC_ITER_C, DNNL_ARG_WEIGHTS_LAYER, DNNL_ARG_WEIGHTS_ITER,
                     DNNL_ARG_WEIGHTS_PEEPHOLE, DNNL_ARG_WEIGHTS_PROJECTION, DNNL_ARG_BIAS,
                     DNNL_ARG_DST_LAYER, DNNL_ARG_DST_ITER, DNNL_ARG_DST_ITER_C,
                     DNNL_ARG_DIFF_SRC_LAYER, DNNL_ARG_DIFF_AUGRU_ATTENTION,
                     DNNL_ARG_DIFF_SRC_ITER, DNNL_ARG_DIFF_SRC_ITER_C, DNNL_ARG_DIFF_WEIGHTS_LAYER,
                     DNNL_ARG_DIFF_WEIGHTS_ITER, DNNL_ARG_DIFF_WEIGHTS_PEEPHOLE,
                     DNNL_ARG_DIFF_WEIGHTS_PROJECTION, DNNL_ARG_DIFF_BIAS,
                     DNNL_ARG_DIFF_DST_LAYER, DNNL_ARG_DIFF_DST_ITER, DNNL_ARG_DIFF_DST_ITER_C}) {
            auto md = pd.query_md(dnnl::query::exec_arg_md, arg);
            if (!md.is_zero() && md.get_submemory_offset() != 0)
                return "RNN: oneDNN's GPU implementation ignores sub-memory offsets, so it would "
                       "read or write the wrong elements (known problem rnn-offsets): give "
                       "each argument its own memory (reorder a slice into it first)";
        }
    }
    return "";
}

bool another_implementation_may_be_right(const dnnl::primitive_desc_base &pd) {
    return pd && (pd.get_kind() == dnnl::primitive::kind::softmax
                         || pd.get_kind() == dnnl::primitive::kind::reduction
                         || pd.get_kind() == dnnl::primitive::kind::shuffle);
}

std::string known_wrong_sum(const dnnl::primitive_desc_base &pd, const std::vector<float> &scales) {
    if (!pd || !applies("sum-many-inputs-scales")) return "";
    bool all_equal = std::all_of(scales.begin(), scales.end(),
            [&](float s) { return s == scales.front(); });
    if (all_equal || std::strcmp(pd.impl_info_str(), "ocl:many_inputs") != 0) return "";
    return "sum: oneDNN chose ocl:many_inputs, which applies scales to the wrong sources when "
           "they differ (known problem sum-many-inputs-scales); use a first scale other than "
           "1, equal scales, or binary primitives";
}

std::string known_wrong_reorder(const dnnl::primitive_desc_base &pd, int dst_zero_points_mask) {
    if (!pd) return "";
    const char *impl = pd.impl_info_str();
    // Its kernels index both by the work-item's lane (custom.cl); the
    // binding cannot tell one from the other (one implementation name), so
    // every ocl:custom reorder of such a layout is refused.
    if (std::strcmp(impl, "ocl:custom:any") == 0 && applies("reorder-custom-innermost-stride")) {
        std::string why = custom_reorder_misreads(
                md_of(pd, dnnl::query::src_md, 0), md_of(pd, dnnl::query::dst_md, 0));
        if (!why.empty())
            return "reorder: oneDNN chose ocl:custom, which would read or write " + why
                    + " (known problem reorder-custom-innermost-stride): copy through a binary "
                      "primitive (a multiply by 1; dnnl.ops does so for copies and type "
                      "conversions without scales), or through a dense layout";
    }
    if (dst_zero_points_mask <= 0 || !applies("reorder-ref-dst-zero-points")
            || std::strncmp(impl, "ocl:ref", 7) != 0)
        return "";
    return "reorder: oneDNN chose ocl:ref, which applies the first destination zero point to "
           "every element whatever the mask (known problem reorder-ref-dst-zero-points); use "
           "one zero point (mask 0), or add per-channel zero points with a binary primitive";
}

std::vector<int> dense_at_execute(const dnnl::primitive_desc_base &pd) {
    std::vector<int> args;
    if (!pd || !is_gpu(pd) || !applies("dense-bias-post-op-inputs")) return args;
    for (int arg : dense_operand_args(pd))
        if (const_dnnl_memory_desc_t md = md_of(pd, dnnl::query::exec_arg_md, arg))
            if (has_runtime_values(md)) args.push_back(arg);
    return args;
}

std::string not_dense_at_execute(int arg, const dnnl::memory::desc &given) {
    return dense_from_the_handle(given.get()) ? "" : not_dense(arg);
}

bool post_op_input_missing(const dnnl::primitive_desc_base &pd, int arg) {
    constexpr int base = DNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE;
    int index = arg / base - 1, input = arg % base;
    if (arg < 0 || index < 0 || (input != DNNL_ARG_SRC_1 && input != DNNL_ARG_SRC_2)
            || !applies("post-op-inputs-uninitialized"))
        return false;
    const_dnnl_post_ops_t ops = post_ops_of(pd.get());
    if (!ops || index >= dnnl_post_ops_len(ops)) return false; // oneDNN answers zero past the last
    auto inputs = binary_post_op_inputs(ops, index);
    return std::find(inputs.begin(), inputs.end(), arg) == inputs.end();
}

bool copies_within_one_memory_kind(const dnnl::primitive_desc_base &pd) {
    return applies("reorder-direct-copy-memory-kinds")
            && std::strcmp(pd.impl_info_str(), "gpu:direct_copy") == 0;
}

unsigned stream_flags(unsigned flags) {
    // Without an order flag oneDNN makes an in-order queue but does not mark
    // the stream in-order: say in-order, which is what the stream is.
    if (applies("stream-profiling-without-order") && !(flags & dnnl_stream_out_of_order))
        flags |= dnnl_stream_in_order;
    return flags;
}

bool graph_needs_dependency_marker() { return applies("graph-noop-null-event"); }

bool inorder_execute_needs_barrier() { return applies("inorder-execute-drops-deps"); }

namespace {

using graph_kind = dnnl::graph::op::kind;

bool is_graph_softmax(graph_kind k) { return k == graph_kind::SoftMax || k == graph_kind::LogSoftmax; }

bool is_graph_reduction(graph_kind k) {
    switch (k) {
        case graph_kind::ReduceL1: case graph_kind::ReduceL2: case graph_kind::ReduceMax:
        case graph_kind::ReduceMean: case graph_kind::ReduceMin: case graph_kind::ReduceProd:
        case graph_kind::ReduceSum: return true;
        default: return false;
    }
}

// Element-wise ops of one input, run as oneDNN's eltwise primitive.
bool is_graph_eltwise(graph_kind k) {
    switch (k) {
        case graph_kind::Abs: case graph_kind::Clamp: case graph_kind::Elu: case graph_kind::Exp:
        case graph_kind::GELU: case graph_kind::HardSigmoid: case graph_kind::HardSwish:
        case graph_kind::LeakyReLU: case graph_kind::Log: case graph_kind::Mish:
        case graph_kind::Reciprocal: case graph_kind::ReLU: case graph_kind::Round:
        case graph_kind::Sigmoid: case graph_kind::SoftPlus: case graph_kind::Sqrt:
        case graph_kind::Square: case graph_kind::Tanh: return true;
        default: return false;
    }
}

// Element-wise ops of two inputs, run as oneDNN's binary primitive (or as a
// binary post-op of the op producing their first input).
bool is_graph_binary(graph_kind k) {
    switch (k) {
        case graph_kind::Add: case graph_kind::Subtract: case graph_kind::Multiply:
        case graph_kind::Divide: case graph_kind::Maximum: case graph_kind::Minimum:
        case graph_kind::SquaredDifference: case graph_kind::BiasAdd:
        case graph_kind::GreaterEqual: return true;
        default: return false;
    }
}

// A strided port's memory descriptor, and its plain row-major counterpart;
// false for ports without one (any or opaque layouts, host scalars, rank 0,
// values oneDNN's descriptors refuse).
bool port_descs(const dnnl::graph::logical_tensor &port, dnnl::memory::desc &given,
        dnnl::memory::desc &plain) {
    using lt = dnnl::graph::logical_tensor;
    if (port.get_layout_type() != lt::layout_type::strided
            || port.get_property_type() == lt::property_type::host_scalar)
        return false;
    try {
        auto dims = port.get_dims();
        if (dims.empty()) return false;
        auto type = static_cast<dnnl::memory::data_type>(port.get_data_type());
        given = dnnl::memory::desc(dims, type, port.get_strides());
        dnnl::memory::dims strides(dims.size());
        dnnl::memory::dim step = 1;
        for (size_t i = dims.size(); i-- > 0;) {
            strides[i] = step;
            step *= std::max<dnnl::memory::dim>(dims[i], 1);
        }
        plain = dnnl::memory::desc(dims, type, strides);
        return true;
    } catch (const dnnl::error &) {
        return false;
    }
}

// The smallest stride other than 0 among a strided port's dimensions of
// more than one element (1 when there is none).
int64_t innermost_nonzero_stride(const dnnl::graph::logical_tensor &port) {
    auto dims = port.get_dims();
    auto strides = port.get_strides();
    int64_t smallest = 0;
    for (size_t d = 0; d < dims.size() && d < strides.size(); ++d)
        if (dims[d] > 1 && strides[d] != 0 && (smallest == 0 || strides[d] < smallest))
            smallest = strides[d];
    return smallest == 0 ? 1 : smallest;
}

} // namespace

std::string known_wrong_partition(const std::vector<op_facts> &ops,
        const std::vector<dnnl::graph::logical_tensor> &inputs,
        const std::vector<dnnl::graph::logical_tensor> &outputs) {
    auto port = [](const std::vector<dnnl::graph::logical_tensor> &ports, size_t id) {
        auto found = std::find_if(ports.begin(), ports.end(),
                [&](const dnnl::graph::logical_tensor &t) { return t.get_id() == id; });
        return found == ports.end() ? nullptr : &*found;
    };
    auto producer = [&](size_t id) -> const op_facts * {
        for (const auto &op : ops)
            if (std::find(op.outputs.begin(), op.outputs.end(), id) != op.outputs.end()) return &op;
        return nullptr;
    };
    // oneDNN fuses an eltwise or binary op into the op making one of its
    // inputs (either input of a binary op: Add and Multiply commute) as a
    // post-op: the index of that input, or -1.
    auto fused_input = [&](const op_facts &op) -> int {
        if (!is_graph_eltwise(op.kind) && !is_graph_binary(op.kind)) return -1;
        for (size_t i = 0; i < op.inputs.size(); ++i)
            if (producer(op.inputs[i])) return static_cast<int>(i);
        return -1;
    };
    // The op a chain of post-ops belongs to (the op itself when it is none):
    // it writes the chain's output.
    auto root_of = [&](const op_facts &op) {
        const op_facts *at = &op;
        for (size_t steps = 0; steps <= ops.size(); ++steps) { // (a cycle ends the walk)
            int i = fused_input(*at);
            if (i < 0) break;
            at = producer(at->inputs[static_cast<size_t>(i)]);
        }
        return at;
    };
    enum class rule {
        none, plain, dense_eltwise, dense_reduction, innermost, reorder
    };
    dnnl::memory::desc given, plain;
    auto check = [&](rule r, const dnnl::graph::logical_tensor &t, bool input) -> std::string {
        if (r == rule::none || !port_descs(t, given, plain)) return "";
        switch (r) {
            case rule::plain:
                if (!applies("softmax-layouts") || row_major(given)) return "";
                return "has a layout other than the plain row-major one, which oneDNN's GPU "
                       "softmax reads and writes as if it were plain (known problem "
                       "softmax-layouts; it may write past the tensor's end): give softmax ports "
                       "the plain layout";
            case rule::dense_eltwise:
                if (!applies("eltwise-strides") || dense_from_the_handle(given.get())) return "";
                return "is not dense, and oneDNN's GPU eltwise reads it as if it were (known "
                       "problem eltwise-strides): give it a dense layout";
            case rule::dense_reduction:
                if (!applies("reduction-combined-strides") || dense_from_the_handle(given.get()))
                    return "";
                return "is not dense, and oneDNN's ocl:combined reduction reads it as if it were "
                       "(known problem reduction-combined-strides): give it a dense layout";
            case rule::innermost: // measured wrong only so after a MatMul
                if (!applies("reorder-custom-innermost-stride") || innermost_nonzero_stride(t) == 1)
                    return "";
                return "has an innermost stride other than 1, which oneDNN reads as if it were 1 "
                       "in a MatMul's binary post-op (known problem "
                       "reorder-custom-innermost-stride): give it a layout whose innermost "
                       "stride is 1";
            case rule::reorder: { // the backend copies the port through the plain layout
                if (!applies("reorder-custom-innermost-stride")) return "";
                std::string why = input ? custom_reorder_misreads(given.get(), plain.get())
                                        : custom_reorder_misreads(plain.get(), given.get());
                if (why.empty()) return "";
                return "would be copied by oneDNN's ocl:custom reorder, which would read or write "
                        + why
                        + " (known problem reorder-custom-innermost-stride): give it a layout "
                          "whose innermost stride is 1 (rows with gaps are fine; transposes of "
                          "fewer than 16 elements only when dense)";
            }
            case rule::none: break;
        }
        return "";
    };
    // Measured per op kind (docs/known-problems.md): MatMul reads and writes
    // any strides (but through a binary post-op), its post-ops' inputs but
    // stride-2 ones included; softmax wants plain ports; eltwise and reduction
    // dense inputs; a standalone binary op reads any strides; the rest is
    // copied through the plain layout.
    auto rule_of_input = [&](const op_facts &op, const op_facts &root) {
        if (&root != &op) { // a post-op's other input
            return root.kind == graph_kind::MatMul ? rule::innermost : rule::reorder;
        }
        if (op.kind == graph_kind::MatMul || is_graph_binary(op.kind)) return rule::none;
        if (is_graph_softmax(op.kind)) return rule::plain;
        if (is_graph_eltwise(op.kind)) return rule::dense_eltwise;
        if (is_graph_reduction(op.kind)) return rule::dense_reduction;
        return rule::reorder;
    };
    // A MatMul writes any strides itself, but not through a binary post-op
    // (measured: into columns with gaps, the addend was read past its end).
    auto with_binary_post_op = [&](const op_facts &op, const op_facts &root) {
        const op_facts *at = &op;
        for (size_t steps = 0; at && at != &root && steps <= ops.size(); ++steps) {
            if (is_graph_binary(at->kind)) return true;
            int i = fused_input(*at);
            at = i < 0 ? nullptr : producer(at->inputs[static_cast<size_t>(i)]);
        }
        return false;
    };
    auto rule_of_output = [&](const op_facts &op, const op_facts &root) {
        if (root.kind == graph_kind::MatMul && !with_binary_post_op(op, root)) return rule::none;
        if (is_graph_softmax(root.kind)) return rule::plain;
        return rule::reorder;
    };
    for (const auto &op : ops) {
        const op_facts &root = *root_of(op);
        for (int side = 0; side < 2; ++side) {
            const bool input = side == 0;
            const auto &ids = input ? op.inputs : op.outputs;
            for (size_t i = 0; i < ids.size(); ++i) {
                const auto *t = port(input ? inputs : outputs, ids[i]);
                if (!t) continue;
                std::string why = check(input ? rule_of_input(op, root) : rule_of_output(op, root),
                        *t, input);
                if (!why.empty())
                    return "compile(): logical tensor " + std::to_string(ids[i]) + ", "
                            + (input ? "input " : "output ") + std::to_string(i) + " of op "
                            + std::to_string(op.id) + ", " + why;
            }
        }
    }
    return "";
}

std::string out_of_order_host_scalar_refusal() {
    if (!applies("graph-host-scalar-null-event")) return "";
    return "a partition with a host-scalar input cannot run on an out-of-order stream: oneDNN "
           "passes a NULL event as the next step's wait list after copying the scalar, which "
           "the queue refuses and which has crashed the OpenCL runtime (known problem "
           "graph-host-scalar-null-event): execute it on an in-order stream";
}

} // namespace workarounds
} // namespace dnnl_ocl_interop
