#include <pybind11/native_enum.h>

#include "core/objects.hpp"

namespace py = pybind11;

namespace dnnl_ocl_interop {

void bind_stream(py::module_ &m) {
    py::class_<stream_object> stream(m, "stream",
            "An execution queue on an engine (dnnl::stream). OpenCL streams on "
            "a user queue come from dnnl.ocl_interop.make_stream.");
    py::native_enum<dnnl::stream::flags>(stream, "flags", "enum.IntFlag",
            "Stream flags, combinable with |: in_order, out_of_order, default_flags, profiling.")
            .value("in_order", dnnl::stream::flags::in_order)
            .value("out_of_order", dnnl::stream::flags::out_of_order)
            .value("default_flags", dnnl::stream::flags::default_flags)
            // dnnl_stream_profiling (0x4) is missing from dnnl.hpp's enum
            // unless oneDNN has experimental profiling; the C API takes it.
            .value("profiling", static_cast<dnnl::stream::flags>(0x4U))
            .finalize();
    stream.def(py::init([](const engine_object &engine, dnnl::stream::flags flags) {
        py::gil_scoped_release release;
        bool out_of_order = static_cast<unsigned>(flags)
                & static_cast<unsigned>(dnnl::stream::flags::out_of_order);
        return stream_object {engine, dnnl::stream(engine, flags), out_of_order};
    }),
            py::arg("engine"), py::arg_v("flags", dnnl::stream::flags::default_flags, "stream.flags.default_flags"),
            "A stream on `engine` with its own queue (oneDNN creates it).");
    stream.def("wait", [](stream_object &s) {
        py::gil_scoped_release release;
        s.stream.wait();
    }, "Block until all work submitted to the stream has completed. "
       "The GIL is released while waiting.");
    stream.def("get_engine", [](const stream_object &s) { return s.engine; },
            "The engine the stream runs on.");
}

} // namespace dnnl_ocl_interop
