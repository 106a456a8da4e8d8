"""Stable identities for items, datasets and scorer sets.

A result written by our runner carries ``metadata.fingerprint``::

    {"dataset": "sha256:…",        # items (inputs + annotations) in order
     "datasetItems": 24,           # number of dataset items (before sharding)
     "scorers": "sha256:…",        # scorer names + types, in order
     "scorerSet": {"name": "llm" | "deterministic", …},
     "config": "sha256:…",         # optional: eval config that changes scores (judge models…)
     "pricingVersion": "2026-11-01"}  # optional: pricing-table version used for cost

Compare uses it to refuse to report fake regressions against an incomparable baseline. Files
written by the TypeScript CLI or by older versions have none; readers must treat a missing
fingerprint as "unknown", never as a mismatch.

Items are matched across runs by ``item_key``: the input's ``id`` field when it has one
(string or integer), else a hash of the canonical input JSON.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import Field

from axl_action.schema.base import WireModel

# The canonical text's options, and one encoder made with them: ``json.dumps`` with options
# builds a new encoder per call, which is most of the cost of encoding small values.
_CANONICAL_OPTIONS: dict[str, Any] = {
    "sort_keys": True,
    "separators": (",", ":"),
    "ensure_ascii": False,
    "default": str,
}
_CANONICAL = json.JSONEncoder(**_CANONICAL_OPTIONS)


def canonical_json(value: Any) -> str:
    """Deterministic JSON text (sorted keys, compact, non-ASCII kept) for hashing."""
    return _CANONICAL.encode(value)


def _utf8(text: str) -> bytes:
    # surrogatepass: a lone surrogate (a JSONL escape such as "\ud800") still hashes, stably.
    return text.encode("utf-8", "surrogatepass")


def _sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(_utf8(text)).hexdigest()


def item_key(input_: Any) -> str:
    """Stable key of a dataset item: ``id:<value>`` when the input has an id, else a hash."""
    if isinstance(input_, Mapping):
        ident = input_.get("id")
        if isinstance(ident, str | int) and not isinstance(ident, bool):
            return f"id:{ident}"
    return _sha(canonical_json(input_))[:23]


# The same text without the circular-reference check (a dict of the ids of the containers
# being encoded, a tenth of the work on small items): a circular value then fails with
# RecursionError, which dataset_fingerprint turns into a plain message.
_DATASET = json.JSONEncoder(**_CANONICAL_OPTIONS, check_circular=False)
# Items are hashed in blocks: one update per block instead of two per item, and the text of
# a block of large inputs is held at most once.
_BLOCK = 1000


def dataset_fingerprint(items: Iterable[tuple[Any, Any]]) -> str:
    """Hash of (input, annotations) pairs in order: each pair's canonical JSON and a newline."""
    h = hashlib.sha256()
    encode = _DATASET.encode
    block: list[str] = []
    try:
        for input_, notes in items:
            block.append(encode([input_, notes]))
            if len(block) == _BLOCK:
                h.update(_lines(block))
                block.clear()
    except RecursionError:
        raise ValueError("a dataset value is circular or nested too deeply to encode") from None
    if block:
        h.update(_lines(block))
    return "sha256:" + h.hexdigest()


def _lines(texts: list[str]) -> bytes:
    return _utf8("\n".join(texts) + "\n")


def scorer_fingerprint(scorer_types: Mapping[str, str]) -> str:
    """Hash of scorer names and types, in order."""
    return _sha(canonical_json(list(scorer_types.items())))


def config_fingerprint(config: Any) -> str:
    """Hash of configuration that changes scores (judge models and prompts, for example)."""
    return _sha(canonical_json(config))


class Fingerprint(WireModel):
    """``metadata.fingerprint`` of a result (see module docstring)."""

    dataset: str
    """Hash of the dataset's inputs and annotations, in order."""
    dataset_items: int
    """Number of dataset items before sharding."""
    scorers: str
    """Hash of the scorer names and types, in order."""
    scorer_set: dict[str, str] = Field(default_factory=dict)
    """Scorer name -> type, for saying exactly what changed."""
    config: str | None = None
    """Hash of configuration that changes scores (for example judge models and prompts)."""
    pricing_version: str | None = None
    """Version of the pricing table used to price the run."""

    @classmethod
    def of(cls, metadata: Mapping[str, Any]) -> Fingerprint | None:
        """The fingerprint in a result's metadata, or None when absent or malformed."""
        raw = metadata.get("fingerprint")
        if not isinstance(raw, Mapping):
            return None
        try:
            return cls.model_validate(raw)
        except ValueError:
            return None
