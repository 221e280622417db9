"""``python -m dnnl_ocl_interop [--check]``: print what a bug report needs;
with ``--check``, run a small computation on each device and on the
emulated one."""

import sys

from ._config import main

sys.exit(main())
