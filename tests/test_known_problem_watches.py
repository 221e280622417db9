"""A watch per known problem: its case run with its rule switched off
through the public switch (dnnl.known_problems), as
``python -m dnnl_ocl_interop probe`` runs it (dnnl_ocl_interop.probe).

Each watch is a strict expected failure that names what it expects: the
problem shown (ProblemShown), on the implementations the registry names.
Its guards (the case ran; the implementation that ran is one the registry
names) fail the test instead. The day oneDNN computes a case right, the
watch passes, its strict xfail fails, and the problem's ``fixed`` release
is due. Where the binding does not act on the case on this device (an
implementation the registry does not name ran), the watch skips saying
which ran, after checking that what ran computes right.

No test-hooks build needed: these run against the released wheel too.
"""

import pytest

import dnnl_ocl_interop as dnnl
from dnnl_ocl_interop import known_problems, probe


class ProblemShown(Exception):
    """oneDNN computed wrong what a known problem says it computes wrong."""


@pytest.fixture(scope="module")
def device():
    return probe.harness()


@pytest.mark.parametrize("problem", [p.id for p in known_problems.problems()])
@pytest.mark.xfail(strict=True, raises=ProblemShown,
                   reason="oneDNN 3.13.1 computes each known problem's case wrong (the registry's "
                          "evidence); the day it does not, the problem's fixed release is due")
def test_known_problem_watch(problem, device):
    observed = probe.observe(problem, device)
    assert observed, f"{problem}: no case ran"
    for o in observed:
        assert o.wrong is not None, f"{problem}: {o.case}: the case did not run: {o.detail}"
        if o.acts and o.implementation:
            assert known_problems.names(problem, getattr(dnnl.primitive.kind, o.kind), o.implementation), \
                f"{problem}: {o.case}: the binding acted on {o.implementation}, which the problem does not name"
        if not o.acts:
            assert not o.wrong, (f"{problem}: {o.case}: {o.implementation or 'oneDNN'} computed wrong "
                                 f"where the binding does not act: {o.detail}")
    acting = [o for o in observed if o.acts]
    if not acting:
        pytest.skip(f"{problem}: the binding does not act on its cases on this device "
                    f"({', '.join(sorted({o.implementation or 'not keyed' for o in observed}))} ran), "
                    "and they computed right")
    shown = [o for o in acting if o.wrong]
    if shown:
        raise ProblemShown("; ".join(f"{o.case}: {o.implementation or '-'}: {o.detail}" for o in shown))


def test_every_known_problem_has_a_probe_case():
    assert sorted(probe.CASES) == sorted(p.id for p in known_problems.problems())
