"""Re-export one submodule of the compiled extension as a Python module."""

from types import ModuleType


def public_names(module: ModuleType) -> list:
    """The names a compiled submodule exports (those not starting with '_')."""
    return sorted(name for name in vars(module) if not name.startswith("_"))
