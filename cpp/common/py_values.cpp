#include "common/py_values.hpp"

#include "common/errors.hpp"

#include <string>

namespace py = pybind11;

namespace dnnl_ocl_interop {

bool int_to_pointer(py::handle obj, void *&out) {
    unsigned long long value = PyLong_AsUnsignedLongLong(obj.ptr());
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return false;
    }
    out = reinterpret_cast<void *>(static_cast<uintptr_t>(value));
    return true;
}

std::vector<uint8_t> bytes_arg(py::handle obj, const char *param) {
    if (!PyBytes_Check(obj.ptr()) && !PyByteArray_Check(obj.ptr()))
        throw_type_error(param, "bytes or bytearray", obj);
    const char *data = PyBytes_Check(obj.ptr()) ? PyBytes_AS_STRING(obj.ptr())
                                                : PyByteArray_AS_STRING(obj.ptr());
    return std::vector<uint8_t>(data, data + PyObject_Length(obj.ptr()));
}

} // namespace dnnl_ocl_interop
