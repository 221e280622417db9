#include "common/enum_caster.hpp" // first: see the header

#include <algorithm>
#include <optional>
#include <vector>

#include <pybind11/native_enum.h>

#include "ocl_interop/ocl_bindings.hpp"
#include "common/cl_handles.hpp"
#include "common/errors.hpp"
#include "common/memory_descs.hpp"
#include "core/objects.hpp"
#include "common/storage_checks.hpp"
#include "oneapi/dnnl/dnnl_ocl.hpp"
#include "common/usm_api.hpp"

namespace py = pybind11;
namespace oi = dnnl::ocl_interop;

namespace dnnl_ocl_interop {
namespace {

// Device USM the binding allocated for a memory, freed with a blocking free
// when the last Python object using it is gone. oneDNN frees USM it
// allocates itself with clMemFreeINTEL, which does not wait: memory dropped
// while a kernel still used it would be freed under the kernel (the CPU
// runtime then crashes). A blocking free waits for that work instead.
struct owned_usm {
    cl_context context;
    std::vector<void *> pointers;
    ~owned_usm() {
        const usm::api_t &api = usm::api_for(context);
        {
            std::optional<py::gil_scoped_release> unlocked;
            if (PyGILState_Check()) unlocked.emplace(); // the free may wait for the device
            for (void *p : pointers) api.blocking_free(context, p);
        }
        clReleaseContext(context);
    }
};

// The buffers of `desc` that `handles` leaves to the library, allocated as
// oneDNN would (device USM) but owned by the binding; nullptr when none.
std::shared_ptr<void> allocate_usm(const dnnl::memory::desc &desc, const engine_object &engine,
        std::vector<void *> &handles) {
    std::shared_ptr<owned_usm> owner;
    for (size_t i = 0; i < handles.size(); ++i) {
        if (handles[i] != DNNL_MEMORY_ALLOCATE) continue;
        const auto index = static_cast<int>(i); // room for map_data's copy too
        size_t size = std::max(addressed_bytes(desc.get(), index), mapped_bytes(desc.get(), index));
        if (size == 0) continue;
        if (!owner) {
            cl_context context = oi::get_context(engine);
            check_cl(clRetainContext(context), "clRetainContext");
            owner = std::make_shared<owned_usm>();
            owner->context = context;
        }
        cl_int err = CL_SUCCESS;
        void *ptr = usm::api_for(owner->context)
                            .device_alloc(owner->context, oi::get_device(engine), nullptr, size, 0,
                                    &err);
        if (err != CL_SUCCESS || !ptr)
            throw status_error(dnnl_out_of_memory,
                    "could not create a memory object: USM allocation of " + std::to_string(size)
                            + " bytes failed: " + cl_error_name(err) + " (" + std::to_string(err)
                            + ")",
                    err);
        owner->pointers.push_back(ptr);
        handles[i] = ptr;
    }
    return owner;
}

// `user` checked (memory_handles_from, check_user_handle).
memory_object make(const dnnl::memory::desc &desc, const engine_object &engine,
        oi::memory_kind kind, user_handles user) {
    std::shared_ptr<void> storage;
    if (kind == oi::memory_kind::usm && engine.get_kind() == dnnl::engine::kind::gpu)
        storage = allocate_usm(desc, engine, user.handles);
    return memory_object(oi::make_memory(desc, engine, kind, user.handles), engine,
            std::move(storage), std::move(user.owners));
}

} // namespace

void bind_ocl_interop_memory(py::module_ &m) {
    {
        using E = oi::memory_kind; // members from the headers (core/enums.cpp)
#define VALUE(member) .value(#member, E::member)
        py::native_enum<E>(m, "memory_kind", "enum.Enum",
                "How OpenCL memory is held: USM pointers or cl_mem buffers.")
#include "onednn_enum_ocl_memory_kind.inc"
                .finalize();
#undef VALUE
    }

    m.def("make_memory",
            [](const dnnl::memory::desc &desc, const engine_object &engine, oi::memory_kind kind,
                    py::handle handle) {
        return make(desc, engine, kind,
                memory_handles_from(handle, desc, engine, kind == oi::memory_kind::usm,
                        /*accept_mem_object=*/kind == oi::memory_kind::buffer));
    },
            py::arg("desc"), py::arg("engine"), py::arg("kind"),
            py::arg("handle") = memory_allocate,
            "Memory of `kind` for `desc` on `engine`. `handle`: "
            "dnnl.MEMORY_ALLOCATE (allocated for the memory; for kind.usm, device USM "
            "the binding frees when the memory is gone, waiting for work still using "
            "it, where oneDNN's own free would not wait), dnnl.MEMORY_NONE, a USM "
            "pointer of the engine's context for kind.usm (an int, or a typed "
            "pointer such as dnnl.usm.allocation, which the memory keeps alive), "
            "or a cl_mem of "
            "the engine's context for kind.buffer. User storage must hold the "
            "bytes `desc` addresses (desc.get_size(), plus a sub-memory offset; a "
            "plain layout up to its furthest element); a list gives one handle per buffer of a "
            "multi-buffer (sparse) layout. Plain host pointers are refused even where "
            "the device could use system memory: their size cannot be "
            "checked. oneDNN does not free a user USM pointer: keep an int "
            "pointer allocated while the memory uses it.");
    m.def("make_memory",
            [](const dnnl::memory::desc &desc, const engine_object &engine,
                    cl_handles::mem_arg mem_object) {
        cl_mem mem = mem_object.get("mem_object");
        check_user_handle(desc, engine, /*usm=*/false, mem, 0, mem_object.from_object);
        return make(desc, engine, oi::memory_kind::buffer, user_handles {{mem}, {}});
    },
            py::arg("desc"), py::arg("engine"), py::arg("mem_object"),
            "Buffer-based memory for `desc` on the user's `mem_object`, which "
            "oneDNN retains; it must belong to the engine's context and hold the "
            "bytes `desc` addresses (as make_memory).");
    m.def("get_mem_object",
            [](const memory_object &memory) -> py::typing::Optional<cl_handles::py_buffer> {
        if (is_usm(memory.memory))
            return py::reinterpret_borrow<py::typing::Optional<cl_handles::py_buffer>>(py::none());
        return cl_handles::retained_buffer(oi::get_mem_object(memory.memory));
    }, py::arg("memory"),
            "The memory's cl_mem as a new pyopencl.Buffer holding "
            "its own reference; None for USM memory or memory "
            "without storage.");
    m.def("set_mem_object",
            [](memory_object &memory, cl_handles::mem_arg mem_object) {
        cl_mem mem = mem_object.get("mem_object");
        if (is_usm(memory.memory))
            throw_invalid_argument(
                    "set_mem_object(): memory is USM-based; use "
                    "memory.set_data_handle()");
        check_user_handle(memory.desc, memory.engine, false, mem, 0, mem_object.from_object);
        oi::set_mem_object(memory.memory, mem);
    }, py::arg("memory"), py::arg("mem_object"),
            "Point buffer-based `memory` at `mem_object` (retained by oneDNN; "
            "checked to fit the descriptor).");
    m.def("get_memory_kind", [](const memory_object &memory) {
        return oi::get_memory_kind(memory.memory);
    }, py::arg("memory"), "memory_kind.usm or memory_kind.buffer.");
}

} // namespace dnnl_ocl_interop
