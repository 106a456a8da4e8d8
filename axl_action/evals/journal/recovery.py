"""Recovery: a result for every segment of a journal, from its item lines alone. ``axl-eval
recover`` writes them out; the hard stop (``JournalSession.write_settled``) writes them when the
run's own state cannot be trusted to finish."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from axl_action.evals.common import empty_accounting_wire
from axl_action.evals.journal.reader import Journal, SegmentRecord
from axl_action.schema.accounting import fold_accounting


def recover_results(journal: Journal) -> list[dict[str, Any]]:
    """A result for every segment of ``journal``, from its item lines alone, marked
    ``metadata.recovered`` (``partial`` when items are missing)."""
    out: list[dict[str, Any]] = []
    for record in journal.segments:
        if record.segment.command == "rescore":
            from axl_action.evals.rescore import assemble_rescore

            wire = assemble_rescore(
                record.segment.facts.result_id,
                record.segment.rescore_head or {},
                record.segment.facts.scorer_types,
                [record.items[i] for i in sorted(record.items)],
                _run_accounting(record, "rescore"),
                duration=_elapsed_ms(record.segment.started, journal.path),
            )
        else:
            from axl_action.evals.runner import assemble_run

            wire = assemble_run(
                record.segment.facts,
                [record.items[i] for i in sorted(record.items)],
                _run_accounting(record, "run"),
                duration=_elapsed_ms(record.segment.started, journal.path),
            ).wire
        group = record.segment.group
        if group is not None:
            wire["metadata"]["runGroupId"] = group.group_id
            wire["metadata"]["runIndex"] = group.index
        planned = record.segment.facts.items
        wire["metadata"]["recovered"] = {
            "journal": journal.path.name,
            "itemsFromJournal": len(record.items),
            "itemsPlanned": planned,
            "partial": len(record.items) < planned,
        }
        out.append(wire)
    return out


def _run_accounting(record: SegmentRecord, scope: str) -> dict[str, Any]:
    accounting = fold_accounting(record.spent) if record.spent else empty_accounting_wire()
    accounting["scope"] = scope
    budget = record.segment.facts.budget
    if budget is not None:
        from axl_action.runtime.admission import parse_budget

        limit = parse_budget(budget)
        spend = record.known_spend
        accounting["budget"] = {
            "limit": limit,
            "status": "closed" if spend >= limit else "open",
            "knownSpend": spend,
            "knownOvershoot": max(0.0, spend - limit),
        }
    return accounting


def _elapsed_ms(started: str, path: Path) -> int:
    """From the segment's start to the journal's last write: the best duration a journal knows."""
    try:
        begin = datetime.strptime(started, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()
        return max(0, round((path.stat().st_mtime - begin) * 1000))
    except (ValueError, OSError):
        return 0
