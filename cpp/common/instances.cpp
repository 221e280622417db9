#include "common/enum_caster.hpp" // first: see the header

#include "common/instances.hpp"

#include <string>
#include <unordered_set>

namespace py = pybind11;

namespace dnnl_ocl_interop {
namespace instances {
namespace {

// The type whose call (type(...)) runs on this thread: the guard serves a
// __new__ for it (a Python subclass's slot) and refuses any other.
thread_local PyTypeObject *constructing = nullptr;
ternaryfunc metaclass_call = nullptr; // pybind11's metaclass's call, wrapped below
newfunc pybind11_new = nullptr;       // pybind11's tp_new of its classes
PyObject *metaclass = nullptr;        // the module's, made once (kept: its classes use it)

PyObject *call_marking_the_type(PyObject *type, PyObject *args, PyObject *kwargs) {
    PyTypeObject *outer = constructing;
    constructing = reinterpret_cast<PyTypeObject *>(type);
    PyObject *result = metaclass_call(type, args, kwargs);
    constructing = outer;
    return result;
}

py::object guarded_new(py::handle cls, py::args args, py::kwargs kwargs) {
    if (!PyType_Check(cls.ptr())) throw py::type_error("__new__(cls): cls must be a class");
    auto *type = reinterpret_cast<PyTypeObject *>(cls.ptr());
    if (type != constructing) {
        std::string name = py::str(cls.attr("__qualname__"));
        throw py::type_error(name + " cannot be made by __new__ alone (its object would hold "
                "nothing): call " + name + "(...)");
    }
    PyObject *made = pybind11_new(type, args.ptr(), kwargs.ptr());
    if (!made) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(made);
}

// The module's metaclass: a subclass of pybind11's `base` (so pybind11's
// attribute, deallocation and __init__ checks stay), its call wrapped.
void make_metaclass(PyTypeObject *base, newfunc new_of_classes) {
    static PyType_Slot slots[]
            = {{Py_tp_call, reinterpret_cast<void *>(&call_marking_the_type)}, {0, nullptr}};
    static PyType_Spec spec = {"dnnl_ocl_interop._core._guarded_type", 0, 0,
            Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, slots};
    py::tuple bases = py::make_tuple(py::handle(reinterpret_cast<PyObject *>(base)));
    PyObject *made = PyType_FromSpecWithBases(&spec, bases.ptr());
    if (!made) throw py::error_already_set();
    metaclass_call = base->tp_call;
    pybind11_new = new_of_classes;
    metaclass = made;
}

bool is_bound_class(py::handle obj) {
    if (!PyType_Check(obj.ptr())) return false;
    auto *type = reinterpret_cast<PyTypeObject *>(obj.ptr());
    const py::detail::type_info *info = py::detail::get_type_info(type);
    return info && info->type == type;
}

void visit(py::handle scope, std::unordered_set<PyObject *> &seen, py::handle guard) {
    if (!seen.insert(scope.ptr()).second) return;
    py::dict members = py::reinterpret_borrow<py::dict>(PyModule_Check(scope.ptr())
                    ? PyModule_GetDict(scope.ptr())
                    : reinterpret_cast<PyTypeObject *>(scope.ptr())->tp_dict);
    for (auto item : members) {
        py::handle value = item.second;
        if (PyModule_Check(value.ptr())) {
            visit(value, seen, guard);
        } else if (is_bound_class(value) && !seen.count(value.ptr())
                && std::string(py::str(value.attr("__module__"))).rfind("dnnl_ocl_interop", 0)
                        == 0) {
            auto *type = reinterpret_cast<PyTypeObject *>(value.ptr());
            if (!metaclass) make_metaclass(Py_TYPE(type), type->tp_new);
            // Python's own checks apply (the layouts must match).
            if (Py_TYPE(type) != reinterpret_cast<PyTypeObject *>(metaclass)
                    && PyObject_SetAttrString(value.ptr(), "__class__", metaclass) != 0)
                throw py::error_already_set();
            // In the dict, not through setattr: the tp_new slot that
            // type(...) uses stays pybind11's.
            if (PyDict_SetItemString(type->tp_dict, "__new__", guard.ptr()) != 0)
                throw py::error_already_set();
            PyType_Modified(type);
            visit(value, seen, guard);
        }
    }
}

} // namespace

void guard_new(py::module_ &root) {
    py::object guard = py::reinterpret_steal<py::object>(
            PyStaticMethod_New(py::cpp_function(guarded_new, py::name("__new__"),
                    py::doc("Refuses to make an object without its __init__: call the class."))
                            .ptr()));
    if (!guard) throw py::error_already_set();
    std::unordered_set<PyObject *> seen;
    visit(root, seen, guard);
}

} // namespace instances
} // namespace dnnl_ocl_interop
