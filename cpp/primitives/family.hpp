// The one mechanism every primitive family shares: a Python class per family
// (dnnl.<name>) with a nested primitive_desc class, constructors that mirror
// the C++ primitive_desc overloads argument for argument, and backward
// descriptors taking their forward hint as in C++.
//
// A family file declares only what differs: the argument types and names of
// each C++ overload. Everything else (GIL release, attribute and hint
// conversion, the base classes with their queries, execute) is here or in
// core/primitive.cpp.
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "common/errors.hpp"
#include "common/fork_guard.hpp"
#include "common/reasons.hpp"
#include "core/primitive_objects.hpp"

namespace dnnl_ocl_interop {

// RNN descriptors share the C++ rnn_primitive_desc_base's queries
// (src_layer_desc() ...): their Python classes derive from this one.
struct rnn_primitive_desc_object : primitive_desc_object {};

// One C++ type per family P (dnnl::convolution_forward, ...), so each gets
// its own Python class and a backward descriptor can demand its forward hint.
template <typename P>
using pd_base_t = std::conditional_t<
        std::is_base_of_v<dnnl::rnn_primitive_desc_base, typename P::primitive_desc>,
        rnn_primitive_desc_object, primitive_desc_object>;
template <typename P>
struct typed_pd : pd_base_t<P> {};
template <typename P>
struct typed_primitive : primitive_object {};

// A backward constructor's `hint_fwd_pd` parameter, as Python passes it.
template <typename P>
using hint = typed_pd<P>;

// Short names for the parameter types of the C++ constructors, so a family
// file lists each overload's types in one line.
namespace family_args {
using md = dnnl::memory::desc;
using dims = dnnl::memory::dims;
using dim = dnnl::memory::dim;
using dt = dnnl::memory::data_type;
using floats = std::vector<float>;
using mds = std::vector<md>;
using flags = dnnl::normalization_flags;
using direction = dnnl::rnn_direction;
using dnnl::algorithm;
using dnnl::prop_kind;
using dnnl_ocl_interop::hint;
} // namespace family_args

namespace family_detail {

template <typename T>
const T &unwrap(const T &value) {
    return value;
}

// The C++ hint type from its Python object. C++ primitive_desc wrappers take
// ownership of a C handle, so they get a clone.
template <typename P>
typename P::primitive_desc unwrap(const typed_pd<P> &hint_pd) {
    dnnl_primitive_desc_t clone;
    dnnl::error::wrap_c_api(dnnl_primitive_desc_clone(&clone, hint_pd.pd.get()),
            "could not clone the forward hint");
    return typename P::primitive_desc(clone);
}

template <typename P>
typed_pd<P> wrap(const engine_object &engine, dnnl::primitive_desc_base pd,
        const std::vector<quantization_arg> &quantization_args) {
    typed_pd<P> result;
    static_cast<primitive_desc_object &>(result)
            = primitive_desc_object {engine, {}, std::move(pd), quantization_args};
    return result;
}

} // namespace family_detail

// P::primitive_desc(engine, args..., attr, allow_empty), built with the GIL
// released (oneDNN may create kernels while choosing an implementation). Args
// are given explicitly, so the pack may precede `attr`. A missing attr (None)
// is a fresh primitive_attr per call, as C++'s default_attr(): it takes the
// default fpmath mode current at the call. With allow_empty, no implementation
// gives an empty descriptor (false as a bool) instead of dnnl.unimplemented.
template <typename P, typename... Args>
typed_pd<P> create(const engine_object &engine, const Args &...args,
        const std::optional<attr_object> &attr, bool allow_empty) {
    fork_guard::check();
    attr_object fresh;
    const attr_object &a = attr ? *attr : fresh;
    pybind11::gil_scoped_release release;
    // oneDNN's reasons for a refusal go with the exception (common/verbose).
    auto pd = verbose::creating([&] {
        return typename P::primitive_desc(engine, family_detail::unwrap(args)..., a.attr,
                allow_empty);
    });
    return family_detail::wrap<P>(engine, refuse_known_wrong(std::move(pd), allow_empty),
            a.quantization_args);
}

// Same, for descriptors whose engine is not the first argument (reorder).
template <typename P>
typed_pd<P> adopt(const engine_object &engine, dnnl::primitive_desc_base pd,
        const std::vector<quantization_arg> &quantization_args) {
    return family_detail::wrap<P>(engine, std::move(pd), quantization_args);
}

// The trailing `attr=None` of every constructor (see create()).
inline pybind11::arg_v attr_arg() {
    return pybind11::arg_v("attr", pybind11::none(), "None");
}
inline pybind11::arg_v allow_empty_arg() {
    return pybind11::arg_v("allow_empty", false);
}

// One C++ primitive_desc overload: Args are its parameter types between the
// engine and the attribute (hint<F> for a forward hint), `names` their
// Python names (pybind11 "name"_a literals), in the C++ order.
template <typename P, typename... Args, typename Class, typename... Names>
void constructor(Class &pd, const Names &...names) {
    static_assert(sizeof...(Args) == sizeof...(Names), "one name per argument");
    pd.def(pybind11::init(&create<P, Args...>), pybind11::arg("engine"), names..., attr_arg(),
            allow_empty_arg());
}

// dnnl.<name> with its nested primitive_desc class, which the family file
// gives its constructors.
template <typename P>
pybind11::class_<typed_pd<P>, pd_base_t<P>> bind_family(pybind11::module_ &m, const char *name,
        const char *doc) {
    namespace py = pybind11;
    py::class_<typed_primitive<P>, primitive_object> prim(m, name, doc);
    py::class_<typed_pd<P>, pd_base_t<P>> pd(prim, "primitive_desc",
            (std::string("Descriptor of a ") + name
                    + " primitive: its constructors take the "
                      "engine, then the arguments of the C++ dnnl::"
                    + name
                    + "::primitive_desc "
                      "overloads in their order, then an optional primitive_attr.")
                    .c_str());
    prim.def(
            py::init([](const typed_pd<P> &pd) { return typed_primitive<P> {make_primitive(pd)}; }),
            py::arg("pd"), "The primitive for a descriptor (kernels are compiled here).");
    prim.def(py::init([](const typed_pd<P> &pd, const optional_bytes &cache_blob) {
        return typed_primitive<P> {make_primitive(pd, cache_blob)};
    }),
            py::arg("pd"), py::arg("cache_blob"), primitive_from_cache_blob_doc);
    return pd;
}

// Registration of the family groups (module.cpp calls them in order).
void bind_convolution_like(pybind11::module_ &m); // primitives/convolution_like.cpp
void bind_normalizations(pybind11::module_ &m);   // primitives/normalization.cpp
void bind_elementwise(pybind11::module_ &m);      // primitives/elementwise.cpp
void bind_spatial(pybind11::module_ &m);          // primitives/spatial.cpp
void bind_rnn(pybind11::module_ &m);              // primitives/rnn.cpp
void bind_data_movement(pybind11::module_ &m);    // primitives/data_movement.cpp

} // namespace dnnl_ocl_interop
