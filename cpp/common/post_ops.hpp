// What a primitive's post-ops take as execution arguments, in one place.
#pragma once

#include <vector>

#include "oneapi/dnnl/dnnl.h"

namespace dnnl_ocl_interop {

// A primitive descriptor's post-ops (oneDNN keeps them; nullptr when it
// cannot say, which no descriptor oneDNN made gives).
inline const_dnnl_post_ops_t post_ops_of(const_dnnl_primitive_desc_t pd) {
    const_dnnl_primitive_attr_t attr = nullptr;
    const_dnnl_post_ops_t ops = nullptr;
    if (dnnl_primitive_desc_get_attr(pd, &attr) != dnnl_success
            || dnnl_primitive_attr_get_post_ops(attr, &ops) != dnnl_success)
        return nullptr;
    return ops;
}

// The inputs of post-op `index` that are binary inputs (each passed as
// ARG_ATTR_MULTIPLE_POST_OP(index) | the argument): SRC_1 for every binary
// post-op, SRC_2 only for binary_select. oneDNN answers the exec_arg_md
// query for SRC_2 of any binary post-op from the entry's second descriptor,
// which it leaves uninitialized for the other algorithms (3.13.1,
// post_ops_t::append_binary): asking it there reads garbage.
inline std::vector<int> binary_post_op_inputs(const_dnnl_post_ops_t ops, int index) {
    if (dnnl_post_ops_get_kind(ops, index) != dnnl_binary) return {};
    dnnl_alg_kind_t alg = dnnl_alg_kind_undef;
    const_dnnl_memory_desc_t src1 = nullptr, src2 = nullptr;
    if (dnnl_post_ops_get_params_binary_v2(ops, index, &alg, &src1, &src2) == dnnl_success
            && alg == dnnl_binary_select)
        return {DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1,
                DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_2};
    return {DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1};
}

} // namespace dnnl_ocl_interop
