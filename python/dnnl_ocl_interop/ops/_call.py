"""The call binding of ``dnnl.ops``: public functions made from planners,
and calls of a known signature run without planning.

What a planner does (checks, reinterpretations, descriptors, the cache key)
depends only on its arguments' values and, of arrays, on their shapes,
strides, dtypes, sub-memory offsets and queues, and on which arguments are
the same array: the call's *signature*. The first call of a signature is
planned and run (``_run.run``) and then bound to its cache entry: a bound
call (``_core._arrays.bound_call``) holds the entry's step and which of the
call's arrays each operand is, ``out``, and the array whose queue runs it.
The next calls of that signature cross into the compiled part once
(``_core._arrays.dispatch``, cpp/arrays/launches): it reads the signature,
finds the bound call and runs it on the call's own arrays (memory on their
storage, their offsets, events; whether ``out`` shares bytes with an
operand), with no Python on the way unless an array needs new memory.

The signature, made in the compiled part (``_core._arrays.signature``): each
value adds its part, an array its (shape, strides, dtype, sub-memory offset
(``_array_memory.element_offset``), queue handle), or the index of the
earlier argument that is the same array; a number, string, None or type its
type and value (1, 1.0 and True differ); an enum member its type and name;
a NumPy dtype or scalar its type and value; a list or tuple its type and
length, then its items. Other values (prepared weights, array subclasses,
objects of users' types) have none: such calls are planned every time, as
are calls that ran through a remedy (copies of an operand are none of the
call's arrays).
"""

from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from .. import _core
from . import _cache, _run
from ._plans import plan

if TYPE_CHECKING:
    import pyopencl.array as cla
    from typing import ParamSpec

    P = ParamSpec("P")

_arrays = _core._arrays
_dispatch = _arrays.dispatch


def signature(planner: Any, args: Sequence[Any],
              kwargs: Dict[str, Any]) -> Optional[Tuple[Any, List[Any]]]:
    """(signature, the arrays in it) of a call, or None if it has none
    (see the module docstring)."""
    return _arrays.signature(planner, tuple(args), kwargs)


def bind(p: plan, call_arrays: Sequence[Any]) -> Optional[Any]:
    """The bound call of a plan that ran on its entry, on its call's arrays,
    or None when an operand is not one of them (a copy made for the call)."""
    def index(array: Any) -> Optional[int]:
        for i, given in enumerate(call_arrays):
            if given is array:
                return i
        return None

    entry = p.entry
    indexes = []
    for op in p.operands:
        i = index(op.array)
        if i is None:
            return None
        indexes.append(i)
    out = -1
    if p.out is not None:
        found = index(p.out)
        if found is None:
            return None
        out = found
    holder = index(p.out if p.out is not None else p.queue_array)
    if holder is None:
        return None
    return _arrays.bound_call(entry.step, indexes, out, holder, _run.scalars(entry, p))


def planned(planner: Callable[..., plan], args: Sequence[Any], kwargs: Dict[str, Any],
            signed: Optional[Tuple[Any, List[Any]]]) -> Any:
    """Plan and run ``planner(*args, **kwargs)``; bind the call to its entry
    for the next calls of its signature (`signed`: (signature, arrays), or
    None when it has none)."""
    p = planner(*args, **kwargs)
    result = _run.run(p)
    if signed is not None and p.entry is not None:
        bound = bind(p, signed[1])
        if bound is not None:
            _cache.bind(signed[0], bound)
    return result


def call(planner: Callable[..., plan], *args: Any, **kwargs: Any) -> Any:
    """Run ``planner(*args, **kwargs)``: by its bound call, or planned."""
    found = _dispatch(planner, args, kwargs)
    if found is None or type(found) is tuple:
        return planned(planner, args, kwargs, found)
    return found


def operation(planner: "Callable[P, plan]") -> "Callable[P, cla.Array]":
    """The public function of a planner: the same parameters, and it runs
    the call (by its bound call, or planned). The planner stays reachable
    through :func:`planner_of` (ops.prepare_weights asks it for the plan)."""

    @functools.wraps(planner)
    def function(*args: Any, **kwargs: Any) -> Any:
        found = _dispatch(planner, args, kwargs)
        if found is None or type(found) is tuple:
            return planned(planner, args, kwargs, found)
        return found

    function.plan = planner  # type: ignore[attr-defined]
    # help() and inspect show the planner's parameters and an array result
    function.__signature__ = inspect.signature(planner).replace(  # type: ignore[attr-defined]
        return_annotation="pyopencl.array.Array")
    return function


def planner_of(function: Any) -> Optional[Callable[..., plan]]:
    """The planner behind a function made by :func:`operation` (or None)."""
    return getattr(function, "plan", None)
