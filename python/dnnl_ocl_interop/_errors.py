"""Refusals raised by the package's Python modules, made as the compiled part
makes its own (``_core._error``): a refused value is ``dnnl.invalid_arguments``
(also a ``ValueError``) with its ``status``, whichever side refuses it."""

from . import _core


def invalid_argument(message: str) -> BaseException:
    """The ``dnnl.invalid_arguments`` to raise for a refused value."""
    return _core._error(_core.status.invalid_arguments, message)
