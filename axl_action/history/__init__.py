"""History: score, cost and latency trends across baseline runs, measured noise, flaky items.

Pure core, file edges at the end:

    entry = history_entry(views, run_id=..., commit=..., previous=previous_views)
    history = append(previous_history, entry, limit=50)
    bands = noise_bands(history, scorer_names)           # how much means move, run to run
    auto = auto_thresholds(history, scorer_names, types)  # threshold: auto
    flaky = flaky_items(history, thresholds)              # scorer -> item keys
    parse_history(raw) / history_bytes(history)           # bytes in, bytes out
    load_history(path) / write_history(path, history)     # the file edges

See docs/history.md for the rules and the file format.
"""

from __future__ import annotations

from axl_action.history.build import (
    Encoded,
    History,
    HistoryEntry,
    append,
    decode,
    encode,
    history_entry,
    measure_fingerprint,
    without_items,
)
from axl_action.history.io import (
    HistoryError,
    history_bytes,
    load_history,
    parse_history,
    write_history,
)
from axl_action.history.model import (
    ARTIFACT_FILE_NAME,
    DEFAULT_LIMIT,
    FILE_NAME,
    MAX_ROWS,
    CostPoint,
    HistoryFile,
    HistoryRow,
    RowSummary,
    ScorerPoint,
)
from axl_action.history.noise import (
    FLAKY_MIN_CHANGES,
    MIN_MOVES,
    WINDOW,
    AutoThresholds,
    NoiseBand,
    auto_thresholds,
    flaky_items,
    noise_band,
    noise_bands,
    t_quantile,
)

__all__ = [
    "ARTIFACT_FILE_NAME",
    "DEFAULT_LIMIT",
    "FILE_NAME",
    "FLAKY_MIN_CHANGES",
    "MAX_ROWS",
    "MIN_MOVES",
    "WINDOW",
    "AutoThresholds",
    "CostPoint",
    "Encoded",
    "History",
    "HistoryEntry",
    "HistoryError",
    "HistoryFile",
    "HistoryRow",
    "NoiseBand",
    "RowSummary",
    "ScorerPoint",
    "append",
    "auto_thresholds",
    "decode",
    "encode",
    "flaky_items",
    "history_bytes",
    "history_entry",
    "load_history",
    "measure_fingerprint",
    "noise_band",
    "noise_bands",
    "parse_history",
    "t_quantile",
    "without_items",
    "write_history",
]
