// Plain Python values several bindings take: ints as addresses, bytes blobs.
#pragma once

#include <cstdint>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/typing.h>

namespace dnnl_ocl_interop {

// An int (not a bool).
inline bool is_int(pybind11::handle obj) {
    return PyLong_Check(obj.ptr()) && !PyBool_Check(obj.ptr());
}

// Stores the int `obj` as an address in `out`; false (and no Python error
// set) when it is outside 0 .. 2**64-1. `obj` must be an int.
bool int_to_pointer(pybind11::handle obj, void *&out);

// A parameter that takes bytes or bytearray, or None (typed for signatures;
// bytes_arg checks the value).
using optional_bytes = pybind11::typing::Optional<pybind11::typing::Union<pybind11::bytes, pybind11::bytearray>>;

// bytes or bytearray contents; TypeError naming `param` otherwise.
std::vector<uint8_t> bytes_arg(pybind11::handle obj, const char *param);

// std::vector<uint8_t> (oneDNN's blobs and ids) as bytes.
inline pybind11::bytes to_bytes(const std::vector<uint8_t> &data) {
    return pybind11::bytes(reinterpret_cast<const char *>(data.data()), data.size());
}

} // namespace dnnl_ocl_interop
