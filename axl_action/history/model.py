"""``history.json``: the file format, as pydantic models (version 1).

One file holds one row per baseline run of a suite, oldest first, up to ``limit`` rows. A row
is a run's summary (per-scorer mean, n and counts, item error rate, cost and whether its
change from the previous row is certified, mean latency) plus, compactly, every item's score
per scorer. Item keys are stored once in the file's ``keys`` table; a row names its items by
``keyRanges`` into that table (``[[0, 30]]`` = the first 30 keys, in order), and its
``scores[name]`` lists one score per item in that order (``null``: no score), rounded to
three decimals.

::

    {"format": "axl-eval-history", "version": 1, "suite": "default", "limit": 50,
     "keys": ["id:T-001", "id:T-002", ...],
     "rows": [{"runId": "812", "commit": "3f2a…", "date": "2026-12-01T09:14:03.120Z",
               "resultId": "…", "dataset": "tickets", "fingerprint": "sha256:…", "runs": 1,
               "items": 30, "scorers": {"priority": {"type": "llm", "mean": 0.9655, "n": 29,
               "scored": 29, "failed": 1}}, "itemErrorRate": 0, "cost": {"known": 0.0123,
               "completeness": "complete", "certified": true}, "latencyMs": 812.4,
               "keyRanges": [[0, 30]], "scores": {"priority": [1, 0.5, null, …]}}]}

Bounds: at most :data:`MAX_ROWS` rows and :data:`MAX_KEYS` keys, and a file of at most
:data:`MAX_FILE_BYTES` once decompressed; the writer keeps files under
:data:`TARGET_FILE_BYTES` by dropping the item scores of the oldest rows first (their
summaries stay). A file that breaks any rule is refused as a whole with one message.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

FORMAT = "axl-eval-history"
"""The ``format`` tag every history file carries."""
VERSION = 1
"""The format version this code writes and reads."""
DEFAULT_LIMIT = 50
"""Rows kept by default (the ``history-limit`` input, ``--limit``)."""
MAX_ROWS = 500
"""Most rows a file may hold (and the largest ``history-limit``)."""
MAX_KEYS = 2_000_000
"""Most distinct item keys a file may hold."""
MAX_FILE_BYTES = 64 * 1024 * 1024
"""Largest history file read, in bytes once decompressed."""
TARGET_FILE_BYTES = 32 * 1024 * 1024
"""The writer drops the item scores of the oldest rows until the file is at most this big."""
FILE_NAME = "history.json"
"""Name of the file (``axl-eval history --output``)."""
ARTIFACT_FILE_NAME = "history.json.gz"
"""Name inside a baseline artifact: gzipped, so the artifact's zip stores it as is."""

Completeness = Literal["complete", "incomplete", "unverified"]


class HistoryModel(BaseModel):
    """Base: snake_case in Python, camelCase in the file, unknown keys refused, finite numbers."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        allow_inf_nan=False,
        use_attribute_docstrings=True,
    )


class ScorerPoint(HistoryModel):
    """One scorer in one baseline run (averaged over the run's ``--runs`` repetitions)."""

    type: Literal["llm", "deterministic"] | None = None
    """The scorer's type from ``metadata.scorerTypes``; absent when the result does not say."""
    mean: float | None = None
    """Mean score over the scored items (the mean of each run's mean); null when none scored."""
    n: int = Field(ge=0)
    """Scores the mean is over (items without an error and with a score), summed over runs."""
    scored: int = Field(ge=0)
    """``scorerCounts.scored``, summed over runs."""
    failed: int = Field(ge=0)
    """``scorerCounts.failed``: items whose scorer failed, summed over runs."""


class CostPoint(HistoryModel):
    """Known spend of one baseline run and whether its change from the row before is certified."""

    known: float = Field(ge=0)
    """Known cost per run in USD (``accounting.knownCost``, averaged over runs)."""
    completeness: Completeness
    """``complete`` when every operation was priced; the weakest of the runs otherwise."""
    certified: bool | None = None
    """Whether the cost change from the previous row is certified by the compare rule
    (both complete, same scope, same work); null for a first row or when it could not be
    checked."""
    reason: str | None = None
    """Why that change is not certified, when it is not."""


class RowSummary(HistoryModel):
    """The summary part of a row: everything but the item scores."""

    run_id: str | None = None
    """Workflow run id that produced this baseline (null outside GitHub)."""
    commit: str | None = None
    """Commit the baseline was built from (null when unknown)."""
    date: str
    """When the results were built (the result's ``timestamp``, ISO 8601 UTC)."""
    result_id: str
    """The result's ``id`` (of its first run)."""
    dataset: str
    """Dataset name."""
    fingerprint: str
    """What the run measured: a hash of the dataset, scorer and judge fingerprints, or, for a
    result without ``metadata.fingerprint``, of its dataset name, item count and scorer names.
    Two rows with the same fingerprint (and run count) measure the same thing."""
    runs: int = Field(ge=1)
    """Runs in the result (``--runs``)."""
    items: int = Field(ge=0)
    """Items in the (first) run."""
    scorers: dict[str, ScorerPoint]
    """Per-scorer figures, in scorer order."""
    item_error_rate: float = Field(ge=0, le=1)
    """Failed over attempted items, pooled over runs."""
    cost: CostPoint
    """Known spend and its certification."""
    latency_ms: float | None = Field(default=None, ge=0)
    """Mean item duration in milliseconds (``summary.timing.mean``, averaged over runs)."""


class HistoryRow(RowSummary):
    """One baseline run in the file: its summary and its items' scores."""

    key_ranges: list[tuple[int, int]] | None = None
    """The row's items as ``[start, count]`` ranges into the file's ``keys``, in item order;
    absent when the item scores were dropped to keep the file small."""
    scores: dict[str, list[float | None]] | None = None
    """Per scorer, one score per item of ``keyRanges`` (three decimals; null: no score)."""

    @model_validator(mode="after")
    def _items_line_up(self) -> Self:
        if self.key_ranges is None:
            if self.scores:
                raise ValueError("scores without keyRanges")
            return self
        total = 0
        for start, count in self.key_ranges:
            if start < 0 or count < 1:
                raise ValueError(f"keyRanges entry [{start}, {count}] is not a [start, count] range")
            total += count
        if total != self.items:
            raise ValueError(f"keyRanges cover {total} items but the row has items={self.items}")
        for name, values in (self.scores or {}).items():
            if name not in self.scorers:
                raise ValueError(f"scores.{name}: no such scorer in this row")
            if len(values) != total:
                raise ValueError(f"scores.{name} holds {len(values)} scores for {total} items")
        return self


class HistoryFile(HistoryModel):
    """A whole ``history.json`` (see the module docstring)."""

    format: Literal["axl-eval-history"]
    """Always ``axl-eval-history``."""
    version: Literal[1]
    """Format version."""
    suite: str | None = None
    """The suite these baselines belong to (the action's ``suite`` input)."""
    limit: int = Field(ge=1, le=MAX_ROWS)
    """Rows kept: appending beyond this drops the oldest."""
    keys: list[str] = Field(max_length=MAX_KEYS)
    """Item keys (``id:<id>`` or a hash of the input), each once."""
    rows: list[HistoryRow] = Field(max_length=MAX_ROWS)
    """Baseline runs, oldest first."""

    @model_validator(mode="after")
    def _ranges_in_table(self) -> Self:
        size = len(self.keys)
        for i, row in enumerate(self.rows):
            for start, count in row.key_ranges or ():
                if start + count > size:
                    raise ValueError(
                        f"rows[{i}].keyRanges entry [{start}, {count}] is outside the {size} keys"
                    )
        if len(self.rows) > self.limit:
            raise ValueError(f"{len(self.rows)} rows exceed the file's limit of {self.limit}")
        return self

    def to_wire(self) -> dict[str, Any]:
        """The JSON object (camelCase, absent fields left out)."""
        return self.model_dump(by_alias=True, exclude_none=True)
