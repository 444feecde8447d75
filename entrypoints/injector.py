"""dependency-injector, imported without the integrations it looks for.

When it is imported, dependency-injector imports pydantic (for
``Configuration.from_pydantic``), PyYAML (for ``from_yaml``) and starlette (for its
FastAPI wiring) if they are installed. treadle uses none of them; the MCP SDK installs
pydantic and starlette, Ray installs PyYAML, and loading them would add some 35 ms to
the start of every session. They are hidden while it loads, and
stay importable afterwards (the SDK imports them when a server starts).

Example::

    from treadle.entrypoints.injector import containers, providers
"""

from __future__ import annotations

import sys
from importlib.machinery import ModuleSpec
from types import ModuleType


class _Unseen:
    """A finder that says the probed-for packages are not installed."""

    NAMES = frozenset({"pydantic", "pydantic_settings", "starlette", "yaml"})

    @classmethod
    def find_spec(
        cls, name: str, path: object = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name.partition(".")[0] in cls.NAMES:
            raise ModuleNotFoundError(f"{name} is not looked at while dependency-injector loads")
        return None


sys.meta_path.insert(0, _Unseen)
try:
    from dependency_injector import containers, providers
finally:
    sys.meta_path.remove(_Unseen)

__all__ = ["containers", "providers"]
