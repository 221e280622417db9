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

from . import _elementwise, _linear, _movement, _normalization
from ._cache import cache_info, clear_cache, get_cache_capacity, set_cache_capacity
from ._capture import capture, program
from ._call import operation
from ._linear import prepared_weights
from ._weights import prepare_weights

# The public functions, one way: each is its planner (the same parameters
# and docstring), run by the call binding (_call.operation). The layers,
# bottom up: plan data (_operands, _post_ops, _spatial, _plans), the
# engines, streams and cache (_context, _cache), the planners
# (_elementwise, _linear, _normalization, _movement), the run (_run), the
# call binding (_call), what runs calls (_weights, _capture), and this module;
# tests/test_ops_layers.py keeps every import pointing down.
eltwise = operation(_elementwise.eltwise)
relu = operation(_elementwise.relu)
gelu = operation(_elementwise.gelu)
sigmoid = operation(_elementwise.sigmoid)
tanh = operation(_elementwise.tanh)
silu = operation(_elementwise.silu)
exp = operation(_elementwise.exp)
log = operation(_elementwise.log)
sqrt = operation(_elementwise.sqrt)
clip = operation(_elementwise.clip)
binary = operation(_elementwise.binary)
add = operation(_elementwise.add)
sub = operation(_elementwise.sub)
mul = operation(_elementwise.mul)
div = operation(_elementwise.div)
maximum = operation(_elementwise.maximum)
minimum = operation(_elementwise.minimum)
softmax = operation(_elementwise.softmax)
log_softmax = operation(_elementwise.log_softmax)
matmul = operation(_linear.matmul)
inner_product = operation(_linear.inner_product)
convolution = operation(_linear.convolution)
deconvolution = operation(_linear.deconvolution)
layer_norm = operation(_normalization.layer_norm)
rms_norm = operation(_normalization.rms_norm)
batch_norm = operation(_normalization.batch_norm)
group_norm = operation(_normalization.group_norm)
max_pool = operation(_normalization.max_pool)
avg_pool = operation(_normalization.avg_pool)
reorder = operation(_movement.reorder)
astype = operation(_movement.astype)
copy = operation(_movement.copy)
quantize = operation(_movement.quantize)
dequantize = operation(_movement.dequantize)
transpose = operation(_movement.transpose)
concat = operation(_movement.concat)
sum = operation(_movement.sum)

__all__ = [
    "add", "astype", "avg_pool", "batch_norm", "binary", "cache_info", "capture", "clear_cache", "clip",
    "concat", "convolution", "copy", "deconvolution", "dequantize", "div", "eltwise", "exp",
    "gelu", "get_cache_capacity", "group_norm", "inner_product", "layer_norm", "log",
    "log_softmax", "matmul", "max_pool", "maximum", "minimum", "mul", "prepare_weights",
    "prepared_weights", "program", "quantize", "relu", "reorder", "rms_norm", "set_cache_capacity",
    "sigmoid", "silu", "softmax", "sqrt", "sub", "sum", "tanh", "transpose",
]
