"""Type stubs of dnnl_ocl_interop.graph.ocl_interop."""

from typing import Callable, Optional, Sequence, Union

import pyopencl as cl

from .._core import engine, stream
from . import allocator, compiled_partition, tensor

_Malloc = Callable[[int, int, cl.Device, cl.Context], int]
_Free = Callable[[int, cl.Device, cl.Context, Optional[cl.Event]], None]

def make_allocator(malloc: _Malloc, free: _Free) -> allocator: ...
def make_engine_with_allocator(device: Union[cl.Device, int], context: Union[cl.Context, int],
                               allocator: allocator, cache_blob: Optional[bytes] = None) -> engine: ...
def execute(compiled_partition: compiled_partition, stream: stream, inputs: Sequence[tensor],
            outputs: Sequence[tensor], deps: Sequence[Optional[Union[cl.Event, int]]] = ...,
            scratchpad: Optional[tensor] = None) -> Optional[cl.Event]: ...
