// dnnl.memory.__dlpack__ / __dlpack_device__: host and shared USM memory seen
// by NumPy (and any DLPack consumer) as kDLCPU data, without a copy.
//
// The capsule's DLManagedTensor owns a copy of the memory object, so the
// memory (and storage oneDNN allocated for it) lives as long as the consumer's
// view. Everything else is refused with BufferError, as the array API asks of
// __dlpack__, saying how to get the data instead.

#include "common/enum_caster.hpp" // first: see the header

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/stl.h>

#include "common/data_types.hpp"
#include "common/dlpack.hpp"
#include "common/errors.hpp"
#include "common/storage_checks.hpp"
#include "common/usm_api.hpp"
#include "core/objects.hpp"
#include "oneapi/dnnl/dnnl_ocl.hpp"
#include "usm/usm_bindings.hpp"

namespace py = pybind11;
using dnnl::memory;

namespace dnnl_ocl_interop {
namespace {

// What the capsule's tensor points into, kept alive until the consumer (or
// the unconsumed capsule) calls the deleter. One of the two managed
// structures is handed out, as the consumer asked.
struct exported_tensor {
    explicit exported_tensor(const memory_object &m) : owner(m) {}
    memory_object owner;
    std::vector<int64_t> shape, strides;
    dlpack::DLManagedTensor managed {};
    dlpack::DLManagedTensorVersioned versioned {};
};

// No Python objects are touched: the deleter may run on any thread, with or
// without the GIL (an engine's graph-allocator callables take it themselves).
void delete_exported(dlpack::DLManagedTensor *self) {
    delete static_cast<exported_tensor *>(self->manager_ctx);
}
void delete_exported_versioned(dlpack::DLManagedTensorVersioned *self) {
    delete static_cast<exported_tensor *>(self->manager_ctx);
}

// A capsule nobody consumed still owns its tensor; a consumed one was
// renamed by its consumer, who calls the deleter.
template <typename Managed>
void destroy_capsule(PyObject *capsule, const char *name) {
    if (!PyCapsule_IsValid(capsule, name)) return; // consumed
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    auto *managed = static_cast<Managed *>(PyCapsule_GetPointer(capsule, name));
    if (managed)
        managed->deleter(managed);
    else
        PyErr_WriteUnraisable(capsule);
    PyErr_Restore(type, value, traceback);
}
void capsule_destructor(PyObject *capsule) {
    destroy_capsule<dlpack::DLManagedTensor>(capsule, dlpack::capsule_name);
}
void versioned_capsule_destructor(PyObject *capsule) {
    destroy_capsule<dlpack::DLManagedTensorVersioned>(capsule, dlpack::versioned_capsule_name);
}

[[noreturn]] void refuse(const std::string &why) {
    throw py::buffer_error("__dlpack__: " + why);
}

// DLPack's type of a oneDNN data type (the data-type table's), or false when
// none is exported.
bool dl_data_type(memory::data_type t, dlpack::DLDataType &out) {
    const data_types::row *r = data_types::find(t);
    if (!r || r->dlpack_code == data_types::no_dlpack) return false;
    out = {r->dlpack_code, static_cast<uint8_t>(r->bits), 1};
    return true;
}

// "f16, bf16, ... and s8": the types dl_data_type exports, for messages.
std::string exported_types() {
    std::vector<const char *> names;
    for (const auto &r : data_types::table())
        if (r.in_memory && r.dlpack_code != data_types::no_dlpack) names.push_back(r.name);
    std::string list;
    for (size_t i = 0; i < names.size(); ++i)
        list += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + std::string(names[i]);
    return list;
}

// The host address of the memory's storage, or BufferError saying why the
// host cannot address it and how to copy it instead.
void *host_address(const memory_object &m) {
    void *handle = m.memory.get_data_handle();
    if (!handle) refuse("the memory has no storage (dnnl.MEMORY_NONE)");
    if (!is_usm(m.memory))
        refuse("the memory is buffer-based: a cl_mem has no host address. Map it "
               "(memory.map_data() returns a NumPy array, itself DLPack-capable, "
               "valid until unmap_data) or copy it with dnnl.arrays.read(memory)");
    cl_context context = dnnl::ocl_interop::get_context(m.engine);
    switch (usm::pointer_type(context, handle)) {
        case CL_MEM_TYPE_HOST_INTEL:
        case CL_MEM_TYPE_SHARED_INTEL: return handle;
        case CL_MEM_TYPE_DEVICE_INTEL:
            refuse("the memory is device USM, which the host cannot address: copy "
                   "it with dnnl.arrays.read(memory) (or dnnl.usm.memcpy), or make "
                   "the memory on host or shared USM");
        default:
            refuse("the memory's USM pointer is not an allocation of the engine's "
                   "OpenCL context (was it freed?)");
    }
}

py::capsule export_memory(const memory_object &m, bool versioned) {
    const memory::desc &desc = m.desc;
    if (desc.get_format_kind() != memory::format_kind::blocked || desc.get_inner_nblks() != 0)
        refuse("the memory's layout is not plain (blocked, opaque or sparse), which "
               "DLPack cannot describe: reorder it to a plain layout first (dnnl.reorder)");
    dlpack::DLDataType dtype {};
    if (!dl_data_type(desc.get_data_type(), dtype))
        refuse("data type " + std::string(data_types::name(desc.get_data_type()))
                + " is not exported (" + exported_types() + " are)");
    void *data = host_address(m);

    auto owned = std::make_unique<exported_tensor>(m);
    for (auto d : desc.get_dims()) owned->shape.push_back(d);
    for (auto s : desc.get_strides()) owned->strides.push_back(s);
    dlpack::DLTensor t {};
    t.data = data;
    t.device = {dlpack::kDLCPU, 0};
    t.ndim = static_cast<int32_t>(owned->shape.size());
    t.dtype = dtype;
    t.shape = owned->shape.data();
    t.strides = owned->strides.data();
    t.byte_offset = static_cast<uint64_t>(desc.get_submemory_offset())
            * memory::data_type_size(desc.get_data_type());

    PyObject *capsule = nullptr;
    if (versioned) {
        auto &v = owned->versioned;
        v.version = dlpack::version;
        v.manager_ctx = owned.get();
        v.deleter = delete_exported_versioned;
        v.flags = 0; // writable, not a copy
        v.dl_tensor = t;
        capsule = PyCapsule_New(&v, dlpack::versioned_capsule_name, versioned_capsule_destructor);
    } else {
        auto &u = owned->managed;
        u.dl_tensor = t;
        u.manager_ctx = owned.get();
        u.deleter = delete_exported;
        capsule = PyCapsule_New(&u, dlpack::capsule_name, capsule_destructor);
    }
    if (!capsule) throw py::error_already_set();
    owned.release(); // the capsule (then its consumer) owns it now
    return py::reinterpret_steal<py::capsule>(capsule);
}

} // namespace

void bind_memory_dlpack(py::module_ &m) {
    auto mem = py::reinterpret_borrow<py::class_<memory_object>>(m.attr("memory"));
    mem.def("__dlpack__",
            [](const memory_object &self, py::object stream,
                    std::optional<std::pair<int, int>> max_version,
                    std::optional<std::pair<int, int>> dl_device, std::optional<bool> copy) {
        if (!stream.is_none())
            refuse("stream must be None: the data is exported as kDLCPU, which "
                   "has no streams (wait for the device's work first)");
        if (dl_device && (dl_device->first != dlpack::kDLCPU || dl_device->second != 0))
            refuse("dl_device must be (kDLCPU=1, 0): host-visible memory is exported "
                   "to the CPU only");
        if (copy && *copy)
            refuse("copy=True: the export never copies; copy with dnnl.arrays.read(memory)");
        // DLPack 1.x consumers say so with max_version; others get the
        // unversioned capsule they know.
        return export_memory(self, max_version && max_version->first >= 1);
    },
            py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
            py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
            "DLPack export of host or shared USM memory as kDLCPU data, without a "
            "copy: numpy.from_dlpack(memory) views it, writable. A "
            "\"dltensor_versioned\" capsule (DLPack 1.0, flags 0) when max_version "
            "is 1.0 or later, else an unversioned \"dltensor\" one. The capsule keeps the memory "
            "alive (not a user USM allocation "
            "the memory does not own). Only plain layouts of f32, f16, bf16 "
            "(kDLBfloat), f64, s8, u8, s32 and s64. BufferError for device USM "
            "and buffer-based memory (copy with dnnl.arrays.read, or map buffer "
            "memory: map_data's array supports DLPack), memory without storage, "
            "other layouts and types, a stream other than None, another "
            "dl_device, or copy=True. Does not wait for the device: wait on the "
            "stream that wrote the memory first.");
    mem.def("__dlpack_device__",
            [](const memory_object &self) {
        host_address(self);
        return std::make_pair(dlpack::kDLCPU, 0);
    },
            "(1, 0): kDLCPU, for memory __dlpack__ exports (host or shared USM); "
            "BufferError, as __dlpack__ gives, for memory it refuses.");
}

} // namespace dnnl_ocl_interop
