// Plain Python values several bindings take: ints as addresses, bytes blobs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/typing.h>

namespace dnnl_ocl_interop {

// Whether the interpreter is shutting down: code that may run then (callbacks
// from oneDNN, destructors) must not touch Python objects.
inline bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing();
#else
    return _Py_IsFinalizing();
#endif
}

// An int (not a bool).
inline bool is_int(pybind11::handle obj) {
    return PyLong_Check(obj.ptr()) && !PyBool_Check(obj.ptr());
}

// Stores the int `obj` as an address in `out`; false (and no Python error
// set) when it is outside 0 .. 2**64-1. `obj` must be an int.
bool int_to_pointer(pybind11::handle obj, void *&out);

// A pointer given from Python: an int, or a typed pointer — an object whose
// __index__ is the address (dnnl.usm.allocation; any object may take part by
// defining __index__), which what is made on it keeps alive. Returns false
// (nothing set) for anything else, bools included; dnnl.error
// (invalid_arguments) naming `param` for a value outside 0 .. 2**64-1. For
// a typed pointer, *owner (when given) is set to the object.
bool pointer_from(pybind11::handle obj, const char *param, void *&out,
        pybind11::object *owner = nullptr);

// A pointer parameter (typed for signatures): an int or a typed pointer, as
// pointer_from takes them. The caster loads anything pointer_from takes and
// refuses the rest (so overloads work); get(param) raises naming the
// parameter for a value out of range.
struct pointer_arg {
    pybind11::object source;
    void *get(const char *param) const;
};

// Keeps `obj` alive as long as the returned pointer (or a copy) lives; the
// last copy may be dropped on any thread, with or without the GIL. Empty for
// an empty `obj`.
std::shared_ptr<void> keep_alive(pybind11::object obj);

// A parameter that takes bytes or bytearray, or None (typed for signatures;
// bytes_arg checks the value).
using optional_bytes
        = pybind11::typing::Optional<pybind11::typing::Union<pybind11::bytes, pybind11::bytearray>>;

// bytes or bytearray contents; TypeError naming `param` otherwise.
std::vector<uint8_t> bytes_arg(pybind11::handle obj, const char *param);

// Text oneDNN or a driver printed, as str: UTF-8, undecodable bytes replaced.
pybind11::str printed_text(const std::string &text);

// std::vector<uint8_t> (oneDNN's blobs and ids) as bytes.
inline pybind11::bytes to_bytes(const std::vector<uint8_t> &data) {
    return pybind11::bytes(reinterpret_cast<const char *>(data.data()), data.size());
}

} // namespace dnnl_ocl_interop

namespace pybind11 {
namespace detail {
template <>
struct type_caster<dnnl_ocl_interop::pointer_arg> {
    PYBIND11_TYPE_CASTER(dnnl_ocl_interop::pointer_arg, const_name("int | typing.SupportsIndex"));
    bool load(handle src, bool) {
        if (PyBool_Check(src.ptr()) || !PyIndex_Check(src.ptr())) return false;
        object index = reinterpret_steal<object>(PyNumber_Index(src.ptr()));
        if (!index) { // __index__ refused (e.g. a NumPy array): not a pointer
            PyErr_Clear();
            return false;
        }
        value.source = reinterpret_borrow<object>(src);
        return true;
    }
};
} // namespace detail
} // namespace pybind11
