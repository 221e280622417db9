// dnnl::ocl_interop, one file per object family; module.cpp registers them
// into the `ocl_interop` submodule.
#pragma once

#include <cstdint>
#include <vector>

#include <CL/cl.h>
#include <pybind11/pybind11.h>

#include "core/objects.hpp"
#include "oneapi/dnnl/dnnl.hpp"

namespace dnnl_ocl_interop {

void bind_ocl_interop_engine(pybind11::module_ &m);  // ocl_interop/engine.cpp
void bind_ocl_interop_stream(pybind11::module_ &m);  // ocl_interop/stream.cpp
void bind_ocl_interop_memory(pybind11::module_ &m);  // ocl_interop/memory.cpp
void bind_ocl_interop_execute(pybind11::module_ &m); // ocl_interop/execute.cpp

// Whether the OpenCL queue of `stream` was made with CL_QUEUE_PROFILING_ENABLE
// (false for a stream without one).
bool queue_profiles(const dnnl::stream &stream);

// Whether all work submitted to `stream`'s queue completes within a short
// poll (a few µs, measured for stream.wait's GIL policy): a marker is
// enqueued and its status polled. False when the queue cannot be polled.
bool finishes_soon(const dnnl::stream &stream);

// Refuses `events` of another context than `engine`'s (dnnl.error), which
// the queue would otherwise be handed (ocl_interop/execute.cpp).
void check_same_context(const std::vector<cl_event> &events, const dnnl::engine &engine);

// On an in-order stream, makes its queue wait for `events`, which oneDNN
// drops there (known problem inorder-execute-drops-deps, common/workarounds);
// nothing on an out-of-order stream (ocl_interop/execute.cpp).
void wait_in_order(const stream_object &stream, const std::vector<cl_event> &events);

// oneDNN's engine blob inside `cache_blob` (bytes from get_engine_cache_blob),
// checked to be whole and `device`'s (common/cache_blobs); TypeError or
// dnnl.error (invalid_arguments) naming the parameter otherwise.
std::vector<uint8_t> engine_cache_blob_payload(pybind11::handle cache_blob, cl_device_id device);

} // namespace dnnl_ocl_interop
