// What the binding keeps of a graph op: oneDNN's op answers only its id and
// kind, and a partition only its ops' ids, so compile() could not tell which
// op reads or writes a port (workarounds::known_wrong_partition asks).
#pragma once

#include <cstddef>
#include <vector>

#include "oneapi/dnnl/dnnl_graph.hpp"

namespace dnnl_ocl_interop {

struct op_facts {
    size_t id;
    dnnl::graph::op::kind kind;
    std::vector<size_t> inputs, outputs; // logical tensor ids, in order
};

} // namespace dnnl_ocl_interop
