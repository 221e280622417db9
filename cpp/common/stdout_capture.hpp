// oneDNN's verbose lines taken from standard output, without touching
// libdnnl: while a collector is alive, file descriptor 1 is a pipe the
// binding reads (a pump thread), and what comes through it goes on to the
// real standard output, except the oneDNN lines a collector takes.
//
// What this does to the rest of the process, while any collector is alive:
//  - every thread's output to descriptor 1 passes through the pump, in
//    order, delayed by microseconds (C stdio is flushed when a capture
//    starts and ends; Python's own buffer flushes as it always does);
//  - a collector takes the oneDNN lines of its kinds that any thread prints
//    meanwhile, not only its own thread's (oneDNN's printf says nothing of
//    its thread); re-runs of refused creations hold the creations' lock
//    (common/reasons), so that no other creation of the binding prints then;
//  - a oneDNN line is shown when the user's own setting asks for its kind,
//    or an active showing dnnl.verbose region does and no collector kept it
//    silently; a re-run's lines (repeats of the refused call's) never;
//    oneDNN's header (printed once, before its first line) is kept back
//    until a line is shown;
//  - a child process started meanwhile inherits the pipe as its standard
//    output: the pump forwards what it writes until it closes it.
// Descriptor 1 is restored when the last collector ends.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dnnl_ocl_interop {
namespace verbose {

// Kinds shown when captured: the user's own (ONEDNN_VERBOSE, set_verbose)
// and those of active showing regions.
void set_shown_kinds(uint32_t user, uint32_t regions);

// oneDNN's header lines kept back, printed now (before oneDNN prints its
// next line on its own, for instance after a level is set).
void show_kept_header();

// How many collectors are alive (for dnnl._core._verbose_state()).
int active_collectors();

class collector {
public:
    // Takes oneDNN's lines of `kinds` printed from now on. With `swallow`,
    // the lines it takes are never shown; otherwise they are shown only when
    // the user's own setting asks for their kind.
    collector(uint32_t kinds, bool swallow);
    ~collector();
    collector(const collector &) = delete;
    collector &operator=(const collector &) = delete;
    // Stops taking; the lines taken, without their newline (a note at the
    // end when some were not kept: 512 lines of 4 KiB at most). May be
    // called from any thread, once; the destructor calls it if not.
    std::vector<std::string> finish();

    struct slot; // what the pump hands it (common/stdout_capture.cpp)

private:
    std::shared_ptr<slot> slot_;
    uint64_t id_;
    bool finished_ = false;
};

} // namespace verbose
} // namespace dnnl_ocl_interop
