// Instances of the module's classes made without their __init__.
//
// `cls.__new__(cls)` alone makes a pybind11 instance that holds no value, and
// pybind11 hands its methods uninitialized memory: the first call crashed
// (engine.get_kind, memory.desc.get_size, graph.graph.finalize, ...; pybind11
// issue #6153). guard_new gives every class of the module a __new__ that
// refuses such a call with a TypeError naming the class. `cls(...)` is
// untouched: pybind11's own tp_new slot makes its instance, as before. A
// Python subclass's instances, whose __new__ slot finds the guard, are made
// while their type's call runs (pybind11 then checks that __init__ made the
// value).
//
// The type's call is seen through the module's own metaclass: pybind11's
// default metaclass, which every pybind11 module of the same internals in
// the process shares, is left as it was, and its subclass made here (with
// only its call wrapped) becomes the class of the module's classes (as
// `cls.__class__ = metaclass` would, which Python allows between types of
// one layout). Other extensions' classes construct as before.
//
// Not covered: pybind11_object.__new__(cls), the base every pybind11 class
// shares, called on purpose; and a Python metaclass of a subclass whose
// __call__ reaches pybind11's through super() (its instances are refused).
//
// Delete this guard (and its metaclass) once the pybind11 floor includes
// upstream's fix, pybind11 #6157 (not in a release yet: 3.1.0 is the newest).
#pragma once

#include <pybind11/pybind11.h>

namespace dnnl_ocl_interop {
namespace instances {

// For every class reachable from `root` (its submodules, nested classes),
// once, after all bindings are made.
void guard_new(pybind11::module_ &root);

} // namespace instances
} // namespace dnnl_ocl_interop
