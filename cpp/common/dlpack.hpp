// The DLPack exchange structures (https://dmlc.github.io/dlpack/latest/),
// written out here: the format is a stable public C ABI. Both capsule kinds
// are produced: "dltensor_versioned" (DLPack >= 1.0, which can say the data
// is writable: NumPy makes arrays of the unversioned kind read-only) and the
// unversioned "dltensor" for older consumers.
#pragma once

#include <cstdint>

namespace dnnl_ocl_interop {
namespace dlpack {

// DLDeviceType values used here. kDLOpenCL (4) and kDLOneAPI (14) exist but
// are not produced: see docs/arrays.md.
constexpr int32_t kDLCPU = 1;

// DLDataTypeCode values.
constexpr uint8_t kDLInt = 0;
constexpr uint8_t kDLUInt = 1;
constexpr uint8_t kDLFloat = 2;
constexpr uint8_t kDLBfloat = 4;

struct DLDevice {
    int32_t device_type;
    int32_t device_id;
};

struct DLDataType {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
};

struct DLTensor {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides; // in elements; never NULL here
    uint64_t byte_offset;
};

struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(DLManagedTensor *self);
};

struct DLPackVersion {
    uint32_t major;
    uint32_t minor;
};

// The version of the structures above.
constexpr DLPackVersion version {1, 0};

// DLManagedTensorVersioned::flags bits.
constexpr uint64_t flag_read_only = 1ULL << 0;
constexpr uint64_t flag_is_copied = 1ULL << 1;

struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
};

// Capsule names: a consumer renames the capsule once it owns the tensor.
constexpr const char *capsule_name = "dltensor";
constexpr const char *used_capsule_name = "used_dltensor";
constexpr const char *versioned_capsule_name = "dltensor_versioned";
constexpr const char *used_versioned_capsule_name = "used_dltensor_versioned";

} // namespace dlpack
} // namespace dnnl_ocl_interop
