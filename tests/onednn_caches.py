"""oneDNN's primitive and compiled-partition caches hold kernels, and so the
OpenCL context, after every Python object is gone: tests that count
references empty or shrink them."""

import contextlib
import gc

import dnnl_ocl_interop as dnnl


def empty_onednn_caches():
    """Evict every cached primitive and compiled partition (capacity 0, then back)."""
    for get, set_ in ((dnnl.get_primitive_cache_capacity, dnnl.set_primitive_cache_capacity),
                      (dnnl.graph.get_compiled_partition_cache_capacity,
                       dnnl.graph.set_compiled_partition_cache_capacity)):
        capacity = get()
        set_(0)
        set_(capacity)
    gc.collect()


@contextlib.contextmanager
def compiled_partition_cache_capacity(capacity):
    """Run with oneDNN's compiled-partition cache at `capacity` entries."""
    previous = dnnl.graph.get_compiled_partition_cache_capacity()
    dnnl.graph.set_compiled_partition_cache_capacity(capacity)
    try:
        yield
    finally:
        dnnl.graph.set_compiled_partition_cache_capacity(previous)
