#include "common/enum_caster.hpp" // first: see the header

#include "core/profiling.hpp"

#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include <pybind11/stl.h>

#include "common/errors.hpp"
#include "core/ocl_objects.hpp"
#include "oneapi/dnnl/dnnl_debug.h"
#include "oneapi/dnnl/dnnl_ocl.hpp"

namespace py = pybind11;
namespace oi = dnnl::ocl_interop;

namespace dnnl_ocl_interop {
namespace profiling {

std::atomic<bool> recording {false};
// From lowering `recording` until the stop has read every recorded stream:
// a start meanwhile would clear the records, or hand its own to that stop,
// and an execute on a recorded stream would add kernels oneDNN cannot read
// the times of yet.
std::atomic<bool> stopping {false};

namespace {

// oneDNN's undocumented profiling_data_kind::time_per_kernel
// (src/common/c_types_map.hpp): one duration per profiled command (kernel,
// copy, fill) on the stream, in submission order; with no data pointer, how
// many there are (without walking them).
const auto time_per_kernel = static_cast<dnnl_profiling_data_kind_t>(258);

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::steady_clock::now().time_since_epoch())
            .count();
}

// oneDNN's per-kernel entries on `stream` so far; -1 when oneDNN does not
// profile it (a oneDNN built without experimental profiling, on a user queue).
long long kernel_count(const dnnl::stream &stream) {
    int n = 0;
    if (dnnl_query_profiling_data(stream.get(), time_per_kernel, &n, nullptr) != dnnl_success)
        return -1;
    return n;
}

struct record {
    // The stream's engine, kept alive with it (declared first, destroyed
    // last): a oneDNN stream does not own its engine, and the harvest reads
    // the stream after every Python object of the engine may be gone. The
    // plain engine, without the Python allocator's callables: a record may
    // outlive the interpreter (a recorder never stopped).
    dnnl::engine engine;
    dnnl::stream stream; // keeps the stream (and its queue) alive until harvested
    std::shared_ptr<const subject> what;
    unsigned long thread = 0;
    int64_t host_start = 0, host_end = 0;
    cl_event before = nullptr, after = nullptr; // markers around the execute
    long long first_kernel = -1, end_kernel = -1;
    // Filled by the harvest.
    bool times_known = false, kernels_known = false;
    cl_ulong window_start = 0, window_end = 0;
    std::vector<uint64_t> kernel_ns;
    void release_markers() {
        if (before) clReleaseEvent(before);
        if (after) clReleaseEvent(after);
        before = after = nullptr;
    }
};

// Everything below is under `state_mutex`, except the per-stream locks.
std::mutex state_mutex;
std::vector<record> records;
size_t max_records = 0, dropped = 0, unprofiled = 0;
std::atomic<int> in_flight {0}; // executes that may still push a record
// One lock per recorded stream: oneDNN's count of kernel entries, the
// markers and the execute are one step each other thread waits for.
std::map<dnnl_stream_t, std::shared_ptr<std::mutex>> stream_locks;

// Locks `m` without holding the GIL while waiting (the holder may need it).
void lock_releasing_gil(std::mutex &m) {
    if (m.try_lock()) return;
    if (PyGILState_Check()) {
        py::gil_scoped_release release;
        m.lock();
    } else {
        m.lock();
    }
}

std::string dims_text(const_dnnl_memory_desc_t md) {
    int ndims = 0;
    if (!md || dnnl_memory_desc_query(md, dnnl_query_ndims_s32, &ndims) != dnnl_success
            || ndims == 0)
        return "";
    const dnnl_dims_t *dims = nullptr;
    dnnl_data_type_t dt = dnnl_data_type_undef;
    dnnl_memory_desc_query(md, dnnl_query_dims, &dims);
    dnnl_memory_desc_query(md, dnnl_query_data_type, &dt);
    std::string text = std::string(dnnl_dt2str(dt)) + " ";
    for (int i = 0; i < ndims; ++i)
        text += (i ? "x" : "")
                + ((*dims)[i] == DNNL_RUNTIME_DIM_VAL ? std::string("?")
                                                      : std::to_string((*dims)[i]));
    return text;
}

// The primitive's post-ops, one after the other: "eltwise_relu", "sum",
// "binary_add f32 2x4" (with the shape of its input), "prelu", "dw"; "" for
// none.
std::string post_ops_text(const_dnnl_primitive_desc_t pd) {
    const_dnnl_primitive_attr_t attr = nullptr;
    const_dnnl_post_ops_t ops = nullptr;
    if (dnnl_primitive_desc_get_attr(pd, &attr) != dnnl_success || !attr
            || dnnl_primitive_attr_get_post_ops(attr, &ops) != dnnl_success || !ops)
        return "";
    std::string text;
    for (int i = 0; i < dnnl_post_ops_len(ops); ++i) {
        std::string op;
        dnnl_alg_kind_t alg = dnnl_alg_kind_undef;
        float alpha = 0, beta = 0;
        const_dnnl_memory_desc_t src1 = nullptr;
        switch (dnnl_post_ops_get_kind(ops, i)) {
            case dnnl_sum: op = "sum"; break;
            case dnnl_eltwise:
                dnnl_post_ops_get_params_eltwise(ops, i, &alg, &alpha, &beta);
                op = dnnl_alg_kind2str(alg);
                break;
            case dnnl_binary:
                dnnl_post_ops_get_params_binary(ops, i, &alg, &src1);
                op = dnnl_alg_kind2str(alg);
                if (!dims_text(src1).empty()) op += " " + dims_text(src1);
                break;
            case dnnl_prelu: op = "prelu"; break;
            case dnnl_convolution: op = "dw"; break;
            default: op = dnnl_prim_kind2str(dnnl_post_ops_get_kind(ops, i)); break;
        }
        text += (text.empty() ? "" : " + ") + op;
    }
    return text;
}

// Reads the device times of the records of `stream` in `rs` not read yet
// (the caller has waited for the stream, and holds its lock or has stopped
// the recording).
void harvest_stream(std::vector<record> &rs, dnnl_stream_t stream) {
    std::vector<uint64_t> durations;
    bool have_durations = false;
    for (auto &r : rs) {
        if (r.stream.get() != stream || r.times_known || !r.before) continue;
        cl_ulong start = 0, end = 0;
        r.times_known = clGetEventProfilingInfo(r.before, CL_PROFILING_COMMAND_END, sizeof(start),
                                &start, nullptr)
                        == CL_SUCCESS
                && clGetEventProfilingInfo(r.after, CL_PROFILING_COMMAND_START, sizeof(end), &end,
                           nullptr)
                        == CL_SUCCESS;
        r.window_start = start;
        r.window_end = end;
        r.release_markers();
        if (r.first_kernel < 0 || r.end_kernel < r.first_kernel) continue;
        if (!have_durations) {
            have_durations = true;
            int n = 0;
            if (dnnl_query_profiling_data(stream, time_per_kernel, &n, nullptr) == dnnl_success
                    && n > 0) {
                durations.assign(n, 0);
                if (dnnl_query_profiling_data(stream, time_per_kernel, &n, durations.data())
                        != dnnl_success)
                    durations.clear();
            }
        }
        if (static_cast<size_t>(r.end_kernel) <= durations.size()) {
            r.kernel_ns.assign(durations.begin() + r.first_kernel,
                    durations.begin() + r.end_kernel);
            r.kernels_known = true;
        }
    }
}

void wait_for(const dnnl::stream &stream) {
    py::gil_scoped_release release;
    dnnl_stream_wait(stream.get());
}

} // namespace

std::shared_ptr<const subject> primitive_subject(const_dnnl_primitive_desc_t pd) {
    auto what = std::make_shared<subject>();
    what->kind = "primitive";
    dnnl_primitive_kind_t kind = dnnl_undefined_primitive;
    dnnl_primitive_desc_query(pd, dnnl_query_primitive_kind, 0, &kind);
    what->name = dnnl_prim_kind2str(kind);
    const char *impl = nullptr;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl)
        what->implementation = impl;
    auto add = [&](const std::string &part, const std::string &text) {
        if (!text.empty()) what->shapes += (what->shapes.empty() ? "" : ", ") + part + " " + text;
    };
    const struct {
        const char *name;
        dnnl_query_t query;
        int arg; // for dnnl_query_exec_arg_md, else 0
    } parts[] = {{"src", dnnl_query_src_md, 0}, {"weights", dnnl_query_weights_md, 0},
            {"bias", dnnl_query_exec_arg_md, DNNL_ARG_BIAS}, {"dst", dnnl_query_dst_md, 0},
            {"diff_dst", dnnl_query_diff_dst_md, 0}, {"diff_src", dnnl_query_diff_src_md, 0}};
    for (const auto &part : parts)
        add(part.name, dims_text(dnnl_primitive_desc_query_md(pd, part.query, part.arg)));
    add("post-ops", post_ops_text(pd));
    return what;
}

struct execute_scope::impl {
    dnnl::stream stream;
    std::shared_ptr<std::mutex> lock;
    record r;
    bool pushed = false;
    bool counted = true; // in in_flight: it began while recording
};

execute_scope::execute_scope(const stream_object &s, std::shared_ptr<const subject> what)
    : impl_(std::make_unique<impl>()) {
    ++in_flight;
    if (!recording.load()) { // stopping: this execute waits for its stream's harvest
        --in_flight;
        impl_->counted = false;
        {
            std::lock_guard<std::mutex> guard(state_mutex);
            auto found = stream_locks.find(s.stream.get());
            if (!stopping.load() || found == stream_locks.end()) return;
            impl_->lock = found->second;
        }
        lock_releasing_gil(*impl_->lock); // held until the destructor; records nothing
        return;
    }
    // Markers bound an execute's kernels on an in-order queue only (oneDNN
    // profiles in-order queues only).
    if (s.out_of_order || !queue_profiles(s.stream)) {
        std::lock_guard<std::mutex> guard(state_mutex);
        ++unprofiled;
        return;
    }
    {
        std::lock_guard<std::mutex> guard(state_mutex);
        if (records.size() >= max_records) {
            ++dropped;
            return;
        }
        auto &slot = stream_locks[s.stream.get()];
        if (!slot) slot = std::make_shared<std::mutex>();
        impl_->lock = slot;
    }
    lock_releasing_gil(*impl_->lock);
    record &r = impl_->r;
    r.engine = s.engine;
    r.stream = s.stream;
    r.what = std::move(what);
    r.thread = PyThread_get_thread_ident(); // threading.get_ident(); needs no GIL
    r.first_kernel = kernel_count(s.stream);
    cl_command_queue queue = oi::get_command_queue(s.stream);
    if (clEnqueueMarkerWithWaitList(queue, 0, nullptr, &r.before) != CL_SUCCESS) r.before = nullptr;
    r.host_start = now_ns();
}

void execute_scope::done() {
    record &r = impl_->r;
    if (!impl_->lock || !r.before) return;
    r.host_end = now_ns();
    cl_command_queue queue = oi::get_command_queue(r.stream);
    if (clEnqueueMarkerWithWaitList(queue, 0, nullptr, &r.after) != CL_SUCCESS) {
        r.release_markers();
        return;
    }
    r.end_kernel = r.first_kernel < 0 ? -1 : kernel_count(r.stream);
    std::lock_guard<std::mutex> guard(state_mutex);
    records.push_back(std::move(r));
    impl_->pushed = true;
}

execute_scope::~execute_scope() {
    if (!impl_->pushed) impl_->r.release_markers();
    if (impl_->lock) impl_->lock->unlock();
    if (impl_->counted) --in_flight;
}

void before_reset(const dnnl::stream &stream) {
    if (!active()) return;
    std::shared_ptr<std::mutex> lock;
    {
        std::lock_guard<std::mutex> guard(state_mutex);
        auto found = stream_locks.find(stream.get());
        if (found == stream_locks.end()) return;
        lock = found->second;
    }
    lock_releasing_gil(*lock);
    std::lock_guard<std::mutex> unlock_later(*lock, std::adopt_lock);
    wait_for(stream);
    std::lock_guard<std::mutex> guard(state_mutex);
    harvest_stream(records, stream.get());
}

void bind(py::module_ &m) {
    m.def("_profiling_start",
            [](size_t limit) {
        if (limit == 0) throw_invalid_argument("max_executes must be positive");
        std::lock_guard<std::mutex> guard(state_mutex);
        if (recording.load())
            throw_invalid_argument(
                    "a dnnl.profiling recorder is already recording (one at a "
                    "time per process)");
        if (stopping)
            throw_invalid_argument(
                    "a dnnl.profiling recorder is stopping on another thread "
                    "(one at a time per process): start once its stop() returned");
        for (auto &r : records) r.release_markers(); // pushed after an abandon
        records.clear();
        stream_locks.clear();
        max_records = limit;
        dropped = unprofiled = 0;
        recording = true;
    }, py::arg("max_executes"),
            "Start recording executes on profiling queues (dnnl.profiling.recorder); at "
            "most `max_executes` are kept, the rest counted.");
    m.def("_profiling_abandon",
            [] {
        // A recorder dropped while recording: recording stops and its records
        // go, without waiting for the executes in flight (the collector may
        // run this inside one of them, in a Python graph allocator); what
        // they push later goes at the next start.
        std::vector<record> dropped_records;
        {
            std::lock_guard<std::mutex> guard(state_mutex);
            if (!recording.load()) return;
            recording = false;
            dropped_records.swap(records);
        }
        for (auto &r : dropped_records) r.release_markers();
    },
            "Stop recording and discard the records, without waiting for executes in flight "
            "(dnnl.profiling: a recorder dropped while recording).");
    m.def("_profiling_active", [] { return recording.load(); },
            "Whether a dnnl.profiling recorder is recording.");
    m.def("_profiling_stop",
            [] {
        {
            std::lock_guard<std::mutex> guard(state_mutex);
            if (!recording.load())
                throw_invalid_argument("no dnnl.profiling recorder is recording");
            recording = false;
            stopping = true;
        }
        struct stopped { // however the stop ends
            ~stopped() {
                std::lock_guard<std::mutex> guard(state_mutex);
                stopping = false;
            }
        } stopped_at_end;
        // Executes that began before the flag went down finish recording.
        while (in_flight.load() > 0) {
            py::gil_scoped_release release;
            std::this_thread::yield();
        }
        std::vector<record> taken;
        {
            std::lock_guard<std::mutex> guard(state_mutex);
            taken.swap(records);
        }
        // Wait for each stream, then read its times (oneDNN reads every
        // kernel's event, which must have completed), holding the stream:
        // another thread's execute there waits (execute_scope).
        std::map<dnnl_stream_t, std::pair<dnnl::stream, std::shared_ptr<std::mutex>>> streams;
        {
            std::lock_guard<std::mutex> guard(state_mutex);
            for (const auto &r : taken) {
                auto found = stream_locks.find(r.stream.get());
                streams.emplace(r.stream.get(),
                        std::make_pair(r.stream,
                                found == stream_locks.end() ? nullptr : found->second));
            }
        }
        for (const auto &entry : streams) {
            std::unique_lock<std::mutex> held;
            if (entry.second.second) {
                lock_releasing_gil(*entry.second.second);
                held = std::unique_lock<std::mutex>(*entry.second.second, std::adopt_lock);
            }
            wait_for(entry.second.first);
            harvest_stream(taken, entry.first);
        }
        py::list result;
        size_t kept_dropped, kept_unprofiled;
        {
            std::lock_guard<std::mutex> guard(state_mutex);
            stream_locks.clear();
            kept_dropped = dropped;
            kept_unprofiled = unprofiled;
        }
        std::map<dnnl_stream_t, py::tuple> queue_info;
        for (auto &r : taken) {
            auto found = queue_info.find(r.stream.get());
            if (found == queue_info.end()) {
                cl_command_queue queue = oi::get_command_queue(r.stream);
                cl_device_id device = nullptr;
                char name[256] = {};
                if (clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof(device), &device, nullptr)
                        == CL_SUCCESS)
                    clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof(name) - 1, name, nullptr);
                found = queue_info
                                .emplace(r.stream.get(),
                                        py::make_tuple(reinterpret_cast<uintptr_t>(queue),
                                                reinterpret_cast<uintptr_t>(device),
                                                std::string(name)))
                                .first;
            }
            py::object kernels
                    = r.kernels_known ? py::object(py::cast(r.kernel_ns)) : py::object(py::none());
            py::object window = r.times_known
                    ? py::object(py::make_tuple(r.window_start, r.window_end))
                    : py::object(py::none());
            result.append(py::make_tuple(r.what->kind, r.what->name, r.what->implementation,
                    r.what->shapes, found->second, r.thread, r.host_start, r.host_end, window,
                    kernels));
            r.release_markers();
        }
        return py::make_tuple(result, kept_dropped, kept_unprofiled);
    },
            "Stop recording; waits for the recorded streams (GIL released) and returns "
            "(records, dropped, unprofiled): per execute (kind, name, implementation, shapes, "
            "(queue, device, device name), host thread, host start ns, host end ns, (first "
            "marker end, last marker start) in device ns or None, kernel durations in ns or "
            "None).");
}

} // namespace profiling
} // namespace dnnl_ocl_interop
