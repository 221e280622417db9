// dnnl.usm.set_kernel_arg: a USM pointer as an argument of the user's OpenCL
// kernel (clSetKernelArgMemPointerINTEL), the way USM memory meets pyopencl
// kernels, since pyopencl's arrays and Kernel.set_arg know no Intel USM.

#include "common/enum_caster.hpp" // first: see the header

#include <string>

#include "common/cl_handles.hpp"
#include "common/errors.hpp"
#include "common/py_values.hpp"
#include "common/usm_api.hpp"
#include "usm/usm_bindings.hpp"

namespace py = pybind11;

namespace dnnl_ocl_interop {

void bind_usm_kernel_args(py::module_ &m) {
    m.def("set_kernel_arg",
            [](cl_handles::kernel_arg kernel, cl_uint index, const pointer_arg &ptr) {
        cl_kernel k = kernel.get("kernel");
        void *p = ptr.get("ptr");
        // A pointer the kernel could not address would fault on the device.
        if (!p) throw_invalid_argument("ptr is a NULL pointer");
        cl_context context = nullptr;
        check_cl(clGetKernelInfo(k, CL_KERNEL_CONTEXT, sizeof(context), &context, nullptr),
                "clGetKernelInfo(CL_KERNEL_CONTEXT)");
        if (usm::bytes_available(context, p) == 0)
            throw_invalid_argument(
                    "ptr is not a USM allocation of the kernel's OpenCL "
                    "context");
        check_cl(usm::api_for(context).set_kernel_arg_mem_pointer(k, index, p),
                "clSetKernelArgMemPointerINTEL");
    }, py::arg("kernel"), py::arg("index"), py::arg("ptr"),
            "Set argument `index` of the OpenCL `kernel` (a pyopencl.Kernel) to "
            "the USM pointer `ptr` (an int, e.g. memory.get_data_handle() of USM "
            "memory, or a typed pointer such as dnnl.usm.allocation), with "
            "clSetKernelArgMemPointerINTEL: the "
            "way USM memory meets a pyopencl kernel. Set the other arguments "
            "with kernel.set_arg and enqueue with pyopencl.enqueue_nd_range_kernel "
            "(kernel(queue, ...) would set every argument again). `ptr` must be "
            "a USM allocation (device, shared or host) of the kernel's context, "
            "else dnnl.error (invalid_arguments); how far the kernel reads or "
            "writes from it cannot be checked. A bad index raises dnnl.error "
            "naming CL_INVALID_ARG_INDEX.");
}

} // namespace dnnl_ocl_interop
