"""``python -m dnnl_ocl_interop [--check]``: print what a bug report needs;
with ``--check``, run a small computation on each device and on the
emulated one.

``python -m dnnl_ocl_interop known-problems``: the oneDNN problems the
binding acts on, where their evidence lies, and their state here.

``python -m dnnl_ocl_interop probe [ID ...] [--json]``: run each known
problem's case on this device with its rule on and off, and a sweep of the
families against NumPy; exit status 1 where the device disagrees with the
registry (a report to paste into an issue).
"""

import sys


def _main(argv: list) -> int:
    if argv[:1] == ["known-problems"]:
        from .known_problems import print_problems

        print_problems()
        return 0
    if argv[:1] == ["probe"]:
        from .probe import main as probe

        return probe(argv[1:])
    from ._config import main

    return main(argv)


sys.exit(_main(sys.argv[1:]))
