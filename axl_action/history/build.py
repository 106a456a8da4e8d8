"""Build, extend and encode a history. Pure: runs in, values out; no file, clock or network.

A row is read off the run's :class:`~axl_action.schema.RunView` with the schema's own counting
rules (``scorer_values`` for what a mean is over, ``sample_counts`` for scored/failed,
``item_error_rate`` for failed over attempted, ``read_accounting`` for spend, and the compare
engine's ``certify_cost`` for whether a cost change is certified); nothing here counts on its
own. In memory a history is a :class:`History` of :class:`HistoryEntry` values, oldest first,
each with its item keys and one score array per scorer; :func:`encode` and :func:`decode`
convert to and from the compact file (:mod:`axl_action.history.model`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pydantic_core

from axl_action.compare.averaging import item_average
from axl_action.compare.cost import certify_cost
from axl_action.history.model import (
    DEFAULT_LIMIT,
    FORMAT,
    MAX_ROWS,
    TARGET_FILE_BYTES,
    VERSION,
    Completeness,
    CostPoint,
    HistoryFile,
    RowSummary,
    ScorerPoint,
)
from axl_action.schema import (
    Fingerprint,
    RunHeader,
    RunView,
    canonical_json,
    read_accounting,
)
from axl_action.schema.numbers import round3
from axl_action.schema.view import F64, pooled_item_error_rate, sample_counts, scorer_values

_WEAKEST: dict[str, int] = {"complete": 0, "incomplete": 1, "unverified": 2}


@dataclass(frozen=True, eq=False)
class HistoryEntry:
    """One baseline run: its summary, and its items' scores (when kept)."""

    summary: RowSummary
    """Everything but the item scores."""
    keys: list[str] | None
    """Item keys in item order; None when the item scores were dropped from the file."""
    scores: dict[str, F64]
    """Per scorer, one score per key (three decimals; NaN: no score). Empty without keys."""


@dataclass(frozen=True, eq=False)
class History:
    """A suite's baseline runs, oldest first, at most ``limit`` of them."""

    entries: tuple[HistoryEntry, ...] = ()
    """Rows, oldest first."""
    limit: int = DEFAULT_LIMIT
    """Rows kept when appending."""
    suite: str | None = None
    """The suite the rows belong to."""

    def __len__(self) -> int:
        return len(self.entries)


# ------------------------------------------------------------------------------ one row


def measure_fingerprint(header: RunHeader) -> str:
    """What a run measured, as a short hash: two runs with the same value are comparable.

    From ``metadata.fingerprint`` (dataset content and size, scorer names and types, the eval
    configuration that changes scores such as judge models); a result without one (TypeScript
    CLI, older files) falls back to its dataset name, item count and scorer names. The
    pricing-table version is left out: it changes cost, not scores.
    """
    fp = Fingerprint.of(header.metadata)
    basis: list[Any]
    if fp is not None:
        basis = ["fingerprint", fp.dataset, fp.dataset_items, fp.scorers, fp.config]
    else:
        basis = ["names", header.dataset, header.summary.count, sorted(header.scorer_names)]
    return "sha256:" + hashlib.sha256(canonical_json(basis).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _mean(values: Iterable[float]) -> float | None:
    kept = list(values)
    return math.fsum(kept) / len(kept) if kept else None


def _item_scores(runs: Sequence[RunView], name: str) -> F64:
    """Each item's score averaged over the runs of one sha; NaN where it has none.

    Compare's rule (``axl_action.compare.averaging``): the non-null scores, by position of the
    first run; an item that errored in any of the runs has no average, so one failed run cannot
    make an item look flaky. A run of another length cannot be lined up by position and is
    left out.
    """
    size = runs[0].size
    lined_up = [run for run in runs if run.size == size]
    average, usable = item_average(lined_up, name, np.arange(size, dtype=np.intp))
    return round3(np.where(usable, average, np.nan))


def _scorer_point(runs: Sequence[RunView], name: str, kind: str | None) -> ScorerPoint:
    means: list[float] = []
    n = scored = failed = 0
    for run in runs:
        values = scorer_values(run.items, name)
        counts = sample_counts(run.items, name)
        n += len(values)
        scored += counts.scored
        failed += counts.failed
        if len(values):
            means.append(math.fsum(values.tolist()) / len(values))
    return ScorerPoint(
        type=kind if kind in ("llm", "deterministic") else None,
        mean=_mean(means),
        n=n,
        scored=scored,
        failed=failed,
    )


def _cost(runs: Sequence[RunView], previous: Sequence[RunView] | None) -> CostPoint:
    records = [read_accounting(run.header) for run in runs]
    weakest: Completeness = "complete"
    for acc in records:
        if _WEAKEST[acc.completeness] > _WEAKEST[weakest]:
            weakest = acc.completeness
    certified: bool | None = None
    reason: str | None = None
    if previous:
        names = runs[0].header.scorer_names
        if sorted(names) == sorted(previous[0].header.scorer_names):
            count = min(len(previous), len(runs))
            reason = certify_cost(previous[:count], runs[:count], names)
        else:
            reason = "the scorers changed, so the two runs did different work."
        certified = reason is None
    return CostPoint(
        known=math.fsum(acc.known_cost for acc in records) / len(records),
        completeness=weakest,
        certified=certified,
        reason=reason,
    )


def history_entry(
    runs: Sequence[RunView],
    *,
    run_id: str | None = None,
    commit: str | None = None,
    previous: Sequence[RunView] | None = None,
) -> HistoryEntry:
    """The row of one baseline (its runs: one, or a ``--runs N`` list), read off its views.

    ``previous``: the baseline before it, when at hand, to certify the cost change with the
    compare engine's rule; without it ``cost.certified`` stays null.
    """
    if not runs:
        raise ValueError("a history row needs at least one run")
    first = runs[0]
    header = first.header
    types = header.scorer_types
    names = header.scorer_names
    timings = [run.header.summary.timing.mean for run in runs if run.header.summary.timing is not None]
    summary = RowSummary(
        run_id=run_id,
        commit=commit,
        date=header.timestamp,
        result_id=header.id,
        dataset=header.dataset,
        fingerprint=measure_fingerprint(header),
        runs=len(runs),
        items=first.size,
        scorers={name: _scorer_point(runs, name, types.get(name)) for name in names},
        item_error_rate=pooled_item_error_rate(runs),
        cost=_cost(runs, previous),
        latency_ms=_mean(timings),
    )
    return HistoryEntry(
        summary=summary,
        keys=list(first.items.keys),
        scores={name: _item_scores(runs, name) for name in names},
    )


def _same_run(a: RowSummary, b: RowSummary) -> bool:
    if a.run_id is not None and b.run_id is not None:
        return a.run_id == b.run_id
    return a.result_id == b.result_id


def append(history: History | None, entry: HistoryEntry, *, limit: int | None = None) -> History:
    """``history`` with ``entry`` as its newest row, keeping the newest ``limit`` rows.

    A row of the same workflow run (a re-run job) or, outside GitHub, of the same result is
    replaced rather than repeated.
    """
    base = history if history is not None else History()
    keep = min(limit if limit is not None else base.limit, MAX_ROWS)
    entries = [e for e in base.entries if not _same_run(e.summary, entry.summary)]
    entries.append(entry)
    return History(entries=tuple(entries[-keep:]), limit=keep, suite=base.suite)


# --------------------------------------------------------------------- the compact file


def _ranges(indices: Sequence[int]) -> list[tuple[int, int]]:
    """``[start, count]`` runs of consecutive table indices."""
    if not indices:
        return []
    arr = np.asarray(indices, dtype=np.int64)
    breaks = np.flatnonzero(np.diff(arr) != 1) + 1
    starts = np.concatenate(([0], breaks))
    ends = np.concatenate((breaks, [len(arr)]))
    return [(int(arr[s]), int(e - s)) for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]


def _compact(values: F64) -> list[float | int | None]:
    """Scores for JSON: None for NaN, whole numbers as integers (``1`` rather than ``1.0``)."""
    out: list[float | int | None] = []
    append_ = out.append
    for v in values.tolist():
        if v != v:
            append_(None)
        elif v.is_integer():
            append_(int(v))
        else:
            append_(v)
    return out


def _row_wire(entry: HistoryEntry, table: dict[str, int] | None) -> dict[str, Any]:
    row = entry.summary.model_dump(by_alias=True, exclude_none=True)
    if table is not None and entry.keys is not None:
        row["keyRanges"] = _ranges([table[k] for k in entry.keys])
        row["scores"] = {name: _compact(values) for name, values in entry.scores.items()}
    return row


def _json(value: Any) -> bytes:
    return pydantic_core.to_json(value)


def _item_bytes(entry: HistoryEntry) -> int:
    """About how many bytes an entry's item data takes in the file."""
    if entry.keys is None:
        return 0
    scores = sum(len(_json(_compact(v))) + len(name) + 4 for name, v in entry.scores.items())
    return scores + 40  # "keyRanges" and "scores" keys, usually one range


@dataclass(frozen=True)
class Encoded:
    """What :func:`encode` wrote, and whether it had to leave item scores out."""

    data: bytes
    """The UTF-8 JSON text of the file."""
    dropped: int
    """Oldest rows whose item scores were left out to stay under the size target."""


def encode(history: History, *, target_bytes: int = TARGET_FILE_BYTES) -> Encoded:
    """The file's bytes (compact JSON). Item scores of the oldest rows are left out while the
    file would be larger than ``target_bytes`` (their summaries stay)."""
    entries = list(history.entries)
    with_items = [i for i, e in enumerate(entries) if e.keys is not None]
    key_bytes: dict[str, int] = {}
    for e in entries:
        for k in e.keys or ():
            key_bytes.setdefault(k, len(k) + 3)
    budget = target_bytes - sum(len(_json(_row_wire(e, None))) for e in entries) - 256
    # Newest first: keep item data while it fits, the newest rows matter most.
    kept: set[int] = set()
    spent = 0
    seen: set[str] = set()
    for i in reversed(with_items):
        e = entries[i]
        assert e.keys is not None
        new_keys = sum(key_bytes[k] for k in set(e.keys) - seen)
        cost = _item_bytes(e) + new_keys
        if spent + cost > budget:
            break
        kept.add(i)
        spent += cost
        seen.update(e.keys)
    while True:
        data = _encode(entries, kept, history)
        if len(data) <= target_bytes or not kept:
            return Encoded(data=data, dropped=len(with_items) - len(kept))
        kept.discard(min(kept))


def _encode(entries: list[HistoryEntry], kept: set[int], history: History) -> bytes:
    table: dict[str, int] = {}
    for i, e in enumerate(entries):
        if i in kept and e.keys is not None:
            for k in e.keys:
                if k not in table:
                    table[k] = len(table)
    rows = [_row_wire(e, table if i in kept else None) for i, e in enumerate(entries)]
    doc: dict[str, Any] = {"format": FORMAT, "version": VERSION}
    if history.suite is not None:
        doc["suite"] = history.suite
    doc["limit"] = history.limit
    doc["keys"] = list(table)
    doc["rows"] = rows
    return _json(doc)


def decode(file: HistoryFile) -> History:
    """The in-memory history of a validated file."""
    table = file.keys
    entries: list[HistoryEntry] = []
    for row in file.rows:
        summary = RowSummary.model_validate(row.model_dump(include=set(RowSummary.model_fields)))
        keys: list[str] | None = None
        scores: dict[str, F64] = {}
        if row.key_ranges is not None:
            keys = [table[j] for start, count in row.key_ranges for j in range(start, start + count)]
            scores = {name: np.array(values, dtype=np.float64) for name, values in (row.scores or {}).items()}
        entries.append(HistoryEntry(summary=summary, keys=keys, scores=scores))
    return History(entries=tuple(entries), limit=file.limit, suite=file.suite)


def without_items(entry: HistoryEntry) -> HistoryEntry:
    """The entry with its item scores left out (its summary only)."""
    return replace(entry, keys=None, scores={})
