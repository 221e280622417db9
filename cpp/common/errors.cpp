#include "common/enum_caster.hpp" // first: see the header

#include "common/errors.hpp"

#include <array>

#include <pybind11/native_enum.h>

#include "common/py_values.hpp"
#include "oneapi/dnnl/dnnl_graph.hpp"

namespace py = pybind11;

namespace dnnl_ocl_interop {
namespace {

PyObject *error_type = nullptr; // dnnl_ocl_interop.error, alive with the module

// The subclass of error for each status that has one, indexed by the status
// (nullptr: plain error). Alive with the module.
std::array<PyObject *, dnnl_invalid_data_type + 1> status_types {};

// The status's name, as dnnl.status names it (members from the headers).
const char *status_name(dnnl_status_t status) {
    switch (status) {
#define VALUE(member) \
    case static_cast<dnnl_status_t>(dnnl::graph::status::member): return #member;
#include "onednn_enum_status.inc"
#undef VALUE
        default: return "unknown_status";
    }
}

PyObject *type_of(dnnl_status_t status) {
    auto i = static_cast<size_t>(status);
    return i < status_types.size() && status_types[i] ? status_types[i] : error_type;
}

py::object make_error(dnnl_status_t status, const std::string &what, cl_int cl_code = CL_SUCCESS,
        const std::vector<std::string> &reasons = {}, const std::string &known_problem = {},
        const std::vector<int> &arguments = {}) {
    std::string message = what + " (status: " + status_name(status) + ")";
    py::object exc = py::reinterpret_borrow<py::object>(type_of(status))(message);
    exc.attr("status") = py::cast(status);
    // oneDNN's verbose lines for a failed creation (common/verbose); [] else.
    py::list lines;
    for (const auto &line : reasons) lines.append(printed_text(line));
    exc.attr("reasons") = lines;
    // oneDNN's own OpenCL failures reach the binding as a status only; the
    // code is known where the binding made the OpenCL call itself.
    bool from_cl = cl_code != CL_SUCCESS;
    exc.attr("cl_error") = from_cl ? py::object(py::int_(cl_code)) : py::object(py::none());
    exc.attr("cl_error_name")
            = from_cl ? py::object(py::str(cl_error_name(cl_code))) : py::object(py::none());
    // A refusal for a known problem: its id and the arguments it concerns.
    exc.attr("known_problem")
            = known_problem.empty() ? py::object(py::none()) : py::object(py::str(known_problem));
    py::tuple args(arguments.size());
    for (size_t i = 0; i < arguments.size(); ++i) args[i] = py::int_(arguments[i]);
    exc.attr("arguments") = args;
    return exc;
}

void raise_error(dnnl_status_t status, const std::string &what, cl_int cl_code = CL_SUCCESS,
        const std::vector<std::string> &reasons = {}, const std::string &known_problem = {},
        const std::vector<int> &arguments = {}) {
    py::object exc = make_error(status, what, cl_code, reasons, known_problem, arguments);
    PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(exc.ptr())), exc.ptr());
}

// The subclasses: each status a Python handler would want to tell apart, also
// deriving from the Python exception such a handler expects.
void add_status_types(py::module_ &m) {
    const struct {
        dnnl_status_t status;
        PyObject *python_base;
        const char *doc;
    } subclasses[] = {
            {dnnl_out_of_memory, PyExc_MemoryError,
                    "dnnl.error with status out_of_memory: oneDNN, the OpenCL driver "
                    "or the binding ran out of memory or resources. Also a MemoryError."},
            {dnnl_invalid_arguments, PyExc_ValueError,
                    "dnnl.error with status invalid_arguments: oneDNN, an OpenCL call "
                    "or the binding on oneDNN's behalf refused an argument's value. "
                    "Also a ValueError."},
            {dnnl_unimplemented, PyExc_NotImplementedError,
                    "dnnl.error with status unimplemented: oneDNN has no implementation "
                    "for the request. Also a NotImplementedError."},
            {dnnl_runtime_error, PyExc_RuntimeError,
                    "dnnl.error with status runtime_error: oneDNN, the OpenCL runtime or "
                    "a graph allocator failed while running. Also a RuntimeError."},
            {dnnl_invalid_graph, PyExc_ValueError,
                    "dnnl.error with status invalid_graph: the graph is not valid. "
                    "Also a ValueError."},
            {dnnl_invalid_graph_op, PyExc_ValueError,
                    "dnnl.error with status invalid_graph_op: an op of the graph is not "
                    "valid. Also a ValueError."},
            {dnnl_invalid_shape, PyExc_ValueError,
                    "dnnl.error with status invalid_shape: a logical tensor's shape is "
                    "not valid. Also a ValueError."},
            {dnnl_invalid_data_type, PyExc_ValueError,
                    "dnnl.error with status invalid_data_type: a logical tensor's data "
                    "type is not valid. Also a ValueError."},
    };
    for (const auto &sub : subclasses) {
        const char *name = status_name(sub.status);
        py::tuple bases = py::make_tuple(py::handle(error_type), py::handle(sub.python_base));
        PyObject *type
                = PyErr_NewExceptionWithDoc(("dnnl_ocl_interop._core." + std::string(name)).c_str(),
                        sub.doc, bases.ptr(), nullptr);
        if (!type) throw py::error_already_set();
        status_types[static_cast<size_t>(sub.status)] = type;
        m.add_object(name, py::handle(type));
    }
}

} // namespace

#define DNNL_OCL_INTEROP_CL_NAME(code) \
    case code: return #code;
const char *cl_error_name(cl_int result) {
    switch (result) {
        DNNL_OCL_INTEROP_CL_NAME(CL_SUCCESS)
        DNNL_OCL_INTEROP_CL_NAME(CL_DEVICE_NOT_FOUND)
        DNNL_OCL_INTEROP_CL_NAME(CL_DEVICE_NOT_AVAILABLE)
        DNNL_OCL_INTEROP_CL_NAME(CL_COMPILER_NOT_AVAILABLE)
        DNNL_OCL_INTEROP_CL_NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        DNNL_OCL_INTEROP_CL_NAME(CL_OUT_OF_RESOURCES)
        DNNL_OCL_INTEROP_CL_NAME(CL_OUT_OF_HOST_MEMORY)
        DNNL_OCL_INTEROP_CL_NAME(CL_PROFILING_INFO_NOT_AVAILABLE)
        DNNL_OCL_INTEROP_CL_NAME(CL_MEM_COPY_OVERLAP)
        DNNL_OCL_INTEROP_CL_NAME(CL_IMAGE_FORMAT_MISMATCH)
        DNNL_OCL_INTEROP_CL_NAME(CL_IMAGE_FORMAT_NOT_SUPPORTED)
        DNNL_OCL_INTEROP_CL_NAME(CL_BUILD_PROGRAM_FAILURE)
        DNNL_OCL_INTEROP_CL_NAME(CL_MAP_FAILURE)
        DNNL_OCL_INTEROP_CL_NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET)
        DNNL_OCL_INTEROP_CL_NAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
        DNNL_OCL_INTEROP_CL_NAME(CL_COMPILE_PROGRAM_FAILURE)
        DNNL_OCL_INTEROP_CL_NAME(CL_LINKER_NOT_AVAILABLE)
        DNNL_OCL_INTEROP_CL_NAME(CL_LINK_PROGRAM_FAILURE)
        DNNL_OCL_INTEROP_CL_NAME(CL_DEVICE_PARTITION_FAILED)
        DNNL_OCL_INTEROP_CL_NAME(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_VALUE)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_DEVICE_TYPE)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_PLATFORM)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_DEVICE)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_CONTEXT)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_QUEUE_PROPERTIES)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_COMMAND_QUEUE)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_HOST_PTR)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_MEM_OBJECT)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_IMAGE_SIZE)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_SAMPLER)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_BINARY)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_BUILD_OPTIONS)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_PROGRAM)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_PROGRAM_EXECUTABLE)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_KERNEL_NAME)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_KERNEL_DEFINITION)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_KERNEL)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_ARG_INDEX)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_ARG_VALUE)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_ARG_SIZE)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_KERNEL_ARGS)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_WORK_DIMENSION)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_WORK_GROUP_SIZE)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_WORK_ITEM_SIZE)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_GLOBAL_OFFSET)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_EVENT_WAIT_LIST)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_EVENT)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_OPERATION)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_GL_OBJECT)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_BUFFER_SIZE)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_MIP_LEVEL)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_GLOBAL_WORK_SIZE)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_PROPERTY)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_IMAGE_DESCRIPTOR)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_COMPILER_OPTIONS)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_LINKER_OPTIONS)
        DNNL_OCL_INTEROP_CL_NAME(CL_INVALID_DEVICE_PARTITION_COUNT)
        default: return "OpenCL error";
    }
}
#undef DNNL_OCL_INTEROP_CL_NAME

// oneDNN 3.13's table (src/xpu/ocl/utils_shared.cpp), so that a failure the
// binding meets in an OpenCL call carries the status oneDNN would give it.
dnnl_status_t cl_status(cl_int result) {
    switch (result) {
        case CL_SUCCESS: return dnnl_success;
        case CL_MEM_OBJECT_ALLOCATION_FAILURE:
        case CL_OUT_OF_RESOURCES:
        case CL_OUT_OF_HOST_MEMORY: return dnnl_out_of_memory;
        case CL_INVALID_VALUE:
        case CL_INVALID_DEVICE_TYPE:
        case CL_INVALID_CONTEXT:
        case CL_INVALID_QUEUE_PROPERTIES:
        case CL_INVALID_COMMAND_QUEUE:
        case CL_INVALID_HOST_PTR:
        case CL_INVALID_MEM_OBJECT:
        case CL_INVALID_IMAGE_FORMAT_DESCRIPTOR:
        case CL_INVALID_IMAGE_SIZE:
        case CL_INVALID_SAMPLER:
        case CL_INVALID_BINARY:
        case CL_INVALID_BUILD_OPTIONS:
        case CL_INVALID_PROGRAM:
        case CL_INVALID_PROGRAM_EXECUTABLE:
        case CL_INVALID_KERNEL_NAME:
        case CL_INVALID_KERNEL_DEFINITION:
        case CL_INVALID_KERNEL:
        case CL_INVALID_ARG_INDEX:
        case CL_INVALID_ARG_VALUE:
        case CL_INVALID_ARG_SIZE:
        case CL_INVALID_KERNEL_ARGS:
        case CL_INVALID_WORK_DIMENSION:
        case CL_INVALID_WORK_GROUP_SIZE:
        case CL_INVALID_WORK_ITEM_SIZE:
        case CL_INVALID_GLOBAL_OFFSET:
        case CL_INVALID_EVENT_WAIT_LIST:
        case CL_INVALID_EVENT:
        case CL_INVALID_OPERATION:
        case CL_INVALID_GL_OBJECT:
        case CL_INVALID_BUFFER_SIZE:
        case CL_INVALID_MIP_LEVEL:
        case CL_INVALID_GLOBAL_WORK_SIZE: return dnnl_invalid_arguments;
        // Everything else, CL_INVALID_PLATFORM and CL_INVALID_DEVICE included.
        default: return dnnl_runtime_error;
    }
}

void check_cl(cl_int result, const char *what) {
    if (result == CL_SUCCESS) return;
    throw status_error(cl_status(result),
            std::string(what) + " failed: " + cl_error_name(result) + " (" + std::to_string(result)
                    + ")",
            result);
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
    PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(exc.ptr())), exc.ptr());
    throw py::error_already_set();
}

void bind_errors(py::module_ &m) {
    {
        // Members from the headers (dnnl::graph::status: dnnl::status's and the
        // graph API's; core/enums.cpp), as the C status values.
#define VALUE(member) .value(#member, static_cast<dnnl_status_t>(dnnl::graph::status::member))
        py::native_enum<dnnl_status_t>(m, "status", "enum.Enum",
                "Status codes of oneDNN calls, carried by dnnl.error.status.")
#include "onednn_enum_status.inc"
                .finalize();
#undef VALUE
    }

    error_type = PyErr_NewExceptionWithDoc("dnnl_ocl_interop._core.error",
            "A oneDNN call failed, or the binding refused an argument on "
            "oneDNN's behalf. `status` holds the dnnl.status; `cl_error` and "
            "`cl_error_name` the OpenCL error code and its name (e.g. -4, "
            "'CL_MEM_OBJECT_ALLOCATION_FAILURE') when an OpenCL call the binding "
            "made failed, None otherwise; `reasons` the lines oneDNN printed to "
            "explain a failed creation (a list of str, empty for other errors). "
            "Raised as the "
            "status's subclass where there is one (invalid_arguments, "
            "out_of_memory, unimplemented, runtime_error, invalid_graph, "
            "invalid_graph_op, invalid_shape, invalid_data_type), which also "
            "derives from the matching Python exception.",
            PyExc_Exception, nullptr);
    if (!error_type) throw py::error_already_set();
    m.add_object("error", py::handle(error_type));
    add_status_types(m);
    // The package's Python modules raise their refusals through this, so a
    // refusal reads the same whichever side makes it.
    m.def("_error",
            [](dnnl_status_t status, const std::string &message) {
        return make_error(status, message);
    }, py::arg("status"), py::arg("message"),
            "The dnnl.error (the status's subclass) the binding raises for `status` "
            "and `message`, for the package's Python modules to raise.");

    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const dnnl::error &e) {
            raise_error(e.status, e.what());
        } catch (const status_error &e) {
            raise_error(e.status, e.what(), e.cl_code, e.reasons, e.known_problem, e.arguments);
        }
    });
}

} // namespace dnnl_ocl_interop
