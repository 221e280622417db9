#include "common/errors.hpp"

#include <pybind11/native_enum.h>

namespace py = pybind11;

namespace dnnl_ocl_interop {
namespace {

PyObject *error_type = nullptr; // dnnl_ocl_interop.error, alive with the module

const char *status_name(dnnl_status_t status) {
    switch (status) {
        case dnnl_success: return "success";
        case dnnl_out_of_memory: return "out_of_memory";
        case dnnl_invalid_arguments: return "invalid_arguments";
        case dnnl_unimplemented: return "unimplemented";
        case dnnl_last_impl_reached: return "last_impl_reached";
        case dnnl_runtime_error: return "runtime_error";
        case dnnl_not_required: return "not_required";
        case dnnl_invalid_graph: return "invalid_graph";
        case dnnl_invalid_graph_op: return "invalid_graph_op";
        case dnnl_invalid_shape: return "invalid_shape";
        case dnnl_invalid_data_type: return "invalid_data_type";
        default: return "unknown_status";
    }
}

py::object make_error(dnnl_status_t status, const std::string &what) {
    std::string message = what + " (status: " + status_name(status) + ")";
    py::object exc = py::reinterpret_borrow<py::object>(error_type)(message);
    exc.attr("status") = py::cast(status);
    return exc;
}

void raise_error(dnnl_status_t status, const std::string &what) {
    PyErr_SetObject(error_type, make_error(status, what).ptr());
}

} // namespace

const char *cl_error_name(cl_int result) {
    switch (result) {
        case CL_SUCCESS: return "CL_SUCCESS";
        case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
        case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
        case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
        case CL_MEM_OBJECT_ALLOCATION_FAILURE:
            return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
        case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
        case CL_INVALID_DEVICE: return "CL_INVALID_DEVICE";
        case CL_INVALID_CONTEXT: return "CL_INVALID_CONTEXT";
        case CL_INVALID_COMMAND_QUEUE: return "CL_INVALID_COMMAND_QUEUE";
        case CL_INVALID_MEM_OBJECT: return "CL_INVALID_MEM_OBJECT";
        case CL_INVALID_EVENT: return "CL_INVALID_EVENT";
        case CL_INVALID_EVENT_WAIT_LIST: return "CL_INVALID_EVENT_WAIT_LIST";
        case CL_INVALID_OPERATION: return "CL_INVALID_OPERATION";
        case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
        default: return "OpenCL error";
    }
}

void check_cl(cl_int result, const char *what) {
    if (result == CL_SUCCESS) return;
    throw status_error(dnnl_invalid_arguments,
            std::string(what) + " failed: " + cl_error_name(result) + " ("
                    + std::to_string(result) + ")");
}

std::string type_mismatch(const std::string &what, const char *expected, py::handle given) {
    return what + " must be " + expected + ", not "
            + py::str(py::type::handle_of(given).attr("__name__")).cast<std::string>();
}

void throw_type_error(const std::string &what, const char *expected, py::handle given) {
    throw py::type_error(type_mismatch(what, expected, given));
}

void throw_chained(dnnl_status_t status, const std::string &message, py::object cause) {
    py::object exc = make_error(status, message);
    PyException_SetCause(exc.ptr(), cause.release().ptr()); // steals the reference
    PyErr_SetObject(error_type, exc.ptr());
    throw py::error_already_set();
}

void bind_errors(py::module_ &m) {
    py::native_enum<dnnl_status_t>(m, "status", "enum.Enum",
            "Status codes of oneDNN calls, carried by dnnl.error.status.")
            .value("success", dnnl_success)
            .value("out_of_memory", dnnl_out_of_memory)
            .value("invalid_arguments", dnnl_invalid_arguments)
            .value("unimplemented", dnnl_unimplemented)
            .value("last_impl_reached", dnnl_last_impl_reached)
            .value("runtime_error", dnnl_runtime_error)
            .value("not_required", dnnl_not_required)
            .value("invalid_graph", dnnl_invalid_graph)
            .value("invalid_graph_op", dnnl_invalid_graph_op)
            .value("invalid_shape", dnnl_invalid_shape)
            .value("invalid_data_type", dnnl_invalid_data_type)
            .finalize();

    error_type = PyErr_NewExceptionWithDoc("dnnl_ocl_interop._core.error",
            "A oneDNN call failed, or the binding refused an argument on "
            "oneDNN's behalf. `status` holds the dnnl.status.",
            PyExc_Exception, nullptr);
    if (!error_type) throw py::error_already_set();
    m.add_object("error", py::handle(error_type));

    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const dnnl::error &e) {
            raise_error(e.status, e.what());
        } catch (const status_error &e) { raise_error(e.status, e.what()); }
    });
}

} // namespace dnnl_ocl_interop
