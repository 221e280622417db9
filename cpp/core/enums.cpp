// The library-wide enums of dnnl:: (algorithm, prop_kind, query, ...). Their
// members are listed from the headers at build time
// (third_party/onednn_headers.py writes onednn_enum_<name>.inc), so every
// value the oneDNN in use declares is registered; only the names and
// docstrings of the Python enums are written here. Enums nested in a class
// (memory.data_type, engine.kind, stream.flags, ...) are bound with it.
#include "common/enum_caster.hpp" // first: see the header

#include <pybind11/native_enum.h>

#include "core/objects.hpp"

namespace py = pybind11;

namespace dnnl_ocl_interop {

// Each block: a native_enum, then the generated list expanded into
// .value(name, E::name) calls.
void bind_enums(py::module_ &m) {
    {
        using E = dnnl::algorithm;
#define VALUE(member) .value(#member, E::member)
        py::native_enum<E>(m, "algorithm", "enum.Enum", "Primitive algorithms.")
#include "onednn_enum_algorithm.inc"
                .finalize();
    }
    {
        using E = dnnl::prop_kind;
        py::native_enum<E>(m, "prop_kind", "enum.Enum", "Propagation kinds.")
#include "onednn_enum_prop_kind.inc"
                .finalize();
    }
    {
        using E = dnnl::rnn_direction;
        py::native_enum<E>(m, "rnn_direction", "enum.Enum",
                "Order in which an RNN walks the sequence, and how two directions combine.")
#include "onednn_enum_rnn_direction.inc"
                .finalize();
    }
    {
        using E = dnnl::quantization_mode;
        py::native_enum<E>(m, "quantization_mode", "enum.Enum",
                "How scales are given: static_sazp (given at execution, with zero "
                "points), or computed by the primitive from the data (dynamic_mx: "
                "OCP MX e8m0 scales, dynamic_fp: floating-point scales).")
#include "onednn_enum_quantization_mode.inc"
                .finalize();
    }
    {
        using E = dnnl::rounding_mode;
        py::native_enum<E>(m, "rounding_mode", "enum.Enum",
                "How a primitive rounds an argument it writes: as the environment "
                "does, or stochastically (seeded by ARG_ATTR_ROUNDING_SEED).")
#include "onednn_enum_rounding_mode.inc"
                .finalize();
    }
    {
        using E = dnnl::accumulation_mode;
        py::native_enum<E>(m, "accumulation_mode", "enum.Enum",
                "Data type a primitive may accumulate in.")
#include "onednn_enum_accumulation_mode.inc"
                .finalize();
    }
    {
        using E = dnnl::rnn_flags;
        py::native_enum<E>(m, "rnn_flags", "enum.IntFlag", "Flags of RNN descriptors.")
#include "onednn_enum_rnn_flags.inc"
                .finalize();
    }
    {
        using E = dnnl::fpmath_mode;
        py::native_enum<E>(m, "fpmath_mode", "enum.Enum",
                "Floating-point math modes (implicit down-conversions allowed).")
#include "onednn_enum_fpmath_mode.inc"
                .finalize();
    }
    {
        using E = dnnl::scratchpad_mode;
        py::native_enum<E>(m, "scratchpad_mode", "enum.Enum",
                "Who provides a primitive's scratchpad: oneDNN or the user "
                "(as ARG_SCRATCHPAD).")
#include "onednn_enum_scratchpad_mode.inc"
                .finalize();
    }
    {
        using E = dnnl::normalization_flags;
        py::native_enum<E>(m, "normalization_flags", "enum.IntFlag",
                "Flags of batch and layer normalization.")
#include "onednn_enum_normalization_flags.inc"
                .finalize();
    }
    {
        using E = dnnl::query;
        py::native_enum<E>(m, "query", "enum.Enum",
                "What a primitive descriptor is asked (dnnl::query); query_md() takes "
                "the *_md ones.")
#include "onednn_enum_query.inc"
                .finalize();
    }
    {
        using E = dnnl::primitive::kind;
        py::native_enum<E>(m, "primitive_kind", "enum.Enum", "Primitive kinds.")
#include "onednn_enum_primitive_kind.inc"
                .finalize();
#undef VALUE
    }

    // Library-wide, but defined after the enum so that signatures name it.
    m.def("get_default_fpmath_mode", &dnnl::get_default_fpmath_mode,
            "The fpmath mode of primitive descriptors made from now on whose attributes "
            "do not set one (as ONEDNN_DEFAULT_FPMATH_MODE; strict unless changed).");
    m.def("set_default_fpmath_mode",
            [](dnnl::fpmath_mode mode) {
        dnnl::error::wrap_c_api(dnnl_set_default_fpmath_mode(dnnl::convert_to_c(mode)),
                "could not set the default fpmath mode");
    }, py::arg("mode"),
            "Sets the fpmath mode of primitive descriptors made from now on whose "
            "attributes do not set one; those made before keep theirs.");
}

} // namespace dnnl_ocl_interop
