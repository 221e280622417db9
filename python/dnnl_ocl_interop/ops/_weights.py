"""``ops.prepare_weights``: weights reordered once into the layout oneDNN
prefers for a call (it runs a reorder, so it lives above the run)."""

from __future__ import annotations

from typing import Any, Callable

from .. import _core
from .._errors import invalid_argument
from . import _context, _linear, _run
from ._call import planner_of
from ._linear import prepared_weights
from ._operands import operand

_A = _core
_WEIGHTED = (_linear.matmul, _linear.inner_product, _linear.convolution, _linear.deconvolution)


def prepare_weights(function: Callable[..., Any], *args: Any, **kwargs: Any) -> prepared_weights:
    """The weights of a call reordered once into the layout oneDNN prefers
    for it: ``prepare_weights(ops.matmul, x, w, transpose_b=True)`` takes
    the arguments of the call ``ops.matmul(x, w, transpose_b=True)`` and
    returns a :class:`prepared_weights` to pass in place of ``w`` in later
    calls with the same options and weights shape (other ``x`` shapes are
    tried and refused by oneDNN with ``dnnl.error`` if the layout does not
    suit them).

    ``function`` is :func:`matmul`, :func:`inner_product`,
    :func:`convolution` or :func:`deconvolution`. The call's primitive
    descriptor is made with the weights' layout left to oneDNN
    (``format_tag.any``; no primitive is compiled for it); the weights are
    reordered on their own queue into a new array made with their allocator
    (no host wait: the prepared array's events are the reorder's).
    """
    planner = planner_of(function)
    if planner not in _WEIGHTED:
        raise TypeError("function must be ops.matmul, ops.inner_product, ops.convolution or "
                        f"ops.deconvolution, not {function!r}")
    name = planner.__name__
    p = planner(*args, **kwargs)
    W = p.operands[1]
    if isinstance(W.array, prepared_weights) or W.desc is not None:
        raise TypeError(f"{W.name} is prepared already")
    any_layout = _core.memory.desc(list(W.dims), W.data_type, _core.memory.format_tag.any)
    source = operand(W.name, _A.ARG_FROM, W.array, W.dims, W.strides, W.data_type)
    W.desc = any_layout
    pd, _, _ = _run.primitive_desc_of(p, _context.of_queue(_run.queue_of(p)).engine)
    chosen = pd.weights_desc()
    dtype = W.array.dtype
    queue = W.array.queue
    if queue is None:
        raise invalid_argument(f"{W.name} has no queue: give it one (array.with_queue(queue))")
    array = _run.new_array(queue, _context.of_queue(queue).cl_context,
                           (chosen.get_size() // dtype.itemsize,), dtype, W.array.allocator)
    _run.run(_linear.reorder_into(source, array, chosen))
    options = {"transpose_b": bool(kwargs.get("transpose_b", False))} if name == "matmul" else \
        {} if name == "inner_product" else {"groups": kwargs.get("groups", 1)}
    return prepared_weights(name, W.array.shape, dtype, options, W.dims, W.data_type, chosen,
                            array)
