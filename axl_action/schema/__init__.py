"""The axl-eval result file: pydantic models, JS-compatible JSON, and reader rules.

Import from here; the submodules are private layout. The names are loaded on first use
(PEP 562): ``axl-eval compare`` forks its file readers from ``schema.reading`` before numpy and
pydantic are imported, which importing this package must therefore not do.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from axl_action.schema._api import *  # noqa: F403
    from axl_action.schema._api import __all__ as __all__


_MISSING = object()


def __getattr__(name: str) -> Any:
    api = importlib.import_module("axl_action.schema._api")
    # Importing the API binds its submodules here too (``schema.view``, ``schema.io``...).
    value = getattr(api, name, _MISSING)
    if value is _MISSING:
        value = globals().get(name, _MISSING)
    if value is _MISSING:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value
