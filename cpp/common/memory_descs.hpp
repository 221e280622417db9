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

// The strided-view rule both addressed_bytes (memory descriptors here,
// logical tensors in graph.cpp) take: adds to `end` (in elements) the
// offset of the furthest element from the first, sum((count - 1) * stride)
// over the dimensions. A stride of 0 or below never reaches past the first
// element's end. False on overflow.
template <typename Count, typename Stride>
inline bool add_furthest_offset(int ndims, const Count *counts, const Stride *strides,
        unsigned long long &end) {
    for (int d = 0; d < ndims; ++d) {
        unsigned long long step = 0;
        if (counts[d] <= 1 || strides[d] <= 0) continue;
        if (__builtin_mul_overflow(static_cast<unsigned long long>(counts[d] - 1),
                    static_cast<unsigned long long>(strides[d]), &step)
                || __builtin_add_overflow(end, step, &end))
            return false;
    }
    return true;
}

// Bytes oneDNN maps of buffer `index` (memory_desc_map_size): get_size()
// and, for buffer 0, the sub-memory offset (a sub-byte type's element counted
// as a byte, as oneDNN counts it there).
inline size_t mapped_bytes(const_dnnl_memory_desc_t md, int index = 0) {
    size_t size = dnnl_memory_desc_get_size_v2(md, index);
    if (index != 0) return size;
    dnnl_data_type_t type = dnnl_data_type_undef;
    dnnl_dim_t offset = 0;
    dnnl_memory_desc_query(md, dnnl_query_data_type, &type);
    dnnl_memory_desc_query(md, dnnl_query_submemory_offset_s64, &offset);
    return size + static_cast<size_t>(std::max<dnnl_dim_t>(offset, 0)) * dnnl_data_type_size(type);
}

// Bytes from the handle of buffer `index` that oneDNN's kernels may address
// for `md`. A blocked layout (plain ones included) addresses from its
// sub-memory offset to the end of its furthest block: offset + sum((padded
// dim / block - 1) * stride) + the inner block's elements. get_size() counts
// max(padded dim / block * stride) elements and no offset: more than a
// strided view reaches, less than a plain sub-memory does (the parent's
// extent for a blocked one), and 0 for all-zero strides. A layout with
// additional buffers after its data (s8 compensation: get_size() beyond the
// data's own size) takes its mapped_bytes at least. Other layouts, and
// what cannot be worked out (overflow): get_size() and the offset. The storage checks and the binding's allocations take this.
inline size_t addressed_bytes(const_dnnl_memory_desc_t md, int index = 0) {
    const size_t size = dnnl_memory_desc_get_size_v2(md, index);
    dnnl_format_kind_t kind = dnnl_format_kind_undef;
    dnnl_memory_desc_query(md, dnnl_query_format_kind, &kind);
    if (index != 0 || kind != dnnl_blocked || has_runtime_values(md)) return size;
    int ndims = 0, nblks = 0;
    const dnnl_dims_t *dims = nullptr, *padded = nullptr, *strides = nullptr, *blks = nullptr,
                      *idxs = nullptr;
    dnnl_data_type_t type = dnnl_data_type_undef;
    dnnl_dim_t offset = 0;
    dnnl_memory_desc_query(md, dnnl_query_ndims_s32, &ndims);
    dnnl_memory_desc_query(md, dnnl_query_dims, &dims);
    dnnl_memory_desc_query(md, dnnl_query_padded_dims, &padded);
    dnnl_memory_desc_query(md, dnnl_query_strides, &strides);
    dnnl_memory_desc_query(md, dnnl_query_inner_nblks_s32, &nblks);
    dnnl_memory_desc_query(md, dnnl_query_inner_blks, &blks);
    dnnl_memory_desc_query(md, dnnl_query_inner_idxs, &idxs);
    dnnl_memory_desc_query(md, dnnl_query_data_type, &type);
    dnnl_memory_desc_query(md, dnnl_query_submemory_offset_s64, &offset);
    for (int d = 0; d < ndims; ++d)
        if ((*dims)[d] == 0) return size; // no element: nothing addressed
    const size_t fallback
            = std::max<size_t>(size, dnnl_data_type_size(type)) + mapped_bytes(md) - size;
    const unsigned long long bits = data_types::bits(type);
    if (bits == 0 || offset < 0 || nblks < 0 || nblks > DNNL_MAX_NDIMS) return fallback;
    unsigned long long blocks[DNNL_MAX_NDIMS], block = 1;
    std::fill(blocks, blocks + DNNL_MAX_NDIMS, 1ULL);
    for (int b = 0; b < nblks; ++b) {
        blocks[(*idxs)[b]] *= (*blks)[b];
        block *= (*blks)[b];
    }
    // In elements: the furthest one addressed + 1, and oneDNN's data size.
    unsigned long long outer[DNNL_MAX_NDIMS], data = 0,
                                              end = static_cast<unsigned long long>(offset) + block;
    for (int d = 0; d < ndims; ++d) {
        outer[d] = static_cast<unsigned long long>((*padded)[d]) / blocks[d];
        if (outer[d] == 0) return fallback;
        unsigned long long extent = 1; // never stepped along: any stride
        if (outer[d] > 1
                && ((*strides)[d] < 0
                        || __builtin_mul_overflow(outer[d],
                                static_cast<unsigned long long>((*strides)[d]), &extent)))
            return fallback;
        data = std::max(data, extent);
    }
    if (!add_furthest_offset(ndims, outer, *strides, end)) return fallback;
    if (data == 1 && nblks != 0) data = block; // as memory_desc_wrapper::size()
    unsigned long long end_bits = 0;
    if (__builtin_mul_overflow(end, bits, &end_bits)) return fallback;
    const size_t addressed = static_cast<size_t>((end_bits + 7) / 8);
    if (size > (data * bits + 7) / 8) return std::max(addressed, mapped_bytes(md)); // extra buffers
    return addressed;
}

} // namespace dnnl_ocl_interop
