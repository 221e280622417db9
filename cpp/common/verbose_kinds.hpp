// oneDNN's verbose kinds: what ONEDNN_VERBOSE's tokens and levels turn on,
// and which kind a printed line is. The binding's masks use oneDNN's own
// flag bits (verbose_t::flag_kind, src/common/verbose.hpp of 3.13), which
// only the interposer (interpose/) writes into oneDNN.
#pragma once

#include <cstdint>
#include <string>

namespace dnnl_ocl_interop {
namespace verbose {

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

// What a refused creation's exception carries: the creation-time kinds.
constexpr uint32_t reason_kinds = error | create_check | create_dispatch;

// Kinds only a oneDNN level (dnnl_set_verbose) turns on through the public API.
constexpr uint32_t costly = exec_profile | create_profile | warn | debuginfo;

// The kinds of oneDNN's levels 1 and 2 (verbose_t::level1, level2), with the
// debuginfo byte dnnl_set_verbose sets to the level.
uint32_t level_kinds(int level);

// The smallest level whose kinds include the costly ones of `kinds`.
int level_for(uint32_t kinds);

// The kinds one token of a ONEDNN_VERBOSE value turns on, as oneDNN's
// get_verbose reads it; 0 for tokens it ignores.
uint32_t token_kinds(const std::string &token);

// The kinds oneDNN derives from a whole ONEDNN_VERBOSE value (comma-separated
// tokens, "0"/"none" clearing what came before, error on unless cleared).
uint32_t kinds_of(const std::string &value);

// A printed line's kind, from its fields (onednn_verbose,v1,[stamp,]api,type,...).
uint32_t kind_of(const char *line);

} // namespace verbose
} // namespace dnnl_ocl_interop
