// Dictionary lookups that give a reference of the caller's own: on a
// free-threaded Python another thread may remove an item the moment after a
// borrowed reference to it was handed out (PyDict_GetItemRef and
// PyDict_SetDefaultRef, 3.13); with the GIL, no other thread runs between
// the lookup and the reference taken.
#pragma once

#include <pybind11/pybind11.h>

namespace dnnl_ocl_interop {
namespace py_refs {

// dict[key] (a new reference), or a null object when it has none.
inline pybind11::object dict_get(PyObject *dict, PyObject *key) {
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *value = nullptr;
    if (PyDict_GetItemRef(dict, key, &value) < 0) throw pybind11::error_already_set();
    return pybind11::reinterpret_steal<pybind11::object>(value);
#else
    PyObject *value = PyDict_GetItemWithError(dict, key);
    if (!value && PyErr_Occurred()) throw pybind11::error_already_set();
    return pybind11::reinterpret_borrow<pybind11::object>(value);
#endif
}

// dict.setdefault(key, value) (a new reference): the value in the
// dictionary after one dict operation.
inline pybind11::object dict_set_default(PyObject *dict, PyObject *key, PyObject *value) {
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *in_dict = nullptr;
    if (PyDict_SetDefaultRef(dict, key, value, &in_dict) < 0) throw pybind11::error_already_set();
    return pybind11::reinterpret_steal<pybind11::object>(in_dict);
#else
    PyObject *in_dict = PyDict_SetDefault(dict, key, value);
    if (!in_dict) throw pybind11::error_already_set();
    return pybind11::reinterpret_borrow<pybind11::object>(in_dict);
#endif
}

// object.name (a new reference); raises what getattr raises.
inline pybind11::object attribute(PyObject *object, PyObject *name) {
    PyObject *value = PyObject_GetAttr(object, name);
    if (!value) throw pybind11::error_already_set();
    return pybind11::reinterpret_steal<pybind11::object>(value);
}

} // namespace py_refs
} // namespace dnnl_ocl_interop
