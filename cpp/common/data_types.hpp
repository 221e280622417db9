// The one table of element data types. oneDNN's memory::data_type and
// graph::logical_tensor::data_type share their C values (dnnl_data_type_t);
// a row says which of the two enums has the type, its size, the NumPy dtype
// that stores it and the DLPack type it is exported as. Everything that maps
// a data type reads this table: names in messages, map_data's arrays, host
// scalars, __dlpack__, the graph's tensor sizes, and (through
// memory._data_types()) dnnl.arrays and dnnl.ops. tests/test_data_types.py
// checks it against the enums the headers declare.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"
#include "oneapi/dnnl/dnnl_graph.hpp"

namespace dnnl_ocl_interop {
namespace data_types {

// What NumPy's storage dtype holds for elements of a type.
enum class numpy_holds {
    nothing, // sub-byte types and undef: no NumPy dtype (raw bytes)
    values,  // the dtype's values are the elements' (float32 for f32)
    bits,    // only the bit patterns (uint16 for bf16, uint8 for f8 types)
};

struct row {
    dnnl_data_type_t value;
    const char *name;  // the enums' member name
    bool in_memory;    // a memory::data_type member
    bool in_graph;     // a logical_tensor::data_type member
    unsigned bits;     // per element; 0 for undef
    const char *numpy; // NumPy storage dtype name, or nullptr
    numpy_holds holds;
    uint8_t dlpack_code; // DLPack DLDataTypeCode; no_dlpack: not exported
};

constexpr uint8_t no_dlpack = 0xff;

// Every row, in the headers' order of memory::data_type, then graph-only types.
const std::vector<row> &table();

// The row of a C value; nullptr for a value no enum declares.
const row *find(dnnl_data_type_t value);
inline const row *find(dnnl::memory::data_type t) {
    return find(static_cast<dnnl_data_type_t>(t));
}
inline const row *find(dnnl::graph::logical_tensor::data_type t) {
    return find(static_cast<dnnl_data_type_t>(t));
}

// The member name ("f32"), or "undef" for a value without a row.
const char *name(dnnl_data_type_t value);
template <typename Enum>
const char *name(Enum t) {
    return name(static_cast<dnnl_data_type_t>(t));
}

// Bits per element (0 for undef and unknown values).
template <typename Enum>
unsigned bits(Enum t) {
    const row *r = find(t);
    return r ? r->bits : 0;
}

// bf16 from f32: round to nearest even; a NaN stays a NaN (quieted, sign
// kept), as oneDNN converts.
uint16_t bf16_from_f32(float value);
float f32_from_bf16(uint16_t bits);

} // namespace data_types
} // namespace dnnl_ocl_interop
