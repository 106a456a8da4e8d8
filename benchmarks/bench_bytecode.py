"""Compile the package's bytecode before a benchmark times fresh processes.

``pip install`` writes every module's bytecode, so an installed ``axl-eval`` never compiles
source at start-up. A checkout used in place may lack it, or hold stale files for the modules
just edited; with ``PYTHONDONTWRITEBYTECODE`` set (as on CI machines and in many containers)
nothing is written back, and every timed process would compile them again (tens of ms for a
few changed modules). Each script that times whole processes calls :func:`ensure_bytecode`
first, so the figures are those of an installed package.
"""

from __future__ import annotations

import compileall
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "axl_action"


def ensure_bytecode() -> None:
    """Write up-to-date bytecode for every module of the package (quietly; errors surface
    when the module is imported)."""
    compileall.compile_dir(str(PACKAGE), quiet=1)
