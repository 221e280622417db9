// Library-wide facts: oneDNN's version and how this extension was built.
#include "bindings.hpp"
#include "oneapi/dnnl/dnnl.hpp"

namespace py = pybind11;

#ifndef DNNL_OCL_INTEROP_BUILD_TYPE
#define DNNL_OCL_INTEROP_BUILD_TYPE "unknown"
#endif

namespace dnnl_ocl_interop {

void bind_library(py::module_ &m) {
    m.def("version", [] {
        const dnnl_version_t *v = dnnl::version();
        return py::make_tuple(v->major, v->minor, v->patch, std::string(v->hash));
    }, "(major, minor, patch, commit hash) of the oneDNN library in use.");
    m.attr("build_type") = DNNL_OCL_INTEROP_BUILD_TYPE;
    m.def("set_primitive_cache_capacity", &dnnl::set_primitive_cache_capacity,
            py::arg("capacity"),
            "How many primitives oneDNN keeps cached (0 empties and disables the cache).");
    m.def("get_primitive_cache_capacity", &dnnl::get_primitive_cache_capacity);
}

} // namespace dnnl_ocl_interop
