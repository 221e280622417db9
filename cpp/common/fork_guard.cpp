#include "common/enum_caster.hpp" // first: see the header

#include "common/fork_guard.hpp"

#include <atomic>

#include <pthread.h>

#include "common/errors.hpp"

namespace dnnl_ocl_interop {
namespace fork_guard {
namespace {

std::atomic<bool> used {false};
std::atomic<bool> forked {false};

// Runs in the child right after fork(): only async-signal-safe work.
void on_fork_child() {
    if (used.load(std::memory_order_relaxed)) forked.store(true, std::memory_order_relaxed);
}

} // namespace

void check() {
    if (forked.load(std::memory_order_relaxed))
        throw status_error(dnnl_runtime_error,
                "this process was forked after it used OpenCL, and OpenCL runtimes are not "
                "fork-safe: the child cannot use OpenCL (it would hang or crash). Use the "
                "'spawn' start method (multiprocessing.get_context(\"spawn\"), or "
                "concurrent.futures.ProcessPoolExecutor(mp_context=...)), or fork before "
                "the first OpenCL call");
    used.store(true, std::memory_order_relaxed);
}

void mark_used() {
    used.store(true, std::memory_order_relaxed);
}

bool forked_after_use() {
    return forked.load(std::memory_order_relaxed);
}

void install() {
    static std::atomic<bool> installed {false};
    if (!installed.exchange(true)) pthread_atfork(nullptr, nullptr, on_fork_child);
}

} // namespace fork_guard
} // namespace dnnl_ocl_interop
