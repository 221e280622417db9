#include "common/enum_caster.hpp" // first: see the header

#include "common/known_problems.hpp"
#include "common/emulation_query.hpp"
#include "common/errors.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include <CL/cl.h>

#include "oneapi/dnnl/dnnl_ocl.hpp"

namespace dnnl_ocl_interop {
namespace known_problems {
namespace {

using kind = dnnl::primitive::kind;
constexpr release v3_13_1 {3, 13, 1};
constexpr release none {0, 0, 0};
constexpr auto source = evidence_kind::source;
constexpr auto probe = evidence_kind::probe;
using namespace arg_bits;

// Where the evidence of an OpenCL C kernel holds: every device that runs it
// (its code has nothing device-specific in the part that is wrong).
constexpr const char *runs_the_kernel = "any device oneDNN runs the named implementation on";
// Where evidence read in oneDNN's device-independent runtime code holds.
constexpr const char *every_device = "every device (oneDNN's runtime code, not a kernel)";
// Where a measurement of the named implementation holds (the emulated device
// runs oneDNN's OpenCL C kernels; a GPU running the same kernel computes the
// same where the kernel relies on nothing device-specific).
constexpr const char *measured_on_emulated
        = "measured on the emulated device (Xe-HP, Intel's CPU OpenCL runtime); applies "
          "wherever oneDNN picks the named implementation";

} // namespace

// Verified against oneDNN 3.13.1 (the pinned release): each row's case was
// probed on the emulated device with its rule off (python -m dnnl_ocl_interop
// probe, tests/test_known_problem_watches.py) and, where the evidence is
// source, read in v3.13.1's tree.
const std::vector<problem> &all() {
    static const std::vector<problem> rows = {
            {"sum-many-inputs-scales", "sum's ocl:many_inputs applies scales[i-1] to source i",
                    {{kind::sum, "ocl:many_inputs"}}, runs_the_kernel,
                    "scales that are not all equal (oneDNN picks ocl:many_inputs when the first "
                    "is 1)",
                    source,
                    "src/gpu/intel/sum/many_inputs.cl:33-36 (the kernel indexes scales from "
                    "input 1, the scale buffer starts at input 0)",
                    {v3_13_1}, none},
            {"reorder-ref-dst-zero-points",
                    "reorder's ocl:ref applies the first destination zero point everywhere",
                    {{kind::reorder, "ocl:ref"}}, runs_the_kernel,
                    "destination zero points with a mask other than 0", source,
                    "src/gpu/intel/reorder/ref.cl:48 (GET_DST_ZP reads dst_zps[0] for every "
                    "element)",
                    {v3_13_1}, none},
            {"reorder-custom-innermost-stride",
                    "reorder's ocl:custom reads or writes the innermost dimension of its "
                    "source or destination as if its stride were 1",
                    {{kind::reorder, "ocl:custom"}, {kind::concat, "ref:any"}}, runs_the_kernel,
                    "a plain side whose innermost dimension (smallest stride among dimensions "
                    "of more than one element) has a stride other than 1; or, for a transpose, "
                    "a side whose innermost dimension has fewer than 16 elements and whose next "
                    "dimension's stride is not its size (concat's ref:any and graph partitions "
                    "copy through such reorders: checked by making the same reorder)",
                    source,
                    "src/gpu/intel/reorder/custom.cpp (get_Nth_last_dim_or_block, "
                    "fill_conf_xab_xba) and custom.cl (XAB_XBA: src[src_off + lane]); concat's "
                    "ref:any copies each source into place with a reorder "
                    "(src/gpu/generic/ref_concat.hpp), judged by making the same reorder",
                    {v3_13_1}, none},
            {"concat-simple-strided-dst",
                    "concat's ocl:simple writes a destination whose innermost dimension has a "
                    "stride other than 1 as if it were 1, and into the gaps of a destination "
                    "concatenated along another dimension than its innermost",
                    {{kind::concat, "ocl:simple"}}, measured_on_emulated,
                    "a destination of innermost stride other than 1; or one that is not dense, "
                    "concatenated along another dimension than its innermost",
                    probe,
                    "tests/test_primitives.py (two 4 x 5 sources into y[:, ::2] of a 4 x 20 "
                    "array: 48 of 79 elements wrong; rows of 8 in rows of 11 along 0)",
                    {v3_13_1}, none},
            {"inner-product-dst-strides",
                    "inner product's ocl:ref writes its destination as row-major whatever its "
                    "layout",
                    {{kind::inner_product, "ocl:ref"}}, runs_the_kernel,
                    "a forward destination that is not row-major from its handle on (strided, "
                    "transposed or blocked)",
                    source, "src/gpu/intel/ip/ref.cl:67,76 (dst[mb * OC + oc])", {v3_13_1}, none},
            {"reorder-direct-copy-memory-kinds",
                    "reorder's gpu:direct_copy copies nothing between buffer and USM memory",
                    {{kind::reorder, "gpu:direct_copy"}}, measured_on_emulated,
                    "a source and destination of different memory kinds (buffer and USM), "
                    "checked at execute",
                    probe,
                    "tests/test_hypothesis.py (random reorders between buffer and USM memory: "
                    "the destination kept its contents)",
                    {v3_13_1}, none},
            {"eltwise-strides", "GPU eltwise ignores strides and sub-memory offsets",
                    {{kind::eltwise, "ocl:xe"}, {kind::eltwise, "ocl:ref"}}, runs_the_kernel,
                    "a source, destination or gradient that is not dense from its handle on "
                    "(gaps between elements, or a sub-memory offset)",
                    source,
                    "src/gpu/intel/eltwise/xe.cl (nelems consecutive elements from the handle) "
                    "and ref.cl (no offset added; strides used in some configurations only)",
                    {v3_13_1}, none},
            {"rnn-offsets", "GPU RNNs ignore sub-memory offsets", {{kind::rnn, "ocl:simple"}},
                    runs_the_kernel, "any argument descriptor with a non-zero sub-memory offset",
                    source,
                    "src/gpu/intel/rnn/grid.cpp and grid.cl (no argument's sub-memory offset "
                    "is added anywhere); measured: an LSTM over channels [7, 14) read [0, 7) "
                    "(probe case rnn-offsets)",
                    {v3_13_1}, none},
            {"submemory-offsets",
                    "some GPU implementations address an argument from its handle, ignoring "
                    "its descriptor's sub-memory offset",
                    {{kind::binary, "ocl:simple", src | dst},
                            {kind::softmax, "ocl:reusable", src | dst},
                            {kind::softmax, "ocl:xe", src | dst},
                            {kind::softmax, "ocl:simple", src | dst},
                            {kind::layer_normalization, "ocl:ref", src | dst},
                            {kind::layer_normalization, "ocl:reusable", src | dst},
                            {kind::batch_normalization, "ocl:reusable", src | dst},
                            {kind::batch_normalization, "ocl:ref", src | dst},
                            {kind::lrn, "ocl:ref", src | dst},
                            {kind::pooling, "ocl:ref", src | dst},
                            {kind::resampling, "ocl:ref", src | dst},
                            {kind::reduction, "ocl:combined", src | dst},
                            {kind::reduction, "ocl:ref", src | dst},
                            {kind::prelu, "ocl:ref", src | weights | dst},
                            {kind::matmul, "ocl:ref", src | weights | dst},
                            {kind::inner_product, "ocl:ref", src | weights | dst},
                            {kind::convolution, "ocl:ref", weights},
                            {kind::deconvolution, "conv:any+ocl:ref", src | weights | dst},
                            {kind::shuffle, "reorder-based", src | dst},
                            {kind::concat, "ocl:simple", src}},
                    measured_on_emulated,
                    "a named argument of the named implementation with a non-zero sub-memory "
                    "offset (its other arguments, and every other implementation, were measured "
                    "right or not measured: binary's reorder+postops, a forward ocl:ref "
                    "convolution's source and destination, ocl:simple concat's destination, "
                    "shuffle's ocl:ref, sum's ref:any and reorder+post_ops, every reorder)",
                    probe,
                    "a probe of every family with views x[1:3] of a dense [4, 4, 4, 8] parent "
                    "(and [4, 8] and [2, 4, 2, 4] destinations), one argument at a time, every "
                    "implementation oneDNN offered (next_impl), sentinels around each view, "
                    "2026-12-06; probe case submemory-offsets",
                    {v3_13_1}, none},
            {"sum-many-inputs-dense",
                    "sum's ocl:many_inputs reads and writes layouts that are not dense as if "
                    "they were",
                    {{kind::sum, "ocl:many_inputs"}}, measured_on_emulated,
                    "a source or destination that is not dense from its handle on", probe,
                    "tests/test_primitives.py (rows of 8 in rows of 11, innermost stride 2, a "
                    "view at an offset: 69 to 128 of 256 elements wrong)",
                    {v3_13_1}, none},
            {"group-normalization-layouts",
                    "GPU group normalization computes wrong between a source and destination of "
                    "different layouts",
                    {{kind::group_normalization, "ocl:ref"}}, runs_the_kernel,
                    "a forward source and destination of different layouts", probe,
                    "src/gpu/intel/gnorm/ref.cl:82-127 (the source's offsets, SRC_OFF, index the "
                    "destination too); measured: plain into channels-last 252 of 256 elements "
                    "wrong, a strided source into a dense destination crashed the CPU runtime's "
                    "compiler (probe case group-normalization-layouts)",
                    {v3_13_1}, none},
            {"batch-normalization-stats-strides",
                    "batch normalization's ocl:reusable computing its statistics misreads a "
                    "source that is not dense",
                    {{kind::batch_normalization, "ocl:reusable"}}, measured_on_emulated,
                    "a forward source that is not dense from its handle on, without "
                    "use_global_stats (ocl:ref, the next implementation, reads it right: the "
                    "binding steps to it)",
                    probe,
                    "probe case batch-normalization-stats-strides (rows with gaps, innermost "
                    "stride 2, channels-last with gaps: wrong with ocl:reusable, right with "
                    "ocl:ref; dense channels-last right with both), 2026-12-06",
                    {v3_13_1}, none},
            {"reduction-combined-strides",
                    "reduction's ocl:combined reads a source with gaps between its elements as "
                    "if it were dense",
                    {{kind::reduction, "ocl:combined"}}, runs_the_kernel,
                    "a source that is not dense from its handle on", source,
                    "src/gpu/intel/reduction/utils.cpp (generate_phases steps through the "
                    "source's blocks as if each came right after the one inside it)",
                    {v3_13_1}, none},
            {"softmax-layouts",
                    "GPU softmax reads layouts other than the plain one as if they were plain",
                    {{kind::softmax, "ocl:xe"}, {kind::softmax, "ocl:reusable"},
                            {kind::softmax, "ocl:simple"}},
                    measured_on_emulated,
                    "forward: ocl:xe and ocl:reusable with a source or destination that is not "
                    "the plain row-major layout; every named implementation with a source and "
                    "destination of different layouts",
                    probe,
                    "tests/test_ops.py (dims [2, 8], strides [16, 2] read as dense; a permuted "
                    "layout on the last axis)",
                    {v3_13_1}, none},
            {"dense-bias-post-op-inputs",
                    "GPU primitives read a binary post-op input of innermost stride other than 1, "
                    "or at a sub-memory offset, and matmul's ocl:ref a bias that is not dense, as "
                    "dense",
                    {{kind::matmul, "ocl:ref", bias | post_op_inputs},
                            {kind::inner_product, "ocl:ref", bias | post_op_inputs},
                            {kind::convolution, "ocl:ref", bias | post_op_inputs},
                            {kind::eltwise, "ocl:ref", post_op_inputs},
                            {kind::binary, "ocl:xe", post_op_inputs},
                            {kind::binary, "ocl:simple", post_op_inputs}},
                    measured_on_emulated,
                    "a binary post-op input whose innermost dimension (smallest stride among "
                    "dimensions of more than one element) has a stride other than 1, or with a "
                    "sub-memory offset (rows with gaps and transposed inputs are read right); a "
                    "bias that is not dense from its handle on (matmul's ocl:ref: one of its two "
                    "variants, which share a name, misreads rows with gaps and transposed biases "
                    "too; a 1-D bias is dense or has a stride or offset)",
                    probe,
                    "a probe of matmul, inner product, convolution, eltwise and binary with "
                    "post-op inputs and biases of every layout (rows with gaps, innermost stride "
                    "2, transposed, with gaps, at an offset, channels-last), every implementation "
                    "oneDNN offered, 2026-12-06; probe case dense-bias-post-op-inputs",
                    {v3_13_1}, none},
            {"post-op-inputs-uninitialized",
                    "the exec_arg_md query for an input a post-op does not have (the second "
                    "input of a binary post-op other than select, an input of a non-binary "
                    "post-op) answers from an uninitialized descriptor",
                    {}, every_device,
                    "exec_arg_md of ARG_ATTR_MULTIPLE_POST_OP(i) | ARG_SRC_2 for a binary "
                    "post-op other than select, or | ARG_SRC_1 of a post-op that is not binary",
                    source,
                    "src/common/primitive_attr.cpp:260-276 (append_binary leaves src2_desc "
                    "unset unless given)",
                    {v3_13_1}, none},
            {"group-normalization-strides",
                    "GPU group normalization addresses its data from the handle, ignoring a "
                    "sub-memory offset",
                    {{kind::group_normalization, "ocl:ref", src | dst | diff_src | diff_dst}},
                    runs_the_kernel,
                    "a source, destination or gradient with a non-zero sub-memory offset (one "
                    "strided layout on both sides is read right: measured with rows with gaps, "
                    "innermost stride 2, channels-last with and without gaps; different layouts "
                    "are group-normalization-layouts)",
                    probe,
                    "src/gpu/intel/gnorm/ref.cl:82-240 (SRC_OFF addresses source and destination "
                    "alike); probe case group-normalization-strides (x[1:3] views: 128 elements "
                    "written outside the destination), 2026-12-06",
                    {v3_13_1}, none},
            {"inorder-execute-drops-deps",
                    "primitive and partition executes on an in-order stream enqueue their "
                    "kernels without waiting for their dependencies",
                    {}, every_device, "an execute on an in-order stream with dependencies", source,
                    "src/gpu/intel/ocl/kernel.cpp:233-238 (in-order: clEnqueueNDRangeKernel "
                    "with an empty wait list)",
                    {v3_13_1}, none},
            {"graph-noop-null-event",
                    "a partition starting with a no-op step passes a NULL event as a wait list "
                    "on an out-of-order queue without dependencies",
                    {}, every_device,
                    "a partition execute on an out-of-order stream without dependencies", probe,
                    "tests/test_graph.py (CL_INVALID_EVENT_WAIT_LIST from a partition starting "
                    "with a no-op step, on the emulated device)",
                    {v3_13_1}, none},
            {"graph-host-scalar-null-event",
                    "a partition with a host-scalar input passes a NULL event on as a wait list "
                    "after copying the scalar, on an out-of-order queue",
                    {}, every_device,
                    "a partition with a host-scalar input port executed on an out-of-order "
                    "stream",
                    probe,
                    "tests/test_graph.py (CL_INVALID_EVENT_WAIT_LIST, then a crash in the "
                    "runtime, on the emulated device)",
                    {v3_13_1}, none},
            {"stream-profiling-without-order",
                    "a stream made with the profiling flag alone is not marked in-order, and "
                    "ocl_interop execute then crashes",
                    {}, every_device, "a stream made with the profiling flag and no order flag",
                    source,
                    "src/xpu/ocl/capi/primitive.cpp:69-75 (an execute on a stream without the "
                    "in_order flag returns the stream's output event, which the in-order queue "
                    "made for a stream of the profiling flag alone does not have: a crash)",
                    {v3_13_1}, none},
            {"softmax-reusable-sub-group",
                    "softmax's ocl:reusable reduces a row of 17 to 128 elements with sub-group "
                    "functions over a work-group it never asks to be one sub-group",
                    {{kind::softmax, "ocl:reusable"}},
                    "devices whose compiler may pick a sub-group smaller than the work-group "
                    "(those offering a sub-group size below oneDNN's choice); not the emulated "
                    "device as dnnl.emulation.enable() sets it up",
                    "a forward softmax oneDNN runs in its one_reduction_per_subgroup form with "
                    "more elements on the axis than the device's smallest sub-group",
                    source,
                    "src/gpu/intel/softmax/reusable.cl:22-24 (intel_reqd_sub_group_size under "
                    "ONE_REDUCTION_PER_SUBGROUP, which nothing defines) and reusable.hpp "
                    "(algorithm_number: one_reduction_per_subgroup with a work-group of "
                    "subgroup_size)",
                    {v3_13_1}, none},
    };
    return rows;
}

namespace {

// Each problem's switch, by its index in all(); on at start.
std::vector<std::atomic<bool>> &switches() {
    static std::vector<std::atomic<bool>> on = [] {
        std::vector<std::atomic<bool>> v(all().size());
        for (auto &s : v) s.store(true);
        return v;
    }();
    return on;
}

// (by C string, without allocating: the rules ask on execute paths too)
bool older_than(const dnnl_version_t &v, const release &r) {
    if (v.major != r.major) return v.major < r.major;
    if (v.minor != r.minor) return v.minor < r.minor;
    return v.patch < r.patch;
}

bool same_release(const dnnl_version_t &v, const release &r) {
    return v.major == r.major && v.minor == r.minor && v.patch == r.patch;
}

// The scope view (a test hook): guarded, as rules read it from any thread.
std::mutex view_mutex;
std::string view_implementation;
std::unique_ptr<device_facts> view_device;
std::atomic<bool> view_set {false};

// oneDNN reports each implementation name from a static string; a name the
// scope view gives must live as long: kept here, never freed.
const char *interned(const std::string &name) {
    static std::mutex m;
    static std::map<std::string, std::unique_ptr<char[]>> names;
    std::lock_guard<std::mutex> lock(m);
    auto &slot = names[name];
    if (!slot) {
        slot.reset(new char[name.size() + 1]);
        std::memcpy(slot.get(), name.c_str(), name.size() + 1);
    }
    return slot.get();
}

bool names_implementation(const implementation &named, dnnl::primitive::kind k, const char *impl) {
    if (named.kind != kind::undef && named.kind != k) return false;
    const size_t n = std::strlen(named.name);
    return std::strncmp(impl, named.name, n) == 0 && (impl[n] == '\0' || impl[n] == ':');
}

} // namespace

const problem *find(const std::string &id) {
    for (const problem &p : all())
        if (id == p.id) return &p;
    return nullptr;
}

size_t index_of(const char *id) {
    const auto &rows = all();
    for (size_t i = 0; i < rows.size(); ++i)
        if (std::strcmp(id, rows[i].id) == 0) return i;
    throw status_error(dnnl_invalid_arguments,
            std::string("no known problem has the id '") + id + "'");
}

namespace {

bool applies_at(size_t i) {
    if (!switches()[i].load(std::memory_order_relaxed)) return false;
    const release &fixed = all()[i].fixed;
    return fixed.major == 0 || older_than(*dnnl::version(), fixed);
}

} // namespace

bool applies(const char *id) {
    return applies_at(index_of(id));
}

const char *implementation_of(const dnnl::primitive_desc_base &pd) {
    if (view_set.load(std::memory_order_acquire)) {
        std::lock_guard<std::mutex> lock(view_mutex);
        if (!view_implementation.empty()) return interned(view_implementation);
    }
    return pd.impl_info_str();
}

const implementation *applies_to(size_t index, dnnl::primitive::kind k, const char *impl) {
    if (!applies_at(index)) return nullptr;
    for (const implementation &named : all()[index].implementations)
        if (names_implementation(named, k, impl)) return &named;
    return nullptr;
}

const implementation *applies_to(const char *id, const dnnl::primitive_desc_base &pd) {
    if (!pd) return nullptr;
    return applies_to(index_of(id), pd.get_kind(), implementation_of(pd));
}

bool names(const std::string &id, dnnl::primitive::kind k, const char *impl) {
    const problem &p = all()[index_of(id.c_str())];
    return std::any_of(p.implementations.begin(), p.implementations.end(),
            [&](const implementation &named) { return names_implementation(named, k, impl); });
}

bool verified_for(const problem &p) {
    const dnnl_version_t &v = *dnnl::version();
    return std::any_of(p.verified.begin(), p.verified.end(),
            [&](const release &r) { return same_release(v, r); });
}

void set_enabled(const std::string &id, bool enabled) {
    switches()[index_of(id.c_str())].store(enabled);
}

bool is_enabled(const std::string &id) {
    return switches()[index_of(id.c_str())].load();
}

namespace {

// OpenCL's answer of `param` for `device` as a value of T (zero-initialized
// when the device does not answer).
template <typename T>
T device_info(cl_device_id device, cl_device_info param) {
    T value {};
    clGetDeviceInfo(device, param, sizeof(value), &value, nullptr);
    return value;
}

constexpr cl_device_info ip_version_intel = 0x4250;      // CL_DEVICE_IP_VERSION_INTEL
constexpr cl_device_info sub_group_sizes_intel = 0x4108; // CL_DEVICE_SUB_GROUP_SIZES_INTEL

// Whether the device is the package's emulated one (its layer says so) and
// the CPU runtime behind it compiles oneDNN's reusable softmax kernel with
// sub-groups of 16 (emulation.enable() asks for it in the runtime's
// setting, which the runtime reads at its start).
bool runtime_fixes_softmax_sub_groups(cl_device_id device) {
    cl_bool emulated = CL_FALSE;
    if (clGetDeviceInfo(device, device_is_emulated_query, sizeof(emulated), &emulated, nullptr)
                    != CL_SUCCESS
            || !emulated)
        return false;
    const char *setting = std::getenv("CL_CONFIG_CPU_REQD_SUB_GROUP_SIZE");
    return setting && std::strstr(setting, "reusable_softmax_fwd_generic(16)");
}

} // namespace

device_facts facts_of(const dnnl::engine &engine) {
    if (view_set.load(std::memory_order_acquire)) {
        std::lock_guard<std::mutex> lock(view_mutex);
        if (view_device) return *view_device;
    }
    device_facts facts;
    if (engine.get_kind() != dnnl::engine::kind::gpu) return facts;
    cl_device_id device = dnnl::ocl_interop::get_device(engine);
    static std::mutex m;
    static std::map<cl_device_id, device_facts> known; // devices live as long as the process
    std::lock_guard<std::mutex> lock(m);
    auto found = known.find(device);
    if (found != known.end()) return found->second;
    facts.ip_version = device_info<cl_uint>(device, ip_version_intel);
    size_t bytes = 0;
    if (clGetDeviceInfo(device, sub_group_sizes_intel, 0, nullptr, &bytes) == CL_SUCCESS
            && bytes > 0) {
        facts.sub_group_sizes.resize(bytes / sizeof(size_t));
        clGetDeviceInfo(device, sub_group_sizes_intel, bytes, facts.sub_group_sizes.data(),
                nullptr);
    }
    facts.emulated_softmax_sub_groups = runtime_fixes_softmax_sub_groups(device);
    known.emplace(device, facts);
    return facts;
}

void set_scope_view(const std::string &implementation, const device_facts *device) {
    std::lock_guard<std::mutex> lock(view_mutex);
    view_implementation = implementation;
    view_device.reset(device ? new device_facts(*device) : nullptr);
    view_set.store(!implementation.empty() || device, std::memory_order_release);
}

} // namespace known_problems
} // namespace dnnl_ocl_interop
