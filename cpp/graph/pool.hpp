// The policy of dnnl.graph.allocators.caching_pool, in C++: the trampoline
// serves a pool's malloc and free without the GIL or any Python call (a
// warm pool costs a lock and a lookup per allocation, as the same policy in
// C does: benchmarks/baseline.cpp's c_pool_malloc).
//
// USM device memory by size class (sizes rounded up to `granularity`); a
// freed block joins its class's list, oldest first, with the event it must
// wait for (retained; null: ready, or in-order work may still use it); a
// malloc takes the oldest block of the class and context, aligned as asked,
// whose event has completed (a status query, never a wait), else allocates
// from the driver. A block freed without an event is reused at once with
// `reuse_without_event`, else freed at once with a blocking free (the
// allocator asks for marker events on in-order executes then, so only frees
// outside executes come without one). A block an execute on an in-order
// queue freed without an event is reused only by an execute on that queue,
// whose order runs the new user after the old: with several in-order queues
// on one engine, another queue gets a block of its own. A block freed
// without an event outside an execute (a dropped tensor) has no queue: with
// `reuse_without_event` any malloc may take it at once, which is right only
// when the work that used it is ordered before (one in-order queue) or done.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <CL/cl.h>

namespace dnnl_ocl_interop {
namespace graph_pool {

struct statistics {
    size_t live_bytes = 0, peak_bytes = 0, allocations = 0, frees = 0, hits = 0, misses = 0;
};

class caching_pool {
public:
    caching_pool(size_t granularity, bool reuse_without_event);
    ~caching_pool(); // frees the cached blocks (waiting for their events)
    caching_pool(const caching_pool &) = delete;
    caching_pool &operator=(const caching_pool &) = delete;

    // A block of at least `size` bytes of `context`, aligned to `alignment`;
    // nullptr with `error` set when it cannot (`exhausted`: the limit or the
    // device has no room, what Python calls a MemoryError).
    // `queue`: the in-order queue of the execute asking, if any.
    void *malloc(size_t size, size_t alignment, cl_device_id device, cl_context context,
            cl_command_queue queue, std::string &error, bool &exhausted);
    // Takes back a block malloc handed out, with the event its last users
    // complete (null: none); `owned`: the pool takes the caller's reference
    // to the event, else it retains its own. `queue`: the in-order queue of
    // the execute freeing it, if any (a block freed there without an event
    // is reused by that queue's executes only).
    void free(void *ptr, cl_context context, cl_event event, bool owned, cl_command_queue queue);
    // Frees every cached block now, waiting for its event.
    void release();

    bool reuse_without_event() const { return reuse_without_event_; }
    statistics stats() const;
    size_t cached_bytes() const;
    std::vector<std::pair<void *, size_t>> live_sizes() const; // pointer, rounded size
    // (pointer, event) of each cached block, oldest first by size class.
    std::vector<std::pair<void *, cl_event>> cached() const;
    // The bound on bytes held (handed out and cached); `bounded` false: none.
    void set_limit(bool bounded, size_t bytes);
    std::pair<bool, size_t> limit() const;

private:
    struct block {
        void *ptr;
        cl_event event;
        cl_context context;
        // Without an event: the in-order queue whose work may use it (not
        // retained: a handle is reused only once that queue and its work are gone).
        cl_command_queue queue;
    };
    static bool done(block &b); // event completed (forgotten then); no wait
    // Whether `b` may go to a malloc from `queue` (mutex_ held).
    static bool reusable(block &b, cl_command_queue queue);
    // Frees ready cached blocks until `size_class` more bytes fit under the
    // limit (mutex_ held); false when they cannot.
    bool make_room(size_t size_class, std::string &error);

    const size_t granularity_;
    const bool reuse_without_event_;
    mutable std::mutex mutex_; // the cache, the statistics, the limit
    std::mutex growing_;       // one thread at a time checks the limit and allocates
    std::unordered_map<size_t, std::vector<block>> cache_;
    std::unordered_map<void *, size_t> sizes_;
    statistics counters_;
    bool bounded_ = false;
    size_t limit_ = 0;
};

} // namespace graph_pool
} // namespace dnnl_ocl_interop
