"""oneDNN operations on ``pyopencl.array.Array`` objects, one call each.

``dnnl.ops.matmul(a, b, bias, post_ops=["relu"])`` does what a page of the
mirrored API does: it shares the arrays with oneDNN without copies (any
strides oneDNN can address; ``dnnl.arrays.as_memory``), makes the primitive
(or finds it in a bounded LRU cache keyed by everything that selects it),
executes it on the first operand's queue after every operand's pending
events, and returns a new array on that queue, made with that array's
allocator, or writes ``out=``. The result's ``events`` hold the primitive's
event (on an in-order queue, a marker's), so a chain of calls never waits on
the host: pyopencl's own operations, ``.get()`` and the next ops call wait
for it on the device.

Functions (tutorial and reference: docs/ops.md):

- with weights: :func:`matmul`, :func:`inner_product`, :func:`convolution`,
  :func:`deconvolution`; :func:`prepare_weights` reorders weights once into
  the layout oneDNN prefers;
- element by element: :func:`eltwise` (every oneDNN algorithm) and
  :func:`relu`, :func:`gelu`, :func:`sigmoid`, :func:`tanh`, :func:`silu`,
  :func:`exp`, :func:`log`, :func:`sqrt`, :func:`clip`; :func:`binary` and
  :func:`add`, :func:`sub`, :func:`mul`, :func:`div`, :func:`maximum`,
  :func:`minimum`; :func:`softmax`, :func:`log_softmax`;
- normalization (inference): :func:`layer_norm`, :func:`rms_norm`,
  :func:`batch_norm`, :func:`group_norm`; pooling: :func:`max_pool`,
  :func:`avg_pool`;
- data movement: :func:`reorder`, :func:`astype`, :func:`copy`,
  :func:`transpose`, :func:`quantize`, :func:`dequantize`, :func:`concat`,
  :func:`sum`;
- the cache: :func:`cache_info`, :func:`clear_cache`,
  :func:`set_cache_capacity`, :func:`get_cache_capacity`.

dtypes: float32, float16, bfloat16 (held in uint16 arrays: in ``dnnl.ops`` a
uint16 array is bf16 bits; ``dnnl.arrays.bf16_from_float32`` makes them),
int8/uint8 (and int32, float64 where oneDNN takes them); others (int64, ...)
raise ``TypeError``. A ``dtype=`` argument takes a
NumPy dtype, ``"f32"``, ``"f16"``, ``"bf16"``, ``"s8"``, ``"u8"``, ``"s32"``
or a ``dnnl.memory.data_type``.

``post_ops`` (matmul, inner_product, convolution, deconvolution, binary) is a
list applied in order to the result, each item:

- ``"relu"`` (any eltwise name, as :func:`eltwise` takes it);
- ``("eltwise", name[, alpha[, beta]])``, or ``(name, alpha[, beta])``;
- ``("add", array)`` (any binary name; the array broadcasts to the result),
  or ``("binary", name, array)``; ``("add" | "sub" | "mul" | "div",
  number)`` is an eltwise linear;
- ``("sum"[, scale])``: add ``scale * out`` (the value ``out=`` held).

``out=`` may not share bytes with an operand, except as that very operand
(the same view) where oneDNN computes in place: the source of eltwise,
softmax and the normalizations, ``a`` of binary (docs/ops.md).

Errors: ``TypeError`` and ``ValueError`` name the argument (``b``,
``post_ops[1]``, ``out``); oneDNN's refusals are ``dnnl.error`` subclasses
(``dnnl.unimplemented`` is a ``NotImplementedError``) whose message names
the operation and its operands.
"""

from ._cache import cache_info, clear_cache, get_cache_capacity, set_cache_capacity
from ._elementwise import (add, binary, clip, div, eltwise, exp, gelu, log, log_softmax,
                           maximum, minimum, mul, relu, sigmoid, silu, softmax, sqrt, sub, tanh)
from ._linear import (convolution, deconvolution, inner_product, matmul, prepare_weights,
                      prepared_weights)
from ._movement import astype, concat, copy, dequantize, quantize, reorder, sum, transpose
from ._normalization import avg_pool, batch_norm, group_norm, layer_norm, max_pool, rms_norm

__all__ = [
    "add", "astype", "avg_pool", "batch_norm", "binary", "cache_info", "clear_cache", "clip",
    "concat", "convolution", "copy", "deconvolution", "dequantize", "div", "eltwise", "exp",
    "gelu", "get_cache_capacity", "group_norm", "inner_product", "layer_norm", "log",
    "log_softmax", "matmul", "max_pool", "maximum", "minimum", "mul", "prepare_weights",
    "prepared_weights", "quantize", "relu", "reorder", "rms_norm", "set_cache_capacity",
    "sigmoid", "silu", "softmax", "sqrt", "sub", "sum", "tanh", "transpose",
]
