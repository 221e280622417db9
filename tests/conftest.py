"""Device harness: every test runs oneDNN for real on an OpenCL device.

A real Intel GPU is used when present, the emulated one (Intel's CPU OpenCL
runtime through the package's layer) otherwise. With neither, collection
fails: tests that need the device never skip for want of one.
"""

import os

import pytest

import dnnl_ocl_interop as dnnl
from dnnl_ocl_interop import emulation

# Must run before this process makes its first OpenCL call.
DEVICE_DESCRIPTION = emulation.ensure_device()

import pyopencl as cl  # noqa: E402  (after the device choice, on purpose)


def pytest_report_header(config):
    return [f"dnnl_ocl_interop package: {os.path.dirname(dnnl.__file__)} (libdnnl {dnnl._core.library_path()})",
            f"dnnl_ocl_interop device: {DEVICE_DESCRIPTION}"]


def pytest_collection_modifyitems(config, items):
    if not emulation.is_enabled():
        return
    skip = pytest.mark.skip(reason="needs a real Intel GPU; the emulated one is in use")
    for item in items:
        if "intel_gpu" in item.keywords:
            item.add_marker(skip)


def intel_gpu_devices():
    """Intel GPU devices of Intel platforms, as oneDNN would accept them
    (the package's own list, which ``python -m dnnl_ocl_interop --check``
    checks)."""
    from dnnl_ocl_interop._config import _intel_gpus
    return _intel_gpus(cl)


def pytest_runtest_setup(item):
    # Tests of the test-only hooks (CMake option DNNL_OCL_INTEROP_TEST_HOOKS:
    # on in development builds, off in released wheels) fail without them
    # rather than skip: a run against such a build deselects them by name
    # (-m "not test_hooks"), so that none is dropped silently.
    if "test_hooks" in item.keywords and not dnnl._core._test_hooks:
        pytest.fail("needs a build with DNNL_OCL_INTEROP_TEST_HOOKS=ON (deselect with "
                    "-m 'not test_hooks')")


@pytest.fixture(scope="session")
def cl_device():
    devices = intel_gpu_devices()
    if not devices:
        pytest.fail(f"no Intel GPU device visible to OpenCL (device choice: {DEVICE_DESCRIPTION})")
    return devices[0]


@pytest.fixture(scope="session")
def cl_context(cl_device):
    return cl.Context([cl_device])


@pytest.fixture
def cl_queue(cl_context, cl_device):
    """An in-order queue."""
    return cl.CommandQueue(cl_context, cl_device)


@pytest.fixture
def cl_ooo_queue(cl_context, cl_device):
    """An out-of-order queue."""
    return cl.CommandQueue(
        cl_context, cl_device,
        properties=cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)


@pytest.fixture(scope="session")
def engine(cl_device, cl_context):
    """A oneDNN engine on the session's device and context."""
    return dnnl.ocl_interop.make_engine(cl_device, cl_context)


@pytest.fixture
def stream(engine, cl_queue):
    """A oneDNN stream on an in-order user queue."""
    return dnnl.ocl_interop.make_stream(engine, cl_queue)
