// oneDNN problems the binding routes around: the one place that knows them.
//
// Each problem has an id (named in its entry of docs/known-problems.md;
// tests/test_known_problems.py checks that the two lists agree), the first
// oneDNN release without it, and the function the binding calls where the
// problem would show. A problem applies to every oneDNN the binding supports
// older than `fixed` (the running library's dnnl_version()); a problem still
// present upstream has no `fixed`. Where a problem
// gives wrong results silently, the binding refuses with its id and cause, and
// a strict xfail in the tests watches oneDNN's raw behaviour (with the
// workarounds switched off), so the day oneDNN is fixed the suite says so.
#pragma once

#include <string>
#include <vector>

#include "common/op_facts.hpp"
#include "oneapi/dnnl/dnnl.hpp"
#include "oneapi/dnnl/dnnl_graph.hpp"

namespace dnnl_ocl_interop {
namespace workarounds {

struct version {
    int major, minor, patch;
};

struct problem {
    const char *id;   // e.g. "eltwise-strides"
    const char *what; // one line: what oneDNN gets wrong
    version fixed;    // the first release without it; {0, 0, 0}: none yet
};

// Every problem, in the order of docs/known-problems.md.
const std::vector<problem> &problems();

// Whether the running oneDNN has `id`, and the binding's workaround for it is
// on (workarounds can be switched off for tests: set_enabled).
bool applies(const char *id);

// Tests only: with false, no workaround acts (applies() answers false), so a
// test can watch oneDNN's own behaviour.
void set_enabled(bool enabled);

// ---- primitive descriptors (family.hpp's create, and the reorder/concat/sum
// constructors): why oneDNN's chosen implementation is known to compute wrong
// results for `pd`, or "" when it is not. The caller refuses
// (dnnl.unimplemented) or, with allow_empty, gives the empty descriptor.
std::string known_wrong(const dnnl::primitive_desc_base &pd);
// Whether oneDNN's next implementation for `pd` (next_impl) may be right
// where the chosen one is known wrong: the caller steps through them.
bool another_implementation_may_be_right(const dnnl::primitive_desc_base &pd);
// The same for a sum with `scales`.
std::string known_wrong_sum(const dnnl::primitive_desc_base &pd, const std::vector<float> &scales);
// The same for a reorder whose attributes set destination zero points with
// `dst_zero_points_mask` (negative: none; oneDNN answers no query for it).
std::string known_wrong_reorder(const dnnl::primitive_desc_base &pd, int dst_zero_points_mask);

// ---- execution: a reorder implementation that copies nothing between
// buffer and USM memory (the caller refuses such executions).
bool copies_within_one_memory_kind(const dnnl::primitive_desc_base &pd);
// The arguments of `pd` read as dense from the handle on whose layout is
// known only at execute (runtime dims or strides; known problem
// dense-bias-post-op-inputs): known_wrong cannot check them, so the caller
// asks not_dense_at_execute of the memory given for each (its refusal, or "").
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
// `ops` wrong with the port layouts it was compiled with (`inputs` and
// `outputs`, as query_logical_tensor answers them), or "". The backend makes
// primitives inside the partition that the binding cannot query: the rule
// goes by what each op does with a strided port (measured: matmul reads and
// writes any strides; softmax, eltwise and other ops go through the same
// implementations as the primitive API, or through reorders to and from the
// plain layout), with the problems and checks of the primitive API.
std::string known_wrong_partition(const std::vector<op_facts> &ops,
        const std::vector<dnnl::graph::logical_tensor> &inputs,
        const std::vector<dnnl::graph::logical_tensor> &outputs);
// ---- graph: why a partition with a host-scalar input port is refused on an
// out-of-order stream (known problem graph-host-scalar-null-event), or "".
std::string out_of_order_host_scalar_refusal();

} // namespace workarounds
} // namespace dnnl_ocl_interop
