// Checks of user storage (cl_mem and USM pointers) against the descriptor
// and engine that will use it: OpenCL and USM probes, made before oneDNN
// could address past the storage or in the wrong context.
#include "common/enum_caster.hpp" // first: see the header

#include "common/storage_checks.hpp"

#include <algorithm>
#include <string>

#include "common/cl_handles.hpp"
#include "common/errors.hpp"
#include "common/fork_guard.hpp"
#include "common/memory_descs.hpp"
#include "oneapi/dnnl/dnnl_ocl.hpp"
#include "common/usm_api.hpp"

namespace py = pybind11;

namespace dnnl_ocl_interop {

namespace {

using cl_handles::read_word;
using cl_handles::readable;

// The ICD dispatch table every cl_mem of `context`'s platform starts with.
void *mem_dispatch_of(cl_context context) {
    void *dispatch = *reinterpret_cast<void *const *>(context);
    return dispatch;
}

// Whether an int handle given as a cl_mem can be one of `context`'s platform:
// an OpenCL object starts with its platform's dispatch table (the ICD rule),
// so a USM pointer of another context, host memory or an unmapped address is
// told apart without handing it to the driver (which would dereference it;
// the CPU runtime crashes). True when the memory cannot be read back (some
// sandboxes refuse process_vm_readv): the handle is then taken at its word.
bool may_be_cl_mem(cl_context context, const void *handle) {
    void *word = nullptr;
    switch (read_word(handle, word)) {
        case readable::no: return false;
        case readable::unknown: return true;
        case readable::yes: break;
    }
    if (word == mem_dispatch_of(context)) return true;
    // A platform whose objects of different kinds had different tables:
    // compare with a real cl_mem of the context.
    cl_int status = CL_SUCCESS;
    cl_mem probe = clCreateBuffer(context, CL_MEM_READ_WRITE, 1, nullptr, &status);
    if (status != CL_SUCCESS || !probe) return true;
    void *probe_dispatch = *reinterpret_cast<void *const *>(probe);
    clReleaseMemObject(probe);
    return word == probe_dispatch;
}

} // namespace

bool is_usm(const dnnl::memory &memory) {
    const_dnnl_memory_desc_t md = nullptr;
    dnnl_format_kind_t kind = dnnl_format_kind_undef;
    if (dnnl_memory_get_memory_desc(memory.get(), &md) == dnnl_success
            && dnnl_memory_desc_query(md, dnnl_query_format_kind, &kind) == dnnl_success
            && kind == dnnl_format_kind_host_scalar)
        return false; // on no engine
    if (memory.get_engine().get_kind() != dnnl::engine::kind::gpu) return false;
    return dnnl::ocl_interop::get_memory_kind(memory) == dnnl::ocl_interop::memory_kind::usm;
}

std::shared_ptr<void> allocate_addressed_buffer(const dnnl::memory::desc &desc,
        const dnnl::engine &engine, void *&handle) {
    if (engine.get_kind() != dnnl::engine::kind::gpu) return nullptr;
    size_t needed = std::max(addressed_bytes(desc.get()), mapped_bytes(desc.get())); // map_data too
    if (needed <= desc.get_size()) return nullptr;
    cl_int err = CL_SUCCESS;
    cl_mem buffer = clCreateBuffer(dnnl::ocl_interop::get_context(engine), CL_MEM_READ_WRITE,
            needed, nullptr, &err);
    if (err != CL_SUCCESS || !buffer)
        throw status_error(dnnl_out_of_memory,
                "could not create a memory object: a buffer of " + std::to_string(needed)
                        + " bytes (the descriptor's sub-memory offset or zero strides "
                          "included) failed: "
                        + cl_error_name(err) + " (" + std::to_string(err) + ")",
                err);
    handle = buffer;
    return std::shared_ptr<void>(buffer,
            [](void *b) { clReleaseMemObject(static_cast<cl_mem>(b)); });
}

void check_mappable(const dnnl::memory &memory, const dnnl::memory::desc &desc, int index,
        const char *what) {
    if (memory.get_engine().get_kind() != dnnl::engine::kind::gpu
            || desc.get_format_kind() == dnnl::memory::format_kind::host_scalar)
        return;
    size_t mapped = mapped_bytes(desc.get(), index);
    void *handle = memory.get_data_handle(index);
    if (!handle || mapped == 0) return;
    size_t held = 0;
    if (is_usm(memory)) {
        cl_context context = dnnl::ocl_interop::get_context(memory.get_engine());
        // Host and shared USM map in place (oneDNN hands the pointer back).
        if (usm::pointer_type(context, handle) != CL_MEM_TYPE_DEVICE_INTEL) return;
        held = usm::bytes_available(context, handle);
    } else
        check_cl(clGetMemObjectInfo(static_cast<cl_mem>(handle), CL_MEM_SIZE, sizeof(held), &held,
                         nullptr),
                "clGetMemObjectInfo(CL_MEM_SIZE)");
    if (held < mapped)
        throw_invalid_argument(std::string(what) + ": oneDNN maps " + std::to_string(mapped)
                + " bytes of this layout (get_size() and the sub-memory offset), more than the "
                  "storage's "
                + std::to_string(held) + " (a strided view or sub-memory near its storage's "
                  "end): read it through a reorder into a dense memory");
}

void check_user_handle(const dnnl::memory::desc &desc, const dnnl::engine &engine, bool usm,
        void *handle, int index, bool known_mem_object) {
    fork_guard::check(); // every memory creation and set_data_handle starts here
    if (handle == DNNL_MEMORY_ALLOCATE || handle == DNNL_MEMORY_NONE) return;
    if (engine.get_kind() != dnnl::engine::kind::gpu) return;
    cl_context context = dnnl::ocl_interop::get_context(engine);
    size_t needed = addressed_bytes(desc.get(), index);
    auto needs = [&] { // built for a refusal only: this check runs on every memory creation
        return (index == 0 ? std::string("the memory descriptor needs ")
                           : "buffer " + std::to_string(index) + " of the memory descriptor needs ")
                + std::to_string(needed);
    };
    if (usm) {
        size_t available = usm::bytes_available(context, handle);
        if (available == 0)
            throw_invalid_argument(
                    "handle is not a USM allocation of the "
                    "engine's OpenCL context");
        if (available < needed)
            throw_invalid_argument("USM allocation has " + std::to_string(available)
                    + " bytes from the handle on, but " + needs());
        return;
    }
    // An int handle cannot be validated as a cl_mem without dereferencing it,
    // but the likeliest mistake, a USM pointer, can be recognized first. A
    // pyopencl memory object holds a cl_mem by construction.
    if (!known_mem_object && usm::is_usm_pointer(context, handle))
        throw_invalid_argument(
                "handle is a USM pointer, not a cl_mem: use "
                "memory_kind.usm for USM memory");
    if (!known_mem_object && !may_be_cl_mem(context, handle))
        throw_invalid_argument(
                "handle is not a cl_mem of the engine's OpenCL platform "
                "(a USM pointer of another context, or a released or "
                "wrong handle?)");
    auto mem = static_cast<cl_mem>(handle);
    cl_context mem_context = nullptr;
    size_t size = 0;
    check_cl(clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof(mem_context), &mem_context, nullptr),
            "clGetMemObjectInfo(CL_MEM_CONTEXT)");
    if (mem_context != context)
        throw_invalid_argument(
                "cl_mem belongs to another OpenCL context than "
                "the engine's");
    check_cl(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof(size), &size, nullptr),
            "clGetMemObjectInfo(CL_MEM_SIZE)");
    if (size < needed)
        throw_invalid_argument("cl_mem has " + std::to_string(size) + " bytes, but " + needs());
}

} // namespace dnnl_ocl_interop
