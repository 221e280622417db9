// OpenCL runtimes are not fork-safe: a child forked after the process used
// OpenCL inherits the runtime's state without its threads (Intel's CPU
// runtime waits forever for its TBB workers; GPU drivers share the parent's
// device handles). The binding refuses such a child's OpenCL calls up front.
//
// check() is called at the entry of the binding's calls that reach the
// runtime: engine and stream creation, memory creation and storage checks
// (check_user_handle), USM (usm::api_for), primitive descriptor and
// primitive creation, execute, stream.wait, map_data, graph compile,
// tensors and execute (graph_allocator::with_callbacks). A child forked
// before the binding's first such call works normally: "used OpenCL" is the
// first of those calls (or the first OpenCL handle the binding converts).
#pragma once

namespace dnnl_ocl_interop {
namespace fork_guard {

// Raises dnnl.runtime_error in a child forked after this process used
// OpenCL through the binding; otherwise records that OpenCL is in use.
void check();

// Records that OpenCL is in use without checking (for the binding's own
// first OpenCL call, made while converting a handle).
void mark_used();

// Whether this process is a child forked after OpenCL was used.
bool forked_after_use();

// Registers the pthread_atfork child handler (once; module initialization).
void install();

} // namespace fork_guard
} // namespace dnnl_ocl_interop
