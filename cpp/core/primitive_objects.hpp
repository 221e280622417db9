// Primitive descriptors, attributes and primitives as Python sees them.
//
// Each keeps what oneDNN's handles cannot report back: an owning copy of the
// engine, and the quantization arguments (scales, zero points) an attribute
// asks for, so execute() can require them. A primitive also keeps the list of
// arguments it reads and writes, with their descriptors, to check execute()'s
// arguments before oneDNN sees them.
#pragma once

#include <functional>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <pybind11/pybind11.h>

#include "common/published.hpp"
#include "common/py_values.hpp"
#include "common/workarounds.hpp"
#include "core/objects.hpp"
#include "oneapi/dnnl/dnnl.hpp"

namespace dnnl_ocl_interop {

namespace profiling {
struct subject; // core/profiling.hpp
}

// An execution argument the attributes ask for (DNNL_ARG_ATTR_SCALES | arg,
// zero points, dropout probability and seed, rounding seed, ...): oneDNN has
// no descriptor for it, but knows whether it is host-scalar memory.
struct quantization_arg {
    int arg;
    bool on_host; // host-scalar memory (set_host_scale, ...) rather than device memory
    // What oneDNN reads there (writes, for dynamic quantization), as the
    // attributes say: `data_type` values, one per element of the argument
    // `arg` qualifies in the dimensions of `mask`, the last two divided by
    // `groups` (oneDNN's quant_entry_t::get_md); a single value where `mask`
    // is negative (dropout's and rounding's scalars).
    int mask = -1;
    dnnl::memory::dims groups = {};
    dnnl::memory::data_type data_type = dnnl::memory::data_type::undef;
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
    // Where `desc` is zero: what oneDNN reads there (quantization_arg), when
    // known: `values` of `value_type` (values 0: unknown, any memory taken).
    dnnl_dim_t values = 0;
    dnnl::memory::data_type value_type = dnnl::memory::data_type::undef;
};

// What execute() checks of a primitive's arguments.
struct argument_checks {
    std::vector<expected_arg> args;
    // The reorder copies nothing between buffer and USM memory (known problem
    // reorder-direct-copy-memory-kinds, common/workarounds): such executions
    // are refused.
    bool copies_within_one_memory_kind = false;
    // Arguments whose memory must be dense from its handle on, checked at
    // each execute (workarounds::dense_at_execute: runtime dims or strides).
    std::vector<int> dense_at_execute;
    // A primitive made with runtime dimensions: its arguments' dimensions
    // must agree with each other at each execute (a matmul's: oneDNN takes
    // each size from one of them and addresses the others by it).
    bool runtime_dims_agree = false;
    dnnl::primitive::kind kind = dnnl::primitive::kind::undef;
};

struct primitive_object {
    primitive_object(engine_object engine, engine_object other_engine, dnnl::primitive primitive,
            std::vector<quantization_arg> quantization_args)
        : engine(std::move(engine))
        , other_engine(std::move(other_engine))
        , primitive(std::move(primitive))
        , quantization_args(std::move(quantization_args)) {}
    engine_object engine;
    engine_object other_engine; // as primitive_desc_object's
    dnnl::primitive primitive;
    std::vector<quantization_arg> quantization_args; // the descriptor's
    // Worked out from the primitive's descriptor at the first execute (by
    // any thread: common/published.hpp): a primitive from oneDNN's cache is made in
    // a few µs, and the 30-odd descriptor queries would be a good part of it.
    const argument_checks &checks() const;
    // What a dnnl.profiling recorder records of its executes; worked out at
    // the first recorded one.
    std::shared_ptr<const profiling::subject> subject() const;

private:
    published<argument_checks> checks_;
    published<profiling::subject> subject_;
};

// `pd`; or, where oneDNN's chosen implementation is known to compute wrong
// results for it (common/workarounds, and `also` for the checks that need
// more than the descriptor: a sum's scales, a reorder's zero points), the
// next implementation oneDNN offers that is not (next_impl); where none is
// left, the empty descriptor with `allow_empty` and dnnl.unimplemented
// naming the problem otherwise. Every descriptor constructor passes its
// result through this.
dnnl::primitive_desc_base refuse_known_wrong(dnnl::primitive_desc_base pd, bool allow_empty,
        const std::function<workarounds::refusal(const dnnl::primitive_desc_base &)> &also = {});

// Builds a primitive and the list of arguments it expects: compiles it, or
// lets the persistent cache installed for the process (set_creation_hook)
// serve it.
primitive_object make_primitive(const primitive_desc_object &pd);

// dnnl.cache.install's hook: `hook(pd)` returns the primitive of `pd` (it
// may build it with dnnl.<family>(pd, blob), or dnnl.<family>(pd), which
// then compiles without calling the hook again); None removes it. Called
// with the GIL, on the thread creating the primitive.
void set_creation_hook(pybind11::object hook);

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
std::vector<dnnl_exec_arg_t> execution_args(const primitive_object &p, const stream_object &stream,
        pybind11::handle args);

// primitive.execute(stream, args): checks, then submits (GIL kept).
void execute_primitive(const primitive_object &p, const stream_object &stream,
        pybind11::handle args);

// "ARG_SRC" and the like, for messages.
std::string arg_name(int arg);

void bind_attributes(pybind11::module_ &m);     // core/attributes.cpp
void bind_primitive_base(pybind11::module_ &m); // core/primitive.cpp

} // namespace dnnl_ocl_interop
