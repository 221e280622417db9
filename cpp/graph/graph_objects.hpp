// Graph objects as Python sees them, and the execute() argument conversion
// shared by compiled_partition.execute and graph.ocl_interop.execute.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CL/cl.h>
#include <pybind11/pybind11.h>

#include <unordered_map>

#include "core/objects.hpp"
#include "common/op_facts.hpp"
#include "common/published.hpp"
#include "oneapi/dnnl/dnnl_graph.hpp"

namespace dnnl_ocl_interop {

namespace profiling {
struct subject; // core/profiling.hpp
}

// Bytes from a tensor's handle to the end of the furthest element its
// logical tensor addresses (its memory size for layouts other than strided).
size_t addressed_bytes(const dnnl::graph::logical_tensor &desc);

// dnnl.graph.op: oneDNN's op and its facts, kept as they are added.
struct op_object : dnnl::graph::op {
    op_object(size_t id, kind k, const std::string &name)
        : op(id, k, name), facts {id, k, {}, {}} {}
    op_object(size_t id, kind k, const std::vector<dnnl::graph::logical_tensor> &inputs,
            const std::vector<dnnl::graph::logical_tensor> &outputs, const std::string &name)
        : op(id, k, inputs, outputs, name), facts {id, k, {}, {}} {
        note(facts.inputs, inputs);
        note(facts.outputs, outputs);
    }
    static void note(std::vector<size_t> &ids,
            const std::vector<dnnl::graph::logical_tensor> &tensors) {
        for (const auto &t : tensors) ids.push_back(t.get_id());
    }
    op_facts facts;
};

// dnnl.graph.graph: oneDNN's graph and the facts of the ops it took, by id.
struct graph_object : dnnl::graph::graph {
    using graph::graph;
    std::unordered_map<size_t, op_facts> ops;
};

// dnnl.graph.partition: oneDNN's partition and the facts of its ops.
struct partition_object : dnnl::graph::partition {
    partition_object(dnnl::graph::partition p, std::vector<op_facts> ops)
        : partition(std::move(p)), ops(std::move(ops)) {}
    std::vector<op_facts> ops;
};

struct tensor_object {
    tensor_object(dnnl::graph::tensor tensor, engine_object engine,
            std::shared_ptr<void> handle_owner = nullptr)
        : engine(std::move(engine))
        , handle_owner(std::move(handle_owner))
        , tensor(std::move(tensor))
        , logical(this->tensor.get_logical_tensor())
        , addressed(addressed_bytes(logical)) {}
    engine_object engine; // first: destroyed after the tensor (see core/objects.hpp)
    // The Python object of a typed pointer the tensor uses (dnnl.usm.allocation).
    std::shared_ptr<void> handle_owner;
    dnnl::graph::tensor tensor;
    // Fixed for the tensor's life; cached for execute(), which checks them
    // on every call.
    dnnl::graph::logical_tensor logical;
    size_t addressed;
};

struct compiled_partition_object {
    compiled_partition_object(dnnl::graph::compiled_partition partition, engine_object engine,
            std::vector<dnnl::graph::logical_tensor> inputs,
            std::vector<dnnl::graph::logical_tensor> outputs);
    engine_object engine; // first: keeps the allocator callable while the partition goes
    dnnl::graph::compiled_partition partition;
    std::vector<dnnl::graph::logical_tensor> inputs, outputs;
    // Each port as compiled (query_logical_tensor), by logical tensor id:
    // oneDNN's kernels address a tensor by this whatever the tensor's own
    // logical tensor says, so execute checks both agree, and that the
    // tensor's storage holds the bytes this addresses.
    struct compiled_port {
        size_t id;
        dnnl::graph::logical_tensor logical;
        size_t bytes;
    };
    std::vector<compiled_port> compiled_ports;
    size_t scratchpad_size;         // bytes of get_scratchpad_logical_tensor()
    bool host_scalar_input = false; // a host-scalar input port (copied to the device first)
    // What a dnnl.profiling recorder calls its executes (oneDNN has no query
    // for a compiled partition's implementation): "partition" unless the
    // package's Python code names it (dnnl.graph.patterns).
    std::string label = "partition";
    // Worked out at the first recorded execute (by any thread:
    // common/published.hpp).
    std::shared_ptr<const profiling::subject> subject() const;

private:
    published<profiling::subject> subject_;
};

struct graph_execution {
    std::vector<dnnl::graph::tensor> inputs, outputs;
};

// Checks and converts execute()'s tensors: one per port, matched by logical
// tensor id, on the partition's engine, with storage of the compiled size.
graph_execution graph_execution_args(const compiled_partition_object &cp,
        const stream_object &stream, pybind11::handle inputs, pybind11::handle outputs);

// Checks and converts execute()'s `scratchpad`: None (nullptr), or a tensor on
// the partition's engine with storage for the partition's scratchpad.
const dnnl::graph::tensor *scratchpad_arg(const compiled_partition_object &cp,
        pybind11::handle scratchpad);

// Executes a checked partition on `stream` after `deps` (GIL released,
// allocator failures raised) and returns oneDNN's event (caller owns it).
cl_event execute_partition(const compiled_partition_object &cp, stream_object &stream,
        const graph_execution &ex, std::vector<cl_event> deps,
        const dnnl::graph::tensor *scratchpad);

void bind_graph(pybind11::module_ &graph); // graph/graph.cpp
void bind_graph_ocl_interop(pybind11::module_ &graph,
        pybind11::module_ &graph_ocl_interop); // graph/graph_ocl_interop.cpp

} // namespace dnnl_ocl_interop
