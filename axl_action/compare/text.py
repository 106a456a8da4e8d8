"""JavaScript string padding for compare's console tables (numbers: ``axl_action.schema.numbers``)."""

from __future__ import annotations


def pad_start(text: str, width: int) -> str:
    """JS ``padStart`` with spaces (never truncates)."""
    return text.rjust(width)


def pad_end(text: str, width: int) -> str:
    """JS ``padEnd`` with spaces (never truncates)."""
    return text.ljust(width)
