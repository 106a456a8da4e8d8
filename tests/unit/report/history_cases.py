"""A baseline history for the report test cases (shared with tests/browser)."""

from __future__ import annotations

import hashlib

from report_cases import RUN_INFO, Case

from axl_action.history import History, HistoryEntry, ScorerPoint, append, history_entry
from axl_action.history.analysis import HistoryAnalysis, analyse
from axl_action.report import build_report_context
from axl_action.report.models import ReportContext
from axl_action.schema import run_view

REPO = "https://github.com/acme/app"


def commit_of(k: int) -> str:
    """A made-up 40-hex commit SHA for baseline run ``k``."""
    return hashlib.sha1(f"commit {k}".encode()).hexdigest()


def case_history(case: Case, rows: int = 8, flaky: frozenset[str] = frozenset()) -> History:
    """``rows`` baseline runs of the case's baseline: the means wobble a little, and the items
    whose keys are in ``flaky`` flip between 0 and 1 on every run."""
    view = run_view(case.baseline)
    history = History(suite="qa/main")
    for k in range(rows):
        entry = history_entry([view], run_id=str(100 + k), commit=commit_of(k))
        scores = {name: values.copy() for name, values in entry.scores.items()}
        assert entry.keys is not None
        for i, key in enumerate(entry.keys):
            if key in flaky:
                for values in scores.values():
                    values[i] = float(k % 2)
        wobble = 0.01 * ((k * 7) % 5 - 2)
        summary = entry.summary.model_copy(
            update={
                "date": f"2026-11-{1 + k:02d}T09:{(k * 13) % 60:02d}:00.000Z",
                "cost": entry.summary.cost.model_copy(
                    update={"known": entry.summary.cost.known * (1 + 0.02 * k)}
                ),
                "latency_ms": (entry.summary.latency_ms or 0) * (1 + 0.03 * ((k * 5) % 7)),
                "scorers": {
                    name: ScorerPoint(
                        type=p.type, mean=(p.mean or 0) + wobble, n=p.n, scored=p.scored, failed=p.failed
                    )
                    for name, p in entry.summary.scorers.items()
                },
            }
        )
        history = append(history, HistoryEntry(summary=summary, keys=entry.keys, scores=scores))
    return history


def with_history(case: Case, history: History) -> tuple[HistoryAnalysis, ReportContext]:
    header = case.baseline
    analysis = analyse(
        history,
        scorers=header.scorer_names,
        types=header.scorer_types,
        comparison=case.comparison,
        repository_url=REPO,
    )
    ctx = build_report_context(
        case.candidate, case.baseline, case.comparison, case.gates, RUN_INFO, history=analysis
    )
    return analysis, ctx
