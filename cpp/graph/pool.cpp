#include "common/enum_caster.hpp" // first: see the header

#include "graph/pool.hpp"

#include <algorithm>
#include <cstdint>

#include "common/errors.hpp"
#include "common/usm_api.hpp"

namespace dnnl_ocl_interop {
namespace graph_pool {

namespace {
// The driver's blocking free; failures are ignored (the block is gone for
// the pool either way, and nothing could be done about it here).
void free_now(cl_context context, void *ptr) {
    try {
        usm::api_for(context).blocking_free(context, ptr);
    } catch (const std::exception &) {}
}
} // namespace

caching_pool::caching_pool(size_t granularity, bool reuse_without_event)
    : granularity_(std::max<size_t>(granularity, 1)), reuse_without_event_(reuse_without_event) {}

caching_pool::~caching_pool() {
    release();
}

bool caching_pool::done(block &b) {
    if (!b.event) return true;
    cl_int status = CL_COMPLETE;
    if (clGetEventInfo(b.event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status,
                nullptr)
                    == CL_SUCCESS
            && status > 0) // queued, submitted or running (negative: failed, done too)
        return false;
    clReleaseEvent(b.event);
    b.event = nullptr;
    return true;
}

bool caching_pool::reusable(block &b, cl_command_queue queue) {
    if (!b.event && b.queue) return b.queue == queue; // that queue's order protects it
    return done(b);
}

bool caching_pool::make_room(size_t size_class, std::string &error) {
    size_t held = counters_.live_bytes;
    for (auto &entry : cache_) held += entry.first * entry.second.size();
    for (auto &entry : cache_) {
        auto &blocks = entry.second;
        for (auto it = blocks.begin(); it != blocks.end() && held + size_class > limit_;) {
            if (!done(*it)) {
                ++it;
                continue;
            }
            free_now(it->context, it->ptr);
            held -= entry.first;
            it = blocks.erase(it);
        }
    }
    if (held + size_class <= limit_) return true;
    error = "caching_pool ran dry: " + std::to_string(size_class) + " bytes asked for, "
            + std::to_string(counters_.live_bytes) + " in use and "
            + std::to_string(held - counters_.live_bytes)
            + " cached of limit_bytes=" + std::to_string(limit_);
    return false;
}

void *caching_pool::malloc(size_t size, size_t alignment, cl_device_id device, cl_context context,
        cl_command_queue queue, std::string &error, bool &exhausted) {
    size_t size_class = 0; // the multiple of the granularity that holds the size
    const size_t blocks = std::max<size_t>(size, 1) / granularity_ + (size % granularity_ != 0);
    if (__builtin_mul_overflow(blocks, granularity_, &size_class)) {
        error = "caching_pool: " + std::to_string(size) + " bytes asked for cannot be rounded up to "
                "a multiple of granularity=" + std::to_string(granularity_);
        exhausted = true;
        return nullptr;
    }
    auto record = [&](void *ptr) { // mutex_ held
        sizes_[ptr] = size_class;
        ++counters_.allocations;
        counters_.live_bytes += size_class;
        counters_.peak_bytes = std::max(counters_.peak_bytes, counters_.live_bytes);
    };
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto found = cache_.find(size_class);
        if (found != cache_.end()) {
            auto &blocks = found->second;
            for (auto it = blocks.begin(); it != blocks.end(); ++it)
                if (it->context == context
                        && (alignment <= 1 || reinterpret_cast<uintptr_t>(it->ptr) % alignment == 0)
                        && reusable(*it, queue)) {
                    void *ptr = it->ptr;
                    blocks.erase(it);
                    ++counters_.hits;
                    record(ptr);
                    return ptr;
                }
        }
        ++counters_.misses;
    }
    std::lock_guard<std::mutex> growing(growing_);
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (bounded_ && !make_room(size_class, error)) {
            exhausted = true;
            return nullptr;
        }
    }
    cl_int err = CL_SUCCESS;
    void *ptr = nullptr;
    try {
        ptr = usm::api_for(context).device_alloc(context, device, nullptr, size_class,
                static_cast<cl_uint>(alignment), &err);
    } catch (const std::exception &e) {
        error = e.what();
        return nullptr;
    }
    if (err != CL_SUCCESS || !ptr) {
        // As dnnl.usm.device_alloc reports it: out of memory, or another
        // OpenCL failure.
        exhausted = err == CL_SUCCESS || err == CL_INVALID_BUFFER_SIZE
                || cl_status(err) == dnnl_out_of_memory;
        error = "USM allocation of " + std::to_string(size_class)
                + " bytes failed: " + cl_error_name(err) + " (" + std::to_string(err) + ")";
        return nullptr;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    record(ptr);
    return ptr;
}

void caching_pool::free(void *ptr, cl_context context, cl_event event, bool owned,
        cl_command_queue queue) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = sizes_.find(ptr);
        if (it == sizes_.end()) { // not the pool's: nothing to take back
            if (event && owned) clReleaseEvent(event);
            return;
        }
        size_t size_class = it->second;
        sizes_.erase(it);
        ++counters_.frees;
        counters_.live_bytes -= size_class;
        if (event || reuse_without_event_) {
            if (event && !owned) clRetainEvent(event);
            cache_[size_class].push_back({ptr, event, context, event ? nullptr : queue});
            return;
        }
    }
    free_now(context, ptr); // no event, outside an execute: see pool.hpp
}

void caching_pool::release() {
    std::vector<block> blocks;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto &entry : cache_)
            blocks.insert(blocks.end(), entry.second.begin(), entry.second.end());
        cache_.clear();
    }
    for (auto &b : blocks) {
        if (b.event) {
            clWaitForEvents(1, &b.event);
            clReleaseEvent(b.event);
        }
        free_now(b.context, b.ptr);
    }
}

statistics caching_pool::stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return counters_;
}

size_t caching_pool::cached_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t bytes = 0;
    for (auto &entry : cache_) bytes += entry.first * entry.second.size();
    return bytes;
}

std::vector<std::pair<void *, size_t>> caching_pool::live_sizes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return {sizes_.begin(), sizes_.end()};
}

std::vector<std::pair<void *, cl_event>> caching_pool::cached() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::pair<void *, cl_event>> out;
    for (auto &entry : cache_)
        for (auto &b : entry.second) out.emplace_back(b.ptr, b.event);
    return out;
}

void caching_pool::set_limit(bool bounded, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    bounded_ = bounded;
    limit_ = bytes;
}

std::pair<bool, size_t> caching_pool::limit() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return {bounded_, limit_};
}

} // namespace graph_pool
} // namespace dnnl_ocl_interop
