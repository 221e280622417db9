#include "common/enum_caster.hpp" // first: see the header

#include <string>

#include "arrays/arrays_bindings.hpp"
#include "common/errors.hpp"
#include "common/fork_guard.hpp"
#include "common/instances.hpp"
#include "common/reasons.hpp"
#include "core/objects.hpp"
#include "core/primitive_objects.hpp"
#include "core/profiling.hpp"
#include "graph/graph_objects.hpp"
#include "ocl_interop/ocl_bindings.hpp"
#include "primitives/family.hpp"
#include "usm/usm_bindings.hpp"

namespace py = pybind11;

// The module runs without the GIL on a free-threaded Python: its shared
// state is immutable after import or guarded (docs/api.md, "Threads and the
// GIL", has the table).
PYBIND11_MODULE(_core, m, py::mod_gil_not_used()) {
    m.doc()
            = "oneDNN with OpenCL interoperability (compiled part of "
              "dnnl_ocl_interop; import dnnl_ocl_interop instead)";
    using namespace dnnl_ocl_interop;
    // Before the module's first oneDNN call: the user's verbose setting as
    // oneDNN will read it, and the interposer when asked for (common/reasons).
    std::string verbose_warning = verbose::install();
    if (!verbose_warning.empty()
            && PyErr_WarnEx(PyExc_RuntimeWarning, verbose_warning.c_str(), 1) != 0)
        throw py::error_already_set();
    bind_errors(m);
    fork_guard::install();
    bind_library(m);
    bind_enums(m);
    bind_engine(m);
    bind_stream(m);
    bind_memory(m);
    bind_memory_dlpack(m);
    bind_attributes(m);
    bind_primitive_base(m);
    bind_convolution_like(m);
    bind_normalizations(m);
    bind_elementwise(m);
    bind_spatial(m);
    bind_rnn(m);
    bind_data_movement(m);
    auto ocl_interop = m.def_submodule("ocl_interop", "Mirrors dnnl::ocl_interop.");
    bind_ocl_interop_engine(ocl_interop);
    bind_ocl_interop_stream(ocl_interop);
    bind_ocl_interop_memory(ocl_interop);
    bind_ocl_interop_execute(ocl_interop);
    profiling::bind(m); // dnnl.profiling's compiled side
    auto graph = m.def_submodule("graph", "Mirrors dnnl::graph.");
    bind_graph(graph);
    auto graph_ocl_interop
            = graph.def_submodule("ocl_interop", "Mirrors dnnl::graph::ocl_interop.");
    bind_graph_ocl_interop(graph, graph_ocl_interop);
    auto usm = m.def_submodule("usm",
            "Intel unified shared memory (cl_intel_unified_shared_memory).");
    bind_usm(usm);
    bind_usm_kernel_args(usm);
    auto arrays = m.def_submodule("_arrays",
            "The compiled part under dnnl.arrays and dnnl.ops: memory kept on pyopencl "
            "arrays and ops' launches.");
    bind_arrays(arrays);

    // Submodules are importable by name (`from ._core.usm import *`), and
    // each module's __all__ lists its public names, submodules left out (the
    // package's Python modules of the same names wrap them).
    py::dict sys_modules = py::module_::import("sys").attr("modules");
    for (py::module_ mod : {ocl_interop, graph, graph_ocl_interop, usm})
        sys_modules[mod.attr("__name__")] = mod;
    for (py::module_ mod : {m, ocl_interop, graph, graph_ocl_interop, usm}) {
        py::list names;
        for (auto item : mod.attr("__dict__").cast<py::dict>()) {
            std::string name = py::str(item.first);
            if (name.empty() || name[0] == '_' || PyModule_Check(item.second.ptr())) continue;
            names.append(name);
        }
        names.attr("sort")();
        mod.attr("__all__") = names;
    }
    instances::guard_new(m); // last: every class is made
}
