#include "common/enum_caster.hpp" // first: see the header

#include "common/usm_api.hpp"

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/fork_guard.hpp"

namespace dnnl_ocl_interop {
namespace usm {
namespace {

// The platform of the context's (first) device. A context may hold several
// devices: the whole list is read, as OpenCL refuses a shorter buffer.
cl_platform_id platform_of(cl_context context) {
    size_t bytes = 0;
    check_cl(clGetContextInfo(context, CL_CONTEXT_DEVICES, 0, nullptr, &bytes),
            "clGetContextInfo(CL_CONTEXT_DEVICES)");
    std::vector<cl_device_id> devices(bytes / sizeof(cl_device_id));
    if (devices.empty())
        throw status_error(dnnl_invalid_arguments, "the OpenCL context has no devices");
    check_cl(clGetContextInfo(context, CL_CONTEXT_DEVICES, bytes, devices.data(), nullptr),
            "clGetContextInfo(CL_CONTEXT_DEVICES)");
    cl_platform_id platform = nullptr;
    check_cl(clGetDeviceInfo(devices[0], CL_DEVICE_PLATFORM, sizeof(platform), &platform, nullptr),
            "clGetDeviceInfo(CL_DEVICE_PLATFORM)");
    return platform;
}

template <typename F>
void load(cl_platform_id platform, const char *name, F &fn) {
    fn = reinterpret_cast<F>(clGetExtensionFunctionAddressForPlatform(platform, name));
    if (!fn)
        throw status_error(dnnl_invalid_arguments,
                std::string("the context's OpenCL platform does not provide ") + name
                        + " (extension cl_intel_unified_shared_memory)");
}

} // namespace

const api_t &api_for(cl_context context) {
    fork_guard::check(); // every USM call starts here
    static std::mutex mutex;
    static std::map<cl_platform_id, api_t> apis;
    // Every USM call (allocator callbacks included) starts here, so the
    // context's platform is remembered rather than asked for each time. A
    // freed context's handle could come back as a context of another
    // platform and get this one's entry points: harmless with one USM
    // platform per process, the usual case. The table is cleared when large.
    static std::map<cl_context, const api_t *> by_context;
    {
        std::lock_guard<std::mutex> lock(mutex);
        auto known = by_context.find(context);
        if (known != by_context.end()) return *known->second;
    }
    cl_platform_id platform = platform_of(context);
    std::lock_guard<std::mutex> lock(mutex);
    if (by_context.size() > 256) by_context.clear();
    auto it = apis.find(platform);
    if (it != apis.end()) {
        by_context[context] = &it->second;
        return it->second;
    }
    api_t api {};
    load(platform, "clHostMemAllocINTEL", api.host_alloc);
    load(platform, "clDeviceMemAllocINTEL", api.device_alloc);
    load(platform, "clSharedMemAllocINTEL", api.shared_alloc);
    load(platform, "clMemBlockingFreeINTEL", api.blocking_free);
    load(platform, "clGetMemAllocInfoINTEL", api.get_alloc_info);
    load(platform, "clEnqueueMemcpyINTEL", api.enqueue_memcpy);
    load(platform, "clEnqueueMemFillINTEL", api.enqueue_fill);
    load(platform, "clSetKernelArgMemPointerINTEL", api.set_kernel_arg_mem_pointer);
    const api_t &stored = apis.emplace(platform, api).first->second;
    by_context[context] = &stored;
    return stored;
}

cl_unified_shared_memory_type_intel pointer_type(cl_context context, const void *ptr) {
    cl_unified_shared_memory_type_intel type = CL_MEM_TYPE_UNKNOWN_INTEL;
    check_cl(api_for(context).get_alloc_info(context, ptr, CL_MEM_ALLOC_TYPE_INTEL, sizeof(type),
                     &type, nullptr),
            "clGetMemAllocInfoINTEL(CL_MEM_ALLOC_TYPE_INTEL)");
    return type;
}

bool is_usm_pointer(cl_context context, const void *ptr) {
    try {
        return pointer_type(context, ptr) != CL_MEM_TYPE_UNKNOWN_INTEL;
    } catch (const status_error &) { return false; }
}

size_t bytes_available(cl_context context, const void *ptr) {
    const api_t &api = api_for(context);
    void *base = nullptr; // NULL for a pointer that is not a USM allocation
    size_t size = 0;
    check_cl(api.get_alloc_info(context, ptr, CL_MEM_ALLOC_BASE_PTR_INTEL, sizeof(base), &base,
                     nullptr),
            "clGetMemAllocInfoINTEL(CL_MEM_ALLOC_BASE_PTR_INTEL)");
    if (!base) return 0;
    check_cl(
            api.get_alloc_info(context, ptr, CL_MEM_ALLOC_SIZE_INTEL, sizeof(size), &size, nullptr),
            "clGetMemAllocInfoINTEL(CL_MEM_ALLOC_SIZE_INTEL)");
    auto offset = static_cast<const char *>(ptr) - static_cast<const char *>(base);
    return offset >= 0 && static_cast<size_t>(offset) <= size ? size - offset : 0;
}

} // namespace usm
} // namespace dnnl_ocl_interop
