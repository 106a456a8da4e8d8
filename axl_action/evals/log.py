"""Advisory messages of the runner (the reference's ``console.warn``), always on stderr."""

from __future__ import annotations

import sys


def warn(message: str) -> None:
    """Print one ``[axl-eval] ...`` advisory line to stderr."""
    print(message if message.startswith("[axl-eval]") else f"[axl-eval] {message}", file=sys.stderr)
