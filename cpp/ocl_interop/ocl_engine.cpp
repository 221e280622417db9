#include "common/enum_caster.hpp" // first: see the header

#include <vector>

#include "ocl_interop/ocl_bindings.hpp"
#include "common/cache_blobs.hpp"
#include "common/cl_handles.hpp"
#include "common/fork_guard.hpp"
#include "common/py_values.hpp"
#include "core/objects.hpp"
#include "core/ocl_objects.hpp"
#include "oneapi/dnnl/dnnl_ocl.hpp"

namespace py = pybind11;
namespace oi = dnnl::ocl_interop;

namespace dnnl_ocl_interop {

void bind_ocl_interop_engine(py::module_ &m) {
    m.def("make_engine",
            [](cl_handles::device_arg device, cl_handles::context_arg context,
                    const optional_bytes &cache_blob) {
        fork_guard::check();
        cl_device_id dev = device.get("device");
        cl_context ctx = context.get("context");
        if (cache_blob.is_none()) {
            py::gil_scoped_release release; // may build kernels
            return engine_object(oi::make_engine(dev, ctx));
        }
        std::vector<uint8_t> blob = engine_cache_blob_payload(cache_blob, dev);
        py::gil_scoped_release release;
        return engine_object(oi::make_engine(dev, ctx, blob));
    },
            py::arg("device"), py::arg("context"), py::arg("cache_blob") = py::none(),
            "A GPU engine on the user's OpenCL `device` and `context` "
            "(pyopencl objects or int handles). oneDNN retains both, so the "
            "engine keeps them alive. `device` must be an Intel GPU in "
            "`context`. With `cache_blob` (from get_engine_cache_blob), the "
            "engine's kernels are loaded from it instead of being compiled; a "
            "blob that is not one, is damaged, or belongs to another device, "
            "driver or oneDNN version raises dnnl.error (invalid_arguments) "
            "before oneDNN reads it.");
    m.def("get_context",
            [](const engine_object &engine) {
        return cl_handles::retained_context(oi::get_context(engine));
    }, py::arg("engine"),
            "The engine's OpenCL context (a new pyopencl.Context "
            "holding its own reference).");
    m.def("get_device",
            [](const engine_object &engine) {
        return cl_handles::retained_device(oi::get_device(engine));
    }, py::arg("engine"),
            "The engine's OpenCL device (a pyopencl.Device). pyopencl "
            "cannot own a reference to a device it wraps from a handle, "
            "so this one borrows the engine's: root devices need none, "
            "and a sub-device stays valid while the engine (or any "
            "object made on it) lives.");
    m.def("get_engine_cache_blob_id",
            [](cl_handles::device_arg device) {
        fork_guard::check();
        cl_device_id dev = device.get("device");
        return to_bytes(oi::get_engine_cache_blob_id(dev));
    }, py::arg("device"),
            "Identifies the device, driver and oneDNN version a "
            "cache blob is valid for (bytes).");
    m.def("get_engine_cache_blob",
            [](const engine_object &engine) {
        fork_guard::check();
        std::vector<uint8_t> blob;
        {
            py::gil_scoped_release release;
            blob = oi::get_engine_cache_blob(engine);
        }
        if (blob.empty()) return py::bytes(); // nothing compiled: nothing to load
        return to_bytes(cache_blobs::frame(cache_blobs::kind::engine,
                oi::get_engine_cache_blob_id(oi::get_device(engine)), blob));
    }, py::arg("engine"),
            "The engine's compiled kernels as bytes, for "
            "make_engine(device, context, cache_blob): oneDNN's blob behind "
            "a header naming the device's get_engine_cache_blob_id() and a "
            "checksum, which make_engine checks (b'' when oneDNN has none).");
}

} // namespace dnnl_ocl_interop
