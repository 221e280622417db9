#include "common/enum_caster.hpp" // first: see the header

#include <cstdint>
#include <string>
#include <vector>

#include <pybind11/native_enum.h>
#include <pybind11/stl.h>

#include "common/errors.hpp"
#include "common/workarounds.hpp"
#include "common/fork_guard.hpp"
#include "common/reasons.hpp"
#include "core/objects.hpp"
#include "core/ocl_objects.hpp"
#include "core/profiling.hpp"

namespace py = pybind11;

// oneDNN declares its profiling API only when built with
// ONEDNN_EXPERIMENTAL_PROFILING, but exports it in every build (benchdnn
// declares it the same way).
#ifdef DNNL_EXPERIMENTAL_PROFILING
using c_profiling_data_kind = dnnl_profiling_data_kind_t;
#else
using c_profiling_data_kind = int;
extern "C" dnnl_status_t dnnl_reset_profiling(dnnl_stream_t stream);
extern "C" dnnl_status_t dnnl_query_profiling_data(dnnl_stream_t stream, int data_kind,
        int *num_entries, uint64_t *data);
#endif

namespace dnnl_ocl_interop {
namespace {

// dnnl::profiling_data_kind, which dnnl.hpp has only in experimental builds.
enum class profiling_data_kind : int { undef = 0, time = 1 };

// oneDNN answers invalid_arguments for a stream without profiling, whatever
// the reason; this says which, including the one a user cannot guess: this
// oneDNN was built without ONEDNN_EXPERIMENTAL_PROFILING, so a stream on a
// user's queue never profiles, even with CL_QUEUE_PROFILING_ENABLE.
void check_profiling(dnnl_status_t status, const stream_object &s, const char *what) {
    if (status == dnnl_success) return;
    if (status != dnnl_invalid_arguments) dnnl::error::wrap_c_api(status, what);
    std::string why = "the stream was not made with stream.flags.profiling";
#ifndef DNNL_EXPERIMENTAL_PROFILING
    if (queue_profiles(s.stream))
        why += " (this oneDNN was built without ONEDNN_EXPERIMENTAL_PROFILING, so a queue's "
               "CL_QUEUE_PROFILING_ENABLE does not make a stream on it profile; profile on "
               "dnnl.stream(engine, stream.flags.profiling), whose queue "
               "ocl_interop.get_command_queue gives)";
#else
    (void)s;
#endif
    throw_invalid_argument(std::string(what) + ": " + why);
}

} // namespace

void bind_stream(py::module_ &m) {
    py::class_<stream_object> stream(m, "stream",
            "An execution queue on an engine (dnnl::stream). OpenCL streams on "
            "a user queue come from dnnl.ocl_interop.make_stream.");
    {
        using E = dnnl::stream::flags; // members from the headers (core/enums.cpp)
#define VALUE(member) .value(#member, E::member)
        py::native_enum<E>(stream, "flags", "enum.IntFlag",
                "Stream flags, combinable with |: in_order, out_of_order, default_flags, "
                "profiling.")
#include "onednn_enum_stream_flags.inc"
#ifndef DNNL_EXPERIMENTAL_PROFILING
                // Without experimental profiling the headers leave out
                // dnnl_stream_profiling (0x4); the C API takes it all the same.
                .value("profiling", static_cast<E>(0x4U))
#endif
                .finalize();
#undef VALUE
    }
    stream.def(py::init([](const engine_object &engine, dnnl::stream::flags flags) {
        fork_guard::check();
        py::gil_scoped_release release;
        unsigned bits = workarounds::stream_flags(static_cast<unsigned>(flags));
        bool out_of_order = bits & dnnl_stream_out_of_order;
        // oneDNN says why it refuses the flags only in its verbose output
        return stream_object {engine, verbose::creating([&] {
            return dnnl::stream(engine, static_cast<dnnl::stream::flags>(bits));
        }),
                out_of_order};
    }),
            py::arg("engine"),
            py::arg_v("flags", dnnl::stream::flags::default_flags, "stream.flags.default_flags"),
            "A stream on `engine` with its own queue (oneDNN creates it).");
    stream.def("wait",
            [](stream_object &s) {
        fork_guard::check();
        // Work that is done within a few µs is waited for with the GIL held:
        // released, the GIL would go to any thread busy in Python, which
        // keeps it for a switch interval (5 ms) before the wait can return.
        if (!finishes_soon(s.stream)) {
            py::gil_scoped_release release;
            s.stream.wait();
            return;
        }
        s.stream.wait(); // nothing left to wait for: oneDNN's wait returns at once
    },
            "Block until all work submitted to the stream has completed. Work that "
            "completes within a few microseconds is waited for with the GIL held "
            "(a released GIL could take a switch interval, 5 ms, to come back from a "
            "thread busy in Python); otherwise the GIL is released while waiting.");
    stream.def("get_engine", [](const stream_object &s) { return s.engine; },
            "The engine the stream runs on.");

    py::native_enum<profiling_data_kind>(m, "profiling_data_kind", "enum.Enum",
            "What get_profiling_data reports: time (nanoseconds per primitive execution).")
            .value("undef", profiling_data_kind::undef)
            .value("time", profiling_data_kind::time)
            .finalize();
    m.def("reset_profiling",
            [](const stream_object &s) {
        profiling::before_reset(s.stream); // a recorder reads what it needs first
        check_profiling(dnnl_reset_profiling(s.stream.get()), s, "could not reset profiling");
    }, py::arg("stream"),
            "Forgets the profiling data collected on `stream` so far. The stream must "
            "have been made with stream.flags.profiling (dnnl.error, invalid_arguments, "
            "otherwise).");
    m.def("get_profiling_data",
            [](const stream_object &s, profiling_data_kind kind) {
        // oneDNN leaves the data unset for kinds other than time.
        if (kind != profiling_data_kind::time)
            throw_invalid_argument(
                    "could not get profiling data: data_kind must be "
                    "profiling_data_kind.time");
        fork_guard::check();
        std::vector<uint64_t> data;
        dnnl_status_t status;
        {
            // The times are read from the kernels' events, which need them complete.
            py::gil_scoped_release release;
            status = dnnl_stream_wait(s.stream.get());
            int n = 0;
            if (status == dnnl_success)
                status = dnnl_query_profiling_data(s.stream.get(),
                        static_cast<c_profiling_data_kind>(kind), &n, nullptr);
            if (status == dnnl_success && n > 0) {
                data.assign(n, 0);
                status = dnnl_query_profiling_data(s.stream.get(),
                        static_cast<c_profiling_data_kind>(kind), &n, data.data());
            }
        }
        check_profiling(status, s, "could not get profiling data");
        return data;
    }, py::arg("stream"), py::arg("data_kind"),
            "Profiling data of the primitive executions on `stream` since it was made "
            "or reset_profiling: with profiling_data_kind.time, a list of "
            "nanoseconds, one per execution that ran kernels, in submission order "
            "(first kernel start to last kernel end). Waits for the stream first "
            "(GIL released). The stream must have been made with "
            "stream.flags.profiling, on an in-order queue (dnnl.error, "
            "invalid_arguments, otherwise).");
}

} // namespace dnnl_ocl_interop
