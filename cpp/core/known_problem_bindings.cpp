// The known-problems registry (common/known_problems) as the private
// functions dnnl_ocl_interop.known_problems wraps: its rows, and each
// problem's switch. The scope view is a test hook.
#include "common/enum_caster.hpp" // first: see the header

#include "common/errors.hpp"
#include "common/known_problems.hpp"
#include "core/objects.hpp"
#include "oneapi/dnnl/dnnl_debug.h"

#include <optional>

#include <pybind11/stl.h>

namespace py = pybind11;

namespace dnnl_ocl_interop {
namespace {

std::string release_text(const known_problems::release &r) {
    return std::to_string(r.major) + "." + std::to_string(r.minor) + "." + std::to_string(r.patch);
}

py::tuple argument_names(unsigned bits) {
    namespace a = known_problems::arg_bits;
    if (bits == a::any_argument) return py::tuple();
    const std::pair<unsigned, const char *> names[] = {{a::src, "src"}, {a::weights, "weights"},
            {a::dst, "dst"}, {a::diff_src, "diff_src"}, {a::diff_weights, "diff_weights"},
            {a::diff_dst, "diff_dst"}, {a::bias, "bias"}, {a::post_op_inputs, "post-op inputs"}};
    py::list found;
    for (const auto &n : names)
        if (bits & n.first) found.append(n.second);
    return py::tuple(found);
}

py::dict row(const known_problems::problem &p) {
    py::dict d;
    d["id"] = p.id;
    d["what"] = p.what;
    py::list impls;
    for (const auto &i : p.implementations) {
        py::object kind = i.kind == dnnl::primitive::kind::undef
                ? py::object(py::none())
                : py::str(dnnl_prim_kind2str(static_cast<dnnl_primitive_kind_t>(i.kind)));
        impls.append(py::make_tuple(kind, i.name, argument_names(i.arguments)));
    }
    d["implementations"] = py::tuple(impls);
    d["devices"] = p.devices;
    d["case"] = p.wrong_case;
    d["evidence_kind"] = p.kind == known_problems::evidence_kind::source ? "source" : "probe";
    d["evidence"] = p.evidence;
    py::list verified;
    for (const auto &r : p.verified) verified.append(release_text(r));
    d["verified"] = py::tuple(verified);
    d["fixed"] = p.fixed.major == 0 ? py::object(py::none()) : py::str(release_text(p.fixed));
    d["applies"] = known_problems::applies(p.id);
    d["enabled"] = known_problems::is_enabled(p.id);
    d["verified_for_loaded"] = known_problems::verified_for(p);
    return d;
}

} // namespace

void bind_known_problems(py::module_ &m) {
    m.def("_known_problem_rows",
            [] {
        py::list rows;
        for (const auto &p : known_problems::all()) rows.append(row(p));
        return py::tuple(rows);
    },
            "The known-problems registry's rows as dicts (dnnl.known_problems.problems() "
            "wraps them).");
    m.def("_set_known_problem_enabled", &known_problems::set_enabled, py::arg("id"),
            py::arg("enabled"),
            "Switch the rule of known problem `id` on or off (dnnl.known_problems.disable "
            "and enable wrap it); an unknown id raises invalid_arguments.");
    // (`kind` taken as an object: the enum is bound after this function)
    m.def("_known_problem_names",
            [](const std::string &id, py::handle kind, const std::string &implementation) {
        py::detail::make_caster<dnnl::primitive::kind> caster;
        if (!caster.load(kind, false)) throw_type_error("kind", "a dnnl.primitive.kind", kind);
        return known_problems::names(id, py::detail::cast_op<dnnl::primitive::kind>(caster),
                implementation.c_str());
    }, py::arg("id"), py::arg("kind"), py::arg("implementation"),
            "Whether known problem `id` names `implementation` (impl_info_str()) of "
            "primitives of `kind` (dnnl.known_problems.names wraps it).");
#ifdef DNNL_OCL_INTEROP_TEST_HOOKS
    m.def("_set_known_problem_scope_view",
            [](const std::string &implementation, std::optional<uint32_t> ip_version,
                    std::optional<std::vector<size_t>> sub_group_sizes,
                    bool emulated_softmax_sub_groups) {
        if (!ip_version && !sub_group_sizes) {
            known_problems::set_scope_view(implementation, nullptr);
            return;
        }
        known_problems::device_facts facts;
        facts.ip_version = ip_version.value_or(0);
        facts.sub_group_sizes = sub_group_sizes.value_or(std::vector<size_t> {});
        facts.emulated_softmax_sub_groups = emulated_softmax_sub_groups;
        known_problems::set_scope_view(implementation, &facts);
    },
            py::arg("implementation") = "", py::arg("ip_version") = py::none(),
            py::arg("sub_group_sizes") = py::none(), py::arg("emulated_softmax_sub_groups") = false,
            "Tests only: make every known-problem rule see `implementation` in place of the "
            "implementation oneDNN chose ('' for oneDNN's), and a device of `ip_version` and "
            "`sub_group_sizes` (None for the real device).");
#endif
}

} // namespace dnnl_ocl_interop
