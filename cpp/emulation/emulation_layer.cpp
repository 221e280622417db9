// OpenCL layer (layer API 100) that presents Intel's CPU OpenCL runtime to
// oneDNN as an Intel GPU, for machines without one.
//
// What it changes, and why (measured with oneDNN built for the OCL runtime):
//  * CL_DEVICE_TYPE of an Intel CPU device reads GPU, and GPU-type device
//    queries return it: oneDNN accepts only GPU devices.
//  * CL_DEVICE_IP_VERSION_INTEL reads Xe-HP (12.50): the CPU runtime answers a
//    value oneDNN cannot decode, and Xe-HP makes oneDNN use its OpenCL C
//    kernels instead of probing for binary JIT kernels.
//  * The device's size is a real Xe-HP's (one 512-EU tile of the Xe-HP SDV):
//    CL_DEVICE_MAX_COMPUTE_UNITS (oneDNN's EU count) 512, and the
//    cl_intel_device_attribute_query topology (8 slices x 4 sub-slices x 16
//    EUs, 8 threads per EU, PCI id 0x0201). oneDNN sizes its work by the EU
//    count; with the host's core count (2) its GPU RNN configuration divides
//    by eu_count / 16 == 0 and the process dies of SIGFPE. A sub-device
//    presents its share of the 512 EUs (by the runtime's compute units, in
//    whole sub-slices of 16, at least one). Only work splitting changes.
//  * Limits are Xe-HP's where the runtime's are higher, the runtime's where
//    they are lower, so that whatever is launched within them runs: max
//    work-group size and work-item sizes 1024, sub-groups per work-group 128,
//    local memory 64 KiB, kernel parameter size 2048 bytes (oneDNN refuses to
//    launch kernels whose arguments exceed it), sub-group sizes 8, 16, 32
//    (those of the runtime's among them).
//  * A kernel keeps its program alive until the kernel's last release: the CPU
//    runtime destroys a program at its last external release even while its
//    kernels live, and oneDNN re-creates kernels from CL_KERNEL_PROGRAM.
//  * Builds (clBuildProgram, clCompileProgram, clLinkProgram) and the last
//    release of a context or program run one at a time: the CPU runtime's
//    compiler crashes now and then otherwise when several threads compile
//    (see compiler_mutex).
// Everything else passes straight through to the runtime, on purpose:
// memory sizes (allocations must fit the real memory), the cache size (read
// by oneDNN only for its nGEN kernels, never used here), host-unified memory,
// extensions (cl_khr_fp64 keeps oneDNN on Xe-HP rather than Xe-HPG), DPAS
// (CL_DEVICE_FEATURE_CAPABILITIES_INTEL: claiming it would make oneDNN emit
// matrix built-ins the CPU compiler lacks), float atomics, USM capabilities,
// and partitioning: CL_DEVICE_PARTITION_MAX_SUB_DEVICES and clCreateSubDevices
// counts are the runtime's compute units, not the presented EUs.
//  * Several devices (DNNL_OCL_INTEROP_EMULATED_DEVICES=N, N > 1): the CPU
//    device is split with clCreateSubDevices(BY_COUNTS) over its compute
//    units into N sub-devices, created once and held for the life of the
//    process, and these are presented as N root GPU devices in place of the
//    CPU device: clGetDeviceIDs and clCreateContextFromType answer them,
//    CL_DEVICE_PARENT_DEVICE reads NULL (oneDNN's make_engine looks the
//    top-level device up in the GPU device list), CL_DEVICE_PARTITION_TYPE
//    reads as the CPU device's, each presents a whole 512-EU Xe-HP tile, and
//    clRetainDevice/clReleaseDevice do nothing on them, as on root devices.
//    With N == 1 (the default) none of this is installed.
//  * Call counting (DNNL_OCL_INTEROP_COUNT_CL_CALLS=/path/file.json; builds
//    with the CMake option DNNL_OCL_INTEROP_TEST_HOOKS only): every
//    call an application makes through the loader into this layer (all 149
//    entries of the dispatch table, and the Intel USM extension functions
//    handed out by clGetExtensionFunctionAddress[ForPlatform]) is counted,
//    per loader and per calling thread, and the counts are written as JSON at
//    process exit. Without the variable the layer hands the loader the same
//    table as ever: counting costs nothing then.
// docs/emulation.md has the table; tests/test_emulation_device.py checks it
// (tests/test_multi_device.py the several devices, tests/test_cl_call_counts.py
// the counting).

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl_ext.h>
#include <CL/cl_layer.h>

#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "common/emulation_query.hpp"

#define LAYER_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr cl_uint intel_vendor_id = 0x8086;
constexpr cl_uint device_ip_version_intel = 0x4250;
constexpr cl_uint xe_hp_ip_version = (12u << 22) | (50u << 14);

// cl_intel_device_attribute_query and cl_intel_required_subgroup_size names
// (older CL/cl_ext.h headers lack them).
constexpr cl_device_info device_id_intel = 0x4251;
constexpr cl_device_info device_num_slices_intel = 0x4252;
constexpr cl_device_info device_num_sub_slices_per_slice_intel = 0x4253;
constexpr cl_device_info device_num_eus_per_sub_slice_intel = 0x4254;
constexpr cl_device_info device_num_threads_per_eu_intel = 0x4255;
constexpr cl_device_info device_sub_group_sizes_intel = 0x4108;

// What a real Xe-HP GPU reports: one tile of the Xe-HP SDV (Intel's
// compute-runtime: 0x0201..0x0210 are its PCI ids, 16 EUs per sub-slice,
// 8 threads per EU, up to 8 slices and 32 sub-slices; 512 EUs), with the
// work-group limits Intel's GPU runtime reports on Xe-HP.
constexpr cl_uint xe_hp_device_id = 0x0201;
constexpr cl_uint xe_hp_eu_count = 512;
constexpr cl_uint xe_hp_eus_per_sub_slice = 16; // oneDNN's max_eus_per_wg
constexpr cl_uint xe_hp_sub_slices_per_slice = 4;
constexpr cl_uint xe_hp_threads_per_eu = 8;
constexpr size_t xe_hp_max_work_group_size = 1024;
constexpr cl_uint xe_hp_max_num_sub_groups = 1024 / 8;
constexpr cl_ulong xe_hp_local_mem_size = 64 * 1024;
constexpr size_t xe_hp_max_parameter_size = 2048;
constexpr size_t xe_hp_sub_group_sizes[] = {8, 16, 32};

cl_icd_dispatch target; // what this layer forwards to
cl_icd_dispatch layer;  // what the loader calls
std::once_flag init_once;

std::mutex state_mutex;
std::unordered_map<cl_device_id, bool> emulated_cache;
std::unordered_map<cl_kernel, cl_program> kernel_program;

// --- Several devices (DNNL_OCL_INTEROP_EMULATED_DEVICES) ------------------
// How many devices each emulated CPU device is presented as: 1 (the CPU
// device itself) unless the variable says more; 0 when the variable is not a
// count, and then no emulated device is presented at all (an error message
// says why) rather than silently one.
constexpr char devices_variable[] = "DNNL_OCL_INTEROP_EMULATED_DEVICES";
constexpr unsigned long max_devices = 64;
cl_uint device_count = 1;

std::mutex partition_mutex;
// Emulated root device -> the sub-devices presented in its place (empty when
// partitioning failed).
std::unordered_map<cl_device_id, std::vector<cl_device_id>> partitions;
// Presented sub-device -> the CPU device it was split from.
std::unordered_map<cl_device_id, cl_device_id> partition_parent;

bool several_devices() {
    return device_count != 1;
}

void report(const char *message) {
    std::fprintf(stderr, "dnnl_ocl_interop emulation layer: %s\n", message);
}

void read_device_count() {
    const char *value = std::getenv(devices_variable);
    if (!value || !*value) return;
    char *end = nullptr;
    errno = 0;
    unsigned long n = std::strtoul(value, &end, 10);
    if (errno || *end || n < 1 || n > max_devices || value[0] == '-') {
        char message[256];
        std::snprintf(message, sizeof(message),
                "%s=%s is not a device count between 1 and %lu: no emulated "
                "device is presented",
                devices_variable, value, max_devices);
        report(message);
        device_count = 0;
        return;
    }
    device_count = cl_uint(n);
}

bool is_partition_device(cl_device_id device) {
    if (!several_devices()) return false;
    std::lock_guard<std::mutex> lock(partition_mutex);
    return partition_parent.count(device) != 0;
}

bool is_emulated(cl_device_id device) {
    {
        std::lock_guard<std::mutex> lock(state_mutex);
        auto it = emulated_cache.find(device);
        if (it != emulated_cache.end()) return it->second;
    }
    cl_device_type type = 0;
    cl_uint vendor = 0;
    bool answered = target.clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof(type), &type, nullptr)
                    == CL_SUCCESS
            && target.clGetDeviceInfo(device, CL_DEVICE_VENDOR_ID, sizeof(vendor), &vendor, nullptr)
                    == CL_SUCCESS;
    bool emulated = answered && (type & CL_DEVICE_TYPE_CPU) && vendor == intel_vendor_id;
    // Only a device's answer is kept: a handle that is no device (another
    // object asked as one) must not decide for a sub-device made later at
    // the same address, which was then presented as a CPU.
    if (!answered) return false;
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

cl_int answer(const void *value, size_t size, size_t param_value_size, void *param_value,
        size_t *param_value_size_ret) {
    if (param_value_size_ret) *param_value_size_ret = size;
    if (param_value) {
        if (param_value_size < size) return CL_INVALID_VALUE;
        std::memcpy(param_value, value, size);
    }
    return CL_SUCCESS;
}

template <typename T>
cl_int runtime_value(cl_device_id device, cl_device_info name, T &value) {
    return target.clGetDeviceInfo(device, name, sizeof(T), &value, nullptr);
}

template <typename T>
cl_int answer_value(const T &value, size_t param_value_size, void *param_value,
        size_t *param_value_size_ret) {
    return answer(&value, sizeof(T), param_value_size, param_value, param_value_size_ret);
}

// The EUs presented for an emulated device: the 512-EU part for a root
// device (a presented one of several devices included); for a sub-device,
// its share of the part by the runtime's compute units, in whole sub-slices
// (at least one, so that oneDNN's sub-slice count, eu_count / 16, is never 0).
cl_int presented_eu_count(cl_device_id device, cl_uint &eus) {
    cl_uint units = 0;
    cl_int status = runtime_value(device, CL_DEVICE_MAX_COMPUTE_UNITS, units);
    if (status != CL_SUCCESS) return status;
    cl_device_id root = device;
    for (int depth = 0; depth < 64; ++depth) {
        if (is_partition_device(root)) break; // presented as a root device
        cl_device_id parent = nullptr;
        status = runtime_value(root, CL_DEVICE_PARENT_DEVICE, parent);
        if (status != CL_SUCCESS) return status;
        if (!parent) break;
        root = parent;
    }
    cl_uint root_units = units;
    if (root != device) {
        status = runtime_value(root, CL_DEVICE_MAX_COMPUTE_UNITS, root_units);
        if (status != CL_SUCCESS) return status;
    }
    uint64_t share = root_units ? uint64_t(xe_hp_eu_count) * units / root_units : xe_hp_eu_count;
    share -= share % xe_hp_eus_per_sub_slice;
    eus = cl_uint(std::max<uint64_t>(share, xe_hp_eus_per_sub_slice));
    return CL_SUCCESS;
}

// Slices and sub-slices per slice of `eus` EUs: 4 sub-slices of 16 EUs per
// slice, or one slice when the sub-slices do not fill whole slices.
void presented_topology(cl_uint eus, cl_uint &slices, cl_uint &sub_slices_per_slice) {
    cl_uint sub_slices = eus / xe_hp_eus_per_sub_slice;
    if (sub_slices % xe_hp_sub_slices_per_slice == 0) {
        slices = sub_slices / xe_hp_sub_slices_per_slice;
        sub_slices_per_slice = xe_hp_sub_slices_per_slice;
    } else {
        slices = 1;
        sub_slices_per_slice = sub_slices;
    }
}

// A limit the device presents: Xe-HP's, or the runtime's when the runtime's
// is lower (a kernel launched within the presented limit must run).
template <typename T>
cl_int answer_limit(cl_device_id device, cl_device_info name, T xe_hp_value,
        size_t param_value_size, void *param_value, size_t *param_value_size_ret) {
    T real = 0;
    cl_int status = runtime_value(device, name, real);
    if (status != CL_SUCCESS) return status;
    return answer_value(std::min(real, xe_hp_value), param_value_size, param_value,
            param_value_size_ret);
}

// The runtime's per-dimension work-item limits, each capped at Xe-HP's
// work-group size.
cl_int answer_work_item_sizes(cl_device_id device, size_t param_value_size, void *param_value,
        size_t *param_value_size_ret) {
    size_t bytes = 0;
    cl_int status
            = target.clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_ITEM_SIZES, 0, nullptr, &bytes);
    if (status != CL_SUCCESS) return status;
    std::vector<size_t> sizes(bytes / sizeof(size_t));
    status = target.clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_ITEM_SIZES,
            sizes.size() * sizeof(size_t), sizes.data(), nullptr);
    if (status != CL_SUCCESS) return status;
    for (auto &size : sizes) size = std::min(size, xe_hp_max_work_group_size);
    return answer(sizes.data(), sizes.size() * sizeof(size_t), param_value_size, param_value,
            param_value_size_ret);
}

// The sub-group sizes both Xe-HP and the runtime support (the runtime's own
// list if they share none).
cl_int answer_sub_group_sizes(cl_device_id device, size_t param_value_size, void *param_value,
        size_t *param_value_size_ret) {
    size_t bytes = 0;
    cl_int status
            = target.clGetDeviceInfo(device, device_sub_group_sizes_intel, 0, nullptr, &bytes);
    if (status != CL_SUCCESS) return status;
    std::vector<size_t> real(bytes / sizeof(size_t));
    status = target.clGetDeviceInfo(device, device_sub_group_sizes_intel,
            real.size() * sizeof(size_t), real.data(), nullptr);
    if (status != CL_SUCCESS) return status;
    std::vector<size_t> shown;
    for (size_t size : xe_hp_sub_group_sizes)
        if (std::find(real.begin(), real.end(), size) != real.end()) shown.push_back(size);
    if (shown.empty()) shown = real;
    return answer(shown.data(), shown.size() * sizeof(size_t), param_value_size, param_value,
            param_value_size_ret);
}

bool is_presented_property(cl_device_info name) {
    switch (name) {
        case CL_DEVICE_TYPE:
        case device_ip_version_intel:
        case device_id_intel:
        case CL_DEVICE_MAX_COMPUTE_UNITS:
        case device_num_slices_intel:
        case device_num_sub_slices_per_slice_intel:
        case device_num_eus_per_sub_slice_intel:
        case device_num_threads_per_eu_intel:
        case CL_DEVICE_MAX_WORK_GROUP_SIZE:
        case CL_DEVICE_MAX_WORK_ITEM_SIZES:
        case CL_DEVICE_MAX_NUM_SUB_GROUPS:
        case device_sub_group_sizes_intel:
        case CL_DEVICE_LOCAL_MEM_SIZE:
        case CL_DEVICE_MAX_PARAMETER_SIZE: return true;
        default: return false;
    }
}

// CL_DEVICE_PARENT_DEVICE and CL_DEVICE_PARTITION_TYPE of a presented one
// of several devices: a root device's answers (NULL; the CPU device's
// partition type, which is a root's). False for every other question.
bool answer_as_root(cl_device_id device, cl_device_info name, size_t param_value_size,
        void *param_value, size_t *param_value_size_ret, cl_int &status) {
    if (name != CL_DEVICE_PARENT_DEVICE && name != CL_DEVICE_PARTITION_TYPE) return false;
    cl_device_id cpu_device = nullptr;
    {
        if (!several_devices()) return false;
        std::lock_guard<std::mutex> lock(partition_mutex);
        auto it = partition_parent.find(device);
        if (it == partition_parent.end()) return false;
        cpu_device = it->second;
    }
    if (name == CL_DEVICE_PARENT_DEVICE)
        status = answer_value(cl_device_id(nullptr), param_value_size, param_value,
                param_value_size_ret);
    else
        status = target.clGetDeviceInfo(cpu_device, name, param_value_size, param_value,
                param_value_size_ret);
    return true;
}

cl_int CL_API_CALL get_device_info(cl_device_id device, cl_device_info param_name,
        size_t param_value_size, void *param_value, size_t *param_value_size_ret) {
    cl_int root_status = CL_SUCCESS;
    if (answer_as_root(device, param_name, param_value_size, param_value, param_value_size_ret,
                root_status))
        return root_status;
    if (param_name == dnnl_ocl_interop::device_is_emulated_query) {
        const cl_bool emulated = is_emulated(device) ? CL_TRUE : CL_FALSE;
        return answer_value(emulated, param_value_size, param_value, param_value_size_ret);
    }
    if (!is_presented_property(param_name) || !is_emulated(device))
        return target.clGetDeviceInfo(device, param_name, param_value_size, param_value,
                param_value_size_ret);
    const size_t size = param_value_size;
    void *const value = param_value;
    size_t *const size_ret = param_value_size_ret;
    switch (param_name) {
        case CL_DEVICE_TYPE: {
            cl_device_type real = 0;
            cl_int status = runtime_value(device, CL_DEVICE_TYPE, real);
            if (status != CL_SUCCESS) return status;
            return answer_value(presented_type(real), size, value, size_ret);
        }
        case device_ip_version_intel: return answer_value(xe_hp_ip_version, size, value, size_ret);
        case device_id_intel: return answer_value(xe_hp_device_id, size, value, size_ret);
        case device_num_eus_per_sub_slice_intel:
            return answer_value(xe_hp_eus_per_sub_slice, size, value, size_ret);
        case device_num_threads_per_eu_intel:
            return answer_value(xe_hp_threads_per_eu, size, value, size_ret);
        case CL_DEVICE_MAX_COMPUTE_UNITS:
        case device_num_slices_intel:
        case device_num_sub_slices_per_slice_intel: {
            cl_uint eus = 0;
            cl_int status = presented_eu_count(device, eus);
            if (status != CL_SUCCESS) return status;
            cl_uint slices = 0, sub_slices_per_slice = 0;
            presented_topology(eus, slices, sub_slices_per_slice);
            cl_uint shown = param_name == CL_DEVICE_MAX_COMPUTE_UNITS ? eus
                    : param_name == device_num_slices_intel           ? slices
                                                                      : sub_slices_per_slice;
            return answer_value(shown, size, value, size_ret);
        }
        case CL_DEVICE_MAX_WORK_GROUP_SIZE:
            return answer_limit(device, param_name, xe_hp_max_work_group_size, size, value,
                    size_ret);
        case CL_DEVICE_MAX_WORK_ITEM_SIZES:
            return answer_work_item_sizes(device, size, value, size_ret);
        case CL_DEVICE_MAX_NUM_SUB_GROUPS:
            return answer_limit(device, param_name, xe_hp_max_num_sub_groups, size, value,
                    size_ret);
        case device_sub_group_sizes_intel:
            return answer_sub_group_sizes(device, size, value, size_ret);
        case CL_DEVICE_LOCAL_MEM_SIZE:
            return answer_limit(device, param_name, xe_hp_local_mem_size, size, value, size_ret);
        case CL_DEVICE_MAX_PARAMETER_SIZE:
            return answer_limit(device, param_name, xe_hp_max_parameter_size, size, value,
                    size_ret);
    }
    return CL_INVALID_VALUE; // not reached: is_presented_property
}

// The sub-devices presented in place of an emulated CPU device `root` when
// several devices are asked for: split once, BY_COUNTS over its compute
// units (as evenly as they go), and held for the life of the process. Empty
// (with a message on stderr, once) when the device cannot be split so.
const std::vector<cl_device_id> &partition_of(cl_device_id root) {
    std::lock_guard<std::mutex> lock(partition_mutex);
    auto found = partitions.find(root);
    if (found != partitions.end()) return found->second;
    std::vector<cl_device_id> &subs = partitions[root];
    cl_uint units = 0;
    cl_int status = runtime_value(root, CL_DEVICE_MAX_COMPUTE_UNITS, units);
    char message[320];
    if (status != CL_SUCCESS || units < device_count) {
        std::snprintf(message, sizeof(message),
                "%s=%u: the CPU device has %u compute units, fewer than the "
                "devices asked for: no emulated device is presented",
                devices_variable, device_count, units);
        report(message);
        return subs;
    }
    std::vector<cl_device_partition_property> properties {CL_DEVICE_PARTITION_BY_COUNTS};
    for (cl_uint i = 0; i < device_count; ++i)
        properties.push_back(cl_device_partition_property(
                units / device_count + (i < units % device_count ? 1 : 0)));
    properties.push_back(CL_DEVICE_PARTITION_BY_COUNTS_LIST_END);
    properties.push_back(0);
    std::vector<cl_device_id> created(device_count);
    cl_uint made = 0;
    status = target.clCreateSubDevices(root, properties.data(), device_count, created.data(),
            &made);
    if (status != CL_SUCCESS || made != device_count) {
        std::snprintf(message, sizeof(message),
                "%s=%u: clCreateSubDevices(BY_COUNTS) over the CPU device's %u "
                "compute units failed (error %d, %u devices): no emulated "
                "device is presented",
                devices_variable, device_count, units, int(status), made);
        report(message);
        if (status == CL_SUCCESS)
            for (cl_uint i = 0; i < made; ++i) target.clReleaseDevice(created[i]);
        return subs;
    }
    subs = created;
    for (cl_device_id sub : subs) partition_parent[sub] = root;
    return subs;
}

// The devices presented for `device` (an answer of the runtime's
// clGetDeviceIDs): itself, or with several devices, an emulated CPU device's
// sub-devices (all of them, or the first only for a request of the default
// device). A device count that is not a count presents no emulated device.
void append_presented(cl_device_id device, bool default_request, std::vector<cl_device_id> &out) {
    if (!several_devices() || !is_emulated(device)) {
        out.push_back(device);
        return;
    }
    cl_device_id parent = nullptr;
    if (runtime_value(device, CL_DEVICE_PARENT_DEVICE, parent) != CL_SUCCESS || parent) {
        out.push_back(device); // a sub-device the application made
        return;
    }
    if (device_count == 0) return;
    const std::vector<cl_device_id> &subs = partition_of(device);
    if (subs.empty()) return;
    if (default_request)
        out.push_back(subs.front());
    else
        out.insert(out.end(), subs.begin(), subs.end());
}

cl_int CL_API_CALL get_device_ids(cl_platform_id platform, cl_device_type device_type,
        cl_uint num_entries, cl_device_id *devices, cl_uint *num_devices) {
    const bool all_or_default
            = device_type == CL_DEVICE_TYPE_ALL || device_type == CL_DEVICE_TYPE_DEFAULT;
    if (all_or_default && !several_devices())
        return target.clGetDeviceIDs(platform, device_type, num_entries, devices, num_devices);
    if (!devices && !num_devices) return CL_INVALID_VALUE;
    if (devices && num_entries == 0) return CL_INVALID_VALUE;

    cl_uint count = 0;
    cl_int status
            = target.clGetDeviceIDs(platform, runtime_type_for(device_type), 0, nullptr, &count);
    if (status == CL_DEVICE_NOT_FOUND)
        count = 0;
    else if (status != CL_SUCCESS)
        return status;

    std::vector<cl_device_id> shown;
    if (count > 0) {
        std::vector<cl_device_id> all(count);
        status = target.clGetDeviceIDs(platform, runtime_type_for(device_type), count, all.data(),
                nullptr);
        if (status != CL_SUCCESS) return status;
        for (cl_device_id device : all) {
            if (!all_or_default) {
                cl_device_type real = 0;
                target.clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof(real), &real, nullptr);
                cl_device_type type = is_emulated(device) ? presented_type(real) : real;
                if (!(type & device_type)) continue;
            }
            append_presented(device, device_type == CL_DEVICE_TYPE_DEFAULT, shown);
        }
    }
    cl_uint matched = cl_uint(shown.size());
    if (devices)
        for (cl_uint i = 0; i < matched && i < num_entries; ++i) devices[i] = shown[i];
    if (num_devices) *num_devices = matched;
    return matched ? CL_SUCCESS : CL_DEVICE_NOT_FOUND;
}

// With several devices, a context the runtime made from a type holds the
// emulated CPU device: it is remade on the devices presented in its place.
cl_context CL_API_CALL create_context_from_type(const cl_context_properties *properties,
        cl_device_type device_type,
        void(CL_CALLBACK *pfn_notify)(const char *, const void *, size_t, void *), void *user_data,
        cl_int *errcode_ret) {
    cl_context context = target.clCreateContextFromType(properties, runtime_type_for(device_type),
            pfn_notify, user_data, errcode_ret);
    if (!context || !several_devices()) return context;
    size_t bytes = 0;
    cl_int status = target.clGetContextInfo(context, CL_CONTEXT_DEVICES, 0, nullptr, &bytes);
    std::vector<cl_device_id> real(bytes / sizeof(cl_device_id));
    if (status == CL_SUCCESS)
        status = target.clGetContextInfo(context, CL_CONTEXT_DEVICES, bytes, real.data(), nullptr);
    if (status != CL_SUCCESS) {
        target.clReleaseContext(context);
        if (errcode_ret) *errcode_ret = status;
        return nullptr;
    }
    std::vector<cl_device_id> shown;
    for (cl_device_id device : real)
        append_presented(device, device_type == CL_DEVICE_TYPE_DEFAULT, shown);
    if (shown == real) return context;
    target.clReleaseContext(context);
    if (shown.empty()) {
        if (errcode_ret) *errcode_ret = CL_DEVICE_NOT_FOUND;
        return nullptr;
    }
    return target.clCreateContext(properties, cl_uint(shown.size()), shown.data(), pfn_notify,
            user_data, errcode_ret);
}

// The presented ones of several devices are root devices to the application:
// it does not count references to them (the layer holds the one they need).
cl_int CL_API_CALL retain_device(cl_device_id device) {
    if (is_partition_device(device)) return CL_SUCCESS;
    return target.clRetainDevice(device);
}

cl_int CL_API_CALL release_device(cl_device_id device) {
    if (is_partition_device(device)) return CL_SUCCESS;
    return target.clReleaseDevice(device);
}

void keep_program_alive(cl_kernel kernel, cl_program program) {
    if (!kernel || !program) return;
    target.clRetainProgram(program);
    std::lock_guard<std::mutex> lock(state_mutex);
    kernel_program[kernel] = program;
}

cl_kernel CL_API_CALL create_kernel(cl_program program, const char *kernel_name,
        cl_int *errcode_ret) {
    cl_kernel kernel = target.clCreateKernel(program, kernel_name, errcode_ret);
    keep_program_alive(kernel, program);
    return kernel;
}

cl_int CL_API_CALL create_kernels_in_program(cl_program program, cl_uint num_kernels,
        cl_kernel *kernels, cl_uint *num_kernels_ret) {
    cl_uint created = 0;
    cl_int status = target.clCreateKernelsInProgram(program, num_kernels, kernels, &created);
    if (status == CL_SUCCESS && kernels)
        for (cl_uint i = 0; i < created; ++i) keep_program_alive(kernels[i], program);
    if (num_kernels_ret) *num_kernels_ret = created;
    return status;
}

cl_kernel CL_API_CALL clone_kernel(cl_kernel source, cl_int *errcode_ret) {
    cl_kernel kernel = target.clCloneKernel(source, errcode_ret);
    if (kernel) {
        cl_program program = nullptr;
        if (target.clGetKernelInfo(kernel, CL_KERNEL_PROGRAM, sizeof(program), &program, nullptr)
                == CL_SUCCESS)
            keep_program_alive(kernel, program);
    }
    return kernel;
}

// Builds, and the last release of a context or program, one at a time:
// Intel's CPU runtime now and then crashes in its compiler, or spins there,
// when several threads compile oneDNN's kernels, each on a context of its
// own, while contexts and programs are destroyed (docs/known-problems.md;
// tools/compile_stress.py). The runtime already builds one program at a
// time (its DeviceBuildTask::m_deviceBuildMtx), so only the front end's
// overlap with other builds is lost. A release that is not the last one
// takes no lock: it destroys nothing, and a thread releasing a queue's
// context must not wait for another thread's build. Recursive: destroying a
// context calls the application's destructor callbacks, which may release
// the last reference to a program.
std::recursive_mutex compiler_mutex;

// `release(handle)`, under compiler_mutex when it drops the last reference
// (`info`'s reference count `query` is 1).
template <typename Info, typename Release, typename Handle>
cl_int release_serialized(Info info, Release release, Handle handle, cl_uint query) {
    cl_uint refs = 0;
    if (info(handle, query, sizeof(refs), &refs, nullptr) != CL_SUCCESS || refs != 1)
        return release(handle);
    std::lock_guard<std::recursive_mutex> lock(compiler_mutex);
    return release(handle);
}

cl_int CL_API_CALL release_program(cl_program program) {
    return release_serialized(target.clGetProgramInfo, target.clReleaseProgram, program,
            CL_PROGRAM_REFERENCE_COUNT);
}

cl_int CL_API_CALL release_context(cl_context context) {
    return release_serialized(target.clGetContextInfo, target.clReleaseContext, context,
            CL_CONTEXT_REFERENCE_COUNT);
}

// With a callback, the build still completes before the call returns (the
// specification allows it), and the callback is called after, unlocked.
cl_int CL_API_CALL build_program(cl_program program, cl_uint num_devices,
        const cl_device_id *device_list, const char *options,
        void(CL_CALLBACK *pfn_notify)(cl_program, void *), void *user_data) {
    cl_int status;
    {
        std::lock_guard<std::recursive_mutex> lock(compiler_mutex);
        status = target.clBuildProgram(program, num_devices, device_list, options, nullptr,
                nullptr);
    }
    if (pfn_notify) pfn_notify(program, user_data);
    return status;
}

cl_int CL_API_CALL compile_program(cl_program program, cl_uint num_devices,
        const cl_device_id *device_list, const char *options, cl_uint num_input_headers,
        const cl_program *input_headers, const char **header_include_names,
        void(CL_CALLBACK *pfn_notify)(cl_program, void *), void *user_data) {
    cl_int status;
    {
        std::lock_guard<std::recursive_mutex> lock(compiler_mutex);
        status = target.clCompileProgram(program, num_devices, device_list, options,
                num_input_headers, input_headers, header_include_names, nullptr, nullptr);
    }
    if (pfn_notify) pfn_notify(program, user_data);
    return status;
}

cl_program CL_API_CALL link_program(cl_context context, cl_uint num_devices,
        const cl_device_id *device_list, const char *options, cl_uint num_input_programs,
        const cl_program *input_programs, void(CL_CALLBACK *pfn_notify)(cl_program, void *),
        void *user_data, cl_int *errcode_ret) {
    cl_program program;
    {
        std::lock_guard<std::recursive_mutex> lock(compiler_mutex);
        program = target.clLinkProgram(context, num_devices, device_list, options,
                num_input_programs, input_programs, nullptr, nullptr, errcode_ret);
    }
    if (pfn_notify && program) pfn_notify(program, user_data);
    return program;
}

cl_int CL_API_CALL release_kernel(cl_kernel kernel) {
    cl_program program = nullptr;
    {
        std::lock_guard<std::mutex> lock(state_mutex);
        auto it = kernel_program.find(kernel);
        cl_uint refs = 0;
        if (it != kernel_program.end()
                && target.clGetKernelInfo(kernel, CL_KERNEL_REFERENCE_COUNT, sizeof(refs), &refs,
                           nullptr)
                        == CL_SUCCESS
                && refs == 1) {
            program = it->second;
            kernel_program.erase(it);
        }
    }
    cl_int status = target.clReleaseKernel(kernel);
    if (program) release_program(program);
    return status;
}

// --- Call counting (DNNL_OCL_INTEROP_COUNT_CL_CALLS) ----------------------
// With the variable set (read once, when the first loader initialises the
// layer), each loader gets its own copy of the layer's table in which every
// entry first counts the call (for that loader and the calling thread) and
// then calls the layer's entry. The Intel USM extension functions are
// counted by handing out counting wrappers from
// clGetExtensionFunctionAddress[ForPlatform]. At exit the counts go to the
// file as JSON (a "%p" in the path becomes the process id). Without the
// variable none of this is installed. Built only with the CMake option
// DNNL_OCL_INTEROP_TEST_HOOKS (a development tool, not part of released
// wheels); without it the variable is reported as having no effect.
#ifdef DNNL_OCL_INTEROP_TEST_HOOKS
namespace counting {

constexpr char variable[] = "DNNL_OCL_INTEROP_COUNT_CL_CALLS";

// Every entry of cl_icd_dispatch (CL/cl_icd.h, OpenCL 3.0 headers).
// clang-format off: one X(...) per entry, as many a line as fit
#define DISPATCH_ENTRIES(X) \
    X(clGetPlatformIDs) X(clGetPlatformInfo) X(clGetDeviceIDs) \
    X(clGetDeviceInfo) X(clCreateContext) X(clCreateContextFromType) \
    X(clRetainContext) X(clReleaseContext) X(clGetContextInfo) \
    X(clCreateCommandQueue) X(clRetainCommandQueue) X(clReleaseCommandQueue) \
    X(clGetCommandQueueInfo) X(clSetCommandQueueProperty) X(clCreateBuffer) \
    X(clCreateImage2D) X(clCreateImage3D) X(clRetainMemObject) \
    X(clReleaseMemObject) X(clGetSupportedImageFormats) X(clGetMemObjectInfo) \
    X(clGetImageInfo) X(clCreateSampler) X(clRetainSampler) \
    X(clReleaseSampler) X(clGetSamplerInfo) X(clCreateProgramWithSource) \
    X(clCreateProgramWithBinary) X(clRetainProgram) X(clReleaseProgram) \
    X(clBuildProgram) X(clUnloadCompiler) X(clGetProgramInfo) \
    X(clGetProgramBuildInfo) X(clCreateKernel) X(clCreateKernelsInProgram) \
    X(clRetainKernel) X(clReleaseKernel) X(clSetKernelArg) X(clGetKernelInfo) \
    X(clGetKernelWorkGroupInfo) X(clWaitForEvents) X(clGetEventInfo) \
    X(clRetainEvent) X(clReleaseEvent) X(clGetEventProfilingInfo) X(clFlush) \
    X(clFinish) X(clEnqueueReadBuffer) X(clEnqueueWriteBuffer) \
    X(clEnqueueCopyBuffer) X(clEnqueueReadImage) X(clEnqueueWriteImage) \
    X(clEnqueueCopyImage) X(clEnqueueCopyImageToBuffer) \
    X(clEnqueueCopyBufferToImage) X(clEnqueueMapBuffer) X(clEnqueueMapImage) \
    X(clEnqueueUnmapMemObject) X(clEnqueueNDRangeKernel) X(clEnqueueTask) \
    X(clEnqueueNativeKernel) X(clEnqueueMarker) X(clEnqueueWaitForEvents) \
    X(clEnqueueBarrier) X(clGetExtensionFunctionAddress) \
    X(clCreateFromGLBuffer) X(clCreateFromGLTexture2D) \
    X(clCreateFromGLTexture3D) X(clCreateFromGLRenderbuffer) \
    X(clGetGLObjectInfo) X(clGetGLTextureInfo) X(clEnqueueAcquireGLObjects) \
    X(clEnqueueReleaseGLObjects) X(clGetGLContextInfoKHR) \
    X(clGetDeviceIDsFromD3D10KHR) X(clCreateFromD3D10BufferKHR) \
    X(clCreateFromD3D10Texture2DKHR) X(clCreateFromD3D10Texture3DKHR) \
    X(clEnqueueAcquireD3D10ObjectsKHR) X(clEnqueueReleaseD3D10ObjectsKHR) \
    X(clSetEventCallback) X(clCreateSubBuffer) \
    X(clSetMemObjectDestructorCallback) X(clCreateUserEvent) \
    X(clSetUserEventStatus) X(clEnqueueReadBufferRect) \
    X(clEnqueueWriteBufferRect) X(clEnqueueCopyBufferRect) \
    X(clCreateSubDevicesEXT) X(clRetainDeviceEXT) X(clReleaseDeviceEXT) \
    X(clCreateEventFromGLsyncKHR) X(clCreateSubDevices) X(clRetainDevice) \
    X(clReleaseDevice) X(clCreateImage) X(clCreateProgramWithBuiltInKernels) \
    X(clCompileProgram) X(clLinkProgram) X(clUnloadPlatformCompiler) \
    X(clGetKernelArgInfo) X(clEnqueueFillBuffer) X(clEnqueueFillImage) \
    X(clEnqueueMigrateMemObjects) X(clEnqueueMarkerWithWaitList) \
    X(clEnqueueBarrierWithWaitList) \
    X(clGetExtensionFunctionAddressForPlatform) X(clCreateFromGLTexture) \
    X(clGetDeviceIDsFromD3D11KHR) X(clCreateFromD3D11BufferKHR) \
    X(clCreateFromD3D11Texture2DKHR) X(clCreateFromD3D11Texture3DKHR) \
    X(clCreateFromDX9MediaSurfaceKHR) X(clEnqueueAcquireD3D11ObjectsKHR) \
    X(clEnqueueReleaseD3D11ObjectsKHR) X(clGetDeviceIDsFromDX9MediaAdapterKHR) \
    X(clEnqueueAcquireDX9MediaSurfacesKHR) \
    X(clEnqueueReleaseDX9MediaSurfacesKHR) X(clCreateFromEGLImageKHR) \
    X(clEnqueueAcquireEGLObjectsKHR) X(clEnqueueReleaseEGLObjectsKHR) \
    X(clCreateEventFromEGLSyncKHR) X(clCreateCommandQueueWithProperties) \
    X(clCreatePipe) X(clGetPipeInfo) X(clSVMAlloc) X(clSVMFree) \
    X(clEnqueueSVMFree) X(clEnqueueSVMMemcpy) X(clEnqueueSVMMemFill) \
    X(clEnqueueSVMMap) X(clEnqueueSVMUnmap) X(clCreateSamplerWithProperties) \
    X(clSetKernelArgSVMPointer) X(clSetKernelExecInfo) \
    X(clGetKernelSubGroupInfoKHR) X(clCloneKernel) X(clCreateProgramWithIL) \
    X(clEnqueueSVMMigrateMem) X(clGetDeviceAndHostTimer) X(clGetHostTimer) \
    X(clGetKernelSubGroupInfo) X(clSetDefaultDeviceCommandQueue) \
    X(clSetProgramReleaseCallback) X(clSetProgramSpecializationConstant) \
    X(clCreateBufferWithProperties) X(clCreateImageWithProperties) \
    X(clSetContextDestructorCallback)
// clang-format on

// The extension functions reached through
// clGetExtensionFunctionAddress[ForPlatform] that are counted.
// clang-format off: one X(...) per entry, as many a line as fit
#define EXTENSION_ENTRIES(X) \
    X(clHostMemAllocINTEL) X(clDeviceMemAllocINTEL) X(clSharedMemAllocINTEL) \
    X(clMemFreeINTEL) X(clMemBlockingFreeINTEL) X(clGetMemAllocInfoINTEL) \
    X(clSetKernelArgMemPointerINTEL) X(clEnqueueMemFillINTEL) \
    X(clEnqueueMemcpyINTEL) X(clEnqueueMemAdviseINTEL) \
    X(clEnqueueMigrateMemINTEL) X(clEnqueueMemsetINTEL)
// clang-format on

constexpr size_t dispatch_slots = sizeof(cl_icd_dispatch) / sizeof(void *);

enum extension : size_t {
#define ENUMERATE(name) ext_##name,
    EXTENSION_ENTRIES(ENUMERATE)
#undef ENUMERATE
            extension_count
};

constexpr size_t slots_per_loader = dispatch_slots + extension_count;
constexpr size_t max_loaders = 4;
constexpr size_t slot_total = max_loaders * slots_per_loader;

const char *slot_names[slots_per_loader] = {};

// One record per thread that made a counted call, never freed (so that the
// counts of threads that ended are still written at exit). Only its thread
// writes its counts; relaxed atomics make the read at exit well defined.
struct thread_record {
    long tid;
    char name[16];
    thread_record *next;
    std::atomic<uint64_t> counts[slot_total];
    std::atomic<uint64_t> nanoseconds[slot_total]; // spent inside the calls
};

std::atomic<thread_record *> thread_list {nullptr};
thread_local thread_record *this_thread = nullptr;

std::string path;                    // empty: counting is off
cl_icd_dispatch tables[max_loaders]; // one counting table per loader
std::string loader_files[max_loaders];
size_t loader_count = 0; // guarded by loaders_mutex
std::mutex loaders_mutex;
void *extension_targets[extension_count] = {}; // the runtime's functions

thread_record *register_thread() {
    auto *record = new thread_record();
    record->tid = long(syscall(SYS_gettid));
    pthread_getname_np(pthread_self(), record->name, sizeof(record->name));
    record->next = thread_list.load();
    while (!thread_list.compare_exchange_weak(record->next, record)) {}
    this_thread = record;
    return record;
}

inline uint64_t now_ns() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return uint64_t(t.tv_sec) * 1000000000u + uint64_t(t.tv_nsec);
}

inline void add(std::atomic<uint64_t> &counter, uint64_t n) {
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

inline void count(size_t index) {
    thread_record *record = this_thread;
    if (!record) record = register_thread();
    add(record->counts[index], 1);
}

// Counts a call of entry `index` and adds the time `call` takes.
template <typename F>
inline auto timed(size_t index, F &&call) -> decltype(call()) {
    count(index);
    const uint64_t start = now_ns();
    struct on_return {
        size_t index;
        uint64_t start;
        ~on_return() { add(this_thread->nanoseconds[index], now_ns() - start); }
    } timer {index, start};
    return call();
}

// A dispatch entry of loader `Loader`: count, then call the layer's entry at
// byte offset `Offset`. Entries that are not function pointers (the header's
// placeholders for unsupported extensions) are not wrapped.
template <size_t Loader, size_t Offset, typename F>
struct counted_entry {
    static constexpr bool wraps = false;
    static void *pointer() { return nullptr; }
};

template <size_t Loader, size_t Offset, typename R, typename... A>
struct counted_entry<Loader, Offset, R(CL_API_CALL *)(A...)> {
    using fn = R(CL_API_CALL *)(A...);
    static constexpr bool wraps = true;
    static R CL_API_CALL call(A... args) {
        fn next;
        std::memcpy(&next, reinterpret_cast<const char *>(&layer) + Offset, sizeof(next));
        return timed(Loader * slots_per_loader + Offset / sizeof(void *),
                [&] { return next(args...); });
    }
    static void *pointer() { return reinterpret_cast<void *>(&call); }
};

// An extension function handed out through loader `Loader`.
template <size_t Loader, size_t Index, typename F>
struct counted_extension;

template <size_t Loader, size_t Index, typename R, typename... A>
struct counted_extension<Loader, Index, R(CL_API_CALL *)(A...)> {
    static R CL_API_CALL call(A... args) {
        auto next = reinterpret_cast<R(CL_API_CALL *)(A...)>(extension_targets[Index]);
        return timed(Loader * slots_per_loader + dispatch_slots + Index,
                [&] { return next(args...); });
    }
};

// The counting wrapper for extension function `name` (whose runtime function
// is `real`), or `real` itself for functions not counted (and for a second
// runtime handing out a different function of the same name).
template <size_t Loader>
void *counted_extension_for(const char *name, void *real) {
    if (!real || !name) return real;
#define MATCH(ext_name) \
    if (std::strcmp(name, #ext_name) == 0) { \
        std::lock_guard<std::mutex> lock(loaders_mutex); \
        void *&target = extension_targets[ext_##ext_name]; \
        if (!target) target = real; \
        if (target != real) return real; \
        return reinterpret_cast<void *>( \
                &counted_extension<Loader, ext_##ext_name, ext_name##_fn>::call); \
    }
    EXTENSION_ENTRIES(MATCH)
#undef MATCH
    return real;
}

template <size_t Loader>
void *CL_API_CALL get_extension_function_address_for_platform(cl_platform_id platform,
        const char *name) {
    count(Loader * slots_per_loader
            + offsetof(cl_icd_dispatch, clGetExtensionFunctionAddressForPlatform) / sizeof(void *));
    return counted_extension_for<Loader>(name,
            layer.clGetExtensionFunctionAddressForPlatform(platform, name));
}

template <size_t Loader>
void *CL_API_CALL get_extension_function_address(const char *name) {
    count(Loader * slots_per_loader
            + offsetof(cl_icd_dispatch, clGetExtensionFunctionAddress) / sizeof(void *));
    return counted_extension_for<Loader>(name, layer.clGetExtensionFunctionAddress(name));
}

template <size_t Loader, size_t Offset, typename F>
void install_entry(cl_icd_dispatch &table, const char *name) {
    slot_names[Offset / sizeof(void *)] = name;
    void *next = nullptr;
    std::memcpy(&next, reinterpret_cast<const char *>(&layer) + Offset, sizeof(next));
    void *entry = next && counted_entry<Loader, Offset, F>::wraps
            ? counted_entry<Loader, Offset, F>::pointer()
            : next;
    std::memcpy(reinterpret_cast<char *>(&table) + Offset, &entry, sizeof(entry));
}

// The table names deprecated entries (clCreateImage2D, ...) too.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
template <size_t Loader>
void build_table(cl_icd_dispatch &table) {
#define INSTALL(name) \
    install_entry<Loader, offsetof(cl_icd_dispatch, name), decltype(cl_icd_dispatch::name)>(table, \
            #name);
    DISPATCH_ENTRIES(INSTALL)
#undef INSTALL
    if (layer.clGetExtensionFunctionAddressForPlatform)
        table.clGetExtensionFunctionAddressForPlatform
                = get_extension_function_address_for_platform<Loader>;
    if (layer.clGetExtensionFunctionAddress)
        table.clGetExtensionFunctionAddress = get_extension_function_address<Loader>;
}
#pragma GCC diagnostic pop

static_assert(max_loaders == 4, "build_table is instantiated for 4 loaders");

void append_json_string(std::string &out, const char *text) {
    out += '"';
    for (const char *c = text; *c; ++c) {
        unsigned char ch = static_cast<unsigned char>(*c);
        if (ch == '"' || ch == '\\') {
            out += '\\';
            out += char(ch);
        } else if (ch < 0x20) {
            char escaped[8];
            std::snprintf(escaped, sizeof(escaped), "\\u%04x", ch);
            out += escaped;
        } else {
            out += char(ch);
        }
    }
    out += '"';
}

const char *slot_name(size_t slot) {
    if (slot >= dispatch_slots) {
        static const char *extension_names[] = {
#define NAME(name) #name,
                EXTENSION_ENTRIES(NAME)
#undef NAME
        };
        return extension_names[slot - dispatch_slots];
    }
    return slot_names[slot] ? slot_names[slot] : "?";
}

// {"clFoo": n, ...} of the nonzero counts in `counts` (slots_per_loader of
// them), sorted by name.
void append_counts(std::string &out, const uint64_t *counts) {
    std::vector<std::pair<std::string, uint64_t>> named;
    for (size_t slot = 0; slot < slots_per_loader; ++slot)
        if (counts[slot]) named.emplace_back(slot_name(slot), counts[slot]);
    std::sort(named.begin(), named.end());
    out += '{';
    const char *separator = "";
    for (auto &entry : named) {
        out += separator;
        append_json_string(out, entry.first.c_str());
        out += ": " + std::to_string(entry.second);
        separator = ", ";
    }
    out += '}';
}

// The thread's current name when it still runs, else its name when it
// made its first counted call.
std::string thread_name(const thread_record &record) {
    char file[64];
    std::snprintf(file, sizeof(file), "/proc/self/task/%ld/comm", record.tid);
    if (FILE *f = std::fopen(file, "r")) {
        char name[64] = {};
        bool read = std::fgets(name, sizeof(name), f) != nullptr;
        std::fclose(f);
        if (read) {
            name[std::strcspn(name, "\n")] = '\0';
            return name;
        }
    }
    return record.name;
}

// Writes the counts as JSON:
//   {"pid": P, "calls": {entry: total}, "nanoseconds": {entry: time inside},
//    "loaders": [{"library": path, "calls": {...}}],
//    "threads": [{"tid": T, "name": N, "main": bool, "calls": {...}}]}
// through a temporary file renamed into place.
void write_counts() {
    if (path.empty()) return;
    std::string file = path;
    for (size_t at; (at = file.find("%p")) != std::string::npos;)
        file.replace(at, 2, std::to_string(long(getpid())));
    size_t loaders_seen;
    {
        std::lock_guard<std::mutex> lock(loaders_mutex);
        loaders_seen = loader_count;
    }
    std::vector<uint64_t> totals(slots_per_loader, 0);
    std::vector<uint64_t> nanos(slots_per_loader, 0);
    std::vector<std::vector<uint64_t>> per_loader(loaders_seen,
            std::vector<uint64_t>(slots_per_loader, 0));
    std::vector<const thread_record *> records;
    for (thread_record *r = thread_list.load(); r; r = r->next) records.push_back(r);
    std::reverse(records.begin(), records.end()); // first caller first
    std::string threads;
    const char *separator = "";
    for (const thread_record *r : records) {
        std::vector<uint64_t> mine(slots_per_loader, 0);
        for (size_t l = 0; l < loaders_seen; ++l)
            for (size_t slot = 0; slot < slots_per_loader; ++slot) {
                uint64_t n = r->counts[l * slots_per_loader + slot].load(std::memory_order_relaxed);
                mine[slot] += n;
                per_loader[l][slot] += n;
                totals[slot] += n;
                nanos[slot] += r->nanoseconds[l * slots_per_loader + slot].load(
                        std::memory_order_relaxed);
            }
        threads += separator;
        threads += "{\"tid\": " + std::to_string(r->tid) + ", \"name\": ";
        append_json_string(threads, thread_name(*r).c_str());
        threads += ", \"main\": ";
        threads += r->tid == long(getpid()) ? "true" : "false";
        threads += ", \"calls\": ";
        append_counts(threads, mine.data());
        threads += '}';
        separator = ",\n    ";
    }
    std::string out = "{\"pid\": " + std::to_string(long(getpid())) + ",\n  \"calls\": ";
    append_counts(out, totals.data());
    out += ",\n  \"nanoseconds\": ";
    append_counts(out, nanos.data());
    out += ",\n  \"loaders\": [";
    for (size_t l = 0; l < loaders_seen; ++l) {
        out += l ? ",\n    " : "\n    ";
        out += "{\"library\": ";
        append_json_string(out, loader_files[l].c_str());
        out += ", \"calls\": ";
        append_counts(out, per_loader[l].data());
        out += '}';
    }
    out += "],\n  \"threads\": [\n    " + threads + "]}\n";
    std::string temporary = file + ".tmp" + std::to_string(long(getpid()));
    FILE *f = std::fopen(temporary.c_str(), "w");
    if (!f) {
        report("cannot write the OpenCL call counts");
        return;
    }
    bool written = std::fwrite(out.data(), 1, out.size(), f) == out.size();
    written = std::fclose(f) == 0 && written;
    if (!written || std::rename(temporary.c_str(), file.c_str()) != 0) {
        std::remove(temporary.c_str());
        report("cannot write the OpenCL call counts");
    }
}

// Read once, at the first loader's initialisation.
void read_variable() {
    const char *value = std::getenv(variable);
    if (!value || !*value) return;
    path = value;
    std::atexit(write_counts);
}

// The table for a loader initialising the layer (whose own dispatch table,
// the layer's target, lies at `target_dispatch`): a new counting table, or
// the plain layer table when counting is off or loaders are too many.
const cl_icd_dispatch *table_for(const cl_icd_dispatch *target_dispatch) {
    if (path.empty()) return &layer;
    std::lock_guard<std::mutex> lock(loaders_mutex);
    if (loader_count == max_loaders) return &layer;
    size_t index = loader_count;
    Dl_info info {};
    loader_files[index] = dladdr(target_dispatch, &info) && info.dli_fname ? info.dli_fname : "?";
    switch (index) {
        case 0: build_table<0>(tables[0]); break;
        case 1: build_table<1>(tables[1]); break;
        case 2: build_table<2>(tables[2]); break;
        default: build_table<3>(tables[3]); break;
    }
    ++loader_count;
    return &tables[index];
}

} // namespace counting
#else
namespace counting {
void read_variable() {
    const char *value = std::getenv("DNNL_OCL_INTEROP_COUNT_CL_CALLS");
    if (value && *value)
        std::fprintf(stderr,
                "dnnl_ocl_interop emulation layer: DNNL_OCL_INTEROP_COUNT_CL_CALLS has no effect: "
                "this build has no call counting (CMake option DNNL_OCL_INTEROP_TEST_HOOKS)\n");
}
const cl_icd_dispatch *table_for(const cl_icd_dispatch *) {
    return &layer;
}
} // namespace counting
#endif

void init_dispatch(const cl_icd_dispatch *target_dispatch, cl_uint num_entries) {
    std::memset(&target, 0, sizeof(target));
    std::memcpy(&target, target_dispatch,
            std::min<size_t>(sizeof(target), num_entries * sizeof(void *)));
    layer = target;
    read_device_count();
    layer.clGetDeviceInfo = get_device_info;
    layer.clGetDeviceIDs = get_device_ids;
    layer.clCreateContextFromType = create_context_from_type;
    layer.clCreateKernel = create_kernel;
    layer.clCreateKernelsInProgram = create_kernels_in_program;
    layer.clReleaseKernel = release_kernel;
    layer.clReleaseProgram = release_program;
    layer.clReleaseContext = release_context;
    layer.clBuildProgram = build_program;
    if (target.clCompileProgram) layer.clCompileProgram = compile_program;
    if (target.clLinkProgram) layer.clLinkProgram = link_program;
    if (target.clCloneKernel) layer.clCloneKernel = clone_kernel;
    if (several_devices()) {
        layer.clRetainDevice = retain_device;
        layer.clReleaseDevice = release_device;
    }
    counting::read_variable();
}

} // namespace

LAYER_EXPORT cl_int CL_API_CALL clGetLayerInfo(cl_layer_info param_name, size_t param_value_size,
        void *param_value, size_t *param_value_size_ret) {
    static const char name[] = "dnnl_ocl_interop emulated Intel GPU (Xe-HP)";
    static const cl_layer_api_version version = CL_LAYER_API_VERSION_100;
    switch (param_name) {
        case CL_LAYER_API_VERSION:
            return answer(&version, sizeof(version), param_value_size, param_value,
                    param_value_size_ret);
        case CL_LAYER_NAME:
            return answer(name, sizeof(name), param_value_size, param_value, param_value_size_ret);
        default: return CL_INVALID_VALUE;
    }
}

// Several loaders (the system's and pyopencl's own copy) may initialise this
// one library; they all lead to the same runtime, so the first target serves.
// When calls are counted, each loader gets its own counting table.
LAYER_EXPORT cl_int CL_API_CALL clInitLayer(cl_uint num_entries,
        const cl_icd_dispatch *target_dispatch, cl_uint *num_entries_ret,
        const cl_icd_dispatch **layer_dispatch_ret) {
    if (!target_dispatch || !num_entries_ret || !layer_dispatch_ret) return CL_INVALID_VALUE;
    std::call_once(init_once, init_dispatch, target_dispatch, num_entries);
    *num_entries_ret = sizeof(layer) / sizeof(void *);
    *layer_dispatch_ret = counting::table_for(target_dispatch);
    return CL_SUCCESS;
}
