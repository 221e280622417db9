// A value worked out at its first use and kept, safe when several threads
// use it at once with no GIL to order them (a free-threaded Python): after
// it is published a reader pays one acquire load. Threads that find it unset
// at the same time may each work it out, with no lock held (working it out
// may call oneDNN or Python); the first to publish wins and the others'
// copies are dropped. Once published it never changes.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <utility>

namespace dnnl_ocl_interop {

template <typename T>
class published {
public:
    published() = default;
    published(const published &other) { *this = other; }
    published &operator=(const published &other) {
        if (this == &other) return *this;
        std::shared_ptr<const T> value;
        {
            std::lock_guard<std::mutex> lock(publishing());
            value = other.value_;
        }
        std::lock_guard<std::mutex> lock(publishing());
        value_ = std::move(value);
        ready_.store(value_.get(), std::memory_order_release);
        return *this;
    }

    // The value, worked out by `make()` (a std::shared_ptr<const T>) if no
    // thread published one yet.
    template <typename Make>
    const std::shared_ptr<const T> &get(Make &&make) const {
        if (ready_.load(std::memory_order_acquire)) return value_; // never written again
        std::shared_ptr<const T> made = make();
        {
            std::lock_guard<std::mutex> lock(publishing());
            if (!value_) {
                value_ = std::move(made);
                ready_.store(value_.get(), std::memory_order_release);
            }
        }
        return value_; // (`made`, if another thread's won, goes here, outside the lock)
    }

private:
    // Taken only to publish or copy, never while a value is worked out.
    static std::mutex &publishing() {
        static std::mutex m;
        return m;
    }
    mutable std::shared_ptr<const T> value_;
    mutable std::atomic<const T *> ready_ {nullptr};
};

} // namespace dnnl_ocl_interop
