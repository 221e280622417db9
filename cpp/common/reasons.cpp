#include "common/enum_caster.hpp" // first: see the header

#include "common/reasons.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>

#include <pthread.h>

#include "common/stdout_capture.hpp"
#include "common/verbose_kinds.hpp"
#include "interpose/onednn_verbose_setting.hpp"

namespace dnnl_ocl_interop {
namespace verbose {
namespace {

std::mutex state_mutex;
setting_state state;
bool asked = false;                        // DNNL_OCL_INTEROP_VERBOSE_CAPTURE=1
std::string refusal;                       // why the interposer does not act, when asked
std::atomic<bool> reruns_possible {false}; // creations take the lock
std::atomic<uint64_t> rerun_count {0};

// Re-runs exclusive, creations shared. Writers first: a re-run does not wait
// behind a stream of creations (no thread takes it shared twice: see depth).
pthread_rwlock_t creations;
thread_local int depth = 0;          // creating() calls on this thread's stack
thread_local bool rerunning = false; // this thread re-runs a creation

constexpr uint32_t check_or_dispatch = create_check | create_dispatch;

void make_lock() {
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&creations, &attr);
    pthread_rwlockattr_destroy(&attr);
}

// Blocks for the lock with the GIL released, when this thread holds it
// (a thread holding the lock may be waiting for the GIL: a graph
// allocator's callback inside a compile).
template <typename Lock>
void lock_without_gil(Lock take) {
    if (PyGILState_Check()) {
        PyThreadState *saved = PyEval_SaveThread();
        take();
        PyEval_RestoreThread(saved);
    } else {
        take();
    }
}

std::string why_not_now() { // under state_mutex
    if (interposed()) return "";
    if (state.onednn & check_or_dispatch) return "";
    std::string how
            = "oneDNN gives its reasons only as verbose lines of its check and dispatch "
              "kinds, which are off";
    if (!state.lost.empty()) how += " (" + state.lost + ")";
    if (asked) return how + "; " + refusal;
    return how + ": ONEDNN_VERBOSE=check,dispatch prints them, DNNL_OCL_INTEROP_VERBOSE_CAPTURE=1 "
                 "puts them in .reasons (docs/api.md, Verbose output)";
}

} // namespace

std::string install() {
    static std::once_flag once;
    static std::string warning;
    std::call_once(once, [] {
        make_lock();
        std::string user;
        for (const char *name : {"ONEDNN_VERBOSE", "DNNL_VERBOSE"}) {
            const char *value = std::getenv(name);
            if (value && *value) {
                user = value;
                break;
            }
        }
        std::transform(user.begin(), user.end(), user.begin(),
                [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        state.user = state.onednn = kinds_of(user);
        set_shown_kinds(state.user, 0);
        const char *capture = std::getenv("DNNL_OCL_INTEROP_VERBOSE_CAPTURE");
        asked = capture && std::string(capture) == "1";
        if (asked) {
            refusal = interpose::enable();
            if (!refusal.empty())
                warning = "DNNL_OCL_INTEROP_VERBOSE_CAPTURE=1: " + refusal
                        + "; refused creations carry oneDNN's reasons only when ONEDNN_VERBOSE "
                          "asks for them";
        }
        reruns_possible = interposed() || (state.user & check_or_dispatch);
    });
    return warning;
}

std::mutex &setting_mutex() {
    return state_mutex;
}
setting_state &setting() {
    return state;
}
bool interposed() {
    return interpose::active();
}
bool interposer_asked() {
    return asked;
}
const std::string &interposer_refusal() {
    return refusal;
}
uint64_t reruns() {
    return rerun_count.load();
}

std::string reasons_unavailable() {
    std::lock_guard<std::mutex> lock(state_mutex);
    return why_not_now();
}

creation_scope::creation_scope() {
    if (!reruns_possible.load(std::memory_order_relaxed)) return;
    entered_ = true;
    if (depth++ > 0 || rerunning) return;
    if (pthread_rwlock_tryrdlock(&creations) != 0)
        lock_without_gil([] { pthread_rwlock_rdlock(&creations); });
    held_ = true;
}

creation_scope::~creation_scope() {
    if (held_) pthread_rwlock_unlock(&creations);
    if (entered_) --depth;
}

namespace {

std::vector<std::string> fields_of(const std::string &line) {
    std::vector<std::string> fields;
    size_t start = 0;
    while (true) {
        size_t end = line.find(',', start);
        fields.push_back(
                line.substr(start, end == std::string::npos ? std::string::npos : end - start));
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return fields;
}

// (who, message) of one line: the implementation a dispatch line rejects, or
// the primitive kind a check line is about, and what oneDNN says; an empty
// message for lines that say nothing of their own.
std::pair<std::string, std::string> reason_of(const std::string &line) {
    auto f = fields_of(line);
    size_t i = 2; // past onednn_verbose,v1
    if (i < f.size() && !f[i].empty() && std::isdigit(static_cast<unsigned char>(f[i][0]))) ++i;
    i += 2; // api, type
    if (i + 2 > f.size()) return {};
    std::string who = f[i];
    size_t message = i + 1;
    // Dispatch lines describe the implementation:
    // engine,kind,implementation,prop_kind,mds,attrs,aux,problem.
    if (f.size() > i + 9 && (f[i + 1] == "gpu" || f[i + 1] == "cpu")) {
        who = f[i + 3];
        message = i + 9;
    }
    // The last field is oneDNN's source position (file.cpp:line).
    size_t last = f.size();
    const std::string &position = f.back();
    size_t colon = position.rfind(':');
    if (colon != std::string::npos && colon + 1 < position.size() && position.find('.') < colon
            && std::all_of(position.begin() + colon + 1, position.end(),
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
        last = f.size() - 1;
    std::string text;
    for (size_t j = message; j < last; ++j) text += (j > message ? "," : "") + f[j];
    return {who, text};
}

// oneDNN's lines for `again`, re-run with its output captured (see the
// header); `why` says why there are none.
std::vector<std::string> rerun(const std::function<void()> &again, std::string &why) {
    lock_without_gil([] { pthread_rwlock_wrlock(&creations); });
    rerunning = true;
    uint32_t before = 0, wrote = 0;
    {
        std::lock_guard<std::mutex> lock(state_mutex);
        bool initialized = false;
        if (interposed() && interpose::read(before, initialized)) {
            if (!initialized)
                why = "oneDNN had not read its verbose setting";
            else if ((before | reason_kinds) != before
                    && interpose::exchange(before, before | reason_kinds))
                wrote = before | reason_kinds;
        }
    }
    std::vector<std::string> lines;
    if (why.empty()) {
        collector taken(reason_kinds, true);
        try {
            again();
        } catch (...) { // refused again, as expected (or not: its result is dropped)
        }
        lines = taken.finish();
        rerun_count.fetch_add(1, std::memory_order_relaxed);
    }
    if (wrote) {
        std::lock_guard<std::mutex> lock(state_mutex);
        interpose::exchange(wrote, before);
    }
    rerunning = false;
    pthread_rwlock_unlock(&creations);
    if (lines.empty() && why.empty()) why = "oneDNN printed no reason";
    return lines;
}

} // namespace

std::string summary(const std::vector<std::string> &lines) {
    // What oneDNN says, each message once, with whom it says it of:
    // "unsupported datatype (ocl:xe, ocl:ref:any)".
    std::vector<std::pair<std::string, std::vector<std::string>>> said;
    for (const auto &line : lines) {
        auto reason = reason_of(line);
        if (reason.second.empty()) continue;
        auto found = std::find_if(said.begin(), said.end(),
                [&](const auto &s) { return s.first == reason.second; });
        if (found == said.end()) {
            said.push_back({reason.second, {}});
            found = said.end() - 1;
        }
        if (std::find(found->second.begin(), found->second.end(), reason.first)
                == found->second.end())
            found->second.push_back(reason.first);
    }
    std::string text;
    for (size_t i = 0; i < said.size() && i < 3; ++i) {
        text += (i ? "; " : "") + said[i].first + " (";
        for (size_t j = 0; j < said[i].second.size(); ++j)
            text += (j ? ", " : "") + said[i].second[j];
        text += ")";
    }
    if (said.size() > 3) text += "; ...";
    for (char &c : text) // a message is ASCII; oneDNN's own lines are
        if (static_cast<unsigned char>(c) >= 0x80 || c == '\n') c = '?';
    return text;
}

void rethrow_explained(dnnl_status_t status, const char *what, creation_scope &scope,
        const std::function<void()> &again) {
    std::string why = reasons_unavailable();
    std::vector<std::string> reasons;
    if (why.empty()) {
        if (!scope.entered_ || depth > 1 || rerunning) {
            why = "oneDNN's reasons are not asked for a creation made inside another one's "
                  "callback";
        } else {
            if (scope.held_) {
                pthread_rwlock_unlock(&creations);
                scope.held_ = false;
            }
            reasons = rerun(again, why);
        }
    }
    std::string message = what;
    if (!reasons.empty()) {
        // oneDNN's advice to rerun with ONEDNN_VERBOSE=all: what it would
        // print for this call follows.
        const std::string advice
                = " Run workload with environment variable ONEDNN_VERBOSE=all "
                  "to get additional diagnostic information.";
        if (message.size() > advice.size()
                && message.compare(message.size() - advice.size(), advice.size(), advice) == 0)
            message.erase(message.size() - advice.size());
        if (!message.empty() && message.back() == '.') message.pop_back();
        std::string said = summary(reasons);
        message += "; oneDNN says: " + (said.empty() ? std::string("see") : said) + " ("
                + std::to_string(reasons.size()) + " line" + (reasons.size() == 1 ? "" : "s")
                + " in .reasons)";
    } else {
        message += " (" + why + ")";
    }
    status_error e(status, message);
    e.reasons = std::move(reasons);
    throw e;
}

} // namespace verbose
} // namespace dnnl_ocl_interop
