// The Python-side objects that are more than a oneDNN handle.
//
// oneDNN's C++ accessors (memory::get_engine, stream::get_engine) return
// non-owning engines, so every object bound here keeps an owning copy of its
// engine: what get_engine() returns stays valid however the user drops things.
#pragma once

#include <memory>
#include <vector>

#include <pybind11/pybind11.h>

#include "oneapi/dnnl/dnnl.hpp"

namespace dnnl_ocl_interop {

// dnnl.engine. Besides the oneDNN engine it owns whatever oneDNN may call back
// into while the engine lives (a graph allocator's Python callables). Every
// object that keeps the engine keeps a copy of this, so the callbacks outlive
// all their possible callers.
struct engine_object : dnnl::engine {
    engine_object() = default;
    explicit engine_object(dnnl::engine engine, std::shared_ptr<void> callbacks = nullptr)
        : dnnl::engine(std::move(engine)), callbacks(std::move(callbacks)) {}
    std::shared_ptr<void> callbacks;
};

// Holders declare their engine first: members are destroyed in reverse, so the
// oneDNN object goes before the engine whose allocator it may still call.
struct stream_object {
    engine_object engine;
    dnnl::stream stream;
    bool out_of_order; // oneDNN has no getter for a stream's flags
};

struct memory_object {
    // `engine` is empty for host-scalar memory, which lives on no engine.
    // `storage` owns storage the binding allocated for the memory.
    memory_object(dnnl::memory memory, engine_object engine,
            std::shared_ptr<void> storage = nullptr,
            std::vector<std::shared_ptr<void>> handle_owners = {})
        : engine(std::move(engine))
        , storage(std::move(storage))
        , handle_owners(std::move(handle_owners))
        , memory(std::move(memory))
        , desc(this->memory.get_desc())
        , num_handles(desc.get_num_handles())
        , host_scalar(desc.get_format_kind() == dnnl::memory::format_kind::host_scalar) {}
    engine_object engine;
    // Declared before `memory`: freed after oneDNN's memory object is gone.
    std::shared_ptr<void> storage;
    // Per buffer, the Python object a typed pointer came from
    // (dnnl.usm.allocation, ...), kept alive while the memory uses it.
    std::vector<std::shared_ptr<void>> handle_owners;
    dnnl::memory memory;
    // Fixed for the memory's life; cached for execute().
    dnnl::memory::desc desc;
    int num_handles; // buffers of the layout: 1, or more for sparse encodings
    bool host_scalar;
};

// dnnl.MEMORY_ALLOCATE and dnnl.MEMORY_NONE.
struct special_handle {
    void *value;
    const char *name;
};
inline const special_handle memory_allocate {DNNL_MEMORY_ALLOCATE, "MEMORY_ALLOCATE"};
inline const special_handle memory_none {DNNL_MEMORY_NONE, "MEMORY_NONE"};

// Interprets a memory handle given from Python: dnnl.MEMORY_ALLOCATE,
// dnnl.MEMORY_NONE, an int or typed pointer (py_values.hpp's pointer_from:
// then *owner, when given, is set to the typed pointer's object), or (when
// `accept_mem_object`) a pyopencl memory object (then *mem_object, when
// given, is set). TypeError names `param` for anything else.
void *memory_handle_from(pybind11::handle obj, const char *param, bool accept_mem_object,
        bool *mem_object = nullptr, pybind11::object *owner = nullptr);

// The handles of a memory made from Python: a list (one per buffer of the
// layout, as C++'s std::vector<void *> overloads take), or one handle; a
// special one (MEMORY_ALLOCATE, MEMORY_NONE) stands for every buffer, as in
// C++'s memory(desc, engine). Each user handle is checked (check_user_handle).
// `owners` gets, per handle, what keeps a typed pointer's object alive.
struct user_handles {
    std::vector<void *> handles;
    std::vector<std::shared_ptr<void>> owners;
};
user_handles memory_handles_from(pybind11::handle obj, const dnnl::memory::desc &desc,
        const dnnl::engine &engine, bool usm, bool accept_mem_object);

// Refuses (invalid_arguments) a buffer index outside the memory's layout.
void check_buffer_index(const memory_object &memory, int index);

// Registration of the core object families (module.cpp calls them in order).
void bind_library(pybind11::module_ &m); // core/library.cpp
void bind_known_problems(
        pybind11::module_ &m);          // core/known_problem_bindings.cpp (bind_library calls it)
void bind_enums(pybind11::module_ &m);  // core/enums.cpp
void bind_engine(pybind11::module_ &m); // core/engine.cpp
void bind_stream(pybind11::module_ &m); // core/stream.cpp
void bind_memory(pybind11::module_ &m); // core/memory.cpp

} // namespace dnnl_ocl_interop
