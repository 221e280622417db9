"""``python -m dnnl_ocl_interop``: print what a bug report needs."""

from . import show_config

show_config()
