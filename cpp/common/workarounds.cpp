#include "common/workarounds.hpp"
#include "common/data_types.hpp"
#include "common/known_problems.hpp"
#include "common/memory_descs.hpp"
#include "common/post_ops.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

namespace dnnl_ocl_interop {
namespace workarounds {
namespace {

using known_problems::applies;
using known_problems::applies_to;
namespace arg_bits = known_problems::arg_bits;

bool is_gpu(const dnnl::primitive_desc_base &pd) {
    return pd.get_engine().get_kind() == dnnl::engine::kind::gpu;
}

// The implementation name the rules see (oneDNN's, or the scope view's).
const char *impl_of(const dnnl::primitive_desc_base &pd) {
    return known_problems::implementation_of(pd);
}

bool starts_with(const char *s, const char *prefix) {
    return std::strncmp(s, prefix, std::strlen(prefix)) == 0;
}

refusal refuse(const char *id, std::string why, std::vector<int> args) {
    return refusal {std::move(why), id, std::move(args)};
}

// The sub-memory offset of `md` in elements (0 for a zero descriptor).
dnnl_dim_t offset_of(const_dnnl_memory_desc_t md) {
    dnnl_dim_t offset = 0;
    if (md) dnnl_memory_desc_query(md, dnnl_query_submemory_offset_s64, &offset);
    return offset;
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
    if (offset_of(md) != 0) return false;
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

// Whether `md` has gaps between its elements (whatever its sub-memory
// offset, which some implementations honour).
bool has_gaps(const_dnnl_memory_desc_t md) {
    if (offset_of(md) == 0) return !dense_from_the_handle(md);
    dnnl_memory_desc_t moved = nullptr;
    int ndims = 0;
    const dnnl_dims_t *dims = nullptr, *strides = nullptr;
    dnnl_data_type_t type = dnnl_data_type_undef;
    dnnl_memory_desc_query(md, dnnl_query_ndims_s32, &ndims);
    dnnl_memory_desc_query(md, dnnl_query_dims, &dims);
    dnnl_memory_desc_query(md, dnnl_query_strides, &strides);
    dnnl_memory_desc_query(md, dnnl_query_data_type, &type);
    if (dnnl_memory_desc_create_with_strides(&moved, ndims, *dims, type, *strides) != dnnl_success)
        return true;
    const bool gaps = !dense_from_the_handle(moved);
    dnnl_memory_desc_destroy(moved);
    return gaps;
}

// The descriptor `pd` gives for (what, index), in place (see above).
const_dnnl_memory_desc_t md_of(const dnnl::primitive_desc_base &pd, dnnl::query what, int index) {
    return dnnl_primitive_desc_query_md(pd.get(), dnnl::convert_to_c(what), index);
}

bool is_zero(const_dnnl_memory_desc_t md) {
    int ndims = 0;
    return !md || dnnl_memory_desc_query(md, dnnl_query_ndims_s32, &ndims) != dnnl_success
            || ndims == 0;
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
// of them, or "" (with the side it would, 0 or 1, in `side`). Its kernels
// take the innermost dimension as contiguous whatever its stride; and its
// xb_to_xab_xba kernel, which it picks for a reorder whose two sides have
// different innermost dimensions (a transpose), groups an innermost
// dimension of fewer than 16 elements with the next one into bursts of 16
// contiguous elements. (Its pad_innermost kernel, picked where both sides
// share the innermost dimension, addresses the rows through their strides.)
std::string custom_reorder_misreads(const_dnnl_memory_desc_t src, const_dnnl_memory_desc_t dst,
        int *side = nullptr) {
    const innermost_dims sides[2] = {custom_innermost(src), custom_innermost(dst)};
    const char *names[2] = {"the source's", "the destination's"};
    for (int i = 0; i < 2; ++i)
        if (sides[i].plain && sides[i].dim >= 0 && sides[i].stride != 1) {
            if (side) *side = i;
            return std::string(names[i]) + " innermost dimension (stride "
                    + std::to_string(sides[i].stride) + ") as if its stride were 1";
        }
    if (!sides[0].plain || !sides[1].plain || sides[0].dim < 0 || sides[1].dim < 0
            || sides[0].dim == sides[1].dim)
        return "";
    for (int i = 0; i < 2; ++i)
        if (sides[i].next >= 0 && sides[i].size < 16 && sides[i].next_stride != sides[i].size) {
            if (side) *side = i;
            return std::string(names[i]) + " two innermost dimensions ("
                    + std::to_string(sides[i].size) + " elements, then a stride of "
                    + std::to_string(sides[i].next_stride) + ") as if they were contiguous";
        }
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

// The arguments of a primitive's descriptors, by query: (query, index) ->
// DNNL_ARG_*, the bit of known_problems::arg_bits it belongs to, a name.
struct described_arg {
    dnnl::query what;
    int index;
    int arg;
    unsigned bit;
    std::string name;
};

std::vector<described_arg> described_args(const dnnl::primitive_desc_base &pd) {
    using kind = dnnl::primitive::kind;
    const kind k = pd.get_kind();
    const bool many_sources = k == kind::concat || k == kind::sum;
    const struct {
        dnnl::query what;
        int first_arg;
        unsigned bit;
        const char *name;
    } families[] = {{dnnl::query::src_md, many_sources ? DNNL_ARG_MULTIPLE_SRC : DNNL_ARG_SRC_0,
                            arg_bits::src, "src"},
            {dnnl::query::weights_md, DNNL_ARG_WEIGHTS_0, arg_bits::weights, "weights"},
            {dnnl::query::dst_md, DNNL_ARG_DST_0, arg_bits::dst, "dst"},
            {dnnl::query::diff_src_md, DNNL_ARG_DIFF_SRC_0, arg_bits::diff_src, "diff_src"},
            {dnnl::query::diff_weights_md, DNNL_ARG_DIFF_WEIGHTS_0, arg_bits::diff_weights,
                    "diff_weights"},
            {dnnl::query::diff_dst_md, DNNL_ARG_DIFF_DST_0, arg_bits::diff_dst, "diff_dst"}};
    std::vector<described_arg> found;
    for (const auto &f : families)
        for (int i = 0; i < 4096; ++i) { // (concat and sum take many sources)
            if (is_zero(md_of(pd, f.what, i))) break;
            std::string name = f.name;
            if (i > 0 || many_sources) name += " " + std::to_string(i);
            // weights 1 is a bias where the primitive has one
            const bool bias = f.what == dnnl::query::weights_md && i == 1
                    && (k == kind::convolution || k == kind::deconvolution
                            || k == kind::inner_product || k == kind::matmul);
            if (bias) continue; // (dense-bias-post-op-inputs looks at biases)
            found.push_back({f.what, i, f.first_arg + i, f.bit, name});
        }
    return found;
}

// ---- the rules of primitive descriptors, one function per problem: each is
// called only where the registry says its problem applies to oneDNN's
// chosen implementation (`named`: the registry's entry for it).

using pd_rule
        = refusal (*)(const dnnl::primitive_desc_base &, const known_problems::implementation &);

// The first argument the chosen implementation addresses from its handle
// while its descriptor has a sub-memory offset (measured per implementation
// and argument: the registry's rows).
refusal submemory_offsets(const dnnl::primitive_desc_base &pd,
        const known_problems::implementation &named) {
    for (const auto &a : described_args(pd)) {
        if (!(named.arguments & a.bit)) continue;
        const dnnl_dim_t offset = offset_of(md_of(pd, a.what, a.index));
        if (offset != 0)
            return refuse("submemory-offsets",
                    std::string("oneDNN's GPU implementation ") + pd.impl_info_str() + " addresses "
                            + a.name + " from its handle, ignoring its sub-memory offset of "
                            + std::to_string(offset)
                            + " elements, so it would read or write other elements (known problem "
                              "submemory-offsets): give that argument memory of its own (a "
                              "reorder copies a view right; dnnl.ops does so), or memory whose "
                              "handle is the view's first element (an OpenCL sub-buffer or a USM "
                              "pointer)",
                    {a.arg});
    }
    return {};
}

refusal eltwise_strides(const dnnl::primitive_desc_base &pd,
        const known_problems::implementation &) {
    for (const auto &a : described_args(pd))
        if (!dense_from_the_handle(md_of(pd, a.what, a.index)))
            return refuse("eltwise-strides",
                    std::string("eltwise: oneDNN's GPU implementation ") + pd.impl_info_str()
                            + " ignores " + a.name
                            + "'s strides and sub-memory offset (it addresses its elements as if "
                              "it were dense from the handle on), so results would be wrong "
                              "(known problem eltwise-strides): reorder the data into dense "
                              "memory first (dnnl.ops does so)",
                    {a.arg});
    return {};
}

// Forward softmax: ocl:xe and ocl:reusable read their data as the plain
// row-major layout whatever it is; ocl:simple honours a layout that source
// and destination share; none handles a source and destination of different
// layouts (measured with every implementation oneDNN offered).
refusal softmax_layouts(const dnnl::primitive_desc_base &pd,
        const known_problems::implementation &) {
    if (pd.get_prop_kind() == dnnl::prop_kind::backward_data
            || pd.get_prop_kind() == dnnl::prop_kind::backward)
        return {};
    auto src = pd.query_md(dnnl::query::src_md, 0), dst = pd.query_md(dnnl::query::dst_md, 0);
    if (row_major(src) && row_major(dst)) return {};
    if (src == dst && starts_with(impl_of(pd), "ocl:simple")) return {};
    return refuse("softmax-layouts",
            std::string("softmax: oneDNN's GPU implementation ") + pd.impl_info_str()
                    + (src == dst ? " reads a layout other than the plain row-major one as if it were"
                                  : " reads a source and destination of different layouts wrongly")
                    + " (known problem softmax-layouts): give source and destination the same "
                      "layout (a plain one, or the same strides) or reorder first (dnnl.ops does "
                      "so)",
            {row_major(src) ? DNNL_ARG_DST : DNNL_ARG_SRC});
}

// ocl:reusable's one_reduction_per_subgroup form (reusable.hpp, 3.13.1):
// taken for an axis of at most 128 elements, unless the vectorized or small
// forms (not on Xe-HPG) or many_reductions_per_workgroup are; its
// work-group is `sub_group` work-items, which the kernel reduces with
// sub-group functions as if they were one sub-group.
refusal softmax_reusable_sub_group(const dnnl::primitive_desc_base &pd,
        const known_problems::implementation &) {
    if (pd.get_prop_kind() != dnnl::prop_kind::forward_training
            && pd.get_prop_kind() != dnnl::prop_kind::forward_inference)
        return {};
    const known_problems::device_facts device = known_problems::facts_of(pd.get_engine());
    if (device.emulated_softmax_sub_groups || device.sub_group_sizes.empty()) return {};
    const size_t smallest
            = *std::min_element(device.sub_group_sizes.begin(), device.sub_group_sizes.end());
    // oneDNN takes the largest of 16 and 8 the device offers
    size_t sub_group = 0;
    for (size_t size : {16, 8})
        if (!sub_group
                && std::find(device.sub_group_sizes.begin(), device.sub_group_sizes.end(), size)
                        != device.sub_group_sizes.end())
            sub_group = size;
    if (sub_group == 0 || smallest >= sub_group) return {};
    auto src = pd.query_md(dnnl::query::src_md, 0);
    int axis = 0;
    dnnl_primitive_desc_query(pd.get(), dnnl_query_axis_s32, 0, &axis);
    const auto dims = src.get_dims();
    if (axis < 0 || axis >= static_cast<int>(dims.size())) return {};
    const dnnl::memory::dim axis_size = dims[static_cast<size_t>(axis)];
    dnnl::memory::dim elements = 1;
    for (auto d : dims) elements *= d;
    const auto strides = src.get_strides();
    const bool unit_stride = !strides.empty() && strides[static_cast<size_t>(axis)] == 1;
    const uint32_t architecture = device.ip_version >> 22 << 22 | (device.ip_version & 0x3fc000);
    const bool xe_hpg = architecture == ((12u << 22) | (55u << 14)) // 12.55 (DG2)
            || architecture == ((12u << 22) | (56u << 14))
            || architecture == ((12u << 22) | (57u << 14))
            || architecture == ((12u << 22) | (70u << 14))
            || architecture == ((12u << 22) | (71u << 14))
            || architecture == ((12u << 22) | (74u << 14)); // Xe-LPG(+) are Xe-HPG to oneDNN
    if (!xe_hpg) {
        const auto src_type = src.get_data_type(),
                   dst_type = pd.query_md(dnnl::query::dst_md, 0).get_data_type();
        const bool read_aligned = (axis_size
                                          * static_cast<dnnl::memory::dim>(dnnl_data_type_size(
                                                  static_cast<dnnl_data_type_t>(src_type))))
                        % 4
                == 0;
        const bool write_aligned = (axis_size
                                           * static_cast<dnnl::memory::dim>(dnnl_data_type_size(
                                                   static_cast<dnnl_data_type_t>(dst_type))))
                        % 16
                == 0;
        const dnnl::memory::dim groups = (axis_size + static_cast<dnnl::memory::dim>(sub_group) - 1)
                / static_cast<dnnl::memory::dim>(sub_group);
        if (unit_stride && axis_size >= 128 && elements > (1 << 17) && groups <= 1024
                && read_aligned && write_aligned)
            return {}; // vectorized
        if (unit_stride && axis_size <= static_cast<dnnl::memory::dim>(sub_group)
                && elements < (1 << 15))
            return {}; // small
    }
    if (axis_size < 6 && elements > 64000) return {}; // many_reductions_per_workgroup
    if (axis_size > 128) return {};                   // one_reduction_per_workgroup
    if (axis_size <= static_cast<dnnl::memory::dim>(smallest))
        return {}; // one sub-group holds the axis
    return refuse("softmax-reusable-sub-group",
            "softmax: oneDNN chose ocl:reusable, which reduces each row of "
                    + std::to_string(axis_size) + " elements over a work-group of "
                    + std::to_string(sub_group)
                    + " work-items with sub-group functions without asking for sub-groups of that "
                      "size, and this device's compiler may form sub-groups of "
                    + std::to_string(smallest)
                    + " (known problem softmax-reusable-sub-group): each row would be normalized "
                      "in parts",
            {DNNL_ARG_SRC});
}

// Why oneDNN's chosen concat implementation would compute wrong results.
// ocl:simple writes the destination's innermost dimension as if its stride
// were 1, and into the gaps of a destination concatenated along another
// dimension than its innermost.
refusal concat_simple_strided_dst(const dnnl::primitive_desc_base &pd,
        const known_problems::implementation &) {
    const char *impl = pd.impl_info_str();
    const_dnnl_memory_desc_t dst = md_of(pd, dnnl::query::dst_md, 0);
    const innermost_dims inner = custom_innermost(dst);
    if (inner.plain && inner.dim >= 0 && inner.stride != 1)
        return refuse("concat-simple-strided-dst",
                "concat: oneDNN chose " + std::string(impl) + ", which would write the "
                "destination's innermost dimension (stride " + std::to_string(inner.stride)
                        + ") as if its stride were 1 (known problem concat-simple-strided-dst): "
                          "concatenate into dense memory and copy it into place (a binary "
                          "multiply by 1 copies right; dnnl.ops does so)",
                {DNNL_ARG_DST});
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
    if (inner.plain && axis >= 0 && axis != inner.dim && has_gaps(dst))
        return refuse("concat-simple-strided-dst",
                "concat: oneDNN chose " + std::string(impl) + ", which writes into the gaps "
                "of a destination that is not dense when the concatenation axis (" +
                        std::to_string(axis) + ") is not its innermost dimension (known problem "
                        "concat-simple-strided-dst): concatenate into dense memory and copy it "
                        "into place",
                {DNNL_ARG_DST});
    return {};
}

// concat's ref:any copies each source into its piece of the destination
// with a reorder (gpu/generic/ref_concat.hpp), a known-wrong one where that
// reorder is ocl:custom of a layout it misaddresses: the same reorders are
// made here and judged by known_wrong_reorder.
refusal concat_through_reorders(const dnnl::primitive_desc_base &pd,
        const known_problems::implementation &) {
    const_dnnl_memory_desc_t dst = md_of(pd, dnnl::query::dst_md, 0);
    using owned_md = std::unique_ptr<dnnl_memory_desc, decltype(&dnnl_memory_desc_destroy)>;
    // The reorder oneDNN would make from `from` to `to`, if it is a known-wrong one.
    auto wrong_copy = [&](const_dnnl_memory_desc_t from, const_dnnl_memory_desc_t to) {
        dnnl_primitive_desc_t made = nullptr;
        if (dnnl_reorder_primitive_desc_create(&made, from, pd.get_engine().get(), to,
                    pd.get_engine().get(), nullptr)
                != dnnl_success)
            return std::string();
        return known_wrong(dnnl::primitive_desc_base(made)).why; // owns it
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
            pieces = dnnl_memory_desc_create_submemory(&made, target, *dims, offsets)
                    == dnnl_success;
            owned_md piece(made, dnnl_memory_desc_destroy);
            if (!pieces) break;
            std::string why = wrong_copy(src, piece.get());
            if (!why.empty())
                return refuse("reorder-custom-innermost-stride",
                        "concat: oneDNN chose ref:any, which copies source " + std::to_string(i)
                                + " into its place with a reorder it cannot do right: " + why,
                        {DNNL_ARG_MULTIPLE_SRC + i});
            offsets[axis] += (*dims)[axis];
        }
        if (pieces) break;
        if (pass == 1 || temporary) return {};
        dnnl_dims_t strides;
        dnnl_dim_t step = 1;
        for (int d = ndims; d-- > 0;) {
            strides[d] = step;
            step *= (*dst_dims)[d];
        }
        dnnl_memory_desc_t made = nullptr;
        if (dnnl_memory_desc_create_with_strides(&made, ndims, *dst_dims, type, strides)
                != dnnl_success)
            return {};
        temporary.reset(made);
        target = temporary.get();
    }
    if (temporary) {
        std::string why = wrong_copy(temporary.get(), dst);
        if (!why.empty())
            return refuse("reorder-custom-innermost-stride",
                    "concat: oneDNN chose ref:any, which copies its dense result into the "
                    "destination with a reorder it cannot do right: "
                            + why,
                    {DNNL_ARG_DST});
    }
    return {};
}

refusal inner_product_dst_strides(const dnnl::primitive_desc_base &pd,
        const known_problems::implementation &) {
    // Any layout other than row-major from the handle on, blocked ones
    // included (its kernel writes dst[mb * OC + oc], ip/ref.cl)
    if (pd.get_prop_kind() != dnnl::prop_kind::forward_training
            && pd.get_prop_kind() != dnnl::prop_kind::forward_inference)
        return {};
    auto dst = pd.query_md(dnnl::query::dst_md);
    if (dst.is_zero() || dst.get_format_kind() != dnnl::memory::format_kind::blocked
            || has_runtime_values(dst.get()) || row_major(dst))
        return {};
    return refuse("inner-product-dst-strides",
            "inner product: oneDNN chose ocl:ref, which writes dst as if it were row-major from "
            "the handle on, whatever its layout (known problem inner-product-dst-strides): give "
            "it a dense destination and reorder the result into place (dnnl.ops does so)",
            {DNNL_ARG_DST});
}

refusal sum_many_inputs_dense(const dnnl::primitive_desc_base &pd,
        const known_problems::implementation &) {
    int inputs = 0;
    dnnl_primitive_desc_query(pd.get(), dnnl_query_num_of_inputs_s32, 0, &inputs);
    std::vector<int> args;
    if (!dense_from_the_handle(md_of(pd, dnnl::query::dst_md, 0))) args.push_back(DNNL_ARG_DST);
    for (int i = 0; i < inputs; ++i)
        if (!dense_from_the_handle(md_of(pd, dnnl::query::src_md, i)))
            args.push_back(DNNL_ARG_MULTIPLE_SRC + i);
    if (args.empty()) return {};
    return refuse("sum-many-inputs-dense",
            "sum: oneDNN chose ocl:many_inputs, which reads and writes layouts that are not "
            "dense from their handle on as if they were, writing outside the destination's "
            "elements (known problem sum-many-inputs-dense): give the sum dense memory, or "
            "sources of another layout than the destination's",
            args);
}

bool is_forward(const dnnl::primitive_desc_base &pd) {
    return pd.get_prop_kind() == dnnl::prop_kind::forward_training
            || pd.get_prop_kind() == dnnl::prop_kind::forward_inference;
}

refusal group_normalization_layouts(const dnnl::primitive_desc_base &pd,
        const known_problems::implementation &) {
    if (!is_forward(pd)) return {};
    auto src = pd.query_md(dnnl::query::src_md, 0), dst = pd.query_md(dnnl::query::dst_md, 0);
    if (src.is_zero() || dst.is_zero() || src == dst) return {};
    return refuse("group-normalization-layouts",
            "group normalization: oneDNN's GPU implementation computes wrong between a source "
            "and a destination of different layouts (known problem group-normalization-layouts): "
            "give both the same layout and reorder the result",
            {dense_from_the_handle(src.get()) ? DNNL_ARG_DST : DNNL_ARG_SRC});
}

refusal group_normalization_strides(const dnnl::primitive_desc_base &pd,
        const known_problems::implementation &named) {
    for (const auto &a : described_args(pd)) {
        if (!(named.arguments & a.bit)) continue;
        if (offset_of(md_of(pd, a.what, a.index)) != 0)
            return refuse("group-normalization-strides",
                    "group normalization: oneDNN's GPU implementation addresses " + a.name
                            + " from its handle, ignoring its sub-memory offset (known problem "
                              "group-normalization-strides): give it memory of its own (a "
                              "reorder copies a view right; dnnl.ops does so)",
                    {a.arg});
    }
    return {};
}

refusal batch_normalization_stats_strides(const dnnl::primitive_desc_base &pd,
        const known_problems::implementation &) {
    if (!is_forward(pd)) return {};
    unsigned flags = 0;
    dnnl_primitive_desc_query(pd.get(), dnnl_query_flags, 0, &flags);
    if ((flags & dnnl_use_global_stats) || dense_from_the_handle(md_of(pd, dnnl::query::src_md, 0)))
        return {};
    return refuse("batch-normalization-stats-strides",
            std::string("batch normalization: oneDNN's GPU implementation ") + pd.impl_info_str()
                    + " misreads a source that is not dense from its handle on when it computes "
                      "the statistics (known problem batch-normalization-stats-strides): give it "
                      "a dense source, or the statistics (normalization_flags.use_global_stats)",
            {DNNL_ARG_SRC});
}

refusal reduction_combined_strides(const dnnl::primitive_desc_base &pd,
        const known_problems::implementation &) {
    if (dense_from_the_handle(md_of(pd, dnnl::query::src_md, 0))) return {};
    // Its phases step through the source's blocks as if each came right
    // after the one inside it (reduction/utils.cpp, generate_phases)
    return refuse("reduction-combined-strides",
            "reduction: oneDNN chose ocl:combined, which reads a source that is not dense from "
            "its handle on as if it were (known problem reduction-combined-strides): give it a "
            "dense source",
            {DNNL_ARG_SRC});
}

// The bias and the binary post-op inputs of `pd`, as execution arguments.
std::vector<int> operand_args(const dnnl::primitive_desc_base &pd, unsigned bits) {
    std::vector<int> args;
    if (bits & arg_bits::bias) args.push_back(DNNL_ARG_BIAS);
    if (bits & arg_bits::post_op_inputs) {
        const_dnnl_post_ops_t ops = post_ops_of(pd.get());
        for (int i = 0; ops && i < dnnl_post_ops_len(ops); ++i)
            for (int arg : binary_post_op_inputs(ops, i)) args.push_back(arg);
    }
    return args;
}

// Whether the implementations of dense-bias-post-op-inputs misread an
// operand of layout `md`: one whose innermost dimension (smallest stride
// among the dimensions of more than one element) has a stride other than 1,
// or with a sub-memory offset. (Rows with gaps are read right: oneDNN passes
// the outer strides to its kernels.)
bool operand_misread(const_dnnl_memory_desc_t md) {
    if (is_zero(md) || has_runtime_values(md)) return false;
    if (offset_of(md) != 0) return true;
    const innermost_dims inner = custom_innermost(md);
    return inner.plain && inner.dim >= 0 && inner.stride != 1;
}

std::string operand_refusal(int arg) {
    std::string what = arg == DNNL_ARG_BIAS ? std::string("the bias")
                                            : "the input of binary post-op "
                    + std::to_string(arg / DNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE - 1);
    return what + (arg == DNNL_ARG_BIAS ? " is not dense from its handle on"
                                         : " has an innermost stride other than 1 or a sub-memory "
                                           "offset")
            + ", and oneDNN's GPU implementation reads it as if it were dense (known problem "
              "dense-bias-post-op-inputs): copy it into dense memory first (dnnl.ops does so)";
}

// Whether the named implementation misreads argument `arg` of layout `md`:
// a bias that is not dense (matmul's ocl:ref; a 1-D bias of the others is
// dense or has a stride or offset), a post-op input per operand_misread.
bool misread_at(int arg, const_dnnl_memory_desc_t md) {
    if (arg == DNNL_ARG_BIAS) return !is_zero(md) && !dense_from_the_handle(md);
    return operand_misread(md);
}

refusal dense_bias_post_op_inputs(const dnnl::primitive_desc_base &pd,
        const known_problems::implementation &named) {
    for (int arg : operand_args(pd, named.arguments))
        if (misread_at(arg, md_of(pd, dnnl::query::exec_arg_md, arg)))
            return refuse("dense-bias-post-op-inputs", operand_refusal(arg), {arg});
    return {};
}

refusal rnn_offsets(const dnnl::primitive_desc_base &pd, const known_problems::implementation &) {
    // Every argument descriptor of the RNN, whichever cell: a non-zero
    // sub-memory offset anywhere is read (or written) from the handle.
    for (int arg : {DNNL_ARG_SRC_LAYER, DNNL_ARG_AUGRU_ATTENTION, DNNL_ARG_SRC_ITER,
                 DNNL_ARG_SRC_ITER_C, DNNL_ARG_WEIGHTS_LAYER, DNNL_ARG_WEIGHTS_ITER,
                 DNNL_ARG_WEIGHTS_PEEPHOLE, DNNL_ARG_WEIGHTS_PROJECTION, DNNL_ARG_BIAS,
                 DNNL_ARG_DST_LAYER, DNNL_ARG_DST_ITER, DNNL_ARG_DST_ITER_C,
                 DNNL_ARG_DIFF_SRC_LAYER, DNNL_ARG_DIFF_AUGRU_ATTENTION, DNNL_ARG_DIFF_SRC_ITER,
                 DNNL_ARG_DIFF_SRC_ITER_C, DNNL_ARG_DIFF_WEIGHTS_LAYER, DNNL_ARG_DIFF_WEIGHTS_ITER,
                 DNNL_ARG_DIFF_WEIGHTS_PEEPHOLE, DNNL_ARG_DIFF_WEIGHTS_PROJECTION,
                 DNNL_ARG_DIFF_BIAS, DNNL_ARG_DIFF_DST_LAYER, DNNL_ARG_DIFF_DST_ITER,
                 DNNL_ARG_DIFF_DST_ITER_C})
        if (offset_of(md_of(pd, dnnl::query::exec_arg_md, arg)) != 0)
            return refuse("rnn-offsets",
                    "RNN: oneDNN's GPU implementation ignores sub-memory offsets, so it would "
                    "read or write the wrong elements (known problem rnn-offsets): give each "
                    "argument its own memory (reorder a slice into it first)",
                    {arg});
    return {};
}

// ocl:custom's kernels index both sides by the work-item's lane (custom.cl);
// the binding cannot tell one kernel from the other (one implementation
// name), so every ocl:custom reorder of such a layout is refused.
refusal reorder_custom_innermost_stride(const dnnl::primitive_desc_base &pd,
        const known_problems::implementation &named) {
    if (pd.get_kind() == dnnl::primitive::kind::concat) return concat_through_reorders(pd, named);
    int side = 0;
    std::string why = custom_reorder_misreads(md_of(pd, dnnl::query::src_md, 0),
            md_of(pd, dnnl::query::dst_md, 0), &side);
    if (why.empty()) return {};
    return refuse("reorder-custom-innermost-stride",
            "reorder: oneDNN chose ocl:custom, which would read or write " + why
                    + " (known problem reorder-custom-innermost-stride): copy through a binary "
                      "primitive (a multiply by 1; dnnl.ops does so for copies and type "
                      "conversions without scales), or through a dense layout",
            {side == 0 ? DNNL_ARG_FROM : DNNL_ARG_TO});
}

// The primitive-descriptor rules, in the order they are asked.
const struct {
    const char *id;
    pd_rule rule;
} pd_rules[] = {
        {"submemory-offsets", submemory_offsets},
        {"eltwise-strides", eltwise_strides},
        {"softmax-layouts", softmax_layouts},
        {"softmax-reusable-sub-group", softmax_reusable_sub_group},
        {"concat-simple-strided-dst", concat_simple_strided_dst},
        {"reorder-custom-innermost-stride",
                reorder_custom_innermost_stride}, // (and concat's ref:any)
        {"inner-product-dst-strides", inner_product_dst_strides},
        {"group-normalization-strides", group_normalization_strides},
        {"sum-many-inputs-dense", sum_many_inputs_dense},
        {"group-normalization-layouts", group_normalization_layouts},
        {"batch-normalization-stats-strides", batch_normalization_stats_strides},
        {"reduction-combined-strides", reduction_combined_strides},
        {"dense-bias-post-op-inputs", dense_bias_post_op_inputs},
        {"rnn-offsets", rnn_offsets},
};

} // namespace

refusal known_wrong(const dnnl::primitive_desc_base &pd) {
    if (!pd || !is_gpu(pd)) return {};
    // Asked on every creation: each rule's row looked up once per process,
    // the descriptor's kind and implementation read once per descriptor.
    static const std::vector<size_t> rows = [] {
        std::vector<size_t> at;
        for (const auto &r : pd_rules) at.push_back(known_problems::index_of(r.id));
        return at;
    }();
    const auto k = pd.get_kind();
    const char *impl = impl_of(pd);
    for (size_t i = 0; i < rows.size(); ++i) {
        const known_problems::implementation *named = known_problems::applies_to(rows[i], k, impl);
        if (!named) continue;
        refusal found = pd_rules[i].rule(pd, *named);
        if (found) return found;
    }
    return {};
}

refusal known_wrong_sum(const dnnl::primitive_desc_base &pd, const std::vector<float> &scales) {
    if (!applies_to("sum-many-inputs-scales", pd)) return {};
    bool all_equal = std::all_of(scales.begin(), scales.end(),
            [&](float s) { return s == scales.front(); });
    if (all_equal) return {};
    return refuse("sum-many-inputs-scales",
            "sum: oneDNN chose ocl:many_inputs, which applies scales to the wrong sources when "
            "they differ (known problem sum-many-inputs-scales); use a first scale other than "
            "1, equal scales, or binary primitives",
            {});
}

refusal known_wrong_reorder(const dnnl::primitive_desc_base &pd, int dst_zero_points_mask) {
    if (!pd || dst_zero_points_mask <= 0 || !applies_to("reorder-ref-dst-zero-points", pd))
        return {};
    return refuse("reorder-ref-dst-zero-points",
            "reorder: oneDNN chose ocl:ref, which applies the first destination zero point to "
            "every element whatever the mask (known problem reorder-ref-dst-zero-points); use "
            "one zero point (mask 0), or add per-channel zero points with a binary primitive",
            {});
}

std::vector<int> dense_at_execute(const dnnl::primitive_desc_base &pd) {
    std::vector<int> args;
    if (!pd || !is_gpu(pd)) return args;
    const known_problems::implementation *named = applies_to("dense-bias-post-op-inputs", pd);
    if (!named) return args;
    for (int arg : operand_args(pd, named->arguments))
        if (const_dnnl_memory_desc_t md = md_of(pd, dnnl::query::exec_arg_md, arg))
            if (has_runtime_values(md)) args.push_back(arg);
    return args;
}

std::string not_dense_at_execute(int arg, const dnnl::memory::desc &given) {
    return misread_at(arg, given.get()) ? operand_refusal(arg) : "";
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
    return applies_to("reorder-direct-copy-memory-kinds", pd) != nullptr;
}

unsigned stream_flags(unsigned flags) {
    // Without an order flag oneDNN makes an in-order queue but does not mark
    // the stream in-order: say in-order, which is what the stream is.
    if (applies("stream-profiling-without-order") && !(flags & dnnl_stream_out_of_order))
        flags |= dnnl_stream_in_order;
    return flags;
}

bool graph_needs_dependency_marker() {
    return applies("graph-noop-null-event");
}

bool inorder_execute_needs_barrier() {
    return applies("inorder-execute-drops-deps");
}

namespace {

using graph_kind = dnnl::graph::op::kind;

bool is_graph_softmax(graph_kind k) {
    return k == graph_kind::SoftMax || k == graph_kind::LogSoftmax;
}

bool is_graph_reduction(graph_kind k) {
    switch (k) {
        case graph_kind::ReduceL1:
        case graph_kind::ReduceL2:
        case graph_kind::ReduceMax:
        case graph_kind::ReduceMean:
        case graph_kind::ReduceMin:
        case graph_kind::ReduceProd:
        case graph_kind::ReduceSum: return true;
        default: return false;
    }
}

// Element-wise ops of one input, run as oneDNN's eltwise primitive.
bool is_graph_eltwise(graph_kind k) {
    switch (k) {
        case graph_kind::Abs:
        case graph_kind::Clamp:
        case graph_kind::Elu:
        case graph_kind::Exp:
        case graph_kind::GELU:
        case graph_kind::HardSigmoid:
        case graph_kind::HardSwish:
        case graph_kind::LeakyReLU:
        case graph_kind::Log:
        case graph_kind::Mish:
        case graph_kind::Reciprocal:
        case graph_kind::ReLU:
        case graph_kind::Round:
        case graph_kind::Sigmoid:
        case graph_kind::SoftPlus:
        case graph_kind::Sqrt:
        case graph_kind::Square:
        case graph_kind::Tanh: return true;
        default: return false;
    }
}

// Element-wise ops of two inputs, run as oneDNN's binary primitive (or as a
// binary post-op of the op producing their first input).
bool is_graph_binary(graph_kind k) {
    switch (k) {
        case graph_kind::Add:
        case graph_kind::Subtract:
        case graph_kind::Multiply:
        case graph_kind::Divide:
        case graph_kind::Maximum:
        case graph_kind::Minimum:
        case graph_kind::SquaredDifference:
        case graph_kind::BiasAdd:
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
    } catch (const dnnl::error &) { return false; }
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

// Whether oneDNN's primitive API picks, for the work `make` describes on
// this engine, an implementation problem `id` names (its first choice, as
// the graph backend takes it): the implementations the graph rules'
// measurements ran. Where the primitive cannot be made, a plain f32
// transpose reorder on the engine stands for the device: one of oneDNN's
// OpenCL C implementations there (a GPU running generated kernels picks
// jit:ir) keeps the measured rule.
template <typename Make>
bool picks_named(const char *id, const dnnl::engine &engine, Make make) {
    try {
        return applies_to(id, make()) != nullptr;
    } catch (const dnnl::error &) {}
    auto opencl_c = [](const dnnl::primitive_desc_base &pd) {
        return starts_with(known_problems::implementation_of(pd), "ocl:");
    };
    try {
        const dnnl::memory::desc rows({16, 16}, dnnl::memory::data_type::f32, {16, 1}),
                columns({16, 16}, dnnl::memory::data_type::f32, {1, 16});
        return opencl_c(dnnl::reorder::primitive_desc(engine, rows, engine, columns));
    } catch (const dnnl::error &) {
        return true; // (nothing to tell by: the measured rule stands)
    }
}

} // namespace

refusal known_wrong_partition(const std::vector<op_facts> &ops,
        const std::vector<dnnl::graph::logical_tensor> &inputs,
        const std::vector<dnnl::graph::logical_tensor> &outputs, const dnnl::engine &engine) {
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
        none,
        plain,
        dense_eltwise,
        dense_reduction,
        innermost,
        eltwise_operand,
        reorder
    };
    using a = dnnl::algorithm;
    const auto forward = dnnl::prop_kind::forward_inference;
    // The measured rules (docs/known-problems.md), each acting only where the
    // primitive API picks an OpenCL C implementation for the port's work.
    auto check = [&](rule r, const op_facts &op, const dnnl::graph::logical_tensor &t,
                         bool input) -> refusal {
        dnnl::memory::desc given, plain;
        if (r == rule::none || !port_descs(t, given, plain)) return {};
        // The op's port on the other side, when the partition has it.
        auto other = [&](dnnl::memory::desc &md) {
            const auto &ids = input ? op.outputs : op.inputs;
            const auto *found = ids.empty() ? nullptr : port(input ? outputs : inputs, ids[0]);
            dnnl::memory::desc unused;
            return found && port_descs(*found, md, unused) && md.get_dims() == given.get_dims();
        };
        auto reorder_of_the_port = [&] {
            return input ? dnnl::reorder::primitive_desc(engine, given, engine, plain)
                         : dnnl::reorder::primitive_desc(engine, plain, engine, given);
        };
        switch (r) {
            case rule::plain: {
                if (!applies("softmax-layouts") || row_major(given)) return {};
                dnnl::memory::desc side = plain;
                other(side);
                const int axis = static_cast<int>(given.get_dims().size()) - 1;
                if (!picks_named("softmax-layouts", engine, [&] {
                    return dnnl::softmax_forward::primitive_desc(engine, forward,
                            a::softmax_accurate, input ? given : side, input ? side : given, axis);
                }))
                    return {};
                return refuse("softmax-layouts",
                        "has a layout other than the plain row-major one, which oneDNN's GPU "
                        "softmax reads and writes as if it were plain (known problem "
                        "softmax-layouts; it may write past the tensor's end): give softmax ports "
                        "the plain layout",
                        {});
            }
            case rule::dense_eltwise:
                if (!applies("eltwise-strides") || dense_from_the_handle(given.get())
                        || !picks_named("eltwise-strides", engine, [&] {
                    return dnnl::eltwise_forward::primitive_desc(engine, forward, a::eltwise_relu,
                            given, given, 0.f, 0.f);
                }))
                    return {};
                return refuse("eltwise-strides",
                        "is not dense, and oneDNN's GPU eltwise reads it as if it were (known "
                        "problem eltwise-strides): give it a dense layout",
                        {});
            case rule::dense_reduction: {
                dnnl::memory::desc dst;
                if (!applies("reduction-combined-strides") || dense_from_the_handle(given.get()))
                    return {};
                const bool proxy = other(dst);
                if (!picks_named("reduction-combined-strides", engine, [&] {
                    if (!proxy) throw dnnl::error(dnnl_unimplemented, "no destination");
                    return dnnl::reduction::primitive_desc(engine, a::reduction_sum, given, dst,
                            0.f, 0.f);
                }))
                    return {};
                return refuse("reduction-combined-strides",
                        "is not dense, and oneDNN's ocl:combined reduction reads it as if it were "
                        "(known problem reduction-combined-strides): give it a dense layout",
                        {});
            }
            case rule::innermost: { // measured wrong only so after a MatMul
                if (!applies("dense-bias-post-op-inputs") || innermost_nonzero_stride(t) == 1)
                    return {};
                const auto dims = given.get_dims();
                if (!picks_named("dense-bias-post-op-inputs", engine, [&] {
                    if (dims.size() < 2) throw dnnl::error(dnnl_unimplemented, "rank 1");
                    dnnl::memory::dims src_dims = dims, wei_dims = dims;
                    src_dims.back() = 16;
                    wei_dims[wei_dims.size() - 2] = 16;
                    for (size_t d = 0; d + 2 < dims.size(); ++d) wei_dims[d] = 1;
                    const auto type = given.get_data_type();
                    const auto tag = dnnl::memory::format_tag::any;
                    return dnnl::matmul::primitive_desc(engine,
                            dnnl::memory::desc(src_dims, type, tag),
                            dnnl::memory::desc(wei_dims, type, tag), plain);
                }))
                    return {};
                return refuse("dense-bias-post-op-inputs",
                        "has an innermost stride other than 1, which oneDNN reads as if it were 1 "
                        "in a MatMul's binary post-op (known problem dense-bias-post-op-inputs): "
                        "give it a layout whose innermost stride is 1",
                        {});
            }
            case rule::eltwise_operand: { // a binary post-op's input after an eltwise root
                if (!applies("dense-bias-post-op-inputs") || !operand_misread(given.get())
                        || !picks_named("dense-bias-post-op-inputs", engine, [&] {
                    dnnl::post_ops po;
                    po.append_binary(a::binary_add, given);
                    dnnl::primitive_attr attr;
                    attr.set_post_ops(po);
                    return dnnl::eltwise_forward::primitive_desc(engine, forward, a::eltwise_relu,
                            plain, plain, 0.f, 0.f, attr);
                }))
                    return {};
                return refuse("dense-bias-post-op-inputs",
                        "has an innermost stride other than 1 (a stride of 0 included), which "
                        "oneDNN reads as if it were 1 in an eltwise's binary post-op (known "
                        "problem dense-bias-post-op-inputs): give it a layout whose innermost "
                        "stride is 1",
                        {});
            }
            case rule::reorder: { // the backend copies the port through the plain layout
                if (!applies("reorder-custom-innermost-stride")) return {};
                std::string why = input ? custom_reorder_misreads(given.get(), plain.get())
                                        : custom_reorder_misreads(plain.get(), given.get());
                if (why.empty()
                        || !picks_named("reorder-custom-innermost-stride", engine,
                                reorder_of_the_port))
                    return {};
                return refuse("reorder-custom-innermost-stride",
                        "would be copied by oneDNN's ocl:custom reorder, which would read or write "
                                + why
                                + " (known problem reorder-custom-innermost-stride): give it a "
                                  "layout whose innermost stride is 1 (rows with gaps are fine; "
                                  "transposes of fewer than 16 elements only when dense)",
                        {});
            }
            case rule::none: break;
        }
        return {};
    };
    // Measured per op kind (docs/known-problems.md): MatMul reads and writes
    // any strides (but through a binary post-op), its post-ops' inputs but
    // stride-2 ones included; softmax wants plain ports; eltwise and reduction
    // dense inputs; a standalone binary op reads any strides; the rest is
    // copied through the plain layout.
    auto rule_of_input = [&](const op_facts &op, const op_facts &root) {
        if (&root != &op) { // a post-op's other input
            if (root.kind == graph_kind::MatMul) return rule::innermost;
            return is_graph_eltwise(root.kind) ? rule::eltwise_operand : rule::reorder;
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
                refusal found = check(input ? rule_of_input(op, root) : rule_of_output(op, root),
                        op, *t, input);
                if (found) {
                    found.why = "compile(): logical tensor " + std::to_string(ids[i]) + ", "
                            + (input ? "input " : "output ") + std::to_string(i) + " of op "
                            + std::to_string(op.id) + ", " + found.why;
                    return found;
                }
            }
        }
    }
    return {};
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
