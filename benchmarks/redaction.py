"""Redaction cost per KB: the one rule (``axl_action.redaction``) against the rule it replaced.

Three secrets are registered (an OpenAI project key of 172 characters, a GitHub token, an
Anthropic key), which makes the registry match 3 x (raw + runs of 8+ + URL-encoded + 18 base64
forms). Texts: 100 KB of prose (this repository's README), 100 KB of JSON full of random
base64url (the worst case: almost every character could start a form), and a 60-byte error
message (the common case on the hot path). The reference, measured in the same run, is the
previous rule: ``str.replace`` of each exact value plus the same key-shape patterns, which
finds no encoded form and no partial run.

Usage: python benchmarks/redaction.py
"""

from __future__ import annotations

import io
import json
import re
import secrets
import time
from collections.abc import Callable
from pathlib import Path

from axl_action.redaction import RedactingWriter, SecretRegistry

_OLD_SHAPES = tuple(
    re.compile(p)
    for p in (
        r"sk-[A-Za-z0-9_\-]{8,}",
        r"AIza[0-9A-Za-z_\-]{20,}",
        r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]+=*",
        r"\bgh[pousr]_[A-Za-z0-9]{20,}",
    )
)
_OLD_QUERY = re.compile(r"(?i)([?&](?:key|api_key|apikey|access_token)=)[^&#\s\"']+")


def _old_rule(values: list[str]) -> Callable[[str], str]:
    def redact(text: str) -> str:
        for value in values:
            if value in text:
                text = text.replace(value, "[REDACTED]")
        for pattern in _OLD_SHAPES:
            text = pattern.sub("[REDACTED]", text)
        return _OLD_QUERY.sub(lambda m: m.group(1) + "[REDACTED]", text)

    return redact


def _per_kb(fn: Callable[[str], str], text: str) -> float:
    """Best of 5 rounds, microseconds per KiB."""
    rounds = max(1, 2_000_000 // max(len(text), 1))
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(rounds):
            fn(text)
        best = min(best, (time.perf_counter() - t0) / rounds)
    return best * 1e6 / (len(text) / 1024)


def main() -> None:
    values = [
        "sk-" + "proj-" + secrets.token_urlsafe(125),
        "gh" + "p_" + secrets.token_hex(18),
        "sk-" + "ant-api03-" + secrets.token_urlsafe(70),
    ]
    registry = SecretRegistry()
    t0 = time.perf_counter()
    registry.add_all(values)
    compile_ms = (time.perf_counter() - t0) * 1000
    prose = (Path(__file__).resolve().parents[1] / "README.md").read_text()[:100_000]
    noisy = json.dumps(
        [{"id": secrets.token_hex(8), "blob": secrets.token_urlsafe(300)} for _ in range(250)]
    )[:100_000]
    short = "openai request failed: HTTP 400: invalid_request_error: bad model"
    old = _old_rule(values)
    print(f"registry of {len(values)} secrets compiled in {compile_ms:.1f} ms")
    print(f"{'text':<28}{'one rule µs/KB':>16}{'old rule µs/KB':>16}{'ratio':>8}")
    for name, text in (
        ("prose, 100 KB", prose),
        ("random base64 JSON, 100 KB", noisy),
        ("error message, 66 B", short),
    ):
        new_cost, old_cost = _per_kb(registry.redact, text), _per_kb(old, text)
        print(f"{name:<28}{new_cost:>16.1f}{old_cost:>16.1f}{new_cost / old_cost:>8.2f}")
    # The redacting writer (the eval code's print): one 66-byte print, against print to the
    # same kind of stream unwrapped.
    line = short
    plain, wrapped = io.StringIO(), RedactingWriter(io.StringIO(), registry)
    costs = {}
    for label, stream in (("plain", plain), ("writer", wrapped)):
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(20_000):
                print(line, file=stream)
            best = min(best, (time.perf_counter() - t0) / 20_000)
        costs[label] = best * 1e6
    print(
        f"print of a 66 B line: {costs['writer']:.2f} µs through the writer, {costs['plain']:.2f} µs "
        f"unwrapped ({costs['writer'] / costs['plain']:.1f}x)"
    )


if __name__ == "__main__":
    main()
