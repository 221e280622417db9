// Library-wide facts: oneDNN's version and how this extension was built.
#include "common/enum_caster.hpp" // first: see the header

#include "core/verbose.hpp"
#include "core/objects.hpp"
#include "oneapi/dnnl/dnnl.hpp"

#include <dlfcn.h>

namespace py = pybind11;

#ifndef DNNL_OCL_INTEROP_BUILD_TYPE
#define DNNL_OCL_INTEROP_BUILD_TYPE "unknown"
#endif
#ifndef DNNL_OCL_INTEROP_VERSION
#define DNNL_OCL_INTEROP_VERSION "unknown"
#endif

namespace dnnl_ocl_interop {

#ifdef DNNL_OCL_INTEROP_TEST_HOOKS
constexpr bool test_hooks_built = true;
#else
constexpr bool test_hooks_built = false;
#endif

void bind_library(py::module_ &m) {
    // dnnl::version_t; also a sequence (major, minor, patch, hash) as the
    // tuple version() returned before.
    py::class_<dnnl_version_t>(m, "version_t",
            "oneDNN's version_t: major, minor, patch, hash, cpu_runtime, gpu_runtime "
            "(runtimes as RUNTIME_* values).")
            .def_readonly("major", &dnnl_version_t::major, "Major version.")
            .def_readonly("minor", &dnnl_version_t::minor, "Minor version.")
            .def_readonly("patch", &dnnl_version_t::patch, "Patch version.")
            .def_property_readonly("hash",
                    [](const dnnl_version_t &v) { return std::string(v.hash); },
                    "Git commit hash of the build.")
            .def_readonly("cpu_runtime", &dnnl_version_t::cpu_runtime, "CPU runtime (RUNTIME_*).")
            .def_readonly("gpu_runtime", &dnnl_version_t::gpu_runtime, "GPU runtime (RUNTIME_*).")
            .def("__len__", [](const dnnl_version_t &) { return 4; })
            .def("__getitem__",
                    [](const dnnl_version_t &v, py::object index) -> py::object {
        return py::make_tuple(v.major, v.minor, v.patch, std::string(v.hash))[index];
    }, py::arg("index"),
                    "(major, minor, patch, hash)[index], as the tuple version() "
                    "returned before.")
            .def("__repr__", [](const dnnl_version_t &v) {
        return "version_t(major=" + std::to_string(v.major) + ", minor=" + std::to_string(v.minor)
                + ", patch=" + std::to_string(v.patch) + ", hash='" + v.hash
                + "', cpu_runtime=" + std::to_string(v.cpu_runtime)
                + ", gpu_runtime=" + std::to_string(v.gpu_runtime) + ")";
    });
    m.def("version", [] { return dnnl::version(); }, py::return_value_policy::reference,
            "The oneDNN library's version_t (indexable as (major, minor, patch, hash)).");
    m.attr("RUNTIME_NONE") = DNNL_RUNTIME_NONE;
    m.attr("RUNTIME_SEQ") = DNNL_RUNTIME_SEQ;
    m.attr("RUNTIME_OMP") = DNNL_RUNTIME_OMP;
    m.attr("RUNTIME_TBB") = DNNL_RUNTIME_TBB;
    m.attr("RUNTIME_THREADPOOL") = DNNL_RUNTIME_THREADPOOL;
    m.attr("RUNTIME_OCL") = DNNL_RUNTIME_OCL;
    m.attr("RUNTIME_SYCL") = DNNL_RUNTIME_SYCL;
    m.attr("build_type") = DNNL_OCL_INTEROP_BUILD_TYPE;
    m.attr("__version__") = DNNL_OCL_INTEROP_VERSION;
    m.def("library_path", [] {
        // Where the dynamic loader found libdnnl (bundled in the package or a
        // system install): the file that defines dnnl_version.
        Dl_info info {};
        if (dladdr(reinterpret_cast<void *>(&dnnl_version), &info) == 0
                || info.dli_fname == nullptr)
            return std::string();
        return std::string(info.dli_fname);
    }, "Path of the libdnnl shared library this module uses ('' if unknown).");
    m.attr("_test_hooks") = py::bool_(test_hooks_built);
    bind_known_problems(m);
    m.def("set_primitive_cache_capacity", &dnnl::set_primitive_cache_capacity, py::arg("capacity"),
            "How many primitives oneDNN keeps cached (0 empties and disables the cache).");
    m.def("get_primitive_cache_capacity", &dnnl::get_primitive_cache_capacity,
            "How many primitives oneDNN keeps cached.");
    verbose::bind(m); // set_verbose, and dnnl.verbose's regions
    // dnnl.hpp returns this setter's status; here a failure raises, as
    // every other call does.
    m.def("set_jit_dump",
            [](int enable) {
        dnnl::error::wrap_c_api(dnnl_set_jit_dump(enable), "could not set the jit dump mode");
    }, py::arg("enable"),
            "Whether oneDNN writes the binaries of the GPU kernels it generates to "
            "files in the current directory (as ONEDNN_JIT_DUMP; nonzero: on).");
}

} // namespace dnnl_ocl_interop
