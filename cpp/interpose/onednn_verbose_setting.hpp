// The one place the binding writes into libdnnl, fenced: off unless the user
// asks (DNNL_OCL_INTEROP_VERBOSE_CAPTURE=1), and then only on a oneDNN
// release it was verified against.
//
// oneDNN explains a refused creation only in its verbose "check" and
// "dispatch" lines, and its public API cannot switch those on once it has
// read ONEDNN_VERBOSE (once per process): dnnl_set_verbose takes levels 0-2,
// none of which has them. So, when asked, the binding switches them on in
// oneDNN's own verbose setting for the moment it re-runs a refused creation
// (common/reasons), and restores the setting right after; regions of
// dnnl.verbose use it to switch exactly their kinds on and off.
//
// What this assumes of libdnnl (each a row of the known-problems registry,
// docs/api.md "What the interposer assumes"):
//  - the setting is the file-local object dnnl::impl::verbose, a
//    setting_t<uint32_t> (a uint32_t of flag bits, then a bool "initialized":
//    8 bytes; src/common/verbose.cpp and src/common/utils.hpp of 3.13);
//  - its flag bits are verbose_t::flag_kind's (src/common/verbose.hpp of
//    3.13; common/verbose_kinds.hpp);
//  - the file libdnnl was loaded from has a symbol table naming it
//    (_ZN4dnnl4implL7verboseE: an unstripped libdnnl, as the bundled build);
//  - oneDNN reads the setting on each verbose check, without a lock, and
//    prints each line it allows with printf and fflush(stdout).
// It writes nothing else: no code, no GOT entry, no other variable.
#pragma once

#include <cstdint>
#include <string>

namespace dnnl_ocl_interop {
namespace interpose {

// The oneDNN releases the assumptions were verified against.
struct release {
    int major, minor, patch;
};

// Why the interposer would not act on oneDNN `r` ("" when it was verified
// against it).
std::string refusal_for(const release &r);

// Once, at import, when the user asked for it: checks the loaded libdnnl's
// release and finds its setting. Returns why it does not act ("" when it
// does).
std::string enable();

// Whether enable() succeeded.
bool active();

// oneDNN's setting now: its flag bits, and whether oneDNN has read its
// environment yet. False when not active.
bool read(uint32_t &kinds, bool &initialized);

// Sets oneDNN's flag bits to `kinds` if they are `expected` and oneDNN has
// read its environment (else it would overwrite them at its first look);
// whether it did. False when not active.
bool exchange(uint32_t expected, uint32_t kinds);

} // namespace interpose
} // namespace dnnl_ocl_interop
