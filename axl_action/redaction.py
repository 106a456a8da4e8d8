"""Redaction as one rule: the process-wide registry of secrets and the one function that hides
them, wherever text leaves the process (errors, outputs, the request sidecar, reports, PR
comments, annotations, logs).

What is registered: provider API keys (when a provider reads them from the environment, and
every credential-named variable when a CLI command starts, see ``register_env_secrets``), the
GitHub token, and every value the action masks with ``::add-mask::``.

What is redacted, for each registered value ``v`` (at least ``MIN_SECRET_LENGTH`` characters):

* ``v`` itself and **any run of at least ``MIN_RUN`` (8) consecutive characters of it** (a
  model or a gateway echoing the tail of a key, ``...cdef01234567``) whose first 8 characters
  hold at least 4 different ones (so ``00000000`` in a weak secret does not hide every UUID);
* its URL-encoded forms (``quote``, ``quote_plus``, upper- and lower-case escapes);
* the standard and URL-safe base64 of ``v``, of ``Bearer v`` and of ``user:v`` (HTTP Basic),
  each at the three byte alignments: a base64 encoder emits 4 characters per 3 input bytes, so
  the same bytes embedded at offset 0, 1 or 2 (mod 3) of a longer string encode differently.
  For each alignment only the *stable middle* is matched: the characters determined by the
  secret's bytes alone, independent of whatever precedes or follows it;
* key-shaped strings whether registered or not (``sk-...``, ``AIza...``, ``gh[pousr]_...``,
  ``github_pat_...``, ``Bearer <token>``, ``?key=...`` query parameters).

Every match becomes ``[REDACTED]``. The registered forms are one compiled regular expression,
rebuilt only when the registry changes: the literal forms sit in a character trie (the engine
tests one branch per text position instead of one per form), it is tried only inside runs of
characters that occur in some form (ordinary words are skipped at C speed), and a run of the
raw value is found by its first 8 characters and then extended by hand to the end of the run.
The key shapes are a few patterns with literal prefixes. Measured cost: see
``benchmarks/redaction.py``.
"""

from __future__ import annotations

import base64
import os
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, quote_plus

REDACTED = "[REDACTED]"

MIN_SECRET_LENGTH = 6
"""Shorter values are not registered: hiding ``abc`` everywhere would shred ordinary text."""
MIN_RUN = 8
"""A run of this many consecutive characters of a secret counts as a leak of it."""
MIN_RUN_DISTINCT = 4
"""A run must start with 8 characters of which at least this many differ: ``00000000`` or
``-0000000`` in a low-entropy secret would otherwise hide UUIDs and numbers everywhere. A
random key's 8-character windows essentially always have 4 or more distinct characters."""

SECRET_ENV_NAME = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?|PRIVATE_KEY)$", re.IGNORECASE)
"""Environment variable names whose values are credentials (``OPENAI_API_KEY``, ``GITHUB_TOKEN``)."""
NOT_SECRET_ENV = frozenset({"ACTIONS_RUNTIME_URL", "ACTIONS_RESULTS_URL", "ACTIONS_ID_TOKEN_REQUEST_URL"})
"""Names that match ``SECRET_ENV_NAME`` but hold URLs, not credentials."""

# Key shapes of the big providers, GitHub tokens, bearer tokens and key-bearing query
# parameters: redacted even when nobody registered them. Deliberately broad: a false positive
# costs a few characters of a debugging record, a false negative leaks a credential.
# Each is its own pattern starting with a literal, so the engine skips to candidates at C
# speed; one alternation of them all was 40x slower per KB (no common prefix to search for).
_SHAPES = tuple(
    re.compile(p)
    for p in (
        r"sk-[A-Za-z0-9_\-]{8,}",  # OpenAI (sk-, sk-proj-), Anthropic (sk-ant-)
        r"AIza[0-9A-Za-z_\-]{20,}",  # Google API keys
        r"[Bb][Ee][Aa][Rr][Ee][Rr]\s+[A-Za-z0-9._~+/\-]+=*",  # no (?i): it disables the skip
        r"gh[pousr]_[A-Za-z0-9]{20,}",  # GitHub tokens
        r"github_pat_[A-Za-z0-9_]{20,}",  # GitHub fine-grained tokens
    )
)
_QUERY_SHAPE = re.compile(
    r"([?&](?:[Kk][Ee][Yy]|[Aa][Pp][Ii]_?[Kk][Ee][Yy]|[Aa][Cc][Cc][Ee][Ss][Ss]_[Tt][Oo][Kk][Ee][Nn])=)"
    r"[^&#\s\"']+"
)


def derived_forms(value: str) -> set[str]:
    """The literal forms of ``value`` that are redacted besides its runs (see the module doc)."""
    forms = {value}
    for encoded in (quote(value, safe=""), quote_plus(value, safe="")):
        forms.add(encoded)
        forms.add(re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), encoded))
    for wrapped in (value, f"Bearer {value}", f"user:{value}"):
        data = wrapped.encode("utf-8")
        for offset in range(3):
            stable = base64_middle(data, offset)
            if len(stable) >= MIN_RUN:
                forms.add(stable)
                forms.add(stable.translate(_URLSAFE))
    return forms


_URLSAFE = str.maketrans("+/", "-_")


def base64_middle(data: bytes, offset: int) -> str:
    """The part of the base64 encoding of ``data`` that is the same wherever ``data`` sits at
    ``offset`` (mod 3) bytes into a longer string.

    Each base64 character encodes 6 bits. Characters that mix bits of the preceding bytes
    (the first ``ceil(8 * offset / 6)``) or of the following bytes or padding (a trailing
    partial character) vary with the surroundings, so they are cut off.
    """
    encoded = base64.b64encode(b"\0" * offset + data).decode("ascii").rstrip("=")
    start = -(-8 * offset // 6)
    end = 8 * (offset + len(data)) // 6
    return encoded[start:end]


@dataclass(frozen=True, slots=True)
class _Compiled:
    pattern: re.Pattern[str] | None
    """The trie of every registered form; ``None`` while nothing is registered."""
    tokens: re.Pattern[str] | None
    """Runs of ``MIN_RUN``+ characters that could hold a form (only characters that occur in
    some form): the trie is tried only inside them, so ordinary prose costs little."""
    runs: Mapping[str, tuple[tuple[str, int], ...]]
    """First ``MIN_RUN`` characters of a run -> (secret, start of the run in it)."""


class SecretRegistry:
    """A set of secret values and the compiled rule that redacts them (thread-safe).

    ``redact`` reads one immutable compiled snapshot, so it takes no lock; ``add`` rebuilds the
    snapshot only when a value is new.
    """

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._lock = threading.Lock()
        self._compiled = _compile(())

    def add(self, value: str | None) -> None:
        """Register ``value`` (and each of its lines: masks and logs work line by line)."""
        if not value:
            return
        candidates = {value.strip(), *(line.strip() for line in value.splitlines())}
        new = {c for c in candidates if len(c) >= MIN_SECRET_LENGTH} - self._values
        if not new:
            return
        with self._lock:
            self._values |= new
            self._compiled = _compile(tuple(sorted(self._values)))

    def clear(self) -> None:
        """Forget every registered value (tests use it to keep one test's secrets out of the next)."""
        with self._lock:
            self._values = set()
            self._compiled = _compile(())

    def add_all(self, values: Iterable[str | None]) -> None:
        """Register several values."""
        for value in values:
            self.add(value)

    def __contains__(self, value: object) -> bool:
        return value in self._values

    def __len__(self) -> int:
        return len(self._values)

    def redact(self, text: str) -> str:
        """``text`` with every registered secret (in any derived form) and every key-shaped
        string replaced by ``[REDACTED]``."""
        compiled = self._compiled
        if compiled.pattern is not None and compiled.tokens is not None:
            text = _redact_registered(text, compiled.pattern, compiled.tokens, compiled.runs)
        for shape in _SHAPES:
            if shape.search(text) is not None:
                text = shape.sub(REDACTED, text)
        if _QUERY_SHAPE.search(text) is not None:
            text = _QUERY_SHAPE.sub(lambda m: m.group(1) + REDACTED, text)
        return text

    def redact_deep(self, value: Any) -> Any:
        """A copy of a JSON-like value with every string (keys included) redacted; tuples
        become lists, other scalars are kept."""
        kind = type(value)
        if kind is str:
            return self.redact(value)
        if kind is int or kind is float or kind is bool or value is None:
            return value
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, Mapping):
            return {self.redact(str(k)): self.redact_deep(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.redact_deep(v) for v in value]
        return value


def _redact_registered(
    text: str,
    pattern: re.Pattern[str],
    tokens: re.Pattern[str],
    runs: Mapping[str, tuple[tuple[str, int], ...]],
) -> str:
    out: list[str] = []
    pos = 0
    for token in tokens.finditer(text):
        at, stop = token.span()
        match = pattern.search(text, at, stop)
        while match is not None:
            start, end = match.span()
            starts = runs.get(match.group(0))
            if starts is not None:
                end = max(_run_end(text, start, secret, first) for secret, first in starts)
            out.append(text[pos:start])
            out.append(REDACTED)
            pos = end
            match = pattern.search(text, end, stop)
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _run_end(text: str, start: int, secret: str, at: int) -> int:
    """End of the run of ``secret[at:]`` in ``text`` from ``start`` (at least ``MIN_RUN`` long)."""
    n = MIN_RUN
    limit = min(len(text) - start, len(secret) - at)
    while n < limit and text[start + n] == secret[at + n]:
        n += 1
    return start + n


def _compile(values: tuple[str, ...]) -> _Compiled:
    trie: dict[str, Any] = {}
    runs: dict[str, list[tuple[str, int]]] = {}
    chars: set[str] = set()
    for value in values:
        for form in derived_forms(value):
            chars.update(form)
            _insert(trie, form)
        if len(value) < MIN_RUN:
            continue
        for at in range(len(value) - MIN_RUN + 1):
            gram = value[at : at + MIN_RUN]
            if len(set(gram)) < MIN_RUN_DISTINCT:
                continue
            runs.setdefault(gram, []).append((value, at))
            _insert(trie, gram)
    if not trie:
        return _Compiled(None, None, {})
    charset = "".join(sorted(re.escape(c) for c in chars))
    return _Compiled(
        re.compile(_trie_regex(trie)),
        re.compile(f"[{charset}]{{{MIN_RUN},}}"),
        {gram: tuple(starts) for gram, starts in runs.items()},
    )


_END = ""  # a trie key no character can be: marks "a form may end here"


def _insert(trie: dict[str, Any], word: str) -> None:
    node = trie
    for char in word:
        node = node.setdefault(char, {})
    node[_END] = True


def _trie_regex(node: dict[str, Any]) -> str:
    """A regex matching exactly the words of ``node``, longest first, without backtracking
    between siblings (each branch starts with a different character)."""
    # Iterative over chains of single-child nodes: a 200-character form is one literal, not
    # 200 nested groups (the regex compiler recurses per group).
    branches: list[str] = []
    ends_here = _END in node
    for char in sorted(k for k in node if k != _END):
        literal = [char]
        child = node[char]
        while len(child) == 1 and _END not in child:
            (nxt,) = child
            literal.append(nxt)
            child = child[nxt]
        rest = _trie_regex(child) if len(child) > (1 if _END in child else 0) else ""
        branches.append(re.escape("".join(literal)) + rest)
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 and not ends_here else "(?:" + "|".join(branches) + ")"
    return body + "?" if ends_here else body


SECRETS = SecretRegistry()
"""The process-wide registry every output path redacts with."""


def register_secret(value: str | None) -> None:
    """Add ``value`` to the process-wide registry."""
    SECRETS.add(value)


def redact(text: str) -> str:
    """``text`` with every secret hidden, by the one rule (see the module docstring)."""
    return SECRETS.redact(text)


def redact_deep(value: Any) -> Any:
    """A JSON-like value with every string in it redacted by the one rule."""
    return SECRETS.redact_deep(value)


def secret_env_values(env: Mapping[str, str]) -> list[str]:
    """Values of credential-named environment variables (``*_API_KEY``, ``*TOKEN``, ...)."""
    return [
        value
        for key, value in env.items()
        if value
        and key not in NOT_SECRET_ENV
        and not key.startswith("INPUT_")
        and SECRET_ENV_NAME.search(key)
    ]


def register_env_secrets(env: Mapping[str, str] | None = None) -> None:
    """Register every credential-named environment variable (defaults to ``os.environ``)."""
    SECRETS.add_all(secret_env_values(os.environ if env is None else env))


__all__ = [
    "MIN_RUN",
    "MIN_RUN_DISTINCT",
    "MIN_SECRET_LENGTH",
    "NOT_SECRET_ENV",
    "REDACTED",
    "SECRETS",
    "SECRET_ENV_NAME",
    "SecretRegistry",
    "base64_middle",
    "derived_forms",
    "redact",
    "redact_deep",
    "register_env_secrets",
    "register_secret",
    "secret_env_values",
]
