"""The oneDNN problems the binding acts on, where their evidence lies, and
their switches.

Each problem's rule acts only where its evidence lies: for the
implementations it names (``impl_info_str()``, per primitive kind), or, for
a rule that cannot name one, on the devices its evidence covers; while its
switch is on; and on a oneDNN older than the release that fixes it. There
it refuses (``dnnl.unimplemented`` naming the problem's id, with the
arguments concerned in ``error.known_problem`` and ``error.arguments``), or
steps to another implementation of oneDNN's. The registry lives in the
compiled module (``cpp/common/known_problems.cpp``); ``docs/known-problems.md``
is checked against it.

>>> import dnnl_ocl_interop as dnnl
>>> for p in dnnl.known_problems.problems():
...     print(p.id, p.implementations)
>>> with dnnl.known_problems.disabled("eltwise-strides"):
...     ...  # oneDNN's own behaviour for that problem

Switching a rule off lets oneDNN compute what the problem says it computes
wrong on the implementations named: do so only for a device on which you
checked it (``python -m dnnl_ocl_interop probe`` runs each problem's case
with its rule off and says what the device computes).
"""

from __future__ import annotations

import contextlib
import sys
import threading
from typing import IO, Any, Iterator, NamedTuple, Optional, Tuple

from . import _core

__all__ = ["implementation", "problem", "problems", "get", "names", "disable", "enable", "disabled",
           "print_problems"]


class implementation(NamedTuple):
    """One implementation a problem names."""

    kind: Optional[str]  #: the primitive kind (``"eltwise"``), or None for any
    name: str  #: ``impl_info_str()`` up to a ``:`` or its end (``"ocl:ref"``)
    arguments: Tuple[str, ...]  #: the arguments it is shown wrong for; () where the case says

    def __str__(self) -> str:
        text = self.name if self.kind is None else f"{self.kind} {self.name}"
        return text + (f" ({', '.join(self.arguments)})" if self.arguments else "")


class problem(NamedTuple):
    """A row of the registry, with its state in this process."""

    id: str
    what: str  #: what oneDNN gets wrong, in a line
    implementations: Tuple[implementation, ...]  #: () where no implementation can be named
    devices: str  #: the devices the evidence covers
    case: str  #: the case that is wrong, as narrow as the evidence
    evidence_kind: str  #: "source" (read in oneDNN's code) or "probe" (measured)
    evidence: str  #: oneDNN source file and line, or the probe and its device
    verified: Tuple[str, ...]  #: the oneDNN releases the evidence was checked in
    fixed: Optional[str]  #: the first release without the problem, or None
    applies: bool  #: whether the rule acts in this process (switch on, oneDNN not fixed)
    enabled: bool  #: the problem's switch
    verified_for_loaded: bool  #: whether the loaded oneDNN is a release in ``verified``


_lock = threading.Lock()  # disabled() reads and restores switches as one step


def problems() -> Tuple[problem, ...]:
    """Every known problem, in the order of docs/known-problems.md."""
    return tuple(_row(r) for r in _core._known_problem_rows())


def _row(r: dict) -> problem:
    return problem(r["id"], r["what"], tuple(implementation(*i) for i in r["implementations"]),
                   r["devices"], r["case"], r["evidence_kind"], r["evidence"], r["verified"],
                   r["fixed"], r["applies"], r["enabled"], r["verified_for_loaded"])


def get(problem_id: str) -> problem:
    """The problem of ``problem_id``; ``ValueError`` (dnnl.invalid_arguments)
    naming it for an unknown id."""
    for p in problems():
        if p.id == problem_id:
            return p
    _core._set_known_problem_enabled(_checked(problem_id), True)  # raises, naming the id
    raise AssertionError("unreachable")


def names(problem_id: str, kind: Any, implementation: str) -> bool:
    """Whether the problem names ``implementation`` (an ``impl_info_str()``)
    of primitives of ``kind`` (``pd.get_kind()``): whether its rule, where
    it applies, acts on what that implementation computes."""
    return _core._known_problem_names(_checked(problem_id), kind, implementation)


def _checked(problem_id: object) -> str:
    if not isinstance(problem_id, str):
        raise TypeError(f"a known problem's id must be a str, not {type(problem_id).__name__}")
    return problem_id


def disable(*problem_ids: str) -> None:
    """Switch the rules of these problems off for the whole process: oneDNN
    then runs what they refuse. See the module's warning."""
    for i in problem_ids:
        _core._set_known_problem_enabled(_checked(i), False)


def enable(*problem_ids: str) -> None:
    """Switch the rules of these problems on again."""
    for i in problem_ids:
        _core._set_known_problem_enabled(_checked(i), True)


@contextlib.contextmanager
def disabled(*problem_ids: str) -> Iterator[None]:
    """These problems' rules off inside the ``with`` block (every problem's
    with no ids), as they were after it. The switches are the process's:
    other threads see them off too."""
    ids = problem_ids or tuple(p.id for p in problems())
    for i in ids:
        _checked(i)
    with _lock:
        before = {p.id: p.enabled for p in problems()}
        unknown = [i for i in ids if i not in before]
        if unknown:
            get(unknown[0])  # raises, naming it
        disable(*ids)
    try:
        yield
    finally:
        with _lock:
            for i in ids:
                _core._set_known_problem_enabled(i, before[i])


def print_problems(file: Optional[IO[str]] = None) -> None:
    """The registry as ``python -m dnnl_ocl_interop known-problems`` prints
    it: each problem's id, state, implementations, devices, case, evidence
    and releases."""
    out = file or sys.stdout
    version = _core.version()
    loaded = f"{version.major}.{version.minor}.{version.patch}"
    rows = problems()
    print(f"{len(rows)} known problems of oneDNN (loaded: {loaded})", file=out)
    for p in rows:
        state = "on" if p.applies else ("switched off" if not p.enabled else f"fixed in {p.fixed}")
        if p.applies and not p.verified_for_loaded:
            state += f" (not verified for {loaded}: verified in {', '.join(p.verified)})"
        print(f"\n{p.id}: {state}\n  {p.what}", file=out)
        impls = ", ".join(str(i) for i in p.implementations) or "(none named)"
        print(f"  implementations: {impls}", file=out)
        print(f"  devices: {p.devices}", file=out)
        if p.case:
            print(f"  case: {p.case}", file=out)
        print(f"  evidence ({p.evidence_kind}): {p.evidence}", file=out)
        print(f"  verified in: {', '.join(p.verified)}; fixed in: {p.fixed or 'no release yet'}",
              file=out)
