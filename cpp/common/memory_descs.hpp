// Facts of a memory descriptor read in place through oneDNN's C API (the
// C++ API's getters copy), in one place.
#pragma once

#include <algorithm>
#include <climits>
#include <cstddef>

#include "common/data_types.hpp"
#include "oneapi/dnnl/dnnl.h"

namespace dnnl_ocl_interop {

// Whether `md` leaves its layout to execution: a runtime dimension or
// stride (DNNL_RUNTIME_DIM_VAL). oneDNN then addresses the memory given at
// execute by that memory's own descriptor.
inline bool has_runtime_values(const_dnnl_memory_desc_t md) {
    int ndims = 0;
    const dnnl_dims_t *dims = nullptr, *strides = nullptr;
    dnnl_memory_desc_query(md, dnnl_query_ndims_s32, &ndims);
    dnnl_memory_desc_query(md, dnnl_query_dims, &dims);
    dnnl_memory_desc_query(md, dnnl_query_strides, &strides);
    for (int i = 0; i < ndims; ++i)
        if ((dims && (*dims)[i] == DNNL_RUNTIME_DIM_VAL)
                || (strides && (*strides)[i] == DNNL_RUNTIME_DIM_VAL))
            return true;
    return false;
}

// Bytes from the handle of buffer `index` that oneDNN's kernels may address
// for `md`. A plain layout (no inner blocks, no padding) addresses up to its
// furthest element, from its sub-memory offset on: get_size() counts
// max(dim * stride) elements without the offset, more than a strided view
// reaches and less than a sub-memory does (and 0 for all-zero strides).
// Other layouts: get_size(), plus the offset as oneDNN maps a memory
// (memory_desc_map_size). The storage checks and the binding's allocations
// take this.
inline size_t addressed_bytes(const_dnnl_memory_desc_t md, int index = 0) {
    size_t size = dnnl_memory_desc_get_size_v2(md, index);
    dnnl_format_kind_t kind = dnnl_format_kind_undef;
    dnnl_memory_desc_query(md, dnnl_query_format_kind, &kind);
    if (index != 0 || kind != dnnl_blocked || has_runtime_values(md)) return size;
    int ndims = 0, inner_blocks = 0;
    const dnnl_dims_t *dims = nullptr, *padded = nullptr, *strides = nullptr;
    dnnl_data_type_t type = dnnl_data_type_undef;
    dnnl_dim_t offset = 0;
    dnnl_memory_desc_query(md, dnnl_query_ndims_s32, &ndims);
    dnnl_memory_desc_query(md, dnnl_query_dims, &dims);
    dnnl_memory_desc_query(md, dnnl_query_padded_dims, &padded);
    dnnl_memory_desc_query(md, dnnl_query_strides, &strides);
    dnnl_memory_desc_query(md, dnnl_query_inner_nblks_s32, &inner_blocks);
    dnnl_memory_desc_query(md, dnnl_query_data_type, &type);
    dnnl_memory_desc_query(md, dnnl_query_submemory_offset_s64, &offset);
    for (int i = 0; i < ndims; ++i)
        if ((*dims)[i] == 0) return size; // no element: nothing addressed
    const size_t element = dnnl_data_type_size(type); // 1 for sub-byte types
    const size_t bits = data_types::bits(type);
    bool plain = inner_blocks == 0 && bits != 0 && offset >= 0;
    unsigned long long furthest = static_cast<unsigned long long>(offset); // in elements
    for (int i = 0; plain && i < ndims; ++i) {
        unsigned long long step = 0;
        plain = (*padded)[i] == (*dims)[i] && (*strides)[i] >= 0
                && !__builtin_mul_overflow(static_cast<unsigned long long>((*dims)[i] - 1),
                        static_cast<unsigned long long>((*strides)[i]), &step)
                && !__builtin_add_overflow(furthest, step, &furthest);
    }
    unsigned long long bit_count = 0;
    if (plain && furthest < ULLONG_MAX && !__builtin_mul_overflow(furthest + 1, bits, &bit_count))
        return (bit_count + 7) / 8;
    return std::max(size, element) + static_cast<size_t>(offset) * element;
}

} // namespace dnnl_ocl_interop
