// The execute recorder behind dnnl.profiling: the one place that times
// executes.
//
// While a recorder is active, every primitive and partition execute on a
// stream whose queue has CL_QUEUE_PROFILING_ENABLE is recorded: what it is
// (family or partition, implementation, shapes), the host thread and host
// times, two markers enqueued around it on its (in-order: oneDNN refuses
// profiling on out-of-order queues) queue, whose device timestamps bound its
// kernels, and the range of oneDNN's per-kernel profiling entries its kernels
// added (oneDNN's experimental profiling keeps one per kernel on such a
// stream). harvest() waits for the streams and reads the device times.
//
// When no recorder is active an execute pays two relaxed atomic loads and a
// predictable branch (active()); nothing else here runs.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <CL/cl.h>
#include <pybind11/pybind11.h>

#include "core/objects.hpp"

namespace dnnl_ocl_interop {
namespace profiling {

extern std::atomic<bool> recording;
// A stop reading the recorded streams' times: an execute on one of them
// waits until that stream is read (oneDNN reads every kernel's event there,
// which must have completed).
extern std::atomic<bool> stopping;

inline bool active() {
    return recording.load(std::memory_order_relaxed) || stopping.load(std::memory_order_relaxed);
}

// What an execute runs, for its record; made once per primitive or compiled
// partition, at its first recorded execute.
struct subject {
    std::string kind;           // "primitive" or "partition"
    std::string name;           // "matmul", "convolution", ...; a partition's label
    std::string implementation; // oneDNN's impl_info_str; "" for partitions (no query)
    std::string shapes;         // "src f32 2x3, weights f32 3x4, dst f32 2x4"
};

// The subject of a primitive of descriptor `pd`.
std::shared_ptr<const subject> primitive_subject(const_dnnl_primitive_desc_t pd);

// Around one execute, constructed only while active() (with or without the
// GIL): records it once done() is called; an execute that fails (an
// exception before done()) leaves no record. While a stop reads the times,
// it records nothing and holds the stream until the stop has read it.
class execute_scope {
public:
    execute_scope(const stream_object &stream, std::shared_ptr<const subject> what);
    ~execute_scope();
    execute_scope(const execute_scope &) = delete;
    execute_scope &operator=(const execute_scope &) = delete;
    void done();

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

// call() (an execute on `stream`), recorded.
template <typename F>
auto recorded(const stream_object &stream, std::shared_ptr<const subject> what, F &&call)
        -> decltype(call()) {
    execute_scope scope(stream, std::move(what));
    auto result = call();
    scope.done();
    return result;
}

// reset_profiling(stream) while recording: the stream's pending records get
// their kernel times before oneDNN forgets them.
void before_reset(const dnnl::stream &stream);

// _profiling_start, _profiling_stop (the recorder's compiled side).
void bind(pybind11::module_ &m);

} // namespace profiling
} // namespace dnnl_ocl_interop
