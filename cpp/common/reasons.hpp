// Why oneDNN refused a creation: the one place that asks.
//
// oneDNN says why it refuses a descriptor, a primitive, a partition or a
// stream only in its verbose "check" and "dispatch" lines on standard
// output, and only when ONEDNN_VERBOSE asked for those kinds at its first
// read. The binding changes nothing of that by default: a successful
// creation runs as it would without the binding (creating() adds a
// try/catch and one predictable branch), and oneDNN's output is the user's.
//
// On a refusal, the creation is re-run once with oneDNN's output captured
// (common/stdout_capture), under a lock that no other creation of the
// binding holds meanwhile, when oneDNN will print its reasons:
//  - the user's own setting has check or dispatch (ONEDNN_VERBOSE); or
//  - the user asked for the interposer (DNNL_OCL_INTEROP_VERBOSE_CAPTURE=1,
//    interpose/): it switches oneDNN's creation-time check and dispatch
//    kinds on for the re-run, in oneDNN's own setting, and back after.
// The lines go with the exception (dnnl.error.reasons), their summary in its
// message. Otherwise the message says how to get them. With reasons
// possible, creations take that lock shared (a few atomic operations).
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "oneapi/dnnl/dnnl.hpp"

namespace dnnl_ocl_interop {
namespace verbose {

// Module initialization, before the module's first oneDNN call: reads the
// user's ONEDNN_VERBOSE and DNNL_OCL_INTEROP_VERBOSE_CAPTURE. Returns a
// warning for the import ("" when none): the interposer was asked for and
// does not act.
std::string install();

// The binding's view of oneDNN's verbose setting (core/verbose.cpp changes
// it, under setting_mutex()).
struct setting_state {
    uint32_t user = 0;   // the kinds the user asked for (ONEDNN_VERBOSE, set_verbose)
    uint32_t onednn = 0; // the kinds oneDNN prints now, as far as the binding knows
    std::string lost;    // why oneDNN's check and dispatch kinds the user gave it are gone
};
std::mutex &setting_mutex();
setting_state &setting(); // under setting_mutex()

// Whether the interposer acts; why it does not when it was asked for.
bool interposed();
bool interposer_asked();
const std::string &interposer_refusal();

// Re-runs made so far (for dnnl._core._verbose_state()).
uint64_t reruns();

// Why a refusal now would carry no reasons ("" when it would).
std::string reasons_unavailable();

// A line for the exception's message: what the first distinct reasons say
// ("unsupported datatype (ocl:ref:any); ...").
std::string summary(const std::vector<std::string> &lines);

class creation_scope;

// Throws status_error with `status` and oneDNN's message `what`, with the
// reasons a re-run of `again` (the refused creation) gets.
[[noreturn]] void rethrow_explained(dnnl_status_t status, const char *what, creation_scope &scope,
        const std::function<void()> &again);

// Around one creation: holds the creations' lock shared while re-runs are
// possible (one relaxed load otherwise).
class creation_scope {
public:
    creation_scope();
    ~creation_scope();
    creation_scope(const creation_scope &) = delete;
    creation_scope &operator=(const creation_scope &) = delete;

private:
    friend void rethrow_explained(dnnl_status_t, const char *, creation_scope &,
            const std::function<void()> &);
    bool entered_ = false;
    bool held_ = false;
};

// Runs `call` (a oneDNN creation: descriptor, primitive, partition compile,
// stream); a dnnl::error it throws is rethrown as a status_error carrying
// oneDNN's reasons (dnnl.error.reasons in Python) where it can. The
// binding's own refusals (status_error) pass unchanged: their message says
// why.
template <typename F>
auto creating(F &&call) -> decltype(call()) {
    creation_scope scope;
    try {
        return call();
    } catch (const dnnl::error &e) {
        rethrow_explained(e.status, e.what(), scope, [&] { (void)call(); });
    }
}

} // namespace verbose
} // namespace dnnl_ocl_interop
