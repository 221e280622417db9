// cl_intel_unified_shared_memory entry points of a context's platform.
#pragma once

#include <CL/cl.h>
#include <CL/cl_ext.h>

namespace dnnl_ocl_interop {
namespace usm {

struct api_t {
    clHostMemAllocINTEL_fn host_alloc;
    clDeviceMemAllocINTEL_fn device_alloc;
    clSharedMemAllocINTEL_fn shared_alloc;
    clMemBlockingFreeINTEL_fn blocking_free;
    clGetMemAllocInfoINTEL_fn get_alloc_info;
    clEnqueueMemcpyINTEL_fn enqueue_memcpy;
    clEnqueueMemFillINTEL_fn enqueue_fill;
    clSetKernelArgMemPointerINTEL_fn set_kernel_arg_mem_pointer;
};

// The entry points for `context`'s platform, looked up once per platform.
// Throws status_error naming the missing function when the platform lacks the
// extension.
const api_t &api_for(cl_context context);

// What `ptr` is within `context`: CL_MEM_TYPE_{HOST,DEVICE,SHARED,UNKNOWN}_INTEL.
cl_unified_shared_memory_type_intel pointer_type(cl_context context, const void *ptr);

// Whether `ptr` is a USM allocation of `context`; false also when the
// platform lacks the extension.
bool is_usm_pointer(cl_context context, const void *ptr);

// Bytes from `ptr` to the end of its USM allocation in `context`; 0 when
// `ptr` is not inside one.
size_t bytes_available(cl_context context, const void *ptr);

} // namespace usm
} // namespace dnnl_ocl_interop
