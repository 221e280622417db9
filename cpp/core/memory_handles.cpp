// Memory handles given from Python (ints, typed pointers, pyopencl memory
// objects, MEMORY_ALLOCATE / MEMORY_NONE), each checked against the storage
// it names (common/storage_checks).
#include "common/enum_caster.hpp" // first: see the header

#include <algorithm>
#include <string>

#include "common/cl_handles.hpp"
#include "common/errors.hpp"
#include "common/py_values.hpp"
#include "core/objects.hpp"
#include "common/storage_checks.hpp"

namespace py = pybind11;

namespace dnnl_ocl_interop {

void *memory_handle_from(py::handle obj, const char *param, bool accept_mem_object,
        bool *mem_object, py::object *owner) {
    if (mem_object) *mem_object = false;
    void *handle = nullptr;
    if (is_int(obj)) { // first: the usual handle, and the cheapest test
        if (!int_to_pointer(obj, handle))
            throw_invalid_argument(std::string(param) + " must be an int between 0 and 2**64-1");
        return handle;
    }
    if (py::isinstance<special_handle>(obj)) return obj.cast<special_handle &>().value;
    if (accept_mem_object && cl_handles::is_mem_object(obj)) {
        if (mem_object) *mem_object = true;
        return cl_handles::to_mem(obj, param);
    }
    if (pointer_from(obj, param, handle, owner)) return handle;
    throw_type_error(param,
            accept_mem_object ? "an int handle or typed pointer, a pyopencl memory object, "
                                "dnnl.MEMORY_ALLOCATE or dnnl.MEMORY_NONE"
                              : "an int handle or typed pointer, dnnl.MEMORY_ALLOCATE or "
                                "dnnl.MEMORY_NONE",
            obj);
}

user_handles memory_handles_from(py::handle obj, const dnnl::memory::desc &desc,
        const dnnl::engine &engine, bool usm, bool accept_mem_object) {
    user_handles result;
    auto add = [&](py::handle item, const std::string &param, int index) {
        bool mem_object = false;
        py::object owner;
        void *handle
                = memory_handle_from(item, param.c_str(), accept_mem_object, &mem_object, &owner);
        check_user_handle(desc, engine, usm, handle, index, mem_object);
        result.handles.push_back(handle);
        result.owners.push_back(keep_alive(std::move(owner)));
    };
    if (py::isinstance<py::list>(obj) || py::isinstance<py::tuple>(obj)) {
        auto items = py::reinterpret_borrow<py::sequence>(obj);
        if (items.size() == 0)
            throw_invalid_argument("handles: the list is empty (give one handle per buffer)");
        for (size_t i = 0; i < items.size(); ++i)
            add(items[i], "handles[" + std::to_string(i) + "]", static_cast<int>(i));
        return result;
    }
    add(obj, "handle", 0);
    void *handle = result.handles[0];
    // A special handle stands for every buffer of the layout.
    if (handle == DNNL_MEMORY_ALLOCATE || handle == DNNL_MEMORY_NONE)
        for (int i = 1; i < std::max(desc.get_num_handles(), 1); ++i) {
            result.handles.push_back(handle);
            result.owners.emplace_back();
        }
    if (handle == DNNL_MEMORY_ALLOCATE && !usm) // (USM: allocated by make_memory)
        if (auto buffer = allocate_addressed_buffer(desc, engine, result.handles[0]))
            result.owners[0] = std::move(buffer);
    return result;
}

void check_buffer_index(const memory_object &memory, int index) {
    if (index < 0 || index >= memory.num_handles)
        throw_invalid_argument("index " + std::to_string(index) + " is not a buffer of the "
                "memory (its layout has " + std::to_string(memory.num_handles) + ")");
}

} // namespace dnnl_ocl_interop
