#include "common/enum_caster.hpp" // first: see the header

#include <sstream>

#include <pybind11/native_enum.h>

#include "common/errors.hpp"
#include "common/fork_guard.hpp"
#include "core/objects.hpp"
#include "oneapi/dnnl/dnnl.hpp"

namespace py = pybind11;

namespace dnnl_ocl_interop {

const char *engine_kind_name(dnnl::engine::kind kind) {
    switch (kind) {
        case dnnl::engine::kind::cpu: return "cpu";
        case dnnl::engine::kind::gpu: return "gpu";
        default: return "any";
    }
}

void bind_engine(py::module_ &m) {
    py::class_<engine_object> engine(m, "engine",
            "An execution device for oneDNN (dnnl::engine). OpenCL engines come "
            "from dnnl.ocl_interop.make_engine or from engine(kind.gpu, index).");
    {
        using E = dnnl::engine::kind; // members from the headers (core/enums.cpp)
#define VALUE(member) .value(#member, E::member)
        py::native_enum<E>(engine, "kind", "enum.Enum", "Engine kinds: any, cpu, gpu.")
#include "onednn_enum_engine_kind.inc"
                .finalize();
#undef VALUE
    }
    engine.def(py::init([](dnnl::engine::kind kind, size_t index) {
        fork_guard::check();
        py::gil_scoped_release release; // queries and may set up the device
        return engine_object(dnnl::engine(kind, index));
    }),
            py::arg("kind"), py::arg("index"),
            "Engine on the `index`-th device of `kind` that oneDNN enumerates "
            "itself (for OpenCL: Intel GPUs of Intel platforms).");
    engine.def_static("get_count", [](dnnl::engine::kind kind) {
        fork_guard::check();
        return dnnl::engine::get_count(kind);
    }, py::arg("kind"), "Number of devices of `kind` oneDNN can use.");
    engine.def("get_kind", [](const engine_object &e) { return e.get_kind(); },
            "The engine's kind.");
    engine.def("__eq__", [](const engine_object &a, const engine_object &b) {
        return a.get() == b.get();
    }, py::is_operator());
    engine.def("__hash__",
            [](const engine_object &e) { return std::hash<const void *>()(e.get()); });
    engine.def("__repr__", [](const engine_object &e) {
        std::ostringstream os;
        os << "<dnnl.engine " << engine_kind_name(e.get_kind()) << " at "
           << static_cast<const void *>(e.get()) << ">";
        return os.str();
    });
}

} // namespace dnnl_ocl_interop
