// OpenCL layer (layer API 100) that presents Intel's CPU OpenCL runtime to
// oneDNN as an Intel GPU, for machines without one.
//
// What it changes, and why (measured with oneDNN built for the OCL runtime):
//  * CL_DEVICE_TYPE of an Intel CPU device reads GPU, and GPU-type device
//    queries return it: oneDNN accepts only GPU devices.
//  * CL_DEVICE_IP_VERSION_INTEL reads Xe-HP (12.50): the CPU runtime answers a
//    value oneDNN cannot decode, and Xe-HP makes oneDNN use its OpenCL C
//    kernels instead of probing for binary JIT kernels.
//  * A kernel keeps its program alive until the kernel's last release: the CPU
//    runtime destroys a program at its last external release even while its
//    kernels live, and oneDNN re-creates kernels from CL_KERNEL_PROGRAM.
// Everything else passes straight through to the runtime.

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl_layer.h>

#include <cstring>
#include <mutex>
#include <unordered_map>

#define LAYER_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr cl_uint intel_vendor_id = 0x8086;
constexpr cl_uint device_ip_version_intel = 0x4250;
constexpr cl_uint xe_hp_ip_version = (12u << 22) | (50u << 14);

cl_icd_dispatch target;  // what this layer forwards to
cl_icd_dispatch layer;   // what the loader calls
std::once_flag init_once;

std::mutex state_mutex;
std::unordered_map<cl_device_id, bool> emulated_cache;
std::unordered_map<cl_kernel, cl_program> kernel_program;

bool is_emulated(cl_device_id device) {
    {
        std::lock_guard<std::mutex> lock(state_mutex);
        auto it = emulated_cache.find(device);
        if (it != emulated_cache.end()) return it->second;
    }
    cl_device_type type = 0;
    cl_uint vendor = 0;
    bool emulated
            = target.clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof(type),
                      &type, nullptr)
                    == CL_SUCCESS
            && target.clGetDeviceInfo(device, CL_DEVICE_VENDOR_ID,
                       sizeof(vendor), &vendor, nullptr)
                    == CL_SUCCESS
            && (type & CL_DEVICE_TYPE_CPU) && vendor == intel_vendor_id;
    std::lock_guard<std::mutex> lock(state_mutex);
    emulated_cache[device] = emulated;
    return emulated;
}

cl_device_type presented_type(cl_device_type real) {
    return (real & ~cl_device_type(CL_DEVICE_TYPE_CPU)) | CL_DEVICE_TYPE_GPU;
}

// A GPU request must reach the CPU devices that are presented as GPUs.
cl_device_type runtime_type_for(cl_device_type requested) {
    if (requested == CL_DEVICE_TYPE_ALL) return requested;
    if (requested & CL_DEVICE_TYPE_GPU) requested |= CL_DEVICE_TYPE_CPU;
    return requested;
}

cl_int answer(const void *value, size_t size, size_t param_value_size,
        void *param_value, size_t *param_value_size_ret) {
    if (param_value_size_ret) *param_value_size_ret = size;
    if (param_value) {
        if (param_value_size < size) return CL_INVALID_VALUE;
        std::memcpy(param_value, value, size);
    }
    return CL_SUCCESS;
}

cl_int CL_API_CALL get_device_info(cl_device_id device,
        cl_device_info param_name, size_t param_value_size, void *param_value,
        size_t *param_value_size_ret) {
    if ((param_name == CL_DEVICE_TYPE || param_name == device_ip_version_intel)
            && is_emulated(device)) {
        if (param_name == device_ip_version_intel)
            return answer(&xe_hp_ip_version, sizeof(xe_hp_ip_version),
                    param_value_size, param_value, param_value_size_ret);
        cl_device_type real = 0;
        cl_int status = target.clGetDeviceInfo(
                device, CL_DEVICE_TYPE, sizeof(real), &real, nullptr);
        if (status != CL_SUCCESS) return status;
        cl_device_type shown = presented_type(real);
        return answer(&shown, sizeof(shown), param_value_size, param_value,
                param_value_size_ret);
    }
    return target.clGetDeviceInfo(device, param_name, param_value_size,
            param_value, param_value_size_ret);
}

cl_int CL_API_CALL get_device_ids(cl_platform_id platform,
        cl_device_type device_type, cl_uint num_entries, cl_device_id *devices,
        cl_uint *num_devices) {
    if (device_type == CL_DEVICE_TYPE_ALL
            || device_type == CL_DEVICE_TYPE_DEFAULT)
        return target.clGetDeviceIDs(
                platform, device_type, num_entries, devices, num_devices);
    if (!devices && !num_devices) return CL_INVALID_VALUE;
    if (devices && num_entries == 0) return CL_INVALID_VALUE;

    cl_uint count = 0;
    cl_int status = target.clGetDeviceIDs(platform,
            runtime_type_for(device_type), 0, nullptr, &count);
    if (status == CL_DEVICE_NOT_FOUND) count = 0;
    else if (status != CL_SUCCESS) return status;

    cl_uint matched = 0;
    if (count > 0) {
        auto *all = new cl_device_id[count];
        status = target.clGetDeviceIDs(platform, runtime_type_for(device_type),
                count, all, nullptr);
        if (status != CL_SUCCESS) {
            delete[] all;
            return status;
        }
        for (cl_uint i = 0; i < count; ++i) {
            cl_device_type real = 0;
            target.clGetDeviceInfo(
                    all[i], CL_DEVICE_TYPE, sizeof(real), &real, nullptr);
            cl_device_type shown
                    = is_emulated(all[i]) ? presented_type(real) : real;
            if (!(shown & device_type)) continue;
            if (devices && matched < num_entries) devices[matched] = all[i];
            ++matched;
        }
        delete[] all;
    }
    if (num_devices) *num_devices = matched;
    return matched ? CL_SUCCESS : CL_DEVICE_NOT_FOUND;
}

cl_context CL_API_CALL create_context_from_type(
        const cl_context_properties *properties, cl_device_type device_type,
        void(CL_CALLBACK *pfn_notify)(const char *, const void *, size_t, void *),
        void *user_data, cl_int *errcode_ret) {
    return target.clCreateContextFromType(properties,
            runtime_type_for(device_type), pfn_notify, user_data, errcode_ret);
}

void keep_program_alive(cl_kernel kernel, cl_program program) {
    if (!kernel || !program) return;
    target.clRetainProgram(program);
    std::lock_guard<std::mutex> lock(state_mutex);
    kernel_program[kernel] = program;
}

cl_kernel CL_API_CALL create_kernel(
        cl_program program, const char *kernel_name, cl_int *errcode_ret) {
    cl_kernel kernel = target.clCreateKernel(program, kernel_name, errcode_ret);
    keep_program_alive(kernel, program);
    return kernel;
}

cl_int CL_API_CALL create_kernels_in_program(cl_program program,
        cl_uint num_kernels, cl_kernel *kernels, cl_uint *num_kernels_ret) {
    cl_uint created = 0;
    cl_int status = target.clCreateKernelsInProgram(
            program, num_kernels, kernels, &created);
    if (status == CL_SUCCESS && kernels)
        for (cl_uint i = 0; i < created; ++i)
            keep_program_alive(kernels[i], program);
    if (num_kernels_ret) *num_kernels_ret = created;
    return status;
}

cl_kernel CL_API_CALL clone_kernel(cl_kernel source, cl_int *errcode_ret) {
    cl_kernel kernel = target.clCloneKernel(source, errcode_ret);
    if (kernel) {
        cl_program program = nullptr;
        if (target.clGetKernelInfo(kernel, CL_KERNEL_PROGRAM, sizeof(program),
                    &program, nullptr)
                == CL_SUCCESS)
            keep_program_alive(kernel, program);
    }
    return kernel;
}

cl_int CL_API_CALL release_kernel(cl_kernel kernel) {
    cl_program program = nullptr;
    {
        std::lock_guard<std::mutex> lock(state_mutex);
        auto it = kernel_program.find(kernel);
        cl_uint refs = 0;
        if (it != kernel_program.end()
                && target.clGetKernelInfo(kernel, CL_KERNEL_REFERENCE_COUNT,
                           sizeof(refs), &refs, nullptr)
                        == CL_SUCCESS
                && refs == 1) {
            program = it->second;
            kernel_program.erase(it);
        }
    }
    cl_int status = target.clReleaseKernel(kernel);
    if (program) target.clReleaseProgram(program);
    return status;
}

void init_dispatch(const cl_icd_dispatch *target_dispatch, cl_uint num_entries) {
    std::memset(&target, 0, sizeof(target));
    std::memcpy(&target, target_dispatch,
            std::min<size_t>(sizeof(target), num_entries * sizeof(void *)));
    layer = target;
    layer.clGetDeviceInfo = get_device_info;
    layer.clGetDeviceIDs = get_device_ids;
    layer.clCreateContextFromType = create_context_from_type;
    layer.clCreateKernel = create_kernel;
    layer.clCreateKernelsInProgram = create_kernels_in_program;
    layer.clReleaseKernel = release_kernel;
    if (target.clCloneKernel) layer.clCloneKernel = clone_kernel;
}

} // namespace

LAYER_EXPORT cl_int CL_API_CALL clGetLayerInfo(cl_layer_info param_name,
        size_t param_value_size, void *param_value,
        size_t *param_value_size_ret) {
    static const char name[] = "dnnl_ocl_interop emulated Intel GPU (Xe-HP)";
    static const cl_layer_api_version version = CL_LAYER_API_VERSION_100;
    switch (param_name) {
        case CL_LAYER_API_VERSION:
            return answer(&version, sizeof(version), param_value_size,
                    param_value, param_value_size_ret);
        case CL_LAYER_NAME:
            return answer(name, sizeof(name), param_value_size, param_value,
                    param_value_size_ret);
        default: return CL_INVALID_VALUE;
    }
}

// Several loaders (the system's and pyopencl's own copy) may initialise this
// one library; they all lead to the same runtime, so the first target serves.
LAYER_EXPORT cl_int CL_API_CALL clInitLayer(cl_uint num_entries,
        const cl_icd_dispatch *target_dispatch, cl_uint *num_entries_ret,
        const cl_icd_dispatch **layer_dispatch_ret) {
    if (!target_dispatch || !num_entries_ret || !layer_dispatch_ret)
        return CL_INVALID_VALUE;
    std::call_once(init_once, init_dispatch, target_dispatch, num_entries);
    *num_entries_ret = sizeof(layer) / sizeof(void *);
    *layer_dispatch_ret = &layer;
    return CL_SUCCESS;
}
