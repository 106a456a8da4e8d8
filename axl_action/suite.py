"""The suite key: the one rule for how it is spelled, and the hidden markers that carry it.

The action's ``suite`` input names artifacts, cache keys and the sticky comment, so it is held
to the spelling every one of those accepts. The report can also be rendered for any name (``axl-eval
report --suite``, or the dataset's name when none is given): :func:`comment_marker` keeps the
marker well formed for those by replacing what could end the attribute or the HTML comment,
and leaves a valid key as it is.
"""

from __future__ import annotations

import re

SUITE_RULE = "1-64 letters, digits, dots, dashes or underscores, starting with a letter or digit"
"""The suite key's spelling, in the words every message about it uses."""

_SUITE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_UNSAFE = re.compile(r"[^\w.:/+@-]")

MARKER_PREFIX = "<!-- axl-eval-action"
"""Prefix of every hidden marker this action writes; untrusted text must never contain it."""
MARKER_RE = re.compile(r'<!-- axl-eval-action:comment suite="([^"]*)" -->')
HEAD_SHA_RE = re.compile(r"<!-- axl-eval-action:head-sha ([0-9a-fA-F]{7,64}) -->")


def is_suite_key(text: str) -> bool:
    """Whether ``text`` is spelled as a suite key must be (:data:`SUITE_RULE`)."""
    return _SUITE_RE.fullmatch(text) is not None


def comment_marker(suite: str) -> str:
    """The hidden line that identifies the sticky comment of ``suite``.

    ``<!-- axl-eval-action:comment suite="<key>" -->``; characters that could end the attribute
    or the comment are replaced, so any name yields one well-formed marker.
    """
    safe = _UNSAFE.sub("_", suite).replace("--", "-_")
    return f'{MARKER_PREFIX}:comment suite="{safe}" -->'


def head_sha_marker(head_sha: str) -> str:
    """The hidden line that records which head commit a comment was written for."""
    return f"{MARKER_PREFIX}:head-sha {head_sha.lower()} -->"
