// What core/ and the namespaces above it ask of an engine's or stream's
// OpenCL objects: the queue's properties and progress, the context of
// dependency events, the in-order wait, an engine cache blob's payload.
// core/ is OpenCL-aware by design (docs/building.md's layout map).
#pragma once

#include <cstdint>
#include <vector>

#include <CL/cl.h>
#include <pybind11/pybind11.h>

#include "core/objects.hpp"
#include "oneapi/dnnl/dnnl.hpp"

namespace dnnl_ocl_interop {

// Whether the OpenCL queue of `stream` was made with CL_QUEUE_PROFILING_ENABLE
// (false for a stream without one).
bool queue_profiles(const dnnl::stream &stream);

// Whether all work submitted to `stream`'s queue completes within a short
// poll (a few µs, measured for stream.wait's GIL policy): a marker is
// enqueued and its status polled. False when the queue cannot be polled.
bool finishes_soon(const dnnl::stream &stream);

// Refuses `events` of another context than `engine`'s (dnnl.error), which
// the queue would otherwise be handed.
void check_same_context(const std::vector<cl_event> &events, const dnnl::engine &engine);

// On an in-order stream, makes its queue wait for `events`, which oneDNN
// drops there (known problem inorder-execute-drops-deps, common/workarounds);
// nothing on an out-of-order stream.
void wait_in_order(const stream_object &stream, const std::vector<cl_event> &events);

// oneDNN's engine blob inside `cache_blob` (bytes from get_engine_cache_blob),
// checked to be whole and `device`'s (common/cache_blobs); TypeError or
// dnnl.error (invalid_arguments) naming the parameter otherwise.
std::vector<uint8_t> engine_cache_blob_payload(pybind11::handle cache_blob, cl_device_id device);

} // namespace dnnl_ocl_interop
