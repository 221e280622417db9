"""python -m dnnl_ocl_interop.emulation COMMAND [ARGS...]: run COMMAND with
the emulated Intel GPU enabled."""

import os
import sys

from . import EmulationError, enable


def main(argv: list) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2 if not argv else 0
    try:
        print(f"dnnl_ocl_interop.emulation: {enable()}", file=sys.stderr)
    except EmulationError as e:
        print(f"dnnl_ocl_interop.emulation: {e}", file=sys.stderr)
        return 1
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        print(f"dnnl_ocl_interop.emulation: cannot run {argv[0]}: {e}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
