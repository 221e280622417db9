// The C++ side of benchmarks/run.py: the same work as each Python row, done
// directly with oneDNN and OpenCL, on the first Intel GPU OpenCL shows
// (the emulated one when run.py enabled it). Prints one JSON object:
//   {"rows": {"<row name>": <median microseconds per call>, ...}}
// Usage: baseline ITERATIONS WARMUP MATMUL_SIZE [ROW]
// With ROW ("large matmul", "small network", "graph execute with allocator"
// or "primitive creation (cold, fresh process)"), only that
// row is set up and run: WARMUP calls of its work, then ITERATIONS timed
// calls (the graph row in batches of 20 executes and a wait; ITERATIONS a
// multiple of 20), and the JSON holds that row alone. benchmarks/cl_calls.py
// uses it to count OpenCL calls per iteration.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_ext.h>

#include "oneapi/dnnl/dnnl.hpp"
#include "oneapi/dnnl/dnnl_graph.hpp"
#include "oneapi/dnnl/dnnl_graph_ocl.hpp"
#include "oneapi/dnnl/dnnl_ocl.hpp"

namespace {

void check(cl_int err, const char *what) {
    if (err != CL_SUCCESS)
        throw std::runtime_error(std::string(what) + " failed: " + std::to_string(err));
}

// Median over `repeats` batches of the mean time of `batch` calls.
double median_us(int repeats, int batch, const std::function<void()> &call,
        const std::function<void()> &after_batch = [] {}) {
    std::vector<double> samples;
    for (int r = 0; r < repeats; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < batch; ++i) call();
        auto t1 = std::chrono::steady_clock::now();
        after_batch();
        samples.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / batch);
    }
    std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
    return samples[samples.size() / 2];
}

// The fastest of `repeats` calls (for work of a second or so).
double fastest_us(int repeats, const std::function<void()> &call) {
    double best = 0;
    for (int r = 0; r < repeats; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        call();
        double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        best = r == 0 ? us : std::min(best, us);
    }
    return best;
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

// Zeros in a memory's buffer: inputs hold the same values on both sides
// (uninitialised floats can take slow paths).
void zero(dnnl::memory &m) {
    void *p = m.map_data();
    std::memset(p, 0, m.get_desc().get_size());
    m.unmap_data(p);
}

// Throughput of `threads` threads, each running `work(t)` (its share of the
// calls, ending with a wait on its own stream), released together: median
// over `repeats` of the wall time per call, `calls` calls in all.
double threaded_us(int threads, int calls, int repeats, const std::function<void(int)> &work) {
    std::vector<double> samples;
    for (int r = 0; r < repeats; ++r) {
        std::mutex m;
        std::condition_variable cv;
        bool go = false;
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                {
                    std::unique_lock<std::mutex> lock(m);
                    cv.wait(lock, [&] { return go; });
                }
                work(t);
            });
        auto t0 = std::chrono::steady_clock::now();
        {
            std::lock_guard<std::mutex> lock(m);
            go = true;
        }
        cv.notify_all();
        for (auto &th : pool) th.join();
        auto t1 = std::chrono::steady_clock::now();
        samples.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / calls);
    }
    std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
    return samples[samples.size() / 2];
}

// The C allocator of the graph row: USM device memory straight from the driver.
void *c_malloc(size_t size, size_t alignment, cl_device_id device, cl_context context) {
    cl_int err;
    return usm_device_alloc(context, device, nullptr, size, static_cast<cl_uint>(alignment), &err);
}
void c_free(void *ptr, cl_device_id, cl_context context, cl_event event) {
    if (event) clWaitForEvents(1, &event);
    usm_free(context, ptr);
}

// The large-matmul row: a SIZE x SIZE f32 matmul on zero-filled memory; one
// call is an execute and a wait.
struct large_matmul {
    dnnl::memory::desc square;
    dnnl::matmul mm;
    std::unordered_map<int, dnnl::memory> args;

    large_matmul(const dnnl::engine &eng, int size)
        : square({size, size}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab)
        , mm(dnnl::matmul::primitive_desc(eng, square, square, square)) {
        args = {{DNNL_ARG_SRC, dnnl::memory(square, eng)}, {DNNL_ARG_WEIGHTS, dnnl::memory(square, eng)},
                {DNNL_ARG_DST, dnnl::memory(square, eng)}};
        for (auto &arg : args) zero(arg.second); // the same values on both sides
    }
    void run(dnnl::stream &s) {
        mm.execute(s, args);
        s.wait();
    }
};

// The small-network row: convolution, ReLU, max pooling and inner product,
// on inputs both sides fill with the same values; each run executes the four
// and waits.
struct small_network {
    static dnnl::memory::desc plain(const dnnl::memory::dims &dims) {
        using tag = dnnl::memory::format_tag;
        return dnnl::memory::desc(dims, dnnl::memory::data_type::f32,
                dims.size() == 4 ? tag::nchw : dims.size() == 2 ? tag::nc : tag::a);
    }
    static dnnl::memory filled(const dnnl::engine &eng, const dnnl::memory::desc &md) {
        dnnl::memory m(md, eng);
        float *p = m.map_data<float>();
        for (size_t i = 0; i < md.get_size() / sizeof(float); ++i) p[i] = float(i % 7) * 0.1f - 0.3f;
        m.unmap_data(p);
        return m;
    }
    static constexpr dnnl::memory::dim N = 8, IC = 3, OC = 16, HW = 32, CLASSES = 10;
    dnnl::memory::desc src = plain({N, IC, HW, HW}), conv_w = plain({OC, IC, 3, 3}), conv_b = plain({OC}),
                       conv_dst = plain({N, OC, HW, HW}), pool_dst = plain({N, OC, HW / 2, HW / 2}),
                       fc_w = plain({CLASSES, OC, HW / 2, HW / 2}), fc_b = plain({CLASSES}),
                       fc_dst = plain({N, CLASSES});
    dnnl::convolution_forward conv;
    dnnl::eltwise_forward relu;
    dnnl::pooling_forward pool;
    dnnl::inner_product_forward fc;
    dnnl::memory x, cw, cb, y1, y2, fw, fb, y3;

    explicit small_network(const dnnl::engine &eng)
        : conv(dnnl::convolution_forward::primitive_desc(eng, dnnl::prop_kind::forward_inference,
                  dnnl::algorithm::convolution_direct, src, conv_w, conv_b, conv_dst, {1, 1}, {1, 1},
                  {1, 1}))
        , relu(dnnl::eltwise_forward::primitive_desc(eng, dnnl::prop_kind::forward_inference,
                  dnnl::algorithm::eltwise_relu, conv_dst, conv_dst))
        , pool(dnnl::pooling_forward::primitive_desc(eng, dnnl::prop_kind::forward_inference,
                  dnnl::algorithm::pooling_max, conv_dst, pool_dst, {2, 2}, {2, 2}, {0, 0}, {0, 0},
                  {0, 0}))
        , fc(dnnl::inner_product_forward::primitive_desc(eng, dnnl::prop_kind::forward_inference,
                  pool_dst, fc_w, fc_b, fc_dst))
        , x(filled(eng, src)), cw(filled(eng, conv_w)), cb(filled(eng, conv_b)), y1(conv_dst, eng)
        , y2(pool_dst, eng), fw(filled(eng, fc_w)), fb(filled(eng, fc_b)), y3(fc_dst, eng) {}
    void run(dnnl::stream &s) {
        conv.execute(s, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, cw}, {DNNL_ARG_BIAS, cb}, {DNNL_ARG_DST, y1}});
        relu.execute(s, {{DNNL_ARG_SRC, y1}, {DNNL_ARG_DST, y1}});
        pool.execute(s, {{DNNL_ARG_SRC, y1}, {DNNL_ARG_DST, y2}});
        fc.execute(s, {{DNNL_ARG_SRC, y2}, {DNNL_ARG_WEIGHTS, fw}, {DNNL_ARG_BIAS, fb}, {DNNL_ARG_DST, y3}});
        s.wait();
    }
};

// The graph row: an attention-like partition (MatMul, SoftMax, MatMul)
// compiled for a graph engine whose allocator (c_malloc, c_free) oneDNN
// calls on every execution, with zero-filled USM device tensors.
struct attention_partition {
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
        const int B = 2, S = 32, D = 16;
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

    attention_partition(cl_device_id device, cl_context context, cl_command_queue queue)
        : device(device)
        , context(context)
        , queue(queue)
        , geng(dnnl::graph::ocl_interop::make_engine_with_allocator(
                  device, context, dnnl::graph::ocl_interop::make_allocator(c_malloc, c_free)))
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

    std::vector<dnnl::graph::tensor> make_tensors(const std::vector<dnnl::graph::logical_tensor> &ports) {
        std::vector<dnnl::graph::tensor> ts;
        for (auto &p : ports) {
            dnnl::graph::logical_tensor queried = cp.query_logical_tensor(p.get_id());
            cl_int err;
            void *ptr = usm_device_alloc(context, device, nullptr, queried.get_mem_size(), 0, &err);
            check(err, "clDeviceMemAllocINTEL");
            const float zero_pattern = 0.f;
            check(usm_fill(queue, ptr, &zero_pattern, sizeof(zero_pattern), queried.get_mem_size(), 0,
                          nullptr, nullptr),
                    "clEnqueueMemFillINTEL");
            check(clFinish(queue), "clFinish");
            storage.push_back(ptr);
            ts.emplace_back(queried, geng, ptr);
        }
        return ts;
    }
    void run() { cp.execute(gs, ins, outs); }
};

// ROW alone (the optional fourth argument): WARMUP calls, then ITERATIONS
// timed ones; prints {"rows": {ROW: median microseconds per call}}.
int run_one_row(const std::string &row, int iterations, int warmup, int matmul_size,
        cl_device_id device, cl_context context, cl_command_queue in_order) {
    double us;
    if (row == "large matmul") {
        dnnl::engine eng = dnnl::ocl_interop::make_engine(device, context);
        dnnl::stream s_in = dnnl::ocl_interop::make_stream(eng, in_order);
        large_matmul work(eng, matmul_size);
        for (int i = 0; i < warmup; ++i) work.run(s_in);
        us = median_us(iterations, 1, [&] { work.run(s_in); });
    } else if (row == "small network") {
        dnnl::engine eng = dnnl::ocl_interop::make_engine(device, context);
        dnnl::stream s_in = dnnl::ocl_interop::make_stream(eng, in_order);
        small_network net(eng);
        for (int i = 0; i < warmup; ++i) net.run(s_in);
        us = median_us(iterations, 1, [&] { net.run(s_in); });
    } else if (row == "graph execute with allocator") {
        const int batch = 20;
        if (iterations % batch)
            throw std::runtime_error("ITERATIONS must be a multiple of 20 for the graph row");
        attention_partition work(device, context, in_order);
        for (int i = 0; i < warmup; ++i) work.run();
        work.gs.wait();
        us = median_us(iterations / batch, batch, [&] { work.run(); }, [&] { work.gs.wait(); });
    } else if (row == "primitive creation (cold, fresh process)") {
        // ITERATIONS creations, each compiling its kernels; the fastest.
        dnnl::engine eng = dnnl::ocl_interop::make_engine(device, context);
        dnnl::memory::desc tiny({64}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
        dnnl::set_primitive_cache_capacity(0);
        us = fastest_us(iterations, [&] {
            dnnl::eltwise_forward p(dnnl::eltwise_forward::primitive_desc(eng,
                    dnnl::prop_kind::forward_inference, dnnl::algorithm::eltwise_relu, tiny, tiny));
        });
    } else {
        throw std::runtime_error("unknown row \"" + row + "\" (large matmul, small network, graph "
                                 "execute with allocator, primitive creation (cold, fresh process))");
    }
    std::printf("{\"rows\": {\"%s\": %.4f}}\n", row.c_str(), us);
    return 0;
}

} // namespace

int main(int argc, char **argv) try {
    using namespace dnnl;
    const int iterations = argc > 1 ? std::atoi(argv[1]) : 2000;
    const int warmup = argc > 2 ? std::atoi(argv[2]) : 200;
    const int matmul_size = argc > 3 ? std::atoi(argv[3]) : 512;
    const int batch = 100, repeats = std::max(iterations / batch, 5);
    std::map<std::string, double> rows;

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
    if (argc > 4)
        return run_one_row(argv[4], iterations, warmup, matmul_size, device, context, in_order);

    engine eng = ocl_interop::make_engine(device, context);
    stream s_in = ocl_interop::make_stream(eng, in_order);
    stream s_ooo = ocl_interop::make_stream(eng, out_of_order);

    // A call that touches no device.
    memory::desc tiny({64}, memory::data_type::f32, memory::format_tag::a);
    memory tiny_src(tiny, eng), tiny_dst(tiny, eng);
    zero(tiny_src);
    zero(tiny_dst);
    for (int i = 0; i < warmup; ++i) ocl_interop::get_memory_kind(tiny_src);
    rows["get_memory_kind"] = median_us(repeats, batch, [&] {
        volatile auto kind = ocl_interop::get_memory_kind(tiny_src);
        (void)kind;
    });

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
    auto make_usm_unchecked = [&] {
        memory m = ocl_interop::make_memory(tiny, eng, ocl_interop::memory_kind::usm, usm);
    };
    auto make_buffer_unchecked = [&] { memory m = ocl_interop::make_memory(tiny, eng, buffer); };
    auto make_usm = [&] {
        usm_fits(usm, tiny.get_size());
        make_usm_unchecked();
    };
    auto make_buffer = [&] {
        mem_fits(buffer, tiny.get_size());
        make_buffer_unchecked();
    };
    for (int i = 0; i < warmup; ++i) { make_usm(); make_buffer(); }
    rows["make_memory(usm)"] = median_us(repeats, batch, make_usm);
    rows["make_memory(cl_mem)"] = median_us(repeats, batch, make_buffer);
    rows["make_memory(usm), unchecked"] = median_us(repeats, batch, make_usm_unchecked);
    rows["make_memory(cl_mem), unchecked"] = median_us(repeats, batch, make_buffer_unchecked);

    // execute of a tiny eltwise primitive.
    eltwise_forward relu(eltwise_forward::primitive_desc(eng, prop_kind::forward_inference,
            algorithm::eltwise_relu, tiny, tiny));
    std::unordered_map<int, memory> relu_args {{DNNL_ARG_SRC, tiny_src}, {DNNL_ARG_DST, tiny_dst}};
    for (int i = 0; i < warmup; ++i) ocl_interop::execute(relu, s_in, relu_args);
    s_in.wait();
    rows["execute(in-order)"] = median_us(repeats, batch,
            [&] { ocl_interop::execute(relu, s_in, relu_args); }, [&] { s_in.wait(); });
    auto execute_ooo = [&] { clReleaseEvent(ocl_interop::execute(relu, s_ooo, relu_args)); };
    for (int i = 0; i < warmup; ++i) execute_ooo();
    s_ooo.wait();
    rows["execute(out-of-order)"] = median_us(repeats, batch, execute_ooo, [&] { s_ooo.wait(); });

    // Primitive creation (descriptor and primitive): from oneDNN's primitive
    // cache, and cold (cache off: kernels compiled every time).
    auto create_relu = [&] {
        eltwise_forward p(eltwise_forward::primitive_desc(eng, prop_kind::forward_inference,
                algorithm::eltwise_relu, tiny, tiny));
    };
    for (int i = 0; i < warmup; ++i) create_relu();
    rows["primitive creation (cached)"] = median_us(repeats, batch, create_relu);
    const int capacity = get_primitive_cache_capacity();
    set_primitive_cache_capacity(0);
    rows["primitive creation (cold)"] = fastest_us(5, create_relu); // as run.py: see there
    set_primitive_cache_capacity(capacity);

    // A small network end to end (see small_network).
    small_network net(eng);
    for (int i = 0; i < 3; ++i) net.run(s_in);
    rows["small network"] = median_us(15, 1, [&] { net.run(s_in); });

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
    for (int i = 0; i < 3; ++i) chain();
    rows["chain of 100 executes"] = median_us(std::max(repeats, 15), 1, chain);

    // A large f32 matmul.
    large_matmul big(eng, matmul_size);
    auto run_matmul = [&] { big.run(s_in); };
    run_matmul();
    rows["large matmul"] = median_us(9, 1, run_matmul);

    // A graph partition whose allocator is called on every execution.
    using namespace dnnl::graph;
    attention_partition attention(device, context, in_order);
    engine &geng = attention.geng;
    stream &gs = attention.gs;
    partition &part = attention.part;
    compiled_partition &cp = attention.cp;
    auto make_tensors = [&](const std::vector<logical_tensor> &ports) { return attention.make_tensors(ports); };
    auto run_partition = [&] { attention.run(); };
    for (int i = 0; i < warmup / 10 + 1; ++i) run_partition();
    gs.wait();
    rows["graph execute with allocator"] = median_us(std::max(repeats * 2, 30), batch / 5,
            run_partition, [&] { gs.wait(); });

    // Threads, each with its own queue and stream: a 128 x 128 matmul (one
    // shared primitive, per-thread memory) and the partition above (shared,
    // per-thread tensors), THREAD_CALLS executes per thread then a wait.
    const int thread_calls = 20, thread_repeats = 7;
    memory::desc mid({128, 128}, memory::data_type::f32, memory::format_tag::ab);
    matmul mm_mid(matmul::primitive_desc(eng, mid, mid, mid));
    for (int n : {1, 2, 4}) {
        std::vector<cl_command_queue> queues;
        std::vector<stream> streams, gstreams;
        std::vector<std::unordered_map<int, memory>> margs;
        std::vector<std::vector<tensor>> tins, touts;
        for (int t = 0; t < n; ++t) {
            queues.push_back(clCreateCommandQueueWithProperties(context, device, nullptr, &err));
            check(err, "clCreateCommandQueue");
            streams.push_back(dnnl::ocl_interop::make_stream(eng, queues.back()));
            gstreams.push_back(dnnl::ocl_interop::make_stream(geng, queues.back()));
            margs.push_back({{DNNL_ARG_SRC, memory(mid, eng)}, {DNNL_ARG_WEIGHTS, memory(mid, eng)},
                    {DNNL_ARG_DST, memory(mid, eng)}});
            for (auto &arg : margs.back()) zero(arg.second);
            tins.push_back(make_tensors(part.get_input_ports()));
            touts.push_back(make_tensors(part.get_output_ports()));
        }
        auto matmuls = [&](int t) {
            for (int i = 0; i < thread_calls; ++i) mm_mid.execute(streams[t], margs[t]);
            streams[t].wait();
        };
        auto partitions = [&](int t) {
            for (int i = 0; i < thread_calls; ++i) cp.execute(gstreams[t], tins[t], touts[t]);
            gstreams[t].wait();
        };
        matmuls(0);
        partitions(0);
        std::string suffix = std::to_string(n) + (n == 1 ? " thread" : " threads");
        rows["matmul throughput, " + suffix]
                = threaded_us(n, n * thread_calls, thread_repeats, matmuls);
        rows["graph throughput, " + suffix]
                = threaded_us(n, n * thread_calls, thread_repeats, partitions);
        streams.clear();
        gstreams.clear();
        for (auto q : queues) clReleaseCommandQueue(q);
    }

    // For reference: enqueue of a trivial OpenCL kernel.
    const char *source = "__kernel void touch(__global float *a) { a[get_global_id(0)] += 1.0f; }";
    cl_program program = clCreateProgramWithSource(context, 1, &source, nullptr, &err);
    check(err, "clCreateProgramWithSource");
    check(clBuildProgram(program, 1, &device, nullptr, nullptr, nullptr), "clBuildProgram");
    cl_kernel kernel = clCreateKernel(program, "touch", &err);
    check(err, "clCreateKernel");
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
    rows["opencl kernel enqueue"] = median_us(repeats, batch, enqueue, [&] { clFinish(in_order); });

    std::printf("{\"rows\": {");
    const char *sep = "";
    for (auto &r : rows) {
        std::printf("%s\"%s\": %.4f", sep, r.first.c_str(), r.second);
        sep = ", ";
    }
    std::printf("}}\n");

    usm_free(context, usm);
    clReleaseKernel(kernel);
    clReleaseProgram(program);
    clReleaseMemObject(buffer);
    return 0;
} catch (const std::exception &e) {
    std::fprintf(stderr, "baseline: %s\n", e.what());
    return 1;
}
