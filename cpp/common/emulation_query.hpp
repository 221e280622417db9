// The one question the package's emulation layer answers beyond OpenCL's
// (cpp/emulation/emulation_layer.cpp): whether a device is an emulated one.
// A driver answers CL_INVALID_VALUE for this private value; the layer
// answers a cl_bool, CL_TRUE for the devices it presents as GPUs.
#pragma once

#include <CL/cl.h>

namespace dnnl_ocl_interop {

constexpr cl_device_info device_is_emulated_query = 0x7D1C0001;

} // namespace dnnl_ocl_interop
