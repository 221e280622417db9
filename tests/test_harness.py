"""The harness itself: the device tests run on is what oneDNN accepts."""

import ctypes

import pyopencl as cl
import pytest

import dnnl_ocl_interop as dnnl
from dnnl_ocl_interop import emulation


def test_device_is_an_intel_gpu_for_opencl(cl_device):
    assert cl_device.type & cl.device_type.GPU
    assert cl_device.vendor_id == 0x8086


def test_onednn_enumerates_the_device(cl_device):
    assert dnnl.engine.get_count(dnnl.engine.kind.gpu) >= 1
    eng = dnnl.engine(dnnl.engine.kind.gpu, 0)
    assert eng.get_kind() == dnnl.engine.kind.gpu


def test_emulated_device_reports_xe_hp(cl_device):
    if not emulation.is_enabled():
        pytest.skip(f"a real Intel GPU ({cl_device.name}) reports its own identity, not the emulation's")
    # Asked through the system ICD loader, the one oneDNN is linked with
    # (pyopencl refuses info names it does not know).
    opencl = ctypes.CDLL("libOpenCL.so.1")
    value = ctypes.c_uint32(0)
    CL_DEVICE_IP_VERSION_INTEL = 0x4250
    status = opencl.clGetDeviceInfo(ctypes.c_void_p(cl_device.int_ptr),
                                    ctypes.c_uint32(CL_DEVICE_IP_VERSION_INTEL),
                                    ctypes.c_size_t(4), ctypes.byref(value), None)
    assert status == 0
    assert value.value == (12 << 22) | (50 << 14)
