#include "common/stdout_capture.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include "common/verbose_kinds.hpp"

namespace dnnl_ocl_interop {
namespace verbose {

struct collector::slot {
    uint32_t kinds;
    bool swallow;
    bool active = false; // its start marker went through the pump
    bool done = false;   // its end marker did
    std::vector<std::string> lines;
    size_t dropped = 0;
};

namespace {

constexpr size_t max_lines = 512, max_line_bytes = 4096, max_header_lines = 64;
// oneDNN lines longer than this are passed on as they are.
constexpr size_t max_pending = 1u << 20;
const char prefix[] = "onednn_verbose,";
constexpr size_t prefix_size = sizeof(prefix) - 1;
// Markers the binding writes into the pipe, in order with everything else:
// "\0dnnl_ocl_interop:capture:" TAG "\0" (TAG: +ID, -ID, end).
const char magic[] = "dnnl_ocl_interop:capture:";
constexpr size_t magic_size = sizeof(magic) - 1;

std::atomic<uint32_t> user_shown {error};
std::atomic<uint32_t> region_shown {0};

// The slots and the kept header: the pump takes this lock, never while
// writing into the pipe.
std::mutex slots_mutex;
std::condition_variable slots_changed;
std::map<uint64_t, std::shared_ptr<collector::slot>> slots;
std::vector<std::string> kept_header;
bool header_shown = false;
uint64_t next_id = 1;

// Sessions start and end, and markers are written, under this lock.
std::mutex lifecycle;
struct session;
std::shared_ptr<session> current;
int users = 0;

void write_all(int fd, const char *data, size_t size) {
    while (size && fd >= 0) {
        ssize_t n = write(fd, data, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return; // the real output is gone: nothing to do
        data += n;
        size -= static_cast<size_t>(n);
    }
}

struct session {
    int saved = -1; // the real descriptor 1, -1 when it was closed
    int read_end = -1;
    int marker = -1;      // the binding's own write end
    bool drained = false; // the end marker went through (under slots_mutex)
    std::string out;      // what goes on to `saved` from the chunk being read

    void flush_out() {
        write_all(saved, out.data(), out.size());
        out.clear();
    }

    // Shows the kept header before the first oneDNN line shown.
    void header_first() { // under slots_mutex
        if (header_shown) return;
        header_shown = true;
        for (const auto &line : kept_header) out += line;
        kept_header.clear();
    }

    void on_line(std::string &line) {
        // `line` holds its newline; the pump's chunk is written after.
        uint32_t k = kind_of(line.c_str());
        std::lock_guard<std::mutex> lock(slots_mutex);
        if (k == header) {
            if (!header_shown && kept_header.size() < max_header_lines) kept_header.push_back(line);
            return;
        }
        bool kept_silently = false, swallowed = false;
        for (auto &entry : slots) {
            collector::slot &s = *entry.second;
            if (!s.active || s.done || !(s.kinds & k)) continue;
            if (s.lines.size() >= max_lines) {
                ++s.dropped;
            } else {
                std::string text = line.substr(0, std::min(line.size(), max_line_bytes));
                while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
                    text.pop_back();
                s.lines.push_back(std::move(text));
            }
            (s.swallow ? swallowed : kept_silently) = true;
        }
        bool shown = k == other
                || (!swallowed
                        && ((user_shown.load() & k)
                                || (!kept_silently && (region_shown.load() & k))));
        if (!shown) return;
        header_first();
        out += line;
    }

    void on_marker(const std::string &tag) {
        std::lock_guard<std::mutex> lock(slots_mutex);
        if (tag == "end") {
            drained = true;
        } else if (tag.size() > 1) {
            auto found = slots.find(std::strtoull(tag.c_str() + 1, nullptr, 10));
            if (found != slots.end())
                (tag[0] == '+' ? found->second->active : found->second->done) = true;
        }
        slots_changed.notify_all();
    }

    // Reads the pipe until every write end is closed.
    void pump() {
        enum { line_start, in_onednn_line, in_other_line } state = line_start;
        std::string pending, buffer;
        char chunk[65536];
        for (;;) {
            ssize_t n = read(read_end, chunk, sizeof(chunk));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            buffer.append(chunk, static_cast<size_t>(n));
            size_t i = 0;
            while (i < buffer.size()) {
                if (buffer[i] == '\0') {
                    // A marker, whole or still coming, or a NUL of someone's output.
                    size_t have = std::min(buffer.size() - i - 1, magic_size);
                    if (buffer.compare(i + 1, have, magic, have) == 0) {
                        if (have < magic_size) break; // the rest is still coming
                        size_t end = buffer.find('\0', i + 1 + magic_size);
                        if (end == std::string::npos) break;
                        flush_out();
                        on_marker(buffer.substr(i + 1 + magic_size, end - i - 1 - magic_size));
                        i = end + 1;
                        continue;
                    }
                }
                char c = buffer[i++];
                switch (state) {
                    case line_start:
                        pending += c;
                        if (c == '\n'
                                || pending.compare(0, pending.size(), prefix, pending.size())
                                        != 0) {
                            out += pending;
                            pending.clear();
                            state = c == '\n' ? line_start : in_other_line;
                        } else if (pending.size() == prefix_size) {
                            state = in_onednn_line;
                        }
                        break;
                    case in_other_line:
                        out += c;
                        if (c == '\n') state = line_start;
                        break;
                    case in_onednn_line:
                        pending += c;
                        if (c == '\n') {
                            on_line(pending);
                            pending.clear();
                            state = line_start;
                        } else if (pending.size() > max_pending) {
                            out += pending;
                            pending.clear();
                            state = in_other_line;
                        }
                        break;
                }
            }
            buffer.erase(0, i);
            flush_out();
        }
        out += buffer;
        out += pending; // an unfinished line, as it came
        flush_out();
        close(read_end);
        if (saved >= 0) close(saved);
    }
};

void write_marker(const session &s, const std::string &tag) {
    std::string marker = std::string(1, '\0') + magic + tag + std::string(1, '\0');
    write_all(s.marker, marker.data(), marker.size());
}

// Descriptor 1 becomes the pipe (under `lifecycle`).
std::shared_ptr<session> start() {
    auto s = std::make_shared<session>();
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return nullptr;
    std::fflush(stdout);
    s->saved = fcntl(1, F_DUPFD_CLOEXEC, 3);
    s->read_end = fds[0];
    s->marker = fds[1];
    if (dup2(fds[1], 1) < 0) {
        close(fds[0]);
        close(fds[1]);
        if (s->saved >= 0) close(s->saved);
        return nullptr;
    }
    std::thread([s] { s->pump(); }).detach();
    return s;
}

// Descriptor 1 is the real one again once everything written before has
// gone through (under `lifecycle`). The pump goes on until the pipe's last
// writer (a child process started meanwhile) closes it.
void stop(const std::shared_ptr<session> &s) {
    std::fflush(stdout);
    if (s->saved >= 0)
        dup2(s->saved, 1);
    else
        close(1);
    write_marker(*s, "end");
    close(s->marker);
    s->marker = -1;
    std::unique_lock<std::mutex> lock(slots_mutex);
    slots_changed.wait(lock, [&] { return s->drained; });
}

} // namespace

void set_shown_kinds(uint32_t user, uint32_t regions) {
    user_shown = user;
    region_shown = regions;
}

void show_kept_header() {
    std::lock_guard<std::mutex> lock(slots_mutex);
    if (header_shown || kept_header.empty()) return;
    header_shown = true;
    std::fflush(stdout);
    for (const auto &line : kept_header) write_all(1, line.data(), line.size());
    kept_header.clear();
}

int active_collectors() {
    std::lock_guard<std::mutex> lock(lifecycle);
    return users;
}

collector::collector(uint32_t kinds, bool swallow) : slot_(std::make_shared<slot>()) {
    slot_->kinds = kinds;
    slot_->swallow = swallow;
    std::lock_guard<std::mutex> lock(lifecycle);
    if (!current) current = start();
    if (!current) { // no pipe: nothing is taken
        slot_->active = slot_->done = true;
        id_ = 0;
        return;
    }
    ++users;
    {
        std::lock_guard<std::mutex> slots_lock(slots_mutex);
        id_ = next_id++;
        slots[id_] = slot_;
    }
    std::fflush(stdout); // what this process printed before is not the collector's
    write_marker(*current, "+" + std::to_string(id_));
}

collector::~collector() {
    if (!finished_) finish();
}

std::vector<std::string> collector::finish() {
    if (finished_) return {};
    finished_ = true;
    if (id_ == 0) return {};
    std::shared_ptr<session> s;
    {
        std::lock_guard<std::mutex> lock(lifecycle);
        s = current;
        std::fflush(stdout);
        write_marker(*s, "-" + std::to_string(id_));
    }
    std::vector<std::string> result;
    {
        std::unique_lock<std::mutex> lock(slots_mutex);
        slots_changed.wait(lock, [&] { return slot_->done; });
        result = std::move(slot_->lines);
        if (slot_->dropped)
            result.push_back("(" + std::to_string(slot_->dropped) + " more lines not kept)");
        slots.erase(id_);
    }
    std::lock_guard<std::mutex> lock(lifecycle);
    if (--users == 0 && current) {
        stop(current);
        current.reset();
    }
    return result;
}

} // namespace verbose
} // namespace dnnl_ocl_interop
