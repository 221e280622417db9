#include "common/enum_caster.hpp" // first: see the header

#include "core/verbose.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/py_values.hpp"
#include "common/reasons.hpp"
#include "common/stdout_capture.hpp"
#include "common/verbose_kinds.hpp"
#include "interpose/onednn_verbose_setting.hpp"

namespace py = pybind11;

namespace dnnl_ocl_interop {
namespace verbose {
namespace {

// Active regions per kind bit, and those of them that show their lines
// (the rest collect): under setting_mutex().
uint32_t region_counts[32] = {};
uint32_t showing_counts[32] = {};
int raised_level = 0; // the level regions set through dnnl_set_verbose (without the interposer)

uint32_t mask_of(const uint32_t (&counts)[32]) {
    uint32_t mask = 0;
    for (int b = 0; b < 32; ++b)
        if (counts[b]) mask |= 1u << b;
    return mask;
}

void set_level(int level) { // under setting_mutex()
    dnnl::error::wrap_c_api(dnnl_set_verbose(level), "could not set the verbose level");
    setting_state &s = setting();
    if ((s.onednn & (create_check | create_dispatch)) && s.lost.empty())
        s.lost = "dnnl_set_verbose, which dnnl.set_verbose and dnnl.verbose regions of levels "
                 "call, replaced the check and dispatch kinds ONEDNN_VERBOSE gave oneDNN";
    s.onednn = level_kinds(level);
}

// oneDNN's setting made what the user's setting and the active regions need
// (under setting_mutex()). With the interposer: exactly those kinds (oneDNN's
// debuginfo byte kept); without it: a level high enough for the costly kinds.
void apply() {
    setting_state &s = setting();
    uint32_t needed = mask_of(region_counts) & ~(header | other);
    if (interposed()) {
        uint32_t now = 0;
        bool initialized = false;
        if (interpose::read(now, initialized) && initialized) {
            uint32_t want = ((s.onednn | needed) & ~debuginfo) | (now & debuginfo);
            if (want != now) interpose::exchange(now, want);
        }
    } else {
        // A level (all the public API has) for the costly kinds the user's
        // setting does not give; back to the user's level when none is needed.
        uint32_t need_costly = needed & costly;
        int target = std::max(level_for(need_costly), level_for(s.user));
        if (raised_level == 0 && (need_costly & ~s.onednn)) {
            target = std::max(target, level_for(s.onednn & costly));
            set_level(target);
            raised_level = target;
        } else if (raised_level != 0) {
            if (target != raised_level) set_level(target);
            raised_level = need_costly ? target : 0;
        }
    }
    set_shown_kinds(s.user, mask_of(showing_counts));
}

// What oneDNN prints now (with the interposer, read from its setting).
uint32_t printed_now() { // under setting_mutex()
    uint32_t now = 0;
    bool initialized = false;
    if (interposed() && interpose::read(now, initialized) && initialized) return now;
    return setting().onednn;
}

// With the interposer, oneDNN's setting can be changed only once oneDNN has
// read ONEDNN_VERBOSE (else its first read would overwrite the change): a
// public call whose argument check consults the setting makes it read it,
// its line (if the user's setting shows check lines) taken and dropped.
void make_onednn_read_its_setting() {
    uint32_t kinds = 0;
    bool initialized = true;
    if (!interposed() || !interpose::read(kinds, initialized) || initialized) return;
    collector dropped(~static_cast<uint32_t>(header), true);
    dnnl_memory_desc_t md = nullptr;
    if (dnnl_memory_desc_create_with_tag(&md, 1, nullptr, dnnl_f32, dnnl_a) == dnnl_success)
        dnnl_memory_desc_destroy(md); // (refused: dims is null)
    dropped.finish();
}

void count(uint32_t kinds, bool showing, int delta) { // under setting_mutex()
    for (int b = 0; b < 32; ++b)
        if (kinds & (1u << b)) {
            region_counts[b] += delta;
            if (showing) showing_counts[b] += delta;
        }
}

struct region {
    region(uint32_t kinds, bool collect) : kinds(kinds), collect(collect) {}
    region(region &&other) noexcept
        : kinds(other.kinds)
        , collect(other.collect)
        , entered(other.entered)
        , lines(std::move(other.lines))
        , unavailable(other.unavailable) {
        other.entered = false;
    }
    region(const region &) = delete;
    ~region() {
        if (entered) try {
                exit();
            } catch (...) {}
    }
    uint32_t kinds;
    bool collect;
    bool entered = false;
    std::unique_ptr<collector> lines; // a collecting region's
    uint32_t unavailable = 0;

    void enter() {
        if (entered) throw_invalid_argument("the dnnl.verbose region is already active");
        py::gil_scoped_release release; // the lock below is taken without it elsewhere
        make_onednn_read_its_setting();
        {
            std::lock_guard<std::mutex> lock(setting_mutex());
            count(kinds, !collect, +1);
            apply();
            unavailable = kinds & ~printed_now() & ~(header | other | debuginfo);
        }
        if (!collect) show_kept_header();
        if (collect) lines = std::make_unique<collector>(kinds, false);
        entered = true;
    }

    std::vector<std::string> exit() {
        if (!entered) throw_invalid_argument("the dnnl.verbose region is not active");
        entered = false;
        py::gil_scoped_release release;
        std::vector<std::string> result;
        if (lines) {
            result = lines->finish();
            lines.reset();
        }
        std::lock_guard<std::mutex> lock(setting_mutex());
        count(kinds, !collect, -1);
        apply();
        return result;
    }
};

} // namespace

void bind(py::module_ &m) {
    // dnnl.hpp returns this setter's status; here a failure raises, as
    // every other call does.
    m.def("set_verbose",
            [](int level) {
        if (level < 0 || level > 2) // as oneDNN answers
            throw status_error(dnnl_invalid_arguments,
                    "could not set the verbose level: level must be 0, 1 or 2, not "
                            + std::to_string(level));
        py::gil_scoped_release release;
        {
            std::lock_guard<std::mutex> lock(setting_mutex());
            set_level(std::max(level, raised_level));
            setting().user = level_kinds(level);
            apply();
        }
        if (level > 0) show_kept_header();
    }, py::arg("level"),
            "oneDNN's verbose output on standard output (as ONEDNN_VERBOSE): 0 none, 1 "
            "primitive executions, 2 also primitive creation (with cache hits); other "
            "levels raise dnnl.error (invalid_arguments). It calls oneDNN's dnnl_set_verbose, "
            "which replaces oneDNN's whole setting: check and dispatch kinds ONEDNN_VERBOSE "
            "gave it are gone after it (see docs/api.md, Verbose output).");
    py::class_<region>(m, "_verbose_region",
            "The compiled side of dnnl.verbose: oneDNN's verbose kinds (a mask of its "
            "flag bits) printed, or with collect=True kept, while entered.")
            .def(py::init<uint32_t, bool>(), py::arg("kinds"), py::arg("collect") = false)
            .def("enter", &region::enter,
                    "Start the region; the kinds oneDNN prints no lines of (and cannot be "
                    "made to) are in `unavailable` afterwards.")
            .def("exit",
                    [](region &r) {
        py::list lines;
        for (const auto &line : r.exit()) lines.append(printed_text(line));
        return lines;
    }, "End the region; the lines kept (collecting regions), else [].")
            .def_readonly("unavailable", &region::unavailable,
                    "Kinds of the region oneDNN does not print (check and dispatch, unless "
                    "ONEDNN_VERBOSE asked for them or the interposer acts).");
    m.def("_verbose_kinds", [](const std::string &token) { return token_kinds(token); },
            py::arg("token"),
            "The oneDNN verbose kinds (a mask of its flag bits) one ONEDNN_VERBOSE token "
            "turns on ('dispatch', 'profile_exec', '2', ...); 0 for a token oneDNN "
            "ignores.");
    m.def("_verbose_state",
            [] {
        std::string unavailable = reasons_unavailable();
        std::lock_guard<std::mutex> lock(setting_mutex());
        py::dict state;
        state["interposer_asked"] = interposer_asked();
        state["interposer"] = interposed();
        state["interposer_refusal"] = interposer_refusal();
        state["user_kinds"] = setting().user;
        state["onednn_kinds"] = printed_now();
        state["region_kinds"] = mask_of(region_counts);
        state["collectors"] = active_collectors();
        state["reruns"] = reruns();
        state["reasons_unavailable"] = unavailable;
        return state;
    },
            "The verbose state, for tests and diagnosis: whether the interposer was asked for "
            "and acts (why not), the kinds the user asked for, those oneDNN prints (read from "
            "its setting when the interposer acts, else as far as the binding knows), those "
            "active regions ask for, the collectors alive, the re-runs of refused creations so "
            "far, and why a refusal now would carry no reasons (\"\" when it would).");
#ifdef DNNL_OCL_INTEROP_TEST_HOOKS
    m.def("_interposer_refusal_for",
            [](int major, int minor, int patch) {
        return interpose::refusal_for({major, minor, patch});
    }, py::arg("major"), py::arg("minor"), py::arg("patch"),
            "Test hook: why the interposer would not act on oneDNN major.minor.patch (\"\" "
            "when it was verified against it).");
#endif
}

} // namespace verbose
} // namespace dnnl_ocl_interop
