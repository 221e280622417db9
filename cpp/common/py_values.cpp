#include "common/enum_caster.hpp" // first: see the header

#include "common/py_values.hpp"

#include "common/errors.hpp"

#include <string>

namespace py = pybind11;

namespace dnnl_ocl_interop {

py::str printed_text(const std::string &text) {
    PyObject *decoded
            = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace");
    if (!decoded) throw py::error_already_set();
    return py::reinterpret_steal<py::str>(decoded);
}

bool int_to_pointer(py::handle obj, void *&out) {
    unsigned long long value = PyLong_AsUnsignedLongLong(obj.ptr());
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return false;
    }
    out = reinterpret_cast<void *>(static_cast<uintptr_t>(value));
    return true;
}

bool pointer_from(py::handle obj, const char *param, void *&out, py::object *owner) {
    bool typed = false;
    py::object value = py::reinterpret_borrow<py::object>(obj);
    if (!is_int(obj)) {
        if (PyBool_Check(obj.ptr()) || !PyIndex_Check(obj.ptr())) return false;
        value = py::reinterpret_steal<py::object>(PyNumber_Index(obj.ptr()));
        if (!value) { // __index__ refused (a NumPy array of several elements): no pointer
            PyErr_Clear();
            return false;
        }
        typed = true;
    }
    if (!int_to_pointer(value, out))
        throw_invalid_argument(std::string(param) + " must be a pointer (0 to 2**64-1)");
    if (typed && owner) *owner = py::reinterpret_borrow<py::object>(obj);
    return true;
}

void *pointer_arg::get(const char *param) const {
    void *ptr = nullptr;
    if (!pointer_from(source, param, ptr))
        throw_type_error(param, "an int or typed pointer", source);
    return ptr;
}

std::shared_ptr<void> keep_alive(py::object obj) {
    if (!obj) return nullptr;
    PyObject *held = obj.release().ptr();
    return std::shared_ptr<void>(held, [](void *p) {
        if (!Py_IsInitialized() || interpreter_finalizing()) return; // left to the interpreter
        PyGILState_STATE state = PyGILState_Ensure();
        Py_DECREF(static_cast<PyObject *>(p));
        PyGILState_Release(state);
    });
}

std::vector<uint8_t> bytes_arg(py::handle obj, const char *param) {
    if (!PyBytes_Check(obj.ptr()) && !PyByteArray_Check(obj.ptr()))
        throw_type_error(param, "bytes or bytearray", obj);
    const char *data = PyBytes_Check(obj.ptr()) ? PyBytes_AS_STRING(obj.ptr())
                                                : PyByteArray_AS_STRING(obj.ptr());
    return std::vector<uint8_t>(data, data + PyObject_Length(obj.ptr()));
}

} // namespace dnnl_ocl_interop
