#include "bindings.hpp"
#include "core/primitive_objects.hpp"
#include "graph/graph_objects.hpp"

PYBIND11_MODULE(_core, m) {
    m.doc() = "oneDNN with OpenCL interoperability (compiled part of "
              "dnnl_ocl_interop; import dnnl_ocl_interop instead)";
    using namespace dnnl_ocl_interop;
    bind_errors(m);
    bind_library(m);
    bind_engine(m);
    bind_stream(m);
    bind_memory(m);
    bind_attributes(m);
    bind_primitive_base(m);
    bind_primitives(m);
    auto ocl_interop = m.def_submodule("ocl_interop", "Mirrors dnnl::ocl_interop.");
    bind_ocl_interop_engine(ocl_interop);
    bind_ocl_interop_stream(ocl_interop);
    bind_ocl_interop_memory(ocl_interop);
    bind_ocl_interop_execute(ocl_interop);
    auto graph = m.def_submodule("graph", "Mirrors dnnl::graph.");
    bind_graph(graph);
    auto graph_ocl_interop = graph.def_submodule("ocl_interop", "Mirrors dnnl::graph::ocl_interop.");
    bind_graph_ocl_interop(graph, graph_ocl_interop);
    auto usm = m.def_submodule("usm", "Intel unified shared memory (cl_intel_unified_shared_memory).");
    bind_usm(usm);
}
