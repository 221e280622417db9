// oneDNN's verbose output: the one place that sees it.
//
// oneDNN says why it refuses a descriptor (its "check" and "dispatch" lines)
// only as verbose output: process-wide, on standard output, and only when the
// environment asked for those kinds at the moment oneDNN first read its
// verbose setting (ONEDNN_VERBOSE, once per process; dnnl_set_verbose can
// later only overwrite the whole setting with a level 0-2, which has neither
// kind). So at import, before the module's first oneDNN call, install():
//
//  - answers libdnnl's getenv("ONEDNN_VERBOSE") with the user's value plus
//    "error,check,dispatch" (creation-time kinds, but for one: see the
//    last point), leaving the process environment alone, and remembers
//    what the user asked for;
//  - routes libdnnl's printf through a filter (libdnnl's GOT entries for
//    __printf_chk, printf and getenv, patched once): a verbose line printed
//    by a thread inside a capture scope is kept for that scope (the
//    exception of a failed creation carries it); a line reaches standard
//    output only when the user asked for its kind (the environment,
//    set_verbose, an active dnnl.verbose region). Everything else libdnnl
//    prints passes through unchanged.
//  - oneDNN's "check" token turns on its execute-time check as well, whose
//    lines a graph partition prints on every execute: libdnnl's
//    __snprintf_chk is patched too, so that such a line nobody wants is not
//    formatted, and the first one switches that kind off in oneDNN's own
//    setting (found in libdnnl's symbol table; back on while a region asks
//    for check). docs/known-problems.md has the problem.
//
// Nothing here calls Python: the filter runs on oneDNN's threads, with or
// without the GIL.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>

#include "common/errors.hpp"
#include "oneapi/dnnl/dnnl.hpp"

namespace dnnl_ocl_interop {
namespace verbose {

// oneDNN's verbose kinds (its verbose_t::flag_kind bits, src/common/verbose.hpp
// of 3.13), and the binding's own for lines that have none.
enum kind : uint32_t {
    error = 1u << 2,
    create_check = 1u << 3,
    create_dispatch = 1u << 4,
    create_profile = 1u << 5,
    exec_check = 1u << 6,
    exec_profile = 1u << 7,
    profile_externals = 1u << 8,
    warn = 1u << 9,
    debuginfo = 0xffu << 24, // oneDNN's debuginfo levels
    header = 1u << 22,       // the lines oneDNN prints once, before its first line
    other = 1u << 23,        // lines oneDNN prints whatever its flags (graph dump notices)
};

// What a failed creation's exception carries.
constexpr uint32_t reason_kinds = error | create_check | create_dispatch | exec_check;

// Module initialization, before the module's first oneDNN call. Does nothing
// when DNNL_OCL_INTEROP_VERBOSE_CAPTURE=0 is in the environment.
void install();

// While alive, oneDNN's verbose lines of `kinds` printed by this thread are
// kept here (in every scope of the thread that takes the line's kind). With
// `silent`, lines kept here are printed only when the user's own setting asks
// for them (not because a dnnl.verbose region is active); with `swallow`,
// never. Bounded: 512 lines of at most 4 KiB; the rest are counted.
class capture {
public:
    explicit capture(uint32_t kinds = reason_kinds, bool silent = false, bool swallow = false);
    ~capture();
    capture(const capture &) = delete;
    capture &operator=(const capture &) = delete;
    // The lines so far (a note at the end when some were not kept).
    std::vector<std::string> take();
    // For a heap-allocated scope that must end on another thread than the
    // one it began on: left for that thread to free.
    static void abandon(capture *c);

private:
    friend void on_line(const char *line, uint32_t line_kind);
    friend bool wanted_on_this_thread(uint32_t line_kind);
    // Whether this scope keeps lines of `line_kind`.
    bool takes(uint32_t line_kind) const { return !abandoned_ && (kinds_ & line_kind); }
    void add(const char *line);
    uint32_t kinds_;
    bool silent_;
    bool swallow_;
    bool abandoned_ = false;
    std::vector<std::string> lines_;
    size_t dropped_ = 0;
    capture *outer_ = nullptr;
};

// One line libdnnl printed, of kind `line_kind` (the filter's entry).
void on_line(const char *line, uint32_t line_kind);

// Whether a line of kind `line_kind` this thread printed now would be kept
// or shown (the filter's test, before the line is formatted).
bool wanted_on_this_thread(uint32_t line_kind);

// Why a failed creation's exception carries no reasons, or "" when it can.
std::string reasons_unavailable();

// A line for the exception's message: what the first distinct reasons say
// ("ocl:ref:any: unsupported datatype combination; ...").
std::string summary(const std::vector<std::string> &lines);

// Runs `call` (a oneDNN creation: descriptor, primitive, partition compile)
// inside a capture scope; a dnnl::error it throws is rethrown as a
// status_error carrying the lines this thread printed meanwhile
// (dnnl.error.reasons in Python) and their summary in its message. The
// binding's own refusals (status_error) pass unchanged: their message says
// why.
template <typename F>
auto creating(F &&call) -> decltype(call());

// Implementation detail of creating().
[[noreturn]] void rethrow_with_reasons(dnnl_status_t status, const char *what, capture &lines);

template <typename F>
auto creating(F &&call) -> decltype(call()) {
    capture lines;
    try {
        return call();
    } catch (const dnnl::error &e) {
        rethrow_with_reasons(e.status, e.what(), lines);
    }
}

// set_verbose, dnnl.verbose's regions (core/library.cpp's module functions).
void bind(pybind11::module_ &m);

} // namespace verbose
} // namespace dnnl_ocl_interop
