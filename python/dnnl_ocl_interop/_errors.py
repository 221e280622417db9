"""Refusals raised by the package's Python modules, made as the compiled part
makes its own (``_core._error``): a refused value is ``dnnl.invalid_arguments``
(also a ``ValueError``) with its ``status``, whichever side refuses it."""

from typing import Optional, Tuple

from . import _core


def invalid_argument(message: str) -> BaseException:
    """The ``dnnl.invalid_arguments`` to raise for a refused value."""
    return _core._error(_core.status.invalid_arguments, message)


def known_problem_of(error: BaseException) -> Optional[str]:
    """The id of the known problem a ``dnnl.error`` refuses for, or None
    (``error.known_problem``, set by the compiled module)."""
    return getattr(error, "known_problem", None)


def arguments_of(error: BaseException) -> Tuple[int, ...]:
    """The execution arguments a known-problem refusal concerns
    (``error.arguments``)."""
    return tuple(getattr(error, "arguments", ()))
