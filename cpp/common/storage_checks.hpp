// What the binding checks of user storage before oneDNN uses it
// (common/storage_checks.cpp): the OpenCL and USM probes behind
// dnnl.memory's and make_memory's handle checks.
#pragma once

#include <memory>

#include "oneapi/dnnl/dnnl.hpp"

namespace dnnl_ocl_interop {

// Refuses (dnnl.error, invalid_arguments) a user handle that oneDNN would use
// past its end or in the wrong context: a cl_mem smaller than buffer `index`
// of `desc` or from another context, a USM pointer not allocated in the
// engine's context or with fewer bytes left than that buffer needs. Special
// handles pass. `known_mem_object`: the handle came from a pyopencl memory
// object, so it is a cl_mem (only its context and size are checked).
void check_user_handle(const dnnl::memory::desc &desc, const dnnl::engine &engine, bool usm,
        void *handle, int index = 0, bool known_mem_object = false);

// For dnnl.MEMORY_ALLOCATE of buffer-based memory: oneDNN allocates
// get_size() bytes, fewer than its kernels address for a sub-memory offset or
// all-zero strides (addressed_bytes). For such a descriptor on an OpenCL
// engine this makes a cl_mem of the bytes addressed, sets `handle` to it and
// returns what holds the binding's reference (oneDNN retains its own);
// otherwise nullptr, `handle` unchanged.
std::shared_ptr<void> allocate_addressed_buffer(const dnnl::memory::desc &desc,
        const dnnl::engine &engine, void *&handle);

// Refuses (invalid_arguments) map_data of buffer `index` of a memory whose
// storage holds fewer bytes than oneDNN maps: get_size() and a sub-memory's
// offset, more than a strided view reaching its storage's end addresses (its
// map would read past the storage). `what` names the call.
void check_mappable(const dnnl::memory &memory, const dnnl::memory::desc &desc, int index,
        const char *what);

// Whether `memory` is USM-based (false for buffers, host scalars and
// non-OpenCL engines).
bool is_usm(const dnnl::memory &memory);

} // namespace dnnl_ocl_interop
