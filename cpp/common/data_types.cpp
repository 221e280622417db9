#include "common/data_types.hpp"

#include <cmath>
#include <cstring>

#include "common/dlpack.hpp"

namespace dnnl_ocl_interop {
namespace data_types {

namespace {
constexpr auto none = numpy_holds::nothing;
constexpr auto values = numpy_holds::values;
constexpr auto bit_patterns = numpy_holds::bits;
} // namespace

const std::vector<row> &table() {
    using namespace dlpack;
    // value, name, memory, graph, bits, NumPy dtype, what it holds, DLPack code
    static const std::vector<row> rows = {
            {dnnl_data_type_undef, "undef", true, true, 0, nullptr, none, no_dlpack},
            {dnnl_f4_e3m0, "f4_e3m0", true, false, 4, nullptr, none, no_dlpack},
            {dnnl_f4_e2m1, "f4_e2m1", true, false, 4, nullptr, none, no_dlpack},
            {dnnl_e8m0, "e8m0", true, false, 8, "uint8", bit_patterns, no_dlpack},
            {dnnl_f8_e5m2, "f8_e5m2", true, true, 8, "uint8", bit_patterns, no_dlpack},
            {dnnl_f8_e4m3, "f8_e4m3", true, true, 8, "uint8", bit_patterns, no_dlpack},
            {dnnl_f16, "f16", true, true, 16, "float16", values, kDLFloat},
            {dnnl_bf16, "bf16", true, true, 16, "uint16", bit_patterns, kDLBfloat},
            {dnnl_f32, "f32", true, true, 32, "float32", values, kDLFloat},
            {dnnl_f64, "f64", true, false, 64, "float64", values, kDLFloat},
            {dnnl_s64, "s64", true, true, 64, "int64", values, kDLInt},
            {dnnl_s32, "s32", true, true, 32, "int32", values, kDLInt},
            {dnnl_s8, "s8", true, true, 8, "int8", values, kDLInt},
            {dnnl_u8, "u8", true, true, 8, "uint8", values, kDLUInt},
            {dnnl_s4, "s4", true, true, 4, nullptr, none, no_dlpack},
            {dnnl_u4, "u4", true, true, 4, nullptr, none, no_dlpack},
            {dnnl_boolean, "boolean", false, true, 8, "uint8", bit_patterns, no_dlpack},
    };
    return rows;
}

const row *find(dnnl_data_type_t value) {
    for (const row &r : table())
        if (r.value == value) return &r;
    return nullptr;
}

const char *name(dnnl_data_type_t value) {
    const row *r = find(value);
    return r ? r->name : "undef";
}

uint16_t bf16_from_f32(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40u);
    return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

float f32_from_bf16(uint16_t bits) {
    uint32_t wide = static_cast<uint32_t>(bits) << 16;
    float value;
    std::memcpy(&value, &wide, sizeof(value));
    return value;
}

} // namespace data_types
} // namespace dnnl_ocl_interop
