// The one place where failures become Python exceptions.
//
// Every oneDNN call goes through oneDNN's C++ API, which throws dnnl::error;
// checks made by the binding on oneDNN's behalf throw status_error. Both reach
// Python as dnnl_ocl_interop.error with a .status (dnnl.status) attribute, as
// the subclass of error for that status where there is one (invalid_arguments
// is also a ValueError, out_of_memory a MemoryError, ...).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <CL/cl.h>
#include <pybind11/pybind11.h>

#include "oneapi/dnnl/dnnl.hpp"

namespace dnnl_ocl_interop {

// A refusal with a oneDNN status, raised by the binding itself.
struct status_error : std::runtime_error {
    status_error(dnnl_status_t status, const std::string &message, cl_int cl_code = CL_SUCCESS)
        : std::runtime_error(message), status(status), cl_code(cl_code) {}
    dnnl_status_t status;
    cl_int cl_code; // the failed OpenCL call's error code; CL_SUCCESS when none
    // oneDNN's verbose lines explaining a failed creation (common/verbose):
    // dnnl.error.reasons in Python.
    std::vector<std::string> reasons;
    // A refusal for a known problem (common/known_problems): its id and the
    // execution arguments (DNNL_ARG_*) it concerns; dnnl.error.known_problem
    // and .arguments in Python (None and () otherwise).
    std::string known_problem;
    std::vector<int> arguments;
};

[[noreturn]] inline void throw_invalid_argument(const std::string &message) {
    throw status_error(dnnl_invalid_arguments, message);
}

// The status oneDNN gives an OpenCL error (its xpu::ocl::convert_to_dnnl):
// allocation failures out_of_memory, invalid values invalid_arguments, the
// rest runtime_error.
dnnl_status_t cl_status(cl_int result);

// Throws status_error with cl_status(result) and the code (Python sees it as
// error.cl_error and error.cl_error_name), naming the OpenCL call and the
// error, when `result` is not CL_SUCCESS.
void check_cl(cl_int result, const char *what);

const char *cl_error_name(cl_int result);

// Sets dnnl.error(status, message) (the status's subclass) with `cause` (a
// Python exception) as its __cause__, and throws error_already_set to
// propagate it.
[[noreturn]] void throw_chained(dnnl_status_t status, const std::string &message,
        pybind11::object cause);

// The one wording of a wrong Python type: "`what` must be `expected`, not
// <type of given>".
std::string type_mismatch(const std::string &what, const char *expected, pybind11::handle given);
[[noreturn]] void throw_type_error(const std::string &what, const char *expected,
        pybind11::handle given);

// Registers dnnl.status, dnnl.error, its subclasses and the exception
// translator.
void bind_errors(pybind11::module_ &m);

} // namespace dnnl_ocl_interop
