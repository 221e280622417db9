"""``dnnl.verbose``: oneDNN's verbose output for a region of code.

oneDNN's verbose setting is process-wide and, for its check and dispatch
kinds, fixed when oneDNN first reads ``ONEDNN_VERBOSE``. A region turns on
the kinds it names while it is active, through oneDNN's public
``dnnl_set_verbose`` levels, or exactly through the interposer when the user
asked for it (``DNNL_OCL_INTEROP_VERBOSE_CAPTURE=1``); a collecting region
takes oneDNN's lines from standard output (``cpp/core/verbose.cpp``,
``cpp/common/stdout_capture.cpp``).
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

        with dnnl.verbose("profile_exec"):     # each execution, with its time
            primitive.execute(stream, args)

    `kinds` are ``ONEDNN_VERBOSE``'s tokens: ``"error"``, ``"warn"``,
    ``"check"``, ``"dispatch"``, ``"profile_create"``, ``"profile_exec"``,
    ``"profile"`` (both), or the levels ``1`` and ``2``; by default
    ``"error", "check", "dispatch"`` (what ``dnnl.error.reasons`` holds).
    The region is a span of time: lines of its kinds that any thread prints
    meanwhile are shown.

    With ``collect=True`` the lines are kept in :attr:`lines` instead of
    shown: standard output (descriptor 1) passes through the binding while
    the region is active, and every thread's oneDNN lines of its kinds are
    taken (other output goes on, in order; the user's own ``ONEDNN_VERBOSE``
    kinds are still shown).

    oneDNN's public API turns on kinds only by levels (``dnnl_set_verbose``):
    ``"warn"``, ``"profile_create"``, ``"profile_exec"`` raise oneDNN's level
    while the region is active (which also prints the level's other kinds)
    and set the user's level after it (a level replaces oneDNN's whole
    setting: ``ONEDNN_VERBOSE``'s check and dispatch kinds are gone then).
    ``"check"`` and ``"dispatch"`` have no level: oneDNN prints them only if
    ``ONEDNN_VERBOSE`` asked for them, or with the interposer
    (``DNNL_OCL_INTEROP_VERBOSE_CAPTURE=1``), which switches exactly the
    region's kinds on and off in oneDNN's own setting. Kinds oneDNN does not
    print are listed in :attr:`unavailable` and a ``RuntimeWarning`` names
    them.
    """

    def __init__(self, *kinds: Union[str, int], collect: bool = False) -> None:
        if not kinds:
            kinds = ("error", "check", "dispatch")
        self.kinds: tuple[Union[str, int], ...] = kinds
        self.collect = bool(collect)
        self._mask = _mask(kinds)
        self._region: Optional[Any] = None
        #: The lines of its kinds printed while the region was active (``collect=True``),
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
            warnings.warn(f"dnnl.verbose: oneDNN does not print its {', '.join(self.unavailable)} "
                          f"lines in this process (it prints check and dispatch lines only when "
                          f"ONEDNN_VERBOSE asked for them at its first read, or with "
                          f"DNNL_OCL_INTEROP_VERBOSE_CAPTURE=1: docs/api.md, Verbose output)",
                          RuntimeWarning, stacklevel=2)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        region, self._region = self._region, None
        if region is not None:
            self.lines = list(region.exit())

    def __repr__(self) -> str:
        state = "active" if self._region is not None else "inactive"
        return f"dnnl.verbose({', '.join(map(repr, self.kinds))}, collect={self.collect}): {state}"
