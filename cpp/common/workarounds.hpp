// The binding's rules for the oneDNN problems of the registry
// (common/known_problems): the checks the binding calls where each problem
// would show. Every check asks the registry whether its problem applies to
// what runs (the implementation oneDNN chose, the device, the release, the
// problem's switch) before looking at the case; none acts anywhere else.
// Where a problem gives wrong results silently, the binding refuses with the
// problem's id, or steps to an implementation not known wrong; the strict
// xfails of tests/test_known_problem_watches.py watch oneDNN's own behaviour
// with each rule switched off.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/op_facts.hpp"
#include "oneapi/dnnl/dnnl.hpp"
#include "oneapi/dnnl/dnnl_graph.hpp"

namespace dnnl_ocl_interop {
namespace workarounds {

// A rule's verdict on what oneDNN chose: why it is known to compute wrong
// (empty: it is not), the problem's id, and the execution arguments the
// case concerns (DNNL_ARG_*; dnnl.ops makes dense copies of those).
struct refusal {
    std::string why;
    const char *id = nullptr;
    std::vector<int> args;
    explicit operator bool() const { return !why.empty(); }
};

// ---- primitive descriptors (family.hpp's create, and the reorder/concat/sum
// constructors): why oneDNN's chosen implementation of `pd` is known to
// compute wrong results, or no refusal.
refusal known_wrong(const dnnl::primitive_desc_base &pd);
// The same for a sum with `scales`.
refusal known_wrong_sum(const dnnl::primitive_desc_base &pd, const std::vector<float> &scales);
// For a reorder, what known_wrong cannot see: its attributes' destination
// zero points, set with `dst_zero_points_mask` (negative: none; oneDNN
// answers no query for it).
refusal known_wrong_reorder(const dnnl::primitive_desc_base &pd, int dst_zero_points_mask);

// ---- execution: a reorder implementation that copies nothing between
// buffer and USM memory (the caller refuses such executions).
bool copies_within_one_memory_kind(const dnnl::primitive_desc_base &pd);
// The arguments of `pd` whose layout is known only at execute (runtime dims
// or strides) that its implementation reads wrong when not dense enough
// (known problem dense-bias-post-op-inputs): known_wrong cannot check them,
// so the caller asks not_dense_at_execute of the memory given for each.
std::vector<int> dense_at_execute(const dnnl::primitive_desc_base &pd);
std::string not_dense_at_execute(int arg, const dnnl::memory::desc &given);

// ---- queries: whether the exec_arg_md query for `arg` asks for an input
// its post-op does not have (the caller answers the zero descriptor, as
// oneDNN does for an argument a primitive does not take; oneDNN would answer
// from uninitialized memory).
bool post_op_input_missing(const dnnl::primitive_desc_base &pd, int arg);

// ---- streams: the flags to create a stream with, for the flags asked.
unsigned stream_flags(unsigned flags);

// ---- executes on in-order streams: whether the queue must be made to wait
// for the dependencies (oneDNN enqueues the kernels without them).
bool inorder_execute_needs_barrier();

// ---- graph: whether an execution with no dependencies on an out-of-order
// queue needs a marker event as its dependency.
bool graph_needs_dependency_marker();
// ---- graph: why oneDNN's graph backend is known to compute a partition of
// `ops` wrong on `engine` with the port layouts it was compiled with
// (`inputs` and `outputs`, as query_logical_tensor answers them), or no refusal.
// A partition answers no implementation names: each port a measured rule
// looks at is judged only where oneDNN's primitive API picks one of its
// OpenCL C implementations (what the measurements ran) on `engine` for the
// same work on the same layouts (a reorder to or from the plain layout, the
// op's softmax, eltwise or reduction, a MatMul).
refusal known_wrong_partition(const std::vector<op_facts> &ops,
        const std::vector<dnnl::graph::logical_tensor> &inputs,
        const std::vector<dnnl::graph::logical_tensor> &outputs, const dnnl::engine &engine);
// ---- graph: why a partition with a host-scalar input port is refused on an
// out-of-order stream (known problem graph-host-scalar-null-event), or "".
std::string out_of_order_host_scalar_refusal();

} // namespace workarounds
} // namespace dnnl_ocl_interop
