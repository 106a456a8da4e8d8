"""Names a package exports but loads on first use (PEP 562 ``__getattr__``).

The top-level package, ``providers`` and ``github`` keep ``import`` cheap this way: the one rule
of how a lazily exported name is found (and how a missing one is refused), and of how a found
one is kept, lives here. This module
imports nothing of the package, so any ``__init__`` may use it without a cycle.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_attribute(package: str, homes: Mapping[str, str], name: str) -> Any:
    """``name`` of ``package`` from the module ``homes`` maps it to (absolute, or relative to
    ``package`` with a leading dot); a name it does not map is the ``AttributeError`` a
    module's missing attribute is."""
    home = homes.get(name)
    if home is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home, package), name)


def kept_lazy_attributes(
    package: str, homes: Mapping[str, str], namespace: MutableMapping[str, Any]
) -> Callable[[str], Any]:
    """The PEP 562 ``__getattr__`` of ``package`` (its ``globals()`` as ``namespace``): a name
    is found by :func:`lazy_attribute` and then kept in ``namespace``, so that the next use of
    it is a plain attribute read instead of another call here."""

    def __getattr__(name: str) -> Any:
        value = lazy_attribute(package, homes, name)
        namespace[name] = value
        return value

    return __getattr__
