"""The baseline history in the action: read it from the baseline artifact, extend and store it.

A baseline artifact holds ``results.json`` and ``history.json.gz`` (gzipped, so the zip stores
it as is and its compression ratio never trips the download's zip-bomb check). The file holds
one row per baseline run, this one included, up to ``history-limit`` rows:

* **Baseline job.** It downloads the previous baseline (the same search and pure policy a PR
  uses, without a PR), appends its own row to that artifact's history and uploads both
  files. A previous baseline without a usable history starts it again from that baseline's
  results, with a warning.
* **Pull request.** The one baseline download it already makes brings the whole history.

A missing, corrupt or foreign history is a warning, never a failure: the run is still
compared and gated. Everything here is pure (bytes and values in, values out); the
orchestrator does the I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from axl_action.action.baseline import BaselineLookup
from axl_action.history import (
    ARTIFACT_FILE_NAME,
    FILE_NAME,
    History,
    HistoryError,
    append,
    history_bytes,
    history_entry,
    parse_history,
)
from axl_action.schema import RunView, as_views
from axl_action.schema.io import ResultFile


@dataclass(frozen=True)
class BaselineHistory:
    """The history a baseline artifact brought, and what was wrong with it."""

    history: History | None = None
    """The rows, oldest first (None: none usable)."""
    warnings: list[str] = field(default_factory=list)
    """Why the history is missing or was not used (each becomes a ``::warning::``)."""


def read_baseline_history(lookup: BaselineLookup, *, suite: str, seed: bool = False) -> BaselineHistory:
    """The history stored with the baseline ``lookup`` found.

    ``seed``: for the baseline job, start a history from the baseline's own results when its
    artifact has none (or a bad one), and make sure that baseline is the newest row.
    """
    choice = lookup.choice
    if choice is None or lookup.results is None:
        return BaselineHistory()
    where = f"artifact {choice.artifact_name!r} (run {choice.run_id})"
    warnings: list[str] = []
    history: History | None = None
    name = ARTIFACT_FILE_NAME if ARTIFACT_FILE_NAME in lookup.files else FILE_NAME
    raw = lookup.files.get(name)
    if raw is None:
        warnings.append(
            f"the baseline {where} holds no {ARTIFACT_FILE_NAME}: it was stored before the history existed "
            "or with history-limit: 0"
            + ("; the history starts again from that baseline" if seed else "; the next baseline starts one")
        )
    else:
        try:
            history = parse_history(raw, f"{where}/{name}", suite=suite)
        except HistoryError as err:
            warnings.append(
                f"the baseline's history was not used: {err.message}"
                + (
                    "; the history starts again from that baseline"
                    if seed
                    else "; the next baseline starts a new one"
                )
            )
    if seed:
        run_id = str(choice.run_id)
        if history is None or not any(e.summary.run_id == run_id for e in history.entries):
            entry = history_entry(as_views(lookup.results.results), run_id=run_id, commit=choice.head_sha)
            history = append(history if history is not None else History(suite=suite), entry)
    return BaselineHistory(history=history, warnings=warnings)


@dataclass(frozen=True)
class StoredHistory:
    """What the baseline job uploads next to its results."""

    data: bytes
    """``history.json.gz``."""
    rows: int
    """Rows in it (this run included)."""
    dropped: int
    """Oldest rows whose item scores were left out to keep it small."""


def extend_history(
    previous: History | None,
    candidate: ResultFile,
    *,
    limit: int,
    suite: str,
    run_id: str | None,
    commit: str | None,
    previous_results: ResultFile | None = None,
) -> StoredHistory:
    """``previous`` with this baseline run appended (newest ``limit`` rows), gzipped."""
    views: Sequence[RunView] = as_views(candidate.results)
    entry = history_entry(
        views,
        run_id=run_id,
        commit=commit,
        previous=as_views(previous_results.results) if previous_results is not None else None,
    )
    base = previous if previous is not None else History(suite=suite)
    history = append(History(entries=base.entries, limit=limit, suite=suite), entry, limit=limit)
    encoded = history_bytes(history, gzipped=True)
    return StoredHistory(data=encoded.data, rows=len(history), dropped=encoded.dropped)
