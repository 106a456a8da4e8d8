"""Is the candidate measuring the same thing as the baseline?

Compares ``metadata.fingerprint`` of the first run of each side (dataset content, dataset size,
scorer set, eval config, pricing-table version) and the item pairing, and says in words what
differs, so a changed dataset reads as "dataset changed" instead of as a wave of regressions.
Results without a fingerprint (TypeScript or legacy files) are "unknown", never an error.
"""

from __future__ import annotations

from typing import Any

from axl_action.compare.alignment import Alignment
from axl_action.compare.models import (
    Compatibility,
    FingerprintCheck,
    ItemAlignment,
    ScorerSetCheck,
)
from axl_action.schema import Fingerprint, RunHeader


def _check(baseline: Any, candidate: Any) -> FingerprintCheck:
    if baseline is None or candidate is None:
        return FingerprintCheck(status="unknown", baseline=baseline, candidate=candidate)
    status = "same" if baseline == candidate else "changed"
    return FingerprintCheck(status=status, baseline=baseline, candidate=candidate)


def _scorer_check(b_fp: Fingerprint | None, c_fp: Fingerprint | None) -> ScorerSetCheck:
    if b_fp is None or c_fp is None:
        return ScorerSetCheck(status="unknown")
    b_set, c_set = b_fp.scorer_set, c_fp.scorer_set
    added = [n for n in c_set if n not in b_set]
    removed = [n for n in b_set if n not in c_set]
    type_changed = {n: [b_set[n], c_set[n]] for n in b_set if n in c_set and b_set[n] != c_set[n]}
    definitions_changed = not (added or removed or type_changed) and b_fp.scorers != c_fp.scorers
    changed = bool(added or removed or type_changed or definitions_changed)
    return ScorerSetCheck(
        status="changed" if changed else "same",
        added=added,
        removed=removed,
        type_changed=type_changed,
        definitions_changed=definitions_changed,
    )


def _listed(keys: list[str], total: int) -> str:
    shown = ", ".join(keys[:5])
    return shown + (f" and {total - 5} more" if total > 5 else "")


def _cache_mode(header: RunHeader) -> str:
    cache = header.metadata.get("cache")
    mode = cache.get("mode") if isinstance(cache, dict) else None
    return mode if isinstance(mode, str) else "off"


def _cache_note(baseline: RunHeader, candidate: RunHeader) -> str | None:
    """A sentence when one side ran with the response cache and the other did not: its
    replayed answers are recorded ones, not what the model says today (docs/cache.md). Not a
    change of what is measured, so it does not change the status."""
    b_mode, c_mode = _cache_mode(baseline), _cache_mode(candidate)
    if b_mode == c_mode or "off" not in (b_mode, c_mode):
        return None
    cached, header = ("candidate", candidate) if c_mode != "off" else ("baseline", baseline)
    replayed = header.accounting.replayed if header.accounting is not None else None
    calls = f" ({replayed.calls} calls replayed)" if replayed is not None and replayed.calls else ""
    return (
        f"the {cached} ran with --cache {_cache_mode(header)}{calls} and the other side live: "
        "replayed answers are recorded ones; costs are compared as certified"
    )


def _dataset_messages(dataset: FingerprintCheck, dataset_items: FingerprintCheck) -> list[str]:
    if dataset.status == "changed":
        size = ""
        if dataset_items.status == "changed":
            size = f" ({dataset_items.baseline} -> {dataset_items.candidate} items)"
        return [f"dataset changed{size}: the two sides did not score the same items"]
    if dataset_items.status == "changed":
        return [f"dataset size changed ({dataset_items.baseline} -> {dataset_items.candidate} items)"]
    return []


def _scorer_messages(scorers: ScorerSetCheck) -> list[str]:
    if scorers.status != "changed":
        return []
    messages: list[str] = []
    if scorers.added:
        messages.append(f"scorers added in the candidate: {', '.join(scorers.added)}")
    if scorers.removed:
        messages.append(f"scorers missing from the candidate: {', '.join(scorers.removed)}")
    for name, (bt, ct) in scorers.type_changed.items():
        messages.append(f'scorer "{name}" changed type ({bt} -> {ct})')
    if scorers.definitions_changed:
        messages.append(
            "scorer definitions changed (same names and types, different definition hash): "
            "score moves may come from the scorers, not the workflow"
        )
    return messages


def _setup_messages(config: FingerprintCheck, pricing: FingerprintCheck) -> list[str]:
    messages: list[str] = []
    if config.status == "changed":
        messages.append("eval configuration changed (for example judge model or prompt)")
    if pricing.status == "changed":
        messages.append(
            f"pricing table changed ({pricing.baseline} -> {pricing.candidate}): "
            "a cost delta partly reflects new prices"
        )
    return messages


def _alignment_messages(alignment: Alignment) -> list[str]:
    messages: list[str] = []
    if alignment.mode == "key":
        if alignment.removed_count:
            messages.append(
                f"{alignment.removed_count} item(s) only in the baseline: "
                f"{_listed(alignment.removed, alignment.removed_count)}"
            )
        if alignment.added_count:
            messages.append(
                f"{alignment.added_count} item(s) only in the candidate: "
                f"{_listed(alignment.added, alignment.added_count)}"
            )
        if alignment.reordered:
            messages.append("items are in a different order; they were matched by key")
    if alignment.reason:
        messages.append(alignment.reason)
    return messages


def check_compatibility(
    baseline: RunHeader, candidate: RunHeader, alignment: Alignment, matched: int
) -> Compatibility:
    """Compatibility of the first runs of the two sides; ``matched`` = item pairs compared."""
    b_fp = Fingerprint.of(baseline.metadata)
    c_fp = Fingerprint.of(candidate.metadata)
    dataset = _check(b_fp and b_fp.dataset, c_fp and c_fp.dataset)
    dataset_items = _check(b_fp and b_fp.dataset_items, c_fp and c_fp.dataset_items)
    scorers = _scorer_check(b_fp, c_fp)
    config = _check(b_fp and b_fp.config, c_fp and c_fp.config)
    pricing = _check(b_fp and b_fp.pricing_version, c_fp and c_fp.pricing_version)
    items = ItemAlignment(
        mode="key" if alignment.mode == "key" else "position",
        matched=matched,
        added=alignment.added,
        removed=alignment.removed,
        reordered=alignment.reordered,
        reason=alignment.reason,
    )

    messages = [
        *_dataset_messages(dataset, dataset_items),
        *_scorer_messages(scorers),
        *_setup_messages(config, pricing),
    ]
    cache_note = _cache_note(baseline, candidate)
    if cache_note:
        messages.append(cache_note)
    messages += _alignment_messages(alignment)

    checks = [dataset, dataset_items, config, pricing]
    changed = (
        any(c.status == "changed" for c in checks)
        or scorers.status == "changed"
        or alignment.mode == "key"
        or alignment.reason is not None
    )
    if changed:
        status = "changed"
    elif b_fp is None or c_fp is None:
        status = "unknown"
    else:
        status = "compatible"
    return Compatibility(
        status=status,
        dataset=dataset,
        dataset_items=dataset_items,
        scorers=scorers,
        config=config,
        pricing_version=pricing,
        items=items,
        messages=messages,
    )
