#include <pybind11/native_enum.h>

#include "ocl_interop/ocl_interop.hpp"
#include "common/cl_handles.hpp"
#include "common/errors.hpp"
#include "core/objects.hpp"
#include "oneapi/dnnl/dnnl_ocl.hpp"

namespace py = pybind11;
namespace oi = dnnl::ocl_interop;

namespace dnnl_ocl_interop {
namespace {

memory_object make(const dnnl::memory::desc &desc, const engine_object &engine,
        oi::memory_kind kind, py::handle handle) {
    auto handles = memory_handles_from(handle, desc, engine, kind == oi::memory_kind::usm,
            /*accept_mem_object=*/kind == oi::memory_kind::buffer);
    return memory_object(oi::make_memory(desc, engine, kind, handles), engine);
}

} // namespace

void bind_ocl_interop_memory(py::module_ &m) {
    py::native_enum<oi::memory_kind>(m, "memory_kind", "enum.Enum",
            "How OpenCL memory is held: USM pointers or cl_mem buffers.")
            .value("usm", oi::memory_kind::usm)
            .value("buffer", oi::memory_kind::buffer)
            .finalize();

    m.def("make_memory", [](const dnnl::memory::desc &desc, const engine_object &engine,
                                 oi::memory_kind kind, py::handle handle) {
        return make(desc, engine, kind, handle);
    },
            py::arg("desc"), py::arg("engine"), py::arg("kind"),
            py::arg("handle") = memory_allocate,
            "Memory of `kind` for `desc` on `engine`. `handle`: "
            "dnnl.MEMORY_ALLOCATE (oneDNN allocates), dnnl.MEMORY_NONE, a USM "
            "pointer (int) of the engine's context for kind.usm, or a cl_mem of "
            "the engine's context for kind.buffer. User storage must hold "
            "desc.get_size() bytes; a list gives one handle per buffer of a "
            "multi-buffer (sparse) layout. Plain host pointers are refused even where "
            "the device could use system memory: their size cannot be "
            "checked. oneDNN does not free a user USM pointer, so "
            "keep it allocated while the memory uses it.");
    m.def("make_memory", [](const dnnl::memory::desc &desc, const engine_object &engine,
                                 cl_handles::mem_arg mem_object) {
        return make(desc, engine, oi::memory_kind::buffer,
                py::cast(reinterpret_cast<uintptr_t>(mem_object.get("mem_object"))));
    },
            py::arg("desc"), py::arg("engine"), py::arg("mem_object"),
            "Buffer-based memory for `desc` on the user's `mem_object`, which "
            "oneDNN retains; it must belong to the engine's context and hold "
            "desc.get_size() bytes.");
    m.def("get_mem_object", [](const memory_object &memory)
                                     -> py::typing::Optional<cl_handles::py_buffer> {
        if (is_usm(memory.memory))
            return py::reinterpret_borrow<py::typing::Optional<cl_handles::py_buffer>>(py::none());
        return cl_handles::retained_buffer(oi::get_mem_object(memory.memory));
    }, py::arg("memory"), "The memory's cl_mem as a new pyopencl.Buffer holding "
                          "its own reference; None for USM memory or memory "
                          "without storage.");
    m.def("set_mem_object", [](memory_object &memory, cl_handles::mem_arg mem_object) {
        cl_mem mem = mem_object.get("mem_object");
        if (is_usm(memory.memory))
            throw_invalid_argument("set_mem_object(): memory is USM-based; use "
                                   "memory.set_data_handle()");
        check_user_handle(memory.desc, memory.engine, false, mem);
        oi::set_mem_object(memory.memory, mem);
    }, py::arg("memory"), py::arg("mem_object"),
            "Point buffer-based `memory` at `mem_object` (retained by oneDNN; "
            "checked to fit the descriptor).");
    m.def("get_memory_kind", [](const memory_object &memory) {
        return oi::get_memory_kind(memory.memory);
    }, py::arg("memory"), "memory_kind.usm or memory_kind.buffer.");
}

} // namespace dnnl_ocl_interop
