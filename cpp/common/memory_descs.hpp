// Facts of a memory descriptor read in place through oneDNN's C API (the
// C++ API's getters copy), in one place.
#pragma once

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

} // namespace dnnl_ocl_interop
