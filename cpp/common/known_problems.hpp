// The registry of oneDNN problems the binding acts on: one row per problem,
// each saying where its evidence lies, so that its rule acts there and
// nowhere else.
//
// A row names the implementations shown wrong (by impl_info_str() and
// primitive kind) or, for a rule that cannot name one (a stream's, a graph
// execute's), the devices its evidence covers; the case that is wrong; the
// evidence (oneDNN's source, or a probe and the device it ran on); the
// oneDNN releases it was verified in; and the first release that fixes it.
// A rule acts only where its row applies (applies(), names()): its switch is
// on (set_enabled: a user who checked their device may switch a rule off),
// the loaded oneDNN is older than `fixed`, and, for a rule keyed to
// implementations, oneDNN chose one of them. The checks themselves live in
// common/workarounds.cpp; docs/known-problems.md is checked against this
// table (tools/known_problems_doc.py).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"

namespace dnnl_ocl_interop {
namespace known_problems {

struct release {
    int major, minor, patch;
};

// The arguments an implementation is shown wrong for, where a problem's
// case depends on them (a bit each; `any_argument` where it does not).
namespace arg_bits {
constexpr unsigned src = 1u << 0, weights = 1u << 1, dst = 1u << 2, diff_src = 1u << 3,
                   diff_weights = 1u << 4, diff_dst = 1u << 5, bias = 1u << 6,
                   post_op_inputs = 1u << 7, any_argument = ~0u;
} // namespace arg_bits

// One implementation a problem names: oneDNN's impl_info_str() from its
// start up to a ':' or its end (so "ocl:ref" names "ocl:ref:any", not
// "ocl:reusable"), for primitives of `kind` (undef: any kind), and the
// arguments it is shown wrong for.
struct implementation {
    dnnl::primitive::kind kind;
    const char *name;
    unsigned arguments = arg_bits::any_argument;
};

enum class evidence_kind {
    source, // read in oneDNN's sources: holds on every device that runs that code
    probe,  // measured only, on the device `devices` names
};

struct problem {
    const char *id;
    const char *what;                            // one line: what oneDNN gets wrong
    std::vector<implementation> implementations; // empty: not keyed to one (see devices)
    const char *devices;                         // the devices the evidence covers
    const char *wrong_case; // the case that is wrong, as narrow as the evidence
    evidence_kind kind;
    const char *evidence;          // oneDNN source file and line, or the probe and its device
    std::vector<release> verified; // the oneDNN releases the evidence was checked in
    release fixed;                 // the first release without the problem; {0, 0, 0}: none yet
};

// Every problem, in the order of docs/known-problems.md.
const std::vector<problem> &all();
// The problem of `id`, or nullptr.
const problem *find(const std::string &id);

// Whether the rule of problem `id` acts in this process: its switch is on
// and the loaded oneDNN is older than its `fixed` release. (A oneDNN newer
// than every release verified is acted on too, and said so by verified_for().)
bool applies(const char *id);
// The entry of `id` naming oneDNN's chosen implementation of `pd` (the name
// the scope view shows, see below) when its rule applies, else nullptr.
const implementation *applies_to(const char *id, const dnnl::primitive_desc_base &pd);
// The position of problem `id` in all(); an unknown id raises
// invalid_arguments naming it.
size_t index_of(const char *id);
// applies_to() for the problem at `index` of all(), on a descriptor of kind
// `k` whose implementation name (implementation_of) the caller read once:
// the rules of one descriptor ask in turn on every creation, so each asks
// without looking its id up or querying the descriptor again.
const implementation *applies_to(size_t index, dnnl::primitive::kind k, const char *impl);
// Whether problem `id` names implementation `impl` of primitives of `kind`
// (whatever its switch).
bool names(const std::string &id, dnnl::primitive::kind kind, const char *impl);
// Whether the loaded oneDNN is a release problem `p` was verified in.
bool verified_for(const problem &p);

// A problem's switch (every one is on at import). Unknown ids raise
// invalid_arguments naming the id.
void set_enabled(const std::string &id, bool enabled);
bool is_enabled(const std::string &id);

// What the rules see of a device: its architecture (CL_DEVICE_IP_VERSION_INTEL,
// 0 when unanswered), the sub-group sizes its compiler may choose
// (CL_DEVICE_SUB_GROUP_SIZES_INTEL), and whether it is the package's emulated
// device with the CPU runtime compiling oneDNN's reusable softmax kernel at
// the sub-group size that kernel assumes (dnnl.emulation.enable()).
struct device_facts {
    uint32_t ip_version = 0;
    std::vector<size_t> sub_group_sizes;
    bool emulated_softmax_sub_groups = false;
};
device_facts facts_of(const dnnl::engine &engine);

// The implementation name a rule sees for `pd`: impl_info_str(), or the
// scope view's.
const char *implementation_of(const dnnl::primitive_desc_base &pd);

// The scope view (a test hook: tests/test_known_problem_scope.py): rules see
// `implementation` in place of every implementation oneDNN chose, and
// `device` in place of every device's facts, so that the suite can show
// which rules act for implementations and devices this machine cannot run.
// Empty name / no facts: what oneDNN and the device answer.
void set_scope_view(const std::string &implementation, const device_facts *device);

} // namespace known_problems
} // namespace dnnl_ocl_interop
