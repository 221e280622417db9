// Primitive descriptors, attributes and primitives as Python sees them.
//
// Each keeps what oneDNN's handles cannot report back: an owning copy of the
// engine, and the quantization arguments (scales, zero points) an attribute
// asks for, so execute() can require them. A primitive also keeps the list of
// arguments it reads and writes, with their descriptors, to check execute()'s
// arguments before oneDNN sees them.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <CL/cl.h>
#include <pybind11/pybind11.h>

#include "common/py_values.hpp"
#include "core/objects.hpp"
#include "oneapi/dnnl/dnnl.hpp"

namespace dnnl_ocl_interop {

// An execution argument the attributes ask for (DNNL_ARG_ATTR_SCALES | arg,
// zero points, dropout probability and seed, rounding seed, ...): oneDNN has
// no descriptor for it, but knows whether it is host-scalar memory.
struct quantization_arg {
    int arg;
    bool on_host; // host-scalar memory (set_host_scale, ...) rather than device memory
};

struct attr_object {
    dnnl::primitive_attr attr;
    std::vector<quantization_arg> quantization_args;
};

struct primitive_desc_object { // engines first: see objects.hpp
    engine_object engine;
    // A reorder between two engines: the one of the two that `engine` is not
    // (oneDNN keeps only a pointer to it). Empty otherwise.
    engine_object other_engine;
    dnnl::primitive_desc_base pd; // reorder, concat and sum derive only from the base
    std::vector<quantization_arg> quantization_args;
};

struct expected_arg {
    int arg;
    dnnl::memory::desc desc; // zero: any descriptor (quantization arguments)
    // Host-scalar memory is taken exactly where oneDNN reads one (its kernels
    // would take any other memory for the other kind).
    bool host_scalar = false;
    // The engine the memory must be on: a reorder's source or destination
    // engine; nullptr: the primitive's.
    dnnl_engine_t engine = nullptr;
};

// What execute() checks of a primitive's arguments.
struct argument_checks {
    std::vector<expected_arg> args;
    // oneDNN 3.13's "gpu:direct_copy" reorder copies nothing between buffer
    // and USM memory (and reports success): such executions are refused.
    bool copies_within_one_memory_kind = false;
};

struct primitive_object {
    primitive_object(engine_object engine, engine_object other_engine, dnnl::primitive primitive,
            std::vector<quantization_arg> quantization_args)
        : engine(std::move(engine)), other_engine(std::move(other_engine)),
          primitive(std::move(primitive)), quantization_args(std::move(quantization_args)) {}
    engine_object engine;
    engine_object other_engine; // as primitive_desc_object's
    dnnl::primitive primitive;
    std::vector<quantization_arg> quantization_args; // the descriptor's
    // Worked out from the primitive's descriptor at the first execute (with
    // the GIL, as every execute): a primitive from oneDNN's cache is made in
    // a few µs, and the 30-odd descriptor queries would be a good part of it.
    const argument_checks &checks() const;

private:
    mutable std::shared_ptr<const argument_checks> checks_;
};

// Builds a primitive and the list of arguments it expects.
primitive_object make_primitive(const primitive_desc_object &pd);

// The same from `cache_blob` (primitive.get_cache_blob() of a primitive of an
// equal descriptor; None: compile as above): the kernels are loaded from the
// blob. A blob that is not one, is damaged or is another descriptor's is
// refused (dnnl.error) before oneDNN reads it, since oneDNN trusts its bytes.
primitive_object make_primitive(const primitive_desc_object &pd, const optional_bytes &cache_blob);

// Docstring of dnnl.<family>(pd, cache_blob), which bind_family defines.
extern const char *const primitive_from_cache_blob_doc;

// Converts and checks execute()'s `args` for `p` on `stream`: every expected
// argument present, on its engine, with storage, and with a descriptor that
// keeps oneDNN within the memory (the primitive's own, or any other oneDNN
// would execute on without addressing past the storage); arguments the
// primitive does not use are left out, as oneDNN ignores them.
// The result feeds oneDNN's C execute functions directly: the C++ API would
// build an unordered_map per call, on execute()'s hot path.
std::vector<dnnl_exec_arg_t> execution_args(
        const primitive_object &p, const stream_object &stream, pybind11::handle args);

// primitive.execute(stream, args): checks, then submits (GIL kept).
void execute_primitive(const primitive_object &p, const stream_object &stream, pybind11::handle args);

// Refuses `events` of another context than `engine`'s (dnnl.error), which
// the queue would otherwise be handed (ocl_interop/execute.cpp).
void check_same_context(const std::vector<cl_event> &events, const dnnl::engine &engine);

// On an in-order stream, makes its queue wait for `events`, which oneDNN 3.13
// drops there (docs/known-problems.md); nothing on an out-of-order stream.
void wait_in_order(const stream_object &stream, const std::vector<cl_event> &events);

// "ARG_SRC" and the like, for messages.
std::string arg_name(int arg);

void bind_attributes(pybind11::module_ &m); // core/attributes.cpp
void bind_primitive_base(pybind11::module_ &m); // core/primitive.cpp

} // namespace dnnl_ocl_interop
