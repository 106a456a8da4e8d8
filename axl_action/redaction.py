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
* its hex forms (the UTF-8 bytes as lower- and upper-case hex), whole and any run of at least
  ``MIN_HEX_RUN`` (16) hex digits of them starting on a byte boundary (the hex of a half key);
* the standard and URL-safe base64 of ``v``, of ``Bearer v`` and of ``user:v`` (HTTP Basic),
  each at the three byte alignments: a base64 encoder emits 4 characters per 3 input bytes, so
  the same bytes embedded at offset 0, 1 or 2 (mod 3) of a longer string encode differently.
  For each alignment only the *stable middle* is matched: the characters determined by the
  secret's bytes alone, independent of whatever precedes or follows it;
* key-shaped strings whether registered or not (``sk-...``, ``AIza...``, ``gh[pousr]_...``,
  ``github_pat_...``, ``Bearer <token>``, ``?key=...`` query parameters).

A text holding ``\\uXXXX`` escapes (a model's JSON-escaped completion) is matched once more with
the escapes of key characters (letters, digits, ``-_+/=.~``) unescaped: a key spelled
``\\u0073\\u006b-...`` is the key. Only those escapes are unescaped, and only when that
reveals a secret, so the text's meaning (as JSON or as prose) is kept.

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
import codecs
import contextlib
import io
import logging
import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TextIO
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
MIN_HEX_RUN = 2 * MIN_RUN
"""A run of the hex form of a secret counts from this many hex digits (``MIN_RUN`` bytes): 8 hex
digits are only 4 bytes, and commit hashes would hit them by chance."""

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
    data = value.encode("utf-8")
    forms.add(data.hex())
    forms.add(data.hex().upper())
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
    """First characters of a run (``MIN_RUN`` of a secret, ``MIN_HEX_RUN`` of its hex forms) ->
    (the secret or hex form, start of the run in it)."""


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
        if "\\u" in text:
            unescaped = _KEY_ESCAPE.sub(_unescape, text)
            if unescaped != text:
                revealed = self._redact(unescaped)
                if revealed != unescaped:
                    return revealed
        return self._redact(text)

    def _redact(self, text: str) -> str:
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


_KEY_ESCAPE = re.compile(r"\\u(00[2-7][0-9A-Fa-f])")
"""A ``\\uXXXX`` escape of an ASCII character; ``_unescape`` unescapes only key characters."""
_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/=.~")


def _unescape(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _KEY_CHARS else match.group(0)


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
                n = end - start
                end = max(_run_end(text, start, secret, first, n) for secret, first in starts)
            out.append(text[pos:start])
            out.append(REDACTED)
            pos = end
            match = pattern.search(text, end, stop)
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _run_end(text: str, start: int, secret: str, at: int, n: int) -> int:
    """End of the run of ``secret[at:]`` in ``text`` from ``start`` (its first ``n`` match)."""
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
        hexed = value.encode("utf-8").hex()
        for form in (hexed, hexed.upper()):
            for at in range(0, len(form) - MIN_HEX_RUN + 1, 2):
                gram = form[at : at + MIN_HEX_RUN]
                if len(set(gram)) < MIN_RUN_DISTINCT:
                    continue
                runs.setdefault(gram, []).append((form, at))
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


class RedactingWriter(io.TextIOBase):
    """A text stream that writes everything to ``target`` through the one rule.

    The one writer for text that is not ours to format: the eval code's ``print`` and
    ``logging`` (``redacted_std_streams``) and, as it is read, a child process's output
    (``write`` each chunk as it arrives, ``flush`` at the end).

    Text is passed on a line at a time (a line ends with ``\\n`` or ``\\r``), so a secret that
    arrives in two ``write()`` calls is matched whole. ``flush()`` passes on the unfinished line
    too, except a trailing token of ``MIN_RUN`` or more key characters (it may be the first half
    of a secret, and no secret holds a space): a prompt or a progress line shows at once. A
    shorter token that ``flush()`` passed on is remembered and matched again with what follows,
    so a form cut there is still replaced (its first few characters, fewer than a run, are out).
    More than ``HOLD`` characters without a line end are passed on regardless (bounded memory).

    ``fileno()`` passes on everything held first, so text written to the descriptor directly
    (``faulthandler``, a child process given the stream) comes after it, in order; that text
    itself does not pass through this writer.
    """

    HOLD = 1 << 16

    def __init__(self, target: TextIO, registry: SecretRegistry | None = None) -> None:
        super().__init__()
        self.target = target
        self._registry = SECRETS if registry is None else registry
        self._pending = ""
        self._tail = ""
        self._lock = threading.RLock()
        self._buffer: _RedactingBuffer | None = None

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        with self._lock:
            pending = self._pending + text
            cut = max(pending.rfind("\n"), pending.rfind("\r")) + 1
            if cut == 0:
                if len(pending) <= self.HOLD:
                    self._pending = pending
                    return len(text)
                cut = len(pending)
            self._pending = pending[cut:]
            self._emit(pending[:cut])
        return len(text)

    def _emit(self, text: str) -> None:
        """Write ``text`` redacted, matched together with the short token ``flush`` left."""
        tail, self._tail = self._tail, ""
        if not tail:
            self.target.write(self._registry.redact(text))
            return
        joined = tail + text
        out = self._registry.redact(joined)
        if out.startswith(tail):
            self.target.write(out[len(tail) :])
            return
        same = 0  # a match began inside the token already written: write from the match on
        while same < len(tail) and out[same] == joined[same]:
            same += 1
        self.target.write(out[same:])

    def flush(self) -> None:
        with self._lock:
            pending = self._pending
            if pending:
                token = len(pending) - len(pending.rstrip(_KEY_CHARS_STR))
                if token >= MIN_RUN:
                    self._pending = pending[len(pending) - token :]
                    pending = pending[: len(pending) - token]
                else:
                    self._pending = ""
                if pending:
                    self._emit(pending)
                    if 0 < token < MIN_RUN:
                        self._tail = pending[len(pending) - token :]
            self.target.flush()

    def drain(self) -> None:
        """Pass on everything held, and flush the target (at the end of a command or a child)."""
        with self._lock:
            pending, self._pending = self._pending, ""
            if pending:
                self._emit(pending)
            self._tail = ""
            self.target.flush()

    def fileno(self) -> int:
        self.drain()
        return self.target.fileno()

    def isatty(self) -> bool:
        return self.target.isatty()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.target, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.target, "errors", None)

    @property
    def buffer(self) -> _RedactingBuffer:
        """Bytes written here are decoded and pass through the same writer."""
        if self._buffer is None:
            self._buffer = _RedactingBuffer(self)
        return self._buffer

    def close(self) -> None:
        """Drains; the target stays open (it is the process's stream, not ours)."""
        self.drain()


_KEY_CHARS_STR = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/=.~%:"
"""Characters of keys and their encoded forms: a trailing run of them may be half a secret."""


class _RedactingBuffer(io.RawIOBase):
    """``sys.stdout.buffer`` of a :class:`RedactingWriter`: bytes decoded, then redacted."""

    def __init__(self, writer: RedactingWriter) -> None:
        super().__init__()
        self._writer = writer
        self._decoder = codecs.getincrementaldecoder(writer.encoding)(errors="replace")

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self._writer.write(self._decoder.decode(chunk))
        return len(chunk)

    def flush(self) -> None:
        self._writer.flush()


@contextlib.contextmanager
def redacted_std_streams() -> Iterator[None]:
    """Inside the block, ``sys.stdout``, ``sys.stderr`` and the logging handlers that write to
    them pass through the one rule (:class:`RedactingWriter`); after it, all are as they were.

    Installed at a command's entry, for that command: the eval code's own ``print`` and
    ``logging`` output is text we never formatted, so it is redacted where it leaves.
    """
    out, err = sys.stdout, sys.stderr
    if isinstance(out, RedactingWriter) and isinstance(err, RedactingWriter):
        yield
        return
    writers = {id(out): RedactingWriter(out), id(err): RedactingWriter(err)}
    for handler in _stream_handlers():
        writer = writers.get(id(handler.stream))
        if writer is not None:
            handler.setStream(writer)
    sys.stdout, sys.stderr = writers[id(out)], writers[id(err)]
    try:
        yield
    finally:
        for writer in writers.values():
            with contextlib.suppress(Exception):
                writer.drain()
        # Handlers made during the command (logging.basicConfig in an eval) hold a writer too.
        for handler in _stream_handlers():
            if isinstance(handler.stream, RedactingWriter) and id(handler.stream.target) in writers:
                handler.setStream(handler.stream.target)
        if sys.stdout is writers[id(out)]:
            sys.stdout = out
        if sys.stderr is writers[id(err)]:
            sys.stderr = err


def _stream_handlers() -> list[logging.StreamHandler[Any]]:
    loggers: list[Any] = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    return [
        handler
        for logger in loggers
        for handler in getattr(logger, "handlers", ())
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler)
    ]


__all__ = [
    "MIN_HEX_RUN",
    "MIN_RUN",
    "MIN_RUN_DISTINCT",
    "MIN_SECRET_LENGTH",
    "NOT_SECRET_ENV",
    "REDACTED",
    "SECRETS",
    "SECRET_ENV_NAME",
    "RedactingWriter",
    "SecretRegistry",
    "base64_middle",
    "derived_forms",
    "redact",
    "redact_deep",
    "redacted_std_streams",
    "register_env_secrets",
    "register_secret",
    "secret_env_values",
]
