"""``dnnl.verbose``: oneDNN's verbose output for a region of code.

oneDNN's verbose setting is process-wide and, for most of its kinds, fixed
when oneDNN first reads ``ONEDNN_VERBOSE``. The binding reads it for oneDNN
(adding the creation-time kinds it captures for ``dnnl.error.reasons``) and
filters what oneDNN prints (``cpp/common/verbose.cpp``); a region lets the
kinds it names through while it is active.
"""

from __future__ import annotations

import warnings
from typing import Any, Optional, Union

from . import _core
from ._errors import invalid_argument

__all__ = ["verbose"]

# The kinds a region may name: ONEDNN_VERBOSE's tokens (and its levels 1, 2).
KINDS = ("error", "warn", "check", "dispatch", "profile_create", "profile_exec", "profile")


def _mask(kinds: tuple[Union[str, int], ...]) -> int:
    mask = 0
    for kind in kinds:
        if isinstance(kind, bool) or not isinstance(kind, (str, int)):
            raise TypeError(f"verbose kinds must be str (or the levels 1, 2), not "
                            f"{type(kind).__name__}")
        token = str(kind)
        if isinstance(kind, int) and kind not in (1, 2):
            raise invalid_argument(f"verbose level must be 1 or 2, not {kind}")
        if isinstance(kind, str) and kind not in KINDS:
            raise invalid_argument(f"verbose kind must be one of {', '.join(KINDS)} (or the "
                                   f"levels 1, 2), not {kind!r}")
        mask |= _core._verbose_kinds(token)
    return mask


class verbose:
    """oneDNN's verbose lines of `kinds` on standard output while the
    ``with`` block runs::

        with dnnl.verbose("dispatch"):     # why each implementation was passed over
            pd = dnnl.matmul.primitive_desc(engine, src, wei, dst)

    `kinds` are ``ONEDNN_VERBOSE``'s tokens: ``"error"``, ``"warn"``,
    ``"check"``, ``"dispatch"``, ``"profile_create"``, ``"profile_exec"``,
    ``"profile"`` (both), or the levels ``1`` and ``2``; by default
    ``"error", "check", "dispatch"`` (what ``dnnl.error.reasons`` holds).
    The region is a span of time: lines of its kinds that any thread prints
    meanwhile are shown, besides what the user's own setting shows.

    With ``collect=True`` the lines this thread prints are kept in
    :attr:`lines` instead of shown (other threads' lines are not taken; on a
    queue with profiling enabled oneDNN prints ``profile_exec`` lines from
    the OpenCL runtime's thread, so a collecting region gets none of them).

    ``"error"``, ``"check"`` and ``"dispatch"`` cost nothing to scope:
    oneDNN prints them anyway (the binding asked for them) and the region
    only lets them through; ``"check"`` also switches oneDNN's execute-time
    check back on while the region is active (graph partitions then print
    a line per primitive they give an unused argument, every execute). ``"warn"``, ``"profile_create"`` and
    ``"profile_exec"`` need oneDNN's own level (``dnnl_set_verbose``) unless
    ``ONEDNN_VERBOSE`` asked for them: the region raises it while active and
    lowers it after. A ``dnnl_set_verbose`` level has no check and dispatch
    kinds; the binding gives them back in oneDNN's setting (found in
    libdnnl's symbol table), so later failures keep their reasons. Without
    that table (a stripped libdnnl) they are gone for the rest of the
    process: kinds oneDNN no longer prints are then listed in
    :attr:`unavailable` and a ``RuntimeWarning`` names them.
    """

    def __init__(self, *kinds: Union[str, int], collect: bool = False) -> None:
        if not kinds:
            kinds = ("error", "check", "dispatch")
        self.kinds: tuple[Union[str, int], ...] = kinds
        self.collect = bool(collect)
        self._mask = _mask(kinds)
        self._region: Optional[Any] = None
        #: The lines this thread printed in the region (``collect=True``),
        #: without their newline.
        self.lines: list[str] = []
        #: The region's kinds oneDNN prints no lines of (names).
        self.unavailable: list[str] = []

    def __enter__(self) -> "verbose":
        if self._region is not None:
            raise invalid_argument("this dnnl.verbose region is already active")
        region = _core._verbose_region(self._mask, self.collect)
        region.enter()
        self._region = region
        self.lines = []
        self.unavailable = [k for k in KINDS if k != "profile"
                            and _core._verbose_kinds(k) & region.unavailable]
        if self.unavailable:
            warnings.warn(f"dnnl.verbose: oneDNN no longer prints its {', '.join(self.unavailable)} "
                          f"lines in this process ({_core._verbose_state()['reasons_unavailable']})",
                          RuntimeWarning, stacklevel=2)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        region, self._region = self._region, None
        if region is not None:
            self.lines = list(region.exit())

    def __repr__(self) -> str:
        state = "active" if self._region is not None else "inactive"
        return f"dnnl.verbose({', '.join(map(repr, self.kinds))}, collect={self.collect}): {state}"
