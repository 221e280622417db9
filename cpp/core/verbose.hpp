// dnnl.set_verbose and dnnl.verbose's regions: oneDNN's verbose output as the
// user asks for it, through oneDNN's public dnnl_set_verbose, or exactly
// through the interposer when it acts (common/reasons, interpose/).
#pragma once

#include <pybind11/pybind11.h>

namespace dnnl_ocl_interop {
namespace verbose {

// set_verbose, _verbose_region, _verbose_kinds, _verbose_state
// (core/library.cpp registers them with the library's functions).
void bind(pybind11::module_ &m);

} // namespace verbose
} // namespace dnnl_ocl_interop
