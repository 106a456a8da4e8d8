"""Hints for the two results files a command was given: the same file twice, or the sides swapped.

Neither stops a comparison (both can be deliberate), but both make every delta meaningless or
backwards, so the commands say so on stderr before the table.
"""

from __future__ import annotations

import os
from pathlib import Path

from axl_action.schema import RunHeader


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(a).resolve() == Path(b).resolve()


def _variant(header: RunHeader) -> str | None:
    value = header.metadata.get("variant")
    return value.strip().lower() if isinstance(value, str) else None


def argument_hints(
    baseline: RunHeader, candidate: RunHeader, baseline_path: str, candidate_path: str, *, usage: str
) -> list[str]:
    """Sentences about the order and identity of the two files (empty when nothing looks off).

    ``usage`` is how the command names its arguments, e.g. ``axl-eval compare <baseline> <candidate>``.
    """
    if _same_file(baseline_path, candidate_path) or baseline.id == candidate.id:
        what = (
            "the same file"
            if _same_file(baseline_path, candidate_path)
            else f"the same run ({baseline.id[:8]})"
        )
        return [
            f"the baseline and the candidate are {what}, so every change is 0. Compare a baseline "
            f"with a new run: {usage}."
        ]
    evidence = []
    if _variant(baseline) == "candidate":
        evidence.append('the baseline\'s metadata says variant "candidate"')
    if _variant(candidate) == "baseline":
        evidence.append('the candidate\'s metadata says variant "baseline"')
    if baseline.timestamp and candidate.timestamp and baseline.timestamp > candidate.timestamp:
        evidence.append(
            f"the baseline ({baseline.timestamp[:23].replace('T', ' ')}) is newer than the candidate "
            f"({candidate.timestamp[:23].replace('T', ' ')})"
        )
    if not evidence:
        return []
    return [
        f"the arguments may be swapped: {'; '.join(evidence)}. The order is {usage}; swapped, "
        "every improvement reads as a regression."
    ]
