// The C++ side of benchmarks/run.py: the same work as each Python row, done
// directly with oneDNN and OpenCL, on the first Intel GPU OpenCL shows
// (the emulated one when run.py enabled it). Prints one JSON object:
//   {"rows": {"<row name>": [<microseconds per call of each sample>, ...], ...},
//    "checks": {"<row name>": {"n": <values>, "sum": <their sum>, "head": [<first 8>]}, ...}}
// run.py takes the median of the samples with the same function as its own
// (one median definition on both sides), and checks every row's digest
// against NumPy: each destination holds POISON before the row's timed work
// (an execute that did nothing leaves it there), the thread rows report
// every thread's output, the creation rows what the last primitive they made
// computes, make_memory and get_memory_kind the memory they made or asked
// about.
// Usage: baseline ITERATIONS WARMUP MATMUL_SIZE [ROW]
// With ROW ("large matmul", "small network", "20-op network", "graph execute with allocator",
// "graph execute with caching pool" or "primitive creation (cold, fresh
// process)"), only that row is set up and run: WARMUP calls of its work, then
// ITERATIONS timed calls (the graph rows in batches of 20 executes and a
// wait; ITERATIONS a multiple of 20), and the JSON holds that row alone.
// benchmarks/cl_calls.py uses it to count OpenCL calls per iteration. ROW
// "graph trace" (or "graph trace (caching pool)") runs the graph row's (or the pool row's) ITERATIONS
// executes one by one with timestamps at each stage of the C allocator and
// prints {"trace": [[stage, steady-clock ns], ...]}
// (benchmarks/allocator_breakdown.py).
// Built as a shared library too (target dnnl_ocl_interop_baseline_module,
// DNNL_OCL_INTEROP_BASELINE_MODULE defined): the same program entered as
// baseline_main(argc, argv) from inside a Python process
// (benchmarks/in_process.py).
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#define CL_TARGET_OPENCL_VERSION 300
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CL/cl.h>
#include <CL/cl_ext.h>

#include "oneapi/dnnl/dnnl.hpp"
#include "oneapi/dnnl/dnnl_graph.hpp"
#include "oneapi/dnnl/dnnl_graph_ocl.hpp"
#include "oneapi/dnnl/dnnl_ocl.hpp"

namespace {

using samples_t = std::vector<double>;

void check(cl_int err, const char *what) {
    if (err != CL_SUCCESS)
        throw std::runtime_error(std::string(what) + " failed: " + std::to_string(err));
}

// `repeats` samples, each the mean time of `batch` calls (run.py takes their median).
samples_t samples_us(int repeats, int batch, const std::function<void()> &call,
        const std::function<void()> &after_batch = [] {}) {
    samples_t samples;
    for (int r = 0; r < repeats; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < batch; ++i) call();
        auto t1 = std::chrono::steady_clock::now();
        after_batch();
        samples.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / batch);
    }
    return samples;
}

// A side that has waited its turn comes back slower for its first tens of
// milliseconds (run.py's WARM_UP_SECONDS, which says how it was measured;
// tests/test_benchmark_turns.py checks the two are equal). Rows timed over a
// short span right after a turn run `call` in batches of `batch` (each
// followed by `after_batch`) for this long, and at least `least` calls.
constexpr double WARM_UP_SECONDS = 0.3;

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void warm_up(const std::function<void()> &call, const std::function<void()> &after_batch = [] {},
        int batch = 1, int least = 1) {
    const auto start = std::chrono::steady_clock::now();
    for (int calls = 0; calls < least || seconds_since(start) < WARM_UP_SECONDS; calls += batch) {
        for (int i = 0; i < batch; ++i) call();
        after_batch();
    }
}

// The fastest of `repeats` calls (for work of a second or so), as one sample.
samples_t fastest_us(int repeats, const std::function<void()> &call) {
    double best = 0;
    for (int r = 0; r < repeats; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        call();
        double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        best = r == 0 ? us : std::min(best, us);
    }
    return {best};
}

cl_device_id intel_gpu() {
    cl_uint n = 0;
    check(clGetPlatformIDs(0, nullptr, &n), "clGetPlatformIDs");
    std::vector<cl_platform_id> platforms(n);
    check(clGetPlatformIDs(n, platforms.data(), nullptr), "clGetPlatformIDs");
    for (auto p : platforms) {
        char vendor[256] = {};
        clGetPlatformInfo(p, CL_PLATFORM_VENDOR, sizeof(vendor), vendor, nullptr);
        cl_device_id device = nullptr;
        if (std::strstr(vendor, "Intel")
                && clGetDeviceIDs(p, CL_DEVICE_TYPE_GPU, 1, &device, nullptr) == CL_SUCCESS)
            return device;
    }
    throw std::runtime_error("no Intel GPU visible to OpenCL");
}

template <typename F>
F extension(cl_device_id device, const char *name) {
    cl_platform_id platform;
    check(clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof(platform), &platform, nullptr),
            "clGetDeviceInfo");
    auto f = reinterpret_cast<F>(clGetExtensionFunctionAddressForPlatform(platform, name));
    if (!f) throw std::runtime_error(std::string("missing ") + name);
    return f;
}

clDeviceMemAllocINTEL_fn usm_device_alloc;
clGetMemAllocInfoINTEL_fn usm_get_alloc_info;
clMemBlockingFreeINTEL_fn usm_free;
clEnqueueMemFillINTEL_fn usm_fill;
clEnqueueMemcpyINTEL_fn usm_memcpy;

// The values every computing row's inputs hold, on both sides (run.py's
// pattern()): small, of both signs, exact in f32.
float pattern(size_t i) {
    return float(i % 7) * 0.1f - 0.3f;
}

void fill(dnnl::memory &m) {
    float *p = static_cast<float *>(m.map_data());
    for (size_t i = 0; i < m.get_desc().get_size() / sizeof(float); ++i) p[i] = pattern(i);
    m.unmap_data(p);
}

// What every destination holds before a row's timed work (run.py's POISON):
// no row's correct output has it, so an execute that did nothing fails the
// output check.
constexpr float POISON = -7777.0f;

void poison(dnnl::memory &m) {
    float *p = static_cast<float *>(m.map_data());
    std::fill(p, p + m.get_desc().get_size() / sizeof(float), POISON);
    m.unmap_data(p);
}

// The start of a segment of rows when run.py runs both sides taking turns
// (benchmarks/turns.py, which has the protocol): says the segment's name and
// waits for the driver's go. Returns at once when this process runs alone.
void turn(const char *segment) {
    static int read_fd = -2, write_fd = -1;
    if (read_fd == -2) {
        const char *spec = std::getenv("DNNL_OCL_INTEROP_BENCHMARK_TURNS");
        if (!spec || std::sscanf(spec, "%d,%d", &read_fd, &write_fd) != 2) read_fd = -1;
        if (read_fd >= 0) { // not for this process's own children
            fcntl(read_fd, F_SETFD, FD_CLOEXEC);
            fcntl(write_fd, F_SETFD, FD_CLOEXEC);
        }
        unsetenv("DNNL_OCL_INTEROP_BENCHMARK_TURNS");
    }
    if (read_fd < 0) return;
    std::string said = std::string(segment) + "\n";
    for (size_t put = 0; put < said.size();) {
        ssize_t n = write(write_fd, said.data() + put, said.size() - put);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw std::runtime_error("turns: cannot write to the driver");
        put += static_cast<size_t>(n);
    }
    char go[3] = {};
    for (size_t got = 0; got < sizeof(go);) { // "go\n"
        ssize_t n = read(read_fd, go + got, sizeof(go) - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw std::runtime_error("turns: the driver went away");
        got += static_cast<size_t>(n);
    }
    if (std::memcmp(go, "go\n", 3) != 0) throw std::runtime_error("turns: not a go");
}

// A digest of a row's output, for run.py to check against NumPy.
struct digest {
    size_t n = 0;
    double sum = 0;
    std::vector<float> head;
};
std::map<std::string, digest> checks;

void check_output(const std::string &row, const std::vector<float> &values) {
    digest d;
    d.n = values.size();
    for (float v : values) d.sum += v;
    d.head.assign(values.begin(), values.begin() + std::min<size_t>(8, values.size()));
    checks[row] = d;
}

std::vector<float> read(dnnl::memory &m) {
    std::vector<float> out(m.get_desc().get_size() / sizeof(float));
    float *p = static_cast<float *>(m.map_data());
    std::copy(p, p + out.size(), out.begin());
    m.unmap_data(p);
    return out;
}

std::vector<float> read_usm(cl_command_queue queue, const void *ptr, size_t bytes) {
    std::vector<float> out(bytes / sizeof(float));
    check(usm_memcpy(queue, CL_TRUE, out.data(), ptr, bytes, 0, nullptr, nullptr),
            "clEnqueueMemcpyINTEL");
    return out;
}

void poison_usm(cl_command_queue queue, void *ptr, size_t bytes) {
    std::vector<float> values(bytes / sizeof(float), POISON);
    check(usm_memcpy(queue, CL_TRUE, ptr, values.data(), bytes, 0, nullptr, nullptr),
            "clEnqueueMemcpyINTEL");
}

// What the make_memory and get_memory_kind rows report of the memory they
// made or asked about (run.py's memory_facts): its kind's C value, 1 when
// its storage is the one given (else 0), its descriptor's size in bytes.
std::vector<float> memory_facts(const dnnl::memory &m, bool same_storage) {
    return {float(static_cast<int>(dnnl::ocl_interop::get_memory_kind(m))), same_storage ? 1.f : 0.f,
            float(m.get_desc().get_size())};
}

// Throughput of `threads` threads, each running `work(t)` (its share of
// the calls, ending with a wait on its own stream), released together:
// `repeats` samples of the wall time per call, `calls` calls in all, from
// the first thread's start of work to the last one's end (each thread reads
// the clock itself). The threads are made once and run untimed rounds for
// `warm_up_seconds` first (at least one), as run.py's threaded_us: threads at
// work are measured, not a thread's first calls nor waking and joining
// threads. `before_timing` runs once between the untimed rounds and the
// timed ones, with every thread waiting.
samples_t threaded_us(int threads, int calls, int repeats, const std::function<void(int)> &work,
        double warm_up_seconds = WARM_UP_SECONDS, const std::function<void()> &before_timing = [] {}) {
    using clock = std::chrono::steady_clock;
    std::mutex m;
    std::condition_variable cv;
    int round = 0, running = 0; // the round the threads are released for, threads still in it
    bool stop = false;
    std::vector<std::pair<clock::time_point, clock::time_point>> spans(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            for (int done = 0;; ++done) {
                {
                    std::unique_lock<std::mutex> lock(m);
                    cv.wait(lock, [&] { return stop || round > done; });
                    if (stop) return;
                }
                auto start = clock::now();
                work(t);
                spans[t] = {start, clock::now()};
                std::lock_guard<std::mutex> lock(m);
                if (--running == 0) cv.notify_all();
            }
        });
    samples_t samples;
    const auto warm_start = clock::now();
    bool warming = true;
    while (static_cast<int>(samples.size()) < repeats) {
        {
            std::lock_guard<std::mutex> lock(m);
            running = threads;
            ++round;
        }
        cv.notify_all();
        {
            std::unique_lock<std::mutex> lock(m);
            cv.wait(lock, [&] { return running == 0; });
        }
        if (warming) { // untimed rounds for warm_up_seconds, at least one
            warming = seconds_since(warm_start) < warm_up_seconds;
            if (!warming) before_timing();
            continue;
        }
        auto first = spans[0].first, last = spans[0].second;
        for (auto &span : spans) {
            first = std::min(first, span.first);
            last = std::max(last, span.second);
        }
        samples.push_back(std::chrono::duration<double, std::micro>(last - first).count() / calls);
    }
    {
        std::lock_guard<std::mutex> lock(m);
        stop = true;
    }
    cv.notify_all();
    for (auto &th : pool) th.join();
    return samples;
}

// Timestamps of the graph trace row (ROW "graph trace"), as the binding's
// dnnl.graph.ocl_interop._trace_allocators records them.
std::atomic<bool> tracing {false};
std::vector<std::pair<const char *, long long>> trace_log;
void mark(const char *stage) {
    if (!tracing.load(std::memory_order_relaxed)) return;
    trace_log.emplace_back(stage,
            std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count());
}

// The C allocator of the graph row: USM device memory straight from the driver.
void *c_malloc(size_t size, size_t alignment, cl_device_id device, cl_context context) {
    mark("malloc: called by oneDNN");
    cl_int err;
    void *ptr = usm_device_alloc(context, device, nullptr, size, static_cast<cl_uint>(alignment), &err);
    mark("malloc: return to oneDNN");
    return ptr;
}
void c_free(void *ptr, cl_device_id, cl_context context, cl_event event) {
    mark("free: called by oneDNN");
    if (event) clWaitForEvents(1, &event);
    usm_free(context, ptr);
    mark("free: return to oneDNN");
}

// The pool row's C allocator: the policy of dnnl.graph.allocators.caching_pool
// (default settings) in C. Sizes rounded up to 256 bytes; a freed block
// joins its size class's list, oldest first, with the event oneDNN passed
// (retained); malloc takes the oldest block of the size class and context,
// aligned as asked, whose event has completed (a status query: no wait),
// else allocates from the driver; statistics (live and peak bytes, calls,
// sizes by pointer, hits and misses) kept under locks, as the pool does.
struct c_pool_state {
    struct block {
        void *ptr;
        cl_event event;
        cl_context context;
    };
    std::mutex cache_lock, stats_lock;
    std::unordered_map<size_t, std::vector<block>> blocks;
    std::unordered_map<void *, size_t> sizes;
    size_t live_bytes = 0, peak_bytes = 0, allocations = 0, frees = 0, hits = 0, misses = 0;
} c_pool;

bool c_pool_done(c_pool_state::block &b) {
    if (!b.event) return true;
    cl_int status = CL_COMPLETE;
    clGetEventInfo(b.event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status, nullptr);
    if (status > 0) return false;
    clReleaseEvent(b.event);
    b.event = nullptr;
    return true;
}

void *c_pool_malloc(size_t size, size_t alignment, cl_device_id device, cl_context context) {
    mark("malloc: called by oneDNN");
    const size_t size_class = (size + 255) / 256 * 256;
    void *ptr = nullptr;
    {
        std::lock_guard<std::mutex> lock(c_pool.cache_lock);
        auto &list = c_pool.blocks[size_class];
        for (auto it = list.begin(); it != list.end(); ++it)
            if (it->context == context
                    && (alignment <= 1 || reinterpret_cast<uintptr_t>(it->ptr) % alignment == 0)
                    && c_pool_done(*it)) {
                ptr = it->ptr;
                list.erase(it);
                ++c_pool.hits;
                break;
            }
        if (!ptr) ++c_pool.misses;
    }
    if (!ptr) {
        cl_int err;
        ptr = usm_device_alloc(context, device, nullptr, size_class, static_cast<cl_uint>(alignment), &err);
    }
    std::lock_guard<std::mutex> lock(c_pool.stats_lock);
    c_pool.sizes[ptr] = size_class;
    ++c_pool.allocations;
    c_pool.live_bytes += size_class;
    c_pool.peak_bytes = std::max(c_pool.peak_bytes, c_pool.live_bytes);
    mark("malloc: return to oneDNN");
    return ptr;
}

void c_pool_free(void *ptr, cl_device_id, cl_context context, cl_event event) {
    mark("free: called by oneDNN");
    size_t size_class;
    {
        std::lock_guard<std::mutex> lock(c_pool.stats_lock);
        auto it = c_pool.sizes.find(ptr);
        size_class = it->second;
        c_pool.sizes.erase(it);
        ++c_pool.frees;
        c_pool.live_bytes -= size_class;
    }
    if (event) clRetainEvent(event);
    {
        std::lock_guard<std::mutex> lock(c_pool.cache_lock);
        c_pool.blocks[size_class].push_back({ptr, event, context});
    }
    mark("free: return to oneDNN");
}

void c_pool_release() {
    std::lock_guard<std::mutex> lock(c_pool.cache_lock);
    for (auto &entry : c_pool.blocks)
        for (auto &b : entry.second) {
            if (b.event) {
                clWaitForEvents(1, &b.event);
                clReleaseEvent(b.event);
            }
            usm_free(b.context, b.ptr);
        }
    c_pool.blocks.clear();
}

// The large-matmul row: a SIZE x SIZE f32 matmul on pattern-filled memory;
// one call is an execute and a wait.
struct large_matmul {
    dnnl::memory::desc square;
    dnnl::matmul mm;
    std::unordered_map<int, dnnl::memory> args;

    large_matmul(const dnnl::engine &eng, int size)
        : square({size, size}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab)
        , mm(dnnl::matmul::primitive_desc(eng, square, square, square)) {
        args = {{DNNL_ARG_SRC, dnnl::memory(square, eng)}, {DNNL_ARG_WEIGHTS, dnnl::memory(square, eng)},
                {DNNL_ARG_DST, dnnl::memory(square, eng)}};
        for (auto &arg : args) fill(arg.second); // the same values on both sides
    }
    void run(dnnl::stream &s) {
        mm.execute(s, args);
        s.wait();
    }
    void poison_dst() { poison(args[DNNL_ARG_DST]); }
    void check() { check_output("large matmul", read(args[DNNL_ARG_DST])); }
};

// The graph rows: an attention-like partition (MatMul, SoftMax, MatMul) of
// B x S x D = 2 x 16 x 16 (softmax rows of 16: right on the emulated device,
// docs/known-problems.md) compiled for a graph engine whose allocator oneDNN
// calls on every execution, with pattern-filled USM device tensors.
struct attention_partition {
    static constexpr int B = 2, S = 16, D = 16;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    dnnl::engine geng;
    dnnl::stream gs;
    dnnl::graph::partition part;
    dnnl::graph::compiled_partition cp;
    std::vector<void *> storage;
    std::vector<dnnl::graph::tensor> ins, outs;

    static dnnl::graph::partition make_partition() {
        using namespace dnnl::graph;
        using lt = logical_tensor;
        lt q(0, lt::data_type::f32, {B, S, D}, lt::layout_type::strided);
        lt k(1, lt::data_type::f32, {B, S, D}, lt::layout_type::strided);
        lt v(2, lt::data_type::f32, {B, S, D}, lt::layout_type::strided);
        lt sc(3, lt::data_type::f32, {B, S, S}, lt::layout_type::strided);
        lt pr(4, lt::data_type::f32, {B, S, S}, lt::layout_type::strided);
        lt out(5, lt::data_type::f32, {B, S, D}, lt::layout_type::strided);
        op qk(0, op::kind::MatMul, {q, k}, {sc}, "qk");
        qk.set_attr<bool>(op::attr::transpose_b, true);
        op sm(1, op::kind::SoftMax, {sc}, {pr}, "softmax");
        sm.set_attr<int64_t>(op::attr::axis, -1);
        op pv(2, op::kind::MatMul, {pr, v}, {out}, "pv");
        dnnl::graph::graph g(dnnl::engine::kind::gpu);
        g.add_op(qk);
        g.add_op(sm);
        g.add_op(pv);
        g.finalize();
        return g.get_partitions()[0];
    }

    attention_partition(cl_device_id device, cl_context context, cl_command_queue queue,
            dnnl_graph_ocl_allocate_f malloc_fn = c_malloc, dnnl_graph_ocl_deallocate_f free_fn = c_free)
        : device(device)
        , context(context)
        , queue(queue)
        , geng(dnnl::graph::ocl_interop::make_engine_with_allocator(
                  device, context, dnnl::graph::ocl_interop::make_allocator(malloc_fn, free_fn)))
        , gs(dnnl::ocl_interop::make_stream(geng, queue))
        , part(make_partition())
        , cp(part.compile(part.get_input_ports(), part.get_output_ports(), geng)) {
        ins = make_tensors(part.get_input_ports());
        outs = make_tensors(part.get_output_ports());
    }
    ~attention_partition() {
        ins.clear();
        outs.clear();
        for (void *p : storage) usm_free(context, p);
    }

    // Tensors for `ports`: inputs hold pattern(), outputs zeros.
    std::vector<dnnl::graph::tensor> make_tensors(const std::vector<dnnl::graph::logical_tensor> &ports) {
        std::vector<dnnl::graph::tensor> ts;
        for (auto &p : ports) {
            dnnl::graph::logical_tensor queried = cp.query_logical_tensor(p.get_id());
            size_t bytes = queried.get_mem_size();
            cl_int err;
            void *ptr = usm_device_alloc(context, device, nullptr, bytes, 0, &err);
            check(err, "clDeviceMemAllocINTEL");
            std::vector<float> values(bytes / sizeof(float), 0.f);
            if (p.get_id() < 3)
                for (size_t i = 0; i < values.size(); ++i) values[i] = pattern(i);
            check(usm_memcpy(queue, CL_TRUE, ptr, values.data(), bytes, 0, nullptr, nullptr),
                    "clEnqueueMemcpyINTEL");
            storage.push_back(ptr);
            ts.emplace_back(queried, geng, ptr);
        }
        return ts;
    }
    void run() { cp.execute(gs, ins, outs); }
    void poison_outputs(cl_command_queue q, const std::vector<dnnl::graph::tensor> &out) {
        for (auto &t : out) poison_usm(q, t.get_data_handle(), t.get_logical_tensor().get_mem_size());
    }
    std::vector<float> output_of(cl_command_queue q, const std::vector<dnnl::graph::tensor> &out) {
        return read_usm(q, out[0].get_data_handle(), out[0].get_logical_tensor().get_mem_size());
    }
    void check_output_of(const std::string &row, const std::vector<dnnl::graph::tensor> &out) {
        check_output(row, output_of(queue, out));
    }
};

// The graph rows' timing: a warm-up of at least WARMUP executes, then `repeats` batches of 20
// executes and a wait, the output poisoned in between.
samples_t graph_samples(attention_partition &work, int repeats, int warmup) {
    warm_up([&] { work.run(); }, [&] { work.gs.wait(); }, 20, warmup);
    work.poison_outputs(work.queue, work.outs);
    return samples_us(repeats, 20, [&] { work.run(); }, [&] { work.gs.wait(); });
}

// The process's CPU time (user and system, every thread: the emulated
// device's workers too) and context switches, per call, over a stretch.
struct usage_per_call {
    double cpu_us = 0, voluntary = 0, involuntary = 0;
};
struct usage_meter {
    rusage before {};
    usage_meter() { getrusage(RUSAGE_SELF, &before); }
    usage_per_call per_call(double calls) const {
        rusage after {};
        getrusage(RUSAGE_SELF, &after);
        auto us = [](const timeval &t) { return t.tv_sec * 1e6 + t.tv_usec; };
        usage_per_call u;
        u.cpu_us = (us(after.ru_utime) - us(before.ru_utime) + us(after.ru_stime) - us(before.ru_stime))
                / calls;
        u.voluntary = (after.ru_nvcsw - before.ru_nvcsw) / calls;
        u.involuntary = (after.ru_nivcsw - before.ru_nivcsw) / calls;
        return u;
    }
};

// The graph throughput rows' work: `n` threads, each with its own queue,
// stream and tensors, executing `work`'s partition `calls` times then
// waiting, `repeats` samples (threaded_us), every thread's output poisoned
// before the timed rounds. `usage`, if given, gets the process's usage per
// execute; `outputs`, if given, every thread's output, one after the other.
samples_t graph_threads_us(attention_partition &work, int n, int calls, int repeats,
        usage_per_call *usage = nullptr, std::vector<float> *outputs = nullptr) {
    std::vector<cl_command_queue> queues;
    std::vector<dnnl::stream> streams;
    std::vector<std::vector<dnnl::graph::tensor>> ins, outs;
    for (int t = 0; t < n; ++t) {
        cl_int err;
        queues.push_back(clCreateCommandQueueWithProperties(work.context, work.device, nullptr, &err));
        check(err, "clCreateCommandQueue");
        streams.push_back(dnnl::ocl_interop::make_stream(work.geng, queues.back()));
        ins.push_back(work.make_tensors(work.part.get_input_ports()));
        outs.push_back(work.make_tensors(work.part.get_output_ports()));
    }
    auto partitions = [&](int t) {
        for (int i = 0; i < calls; ++i) work.cp.execute(streams[t], ins[t], outs[t]);
        streams[t].wait();
    };
    partitions(0);
    usage_meter meter;
    // With usage asked for: one untimed round (no warm-up time), counted in
    // the usage per call.
    samples_t us = threaded_us(n, n * calls, repeats, partitions, usage ? 0.0 : WARM_UP_SECONDS, [&] {
        for (int t = 0; t < n; ++t) work.poison_outputs(queues[t], outs[t]);
    });
    if (usage) *usage = meter.per_call(double(n) * calls * (repeats + 1));
    if (outputs)
        for (int t = 0; t < n; ++t) {
            std::vector<float> out = work.output_of(queues[t], outs[t]);
            outputs->insert(outputs->end(), out.begin(), out.end());
        }
    streams.clear();
    for (auto q : queues) clReleaseCommandQueue(q);
    return us;
}

// A small network end to end: convolution, ReLU, max pooling, inner
// product, on inputs both sides fill with the same values; WARMUP runs, then
// REPEATS timed ones. Its output is checked (run.py's "small network" and,
// against it, "small network with ops").
samples_t small_network_us(const dnnl::engine &eng, dnnl::stream &s_in, int warmup, int repeats) {
    using namespace dnnl;
    const memory::dim N = 8, IC = 3, OC = 16, HW = 32, CLASSES = 10;
    auto plain = [](memory::dims dims) {
        return memory::desc(dims, memory::data_type::f32,
                dims.size() == 4 ? memory::format_tag::nchw
                                 : dims.size() == 2 ? memory::format_tag::nc : memory::format_tag::a);
    };
    auto filled = [&](const memory::desc &md) {
        memory m(md, eng);
        fill(m);
        return m;
    };
    memory::desc net_src = plain({N, IC, HW, HW}), conv_w = plain({OC, IC, 3, 3}),
                 conv_b = plain({OC}), conv_dst = plain({N, OC, HW, HW}),
                 pool_dst = plain({N, OC, HW / 2, HW / 2}), fc_w = plain({CLASSES, OC, HW / 2, HW / 2}),
                 fc_b = plain({CLASSES}), fc_dst = plain({N, CLASSES});
    convolution_forward conv(convolution_forward::primitive_desc(eng, prop_kind::forward_inference,
            algorithm::convolution_direct, net_src, conv_w, conv_b, conv_dst, {1, 1}, {1, 1}, {1, 1}));
    eltwise_forward net_relu(eltwise_forward::primitive_desc(eng, prop_kind::forward_inference,
            algorithm::eltwise_relu, conv_dst, conv_dst));
    pooling_forward pool(pooling_forward::primitive_desc(eng, prop_kind::forward_inference,
            algorithm::pooling_max, conv_dst, pool_dst, {2, 2}, {2, 2}, {0, 0}, {0, 0}, {0, 0}));
    inner_product_forward fc(inner_product_forward::primitive_desc(eng, prop_kind::forward_inference,
            pool_dst, fc_w, fc_b, fc_dst));
    memory x = filled(net_src), cw = filled(conv_w), cb = filled(conv_b), y1(conv_dst, eng),
           y2(pool_dst, eng), fw = filled(fc_w), fb = filled(fc_b), y3(fc_dst, eng);
    auto run_network = [&] {
        conv.execute(s_in, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, cw}, {DNNL_ARG_BIAS, cb}, {DNNL_ARG_DST, y1}});
        net_relu.execute(s_in, {{DNNL_ARG_SRC, y1}, {DNNL_ARG_DST, y1}});
        pool.execute(s_in, {{DNNL_ARG_SRC, y1}, {DNNL_ARG_DST, y2}});
        fc.execute(s_in, {{DNNL_ARG_SRC, y2}, {DNNL_ARG_WEIGHTS, fw}, {DNNL_ARG_BIAS, fb}, {DNNL_ARG_DST, y3}});
        s_in.wait();
    };
    warm_up(run_network, [] {}, 1, warmup);
    poison(y1);
    poison(y2);
    poison(y3);
    samples_t us = samples_us(repeats, 1, run_network);
    check_output("small network", read(y3));
    return us;
}

// Twenty small operations in a chain, what dnnl.ops' capture exists for:
// ten times a binary add of a [1, 64] bias row to a [16, 64] tensor, then a
// tanh, each into a destination of its own, on pattern() inputs; one wait.
// Its output is checked (run.py's "20-op network" and, against it, "20-op
// network replayed" and "20-op network with ops").
samples_t chain_network_us(const dnnl::engine &eng, dnnl::stream &s_in, int warmup, int repeats) {
    using namespace dnnl;
    const memory::desc rows({16, 64}, memory::data_type::f32, memory::format_tag::ab);
    const memory::desc bias_row({1, 64}, memory::data_type::f32, memory::format_tag::ab);
    binary add(binary::primitive_desc(eng, algorithm::binary_add, rows, bias_row, rows));
    eltwise_forward tanh(eltwise_forward::primitive_desc(eng, prop_kind::forward_inference,
            algorithm::eltwise_tanh, rows, rows));
    memory x(rows, eng), bias(bias_row, eng);
    fill(x);
    fill(bias);
    std::vector<memory> dst;
    for (int i = 0; i < 20; ++i) dst.emplace_back(rows, eng);
    // The arguments made once, as a hand-written loop keeps them; executed
    // through ocl_interop::execute, the entry point dnnl.ops' replay uses
    // (the quickest of oneDNN's: no event kept for the stream's own
    // dependencies).
    std::vector<std::unordered_map<int, memory>> args;
    for (int i = 0; i < 10; ++i) {
        const memory &src = i == 0 ? x : dst[2 * i - 1];
        args.push_back({{DNNL_ARG_SRC_0, src}, {DNNL_ARG_SRC_1, bias}, {DNNL_ARG_DST, dst[2 * i]}});
        args.push_back({{DNNL_ARG_SRC, dst[2 * i]}, {DNNL_ARG_DST, dst[2 * i + 1]}});
    }
    const primitive *steps[2] = {&add, &tanh};
    auto run_network = [&] {
        for (int i = 0; i < 20; ++i) {
            cl_event event = ocl_interop::execute(*steps[i % 2], s_in, args[i]);
            if (event) clReleaseEvent(event);
        }
        s_in.wait();
    };
    warm_up(run_network, [] {}, 1, warmup);
    for (auto &m : dst) poison(m);
    samples_t us = samples_us(repeats, 1, run_network);
    check_output("20-op network", read(dst.back()));
    return us;
}

// What a primitive a creation row made computes: its output for pattern()
// input into a POISON-filled destination of `desc` (run.py's
// made_relu_output and its children's check).
std::vector<float> output_of_made(const dnnl::primitive &made, const dnnl::engine &eng, dnnl::stream &s,
        const dnnl::memory::desc &desc) {
    dnnl::memory src(desc, eng), dst(desc, eng);
    fill(src);
    poison(dst);
    made.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
    s.wait();
    return read(dst);
}

// ROW alone (the optional fourth argument): WARMUP calls, then ITERATIONS
// timed ones, into `rows` (and its output's digest into `checks`); "graph
// trace" prints its trace itself and leaves `rows` empty.
void run_one_row(const std::string &row, int iterations, int warmup, int matmul_size,
        cl_device_id device, cl_context context, cl_command_queue in_order,
        std::map<std::string, samples_t> &rows) {
    samples_t us;
    if (row == "large matmul") {
        dnnl::engine eng = dnnl::ocl_interop::make_engine(device, context);
        dnnl::stream s_in = dnnl::ocl_interop::make_stream(eng, in_order);
        large_matmul work(eng, matmul_size);
        warm_up([&] { work.run(s_in); }, [] {}, 1, warmup);
        work.poison_dst();
        us = samples_us(iterations, 1, [&] { work.run(s_in); });
        work.check();
    } else if (row == "graph execute with allocator" || row == "graph execute with caching pool") {
        if (iterations % 20)
            throw std::runtime_error("ITERATIONS must be a multiple of 20 for the graph rows");
        bool pool = row == "graph execute with caching pool";
        attention_partition work(device, context, in_order, pool ? c_pool_malloc : c_malloc,
                pool ? c_pool_free : c_free);
        us = graph_samples(work, iterations / 20, warmup);
        work.check_output_of(row, work.outs);
    } else if (row == "graph trace" || row == "graph trace (caching pool)") {
        bool pool = row != "graph trace";
        attention_partition work(device, context, in_order, pool ? c_pool_malloc : c_malloc,
                pool ? c_pool_free : c_free);
        for (int i = 0; i < warmup; ++i) work.run();
        work.gs.wait();
        trace_log.clear(); // a module's earlier calls left theirs
        tracing = true;
        for (int i = 0; i < iterations; ++i) {
            mark("execute: called");
            work.run();
            mark("execute: returned");
        }
        tracing = false;
        work.gs.wait();
        std::printf("{\"trace\": [");
        const char *sep = "";
        for (auto &r : trace_log) {
            std::printf("%s[\"%s\", %lld]", sep, r.first, r.second);
            sep = ", ";
        }
        std::printf("]}\n");
        return;
    } else if (row == "graph threads (usage)") {
        // benchmarks/thread_usage.py: the graph throughput rows (ITERATIONS
        // samples each) into `rows`, and a first line with the process's
        // usage per execute at each thread count.
        attention_partition work(device, context, in_order);
        std::string usage = "{\"usage\": {";
        for (int n : {1, 2, 4}) {
            std::string name = "graph throughput, " + std::to_string(n) + (n == 1 ? " thread" : " threads");
            usage_per_call u;
            std::vector<float> out; // every thread's
            rows[name] = graph_threads_us(work, n, 20, iterations, &u, &out);
            check_output(name, out);
            char entry[200];
            std::snprintf(entry, sizeof(entry),
                    "%s\"%d\": {\"cpu_us\": %.3f, \"voluntary\": %.4f, \"involuntary\": %.4f}",
                    n == 1 ? "" : ", ", n, u.cpu_us, u.voluntary, u.involuntary);
            usage += entry;
        }
        std::printf("%s}}\n", usage.c_str());
        return;
    } else if (row == "small network") {
        dnnl::engine eng = dnnl::ocl_interop::make_engine(device, context);
        dnnl::stream s_in = dnnl::ocl_interop::make_stream(eng, in_order);
        us = small_network_us(eng, s_in, warmup, iterations);
    } else if (row == "20-op network") {
        dnnl::engine eng = dnnl::ocl_interop::make_engine(device, context);
        dnnl::stream s_in = dnnl::ocl_interop::make_stream(eng, in_order);
        us = chain_network_us(eng, s_in, warmup, iterations);
    } else if (row == "primitive creation (cold, fresh process)") {
        // ITERATIONS creations, each compiling its kernels; the fastest.
        dnnl::engine eng = dnnl::ocl_interop::make_engine(device, context);
        dnnl::memory::desc tiny({64}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
        dnnl::set_primitive_cache_capacity(0);
        dnnl::eltwise_forward made;
        us = fastest_us(iterations, [&] {
            made = dnnl::eltwise_forward(dnnl::eltwise_forward::primitive_desc(eng,
                    dnnl::prop_kind::forward_inference, dnnl::algorithm::eltwise_relu, tiny, tiny));
        });
        dnnl::stream s = dnnl::ocl_interop::make_stream(eng, in_order);
        check_output(row, output_of_made(made, eng, s, tiny));
    } else {
        throw std::runtime_error("unknown row \"" + row + "\" (large matmul, small network, 20-op network, graph "
                                 "execute with allocator, graph execute with caching pool, "
                                 "graph trace, primitive creation (cold, fresh process))");
    }
    rows[row] = us;
}

void print_report(const std::map<std::string, samples_t> &rows) {
    std::printf("{\"rows\": {");
    const char *sep = "";
    for (auto &r : rows) {
        std::printf("%s\"%s\": [", sep, r.first.c_str());
        const char *sep2 = "";
        for (double v : r.second) {
            std::printf("%s%.4f", sep2, v);
            sep2 = ", ";
        }
        std::printf("]");
        sep = ", ";
    }
    std::printf("}, \"checks\": {");
    sep = "";
    for (auto &c : checks) {
        std::printf("%s\"%s\": {\"n\": %zu, \"sum\": %.9g, \"head\": [", sep, c.first.c_str(),
                c.second.n, c.second.sum);
        const char *sep2 = "";
        for (float v : c.second.head) {
            std::printf("%s%.9g", sep2, v);
            sep2 = ", ";
        }
        std::printf("]}");
        sep = ", ";
    }
    std::printf("}}\n");
}

} // namespace

#ifdef DNNL_OCL_INTEROP_BASELINE_MODULE
extern "C" int baseline_main(int argc, char **argv);
#define main baseline_main
#endif

int main(int argc, char **argv) try {
    using namespace dnnl;
    const int iterations = argc > 1 ? std::atoi(argv[1]) : 2000;
    const int warmup = argc > 2 ? std::atoi(argv[2]) : 200;
    const int matmul_size = argc > 3 ? std::atoi(argv[3]) : 512;
    const int batch = 100, repeats = std::max(iterations / batch, 5);
    std::map<std::string, samples_t> rows;

    cl_device_id device = intel_gpu();
    cl_int err;
    cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
    check(err, "clCreateContext");
    cl_command_queue in_order = clCreateCommandQueueWithProperties(context, device, nullptr, &err);
    check(err, "clCreateCommandQueue");
    cl_queue_properties ooo_props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0};
    cl_command_queue out_of_order = clCreateCommandQueueWithProperties(context, device, ooo_props, &err);
    check(err, "clCreateCommandQueue");
    usm_device_alloc = extension<clDeviceMemAllocINTEL_fn>(device, "clDeviceMemAllocINTEL");
    usm_get_alloc_info = extension<clGetMemAllocInfoINTEL_fn>(device, "clGetMemAllocInfoINTEL");
    usm_free = extension<clMemBlockingFreeINTEL_fn>(device, "clMemBlockingFreeINTEL");
    usm_fill = extension<clEnqueueMemFillINTEL_fn>(device, "clEnqueueMemFillINTEL");
    usm_memcpy = extension<clEnqueueMemcpyINTEL_fn>(device, "clEnqueueMemcpyINTEL");
    if (argc > 4) {
        run_one_row(argv[4], iterations, warmup, matmul_size, device, context, in_order, rows);
        if (!rows.empty()) print_report(rows);
        c_pool_release();
        std::fflush(stdout);
        // (a process would leave these to its exit; a module is called again)
        clReleaseCommandQueue(out_of_order);
        clReleaseCommandQueue(in_order);
        clReleaseContext(context);
        return 0;
    }

    engine eng = ocl_interop::make_engine(device, context);
    stream s_in = ocl_interop::make_stream(eng, in_order);
    stream s_ooo = ocl_interop::make_stream(eng, out_of_order);

    turn("per-call rows");
    // A call that touches no device.
    memory::desc tiny({64}, memory::data_type::f32, memory::format_tag::a);
    memory tiny_src(tiny, eng), tiny_dst(tiny, eng);
    fill(tiny_src);
    fill(tiny_dst);
    for (int i = 0; i < warmup; ++i) ocl_interop::get_memory_kind(tiny_src);
    ocl_interop::memory_kind kind = ocl_interop::memory_kind::usm;
    rows["get_memory_kind"] = samples_us(repeats, batch, [&] { kind = ocl_interop::get_memory_kind(tiny_src); });
    check_output("get_memory_kind", {float(static_cast<int>(kind))});

    // make_memory on a user USM pointer and on a user cl_mem.
    void *usm = usm_device_alloc(context, device, nullptr, tiny.get_size(), 0, &err);
    check(err, "clDeviceMemAllocINTEL");
    cl_mem buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, tiny.get_size(), nullptr, &err);
    check(err, "clCreateBuffer");
    // The binding refuses user storage oneDNN would use past its end or in
    // another context, with these queries (cpp/core/memory_handles.cpp); the
    // rows do the same, as a C++ program that cannot trust its storage
    // would. The "unchecked" rows (C++ only) show what the checks cost.
    auto usm_fits = [&](void *ptr, size_t needed) {
        void *base = nullptr;
        size_t size = 0;
        check(usm_get_alloc_info(context, ptr, CL_MEM_ALLOC_BASE_PTR_INTEL, sizeof(base), &base, nullptr),
                "clGetMemAllocInfoINTEL");
        check(usm_get_alloc_info(context, ptr, CL_MEM_ALLOC_SIZE_INTEL, sizeof(size), &size, nullptr),
                "clGetMemAllocInfoINTEL");
        auto offset = static_cast<size_t>(static_cast<char *>(ptr) - static_cast<char *>(base));
        if (!base || offset > size || size - offset < needed) throw std::runtime_error("USM pointer refused");
    };
    auto mem_fits = [&](cl_mem mem, size_t needed) {
        cl_context owner = nullptr;
        size_t size = 0;
        check(clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof(owner), &owner, nullptr), "clGetMemObjectInfo");
        check(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof(size), &size, nullptr), "clGetMemObjectInfo");
        if (owner != context || size < needed) throw std::runtime_error("cl_mem refused");
    };
    memory made; // what the last call made (the Python side keeps it too)
    auto make_usm_unchecked = [&] { made = ocl_interop::make_memory(tiny, eng, ocl_interop::memory_kind::usm, usm); };
    auto make_buffer_unchecked = [&] { made = ocl_interop::make_memory(tiny, eng, buffer); };
    auto make_usm = [&] {
        usm_fits(usm, tiny.get_size());
        make_usm_unchecked();
    };
    auto make_buffer = [&] {
        mem_fits(buffer, tiny.get_size());
        make_buffer_unchecked();
    };
    auto usm_facts = [&] { return memory_facts(made, made.get_data_handle() == usm); };
    auto buffer_facts = [&] { return memory_facts(made, ocl_interop::get_mem_object(made) == buffer); };
    for (int i = 0; i < warmup; ++i) { make_usm(); make_buffer(); }
    rows["make_memory(usm)"] = samples_us(repeats, batch, make_usm);
    check_output("make_memory(usm)", usm_facts());
    rows["make_memory(cl_mem)"] = samples_us(repeats, batch, make_buffer);
    check_output("make_memory(cl_mem)", buffer_facts());
    rows["make_memory(usm), unchecked"] = samples_us(repeats, batch, make_usm_unchecked);
    check_output("make_memory(usm), unchecked", usm_facts());
    rows["make_memory(cl_mem), unchecked"] = samples_us(repeats, batch, make_buffer_unchecked);
    check_output("make_memory(cl_mem), unchecked", buffer_facts());
    made = memory();

    // execute of a tiny eltwise primitive.
    eltwise_forward relu(eltwise_forward::primitive_desc(eng, prop_kind::forward_inference,
            algorithm::eltwise_relu, tiny, tiny));
    std::unordered_map<int, memory> relu_args {{DNNL_ARG_SRC, tiny_src}, {DNNL_ARG_DST, tiny_dst}};
    for (int i = 0; i < warmup; ++i) ocl_interop::execute(relu, s_in, relu_args);
    s_in.wait();
    poison(tiny_dst);
    rows["execute(in-order)"] = samples_us(repeats, batch,
            [&] { ocl_interop::execute(relu, s_in, relu_args); }, [&] { s_in.wait(); });
    check_output("execute(in-order)", read(tiny_dst));
    auto execute_ooo = [&] { clReleaseEvent(ocl_interop::execute(relu, s_ooo, relu_args)); };
    for (int i = 0; i < warmup; ++i) execute_ooo();
    s_ooo.wait();
    poison(tiny_dst);
    rows["execute(out-of-order)"] = samples_us(repeats, batch, execute_ooo, [&] { s_ooo.wait(); });
    check_output("execute(out-of-order)", read(tiny_dst));

    turn("primitive creation");
    // Primitive creation (descriptor and primitive): from oneDNN's primitive
    // cache, and cold (cache off: kernels compiled every time).
    eltwise_forward made_relu; // what the last creation made, run once after the row
    auto create_relu = [&] {
        made_relu = eltwise_forward(eltwise_forward::primitive_desc(eng, prop_kind::forward_inference,
                algorithm::eltwise_relu, tiny, tiny));
    };
    for (int i = 0; i < warmup; ++i) create_relu();
    rows["primitive creation (cached)"] = samples_us(repeats, batch, create_relu);
    check_output("primitive creation (cached)", output_of_made(made_relu, eng, s_in, tiny));
    const int capacity = get_primitive_cache_capacity();
    set_primitive_cache_capacity(0);
    rows["primitive creation (cold)"] = fastest_us(5, create_relu); // as run.py: see there
    set_primitive_cache_capacity(capacity);
    check_output("primitive creation (cold)", output_of_made(made_relu, eng, s_in, tiny));

    turn("small network");
    rows["small network"] = small_network_us(eng, s_in, 3, 15);

    turn("20-op network");
    rows["20-op network"] = chain_network_us(eng, s_in, 3, 15);

    turn("execute and wait");
    // execute, then a wait, beside nothing: the C++ counterpart of the
    // Python row "execute beside a busy thread" (whose own reference is
    // Python's execute alone; printed for information).
    poison(tiny_dst);
    rows["execute and wait"] = samples_us(repeats, batch, [&] {
        relu.execute(s_in, relu_args);
        s_in.wait();
    });
    check_output("execute and wait", read(tiny_dst));

    turn("chain of 100 executes");
    // A chain of 100 executes linked by events, waited once.
    auto chain = [&] {
        cl_event previous = ocl_interop::execute(relu, s_ooo, relu_args);
        for (int i = 1; i < 100; ++i) {
            cl_event next = ocl_interop::execute(relu, s_ooo, relu_args, {previous});
            clReleaseEvent(previous);
            previous = next;
        }
        clWaitForEvents(1, &previous);
        clReleaseEvent(previous);
    };
    warm_up(chain, [] {}, 1, 3);
    poison(tiny_dst);
    rows["chain of 100 executes"] = samples_us(std::max(repeats, 15), 1, chain);
    check_output("chain of 100 executes", read(tiny_dst));

    turn("large matmul");
    // A large f32 matmul.
    large_matmul big(eng, matmul_size);
    auto run_matmul = [&] { big.run(s_in); };
    warm_up(run_matmul);
    big.poison_dst();
    rows["large matmul"] = samples_us(9, 1, run_matmul);
    big.check();

    // A graph partition whose allocator is called on every execution, with
    // the C allocator and with the C pool.
    using namespace dnnl::graph;
    turn("graph execute with allocator");
    attention_partition attention(device, context, in_order);
    rows["graph execute with allocator"] = graph_samples(attention, std::max(repeats * 2, 30), warmup / 10 + 1);
    attention.check_output_of("graph execute with allocator", attention.outs);
    turn("graph execute with caching pool");
    {
        attention_partition pooled(device, context, in_order, c_pool_malloc, c_pool_free);
        rows["graph execute with caching pool"] = graph_samples(pooled, std::max(repeats * 2, 30), warmup / 10 + 1);
        pooled.check_output_of("graph execute with caching pool", pooled.outs);
    }

    // Threads, each with its own queue and stream: a 128 x 128 matmul (one
    // shared primitive, per-thread memory) and the partition above (shared,
    // per-thread tensors), THREAD_CALLS executes per thread then a wait.
    const int thread_calls = 20, thread_repeats = 7;
    memory::desc mid({128, 128}, memory::data_type::f32, memory::format_tag::ab);
    matmul mm_mid(matmul::primitive_desc(eng, mid, mid, mid));
    for (int n : {1, 2, 4}) { // each row its own turn: its two sides less than a second apart
        std::vector<cl_command_queue> queues;
        std::vector<stream> streams;
        std::vector<std::unordered_map<int, memory>> margs;
        for (int t = 0; t < n; ++t) {
            queues.push_back(clCreateCommandQueueWithProperties(context, device, nullptr, &err));
            check(err, "clCreateCommandQueue");
            streams.push_back(dnnl::ocl_interop::make_stream(eng, queues.back()));
            margs.push_back({{DNNL_ARG_SRC, memory(mid, eng)}, {DNNL_ARG_WEIGHTS, memory(mid, eng)},
                    {DNNL_ARG_DST, memory(mid, eng)}});
            for (auto &arg : margs.back()) fill(arg.second);
        }
        auto matmuls = [&](int t) {
            for (int i = 0; i < thread_calls; ++i) mm_mid.execute(streams[t], margs[t]);
            streams[t].wait();
        };
        matmuls(0);
        std::string suffix = std::to_string(n) + (n == 1 ? " thread" : " threads");
        turn("matmul throughput");
        rows["matmul throughput, " + suffix] = threaded_us(n, n * thread_calls, thread_repeats, matmuls,
                WARM_UP_SECONDS, [&] {
                    for (auto &a : margs) poison(a[DNNL_ARG_DST]);
                });
        std::vector<float> graph_outputs, matmul_outputs; // every thread's, one after the other
        turn("graph throughput");
        rows["graph throughput, " + suffix]
                = graph_threads_us(attention, n, thread_calls, thread_repeats, nullptr, &graph_outputs);
        for (auto &a : margs) {
            std::vector<float> out = read(a[DNNL_ARG_DST]);
            matmul_outputs.insert(matmul_outputs.end(), out.begin(), out.end());
        }
        check_output("matmul throughput, " + suffix, matmul_outputs);
        check_output("graph throughput, " + suffix, graph_outputs);
        streams.clear();
        for (auto q : queues) clReleaseCommandQueue(q);
    }

    turn("opencl kernel enqueue");
    // For reference: enqueue of a trivial OpenCL kernel (each adds 1 to the
    // zeroed buffer: the check counts the enqueues).
    const char *source = "__kernel void touch(__global float *a) { a[get_global_id(0)] += 1.0f; }";
    cl_program program = clCreateProgramWithSource(context, 1, &source, nullptr, &err);
    check(err, "clCreateProgramWithSource");
    check(clBuildProgram(program, 1, &device, nullptr, nullptr, nullptr), "clBuildProgram");
    cl_kernel kernel = clCreateKernel(program, "touch", &err);
    check(err, "clCreateKernel");
    const float zero = 0.f;
    check(clEnqueueFillBuffer(in_order, buffer, &zero, sizeof(zero), 0, tiny.get_size(), 0, nullptr, nullptr),
            "clEnqueueFillBuffer");
    size_t global = 64;
    auto enqueue = [&] {
        check(clSetKernelArg(kernel, 0, sizeof(buffer), &buffer), "clSetKernelArg");
        cl_event e;
        check(clEnqueueNDRangeKernel(in_order, kernel, 1, nullptr, &global, nullptr, 0, nullptr, &e),
                "clEnqueueNDRangeKernel");
        clReleaseEvent(e);
    };
    for (int i = 0; i < warmup; ++i) enqueue();
    clFinish(in_order);
    rows["opencl kernel enqueue"] = samples_us(repeats, batch, enqueue, [&] { clFinish(in_order); });
    std::vector<float> touched(64);
    check(clEnqueueReadBuffer(in_order, buffer, CL_TRUE, 0, tiny.get_size(), touched.data(), 0, nullptr,
                  nullptr),
            "clEnqueueReadBuffer");
    check_output("opencl kernel enqueue", touched);

    turn("end");
    print_report(rows);

    usm_free(context, usm);
    c_pool_release();
    clReleaseKernel(kernel);
    clReleaseProgram(program);
    clReleaseMemObject(buffer);
    return 0;
} catch (const std::exception &e) {
    std::fprintf(stderr, "baseline: %s\n", e.what());
    return 1;
}
