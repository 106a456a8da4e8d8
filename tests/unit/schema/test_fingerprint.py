"""The dataset fingerprint's rule: stored baselines carry it, so its digest must never drift."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from axl_action.schema.fingerprint import canonical_json, dataset_fingerprint


def _pairs(n: int) -> list[tuple[Any, Any]]:
    # Non-ASCII text, a lone surrogate, floats, nulls, booleans and absent annotations.
    return [
        (
            {"id": i, "text": "é ü \ud800" if i == 7 else f"q{i}", "b": [1.5, None, True]},
            {"target": i % 3} if i % 2 else None,
        )
        for i in range(n)
    ]


def _by_definition(pairs: list[tuple[Any, Any]]) -> str:
    h = hashlib.sha256()
    for input_, notes in pairs:
        h.update(canonical_json([input_, notes]).encode("utf-8", "surrogatepass") + b"\n")
    return "sha256:" + h.hexdigest()


@pytest.mark.parametrize("n", [0, 1, 999, 1000, 1001, 2500])
def test_digest_is_each_pairs_canonical_json_and_a_newline(n: int) -> None:
    # Items are hashed in blocks of 1,000: the boundaries must not show in the digest.
    pairs = _pairs(n)
    assert dataset_fingerprint(iter(pairs)) == _by_definition(pairs)


def test_digest_is_pinned() -> None:
    # Written by the per-item encoder of earlier releases: baselines stored with it still match.
    assert dataset_fingerprint(_pairs(3)) == (
        "sha256:e2f5758968e9f3fd2f0f9decd7a2a8797b73740c0ad0e3305391bc4cde3381ba"
    )
    assert dataset_fingerprint(_pairs(2500)) == (
        "sha256:2f6b521ddc36564835502c78cb0d56eae2f7c83cfb39dc0f10d12e4fb29ba263"
    )


def test_a_circular_value_is_refused_with_a_plain_message() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="circular or nested too deeply"):
        dataset_fingerprint([({"id": 1}, None), (loop, None)])
