"""The regressed items the comment, summary and static HTML show, with output excerpts."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from axl_action.compare.models import Comparison, ItemChange
from axl_action.report.escape import to_text, truncate
from axl_action.report.explorer import display_text, reasoning_of
from axl_action.report.models import ItemExcerpt, ReportLimits, ScoreChange
from axl_action.schema import EvalResult, item_key


def _cand_index(change: ItemChange) -> int:
    return change.candidate_index if change.candidate_index is not None else change.item_index


def top_regressions(
    candidate: EvalResult,
    baseline: EvalResult | None,
    comparison: Comparison,
    limits: ReportLimits,
    *,
    flaky: Callable[[ItemChange], bool] | None = None,
) -> tuple[list[ItemExcerpt], int]:
    """The worst regressed items (worst delta first) with excerpts, and the number regressed.

    ``flaky``: whether a regression is on an item flaky for its scorer (from history); such
    changes are marked, and items whose every regression is flaky are listed last.
    """
    by_item: dict[int, list[ItemChange]] = {}
    for ch in comparison.regressions:
        by_item.setdefault(_cand_index(ch), []).append(ch)
    improved_or_reg: dict[int, dict[str, ItemChange]] = {}
    for ch in [*comparison.regressions, *comparison.improvements]:
        improved_or_reg.setdefault(_cand_index(ch), {})[ch.scorer] = ch
    baseline_index = {_cand_index(ch): ch.item_index for ch in comparison.regressions}
    is_flaky = flaky or (lambda ch: False)

    def all_flaky(changes: Sequence[ItemChange]) -> bool:
        return flaky is not None and all(is_flaky(ch) for ch in changes)

    order = sorted(by_item, key=lambda i: (all_flaky(by_item[i]), min(ch.delta for ch in by_item[i]), i))
    excerpts: list[ItemExcerpt] = []
    n = limits.excerpt_chars
    for i in order[: limits.top_items]:
        regs = sorted(by_item[i], key=lambda ch: (ch.delta, ch.scorer))
        changes = [
            ScoreChange(
                scorer=ch.scorer,
                baseline=ch.baseline_score,
                candidate=ch.candidate_score,
                delta=ch.delta,
                regressed=True,
                flaky=is_flaky(ch),
            )
            for ch in regs
        ]
        others = improved_or_reg.get(i, {})
        changes += [
            ScoreChange(
                scorer=ch.scorer, baseline=ch.baseline_score, candidate=ch.candidate_score, delta=ch.delta
            )
            for name, ch in sorted(others.items())
            if all(c.scorer != name for c in regs)
        ]
        c_item = candidate.items[i] if i < len(candidate.items) else None
        bi = baseline_index.get(i, i)
        b_item = baseline.items[bi] if baseline is not None and bi < len(baseline.items) else None
        worst = regs[0]
        reasoning = None
        if c_item is not None and c_item.score_details:
            detail = c_item.score_details.get(worst.scorer)
            text = reasoning_of(detail.metadata) if detail is not None else ""
            reasoning = truncate(text, n) if text else None
        c_out = "" if c_item is None else display_text(c_item.output)
        if c_item is not None and c_item.bucket != "completed":
            c_out = c_out or (c_item.error or c_item.bucket)
        b_out = display_text(b_item.output) if b_item is not None else ""
        b_text, c_text = aligned_excerpts(b_out, c_out, n) if b_item is not None else ("", truncate(c_out, n))
        excerpts.append(
            ItemExcerpt(
                index=i,
                key=item_key(worst.input),
                input=truncate(to_text(worst.input), n),
                baseline_output=b_text,
                candidate_output=c_text,
                changes=changes,
                worst_delta=worst.delta,
                reasoning=reasoning,
                outcome=c_item.bucket if c_item is not None else "completed",
                flaky=all_flaky(regs),
            )
        )
    return excerpts, len(by_item)


def aligned_excerpts(before: str, after: str, limit: int, lead: int = 60) -> tuple[str, str]:
    """Excerpts of two texts starting shortly before their first difference.

    A long common opening would otherwise fill the whole excerpt with identical text.
    """
    pos = 0
    for a, b in zip(before, after, strict=False):
        if a != b:
            break
        pos += 1
    start = 0
    if pos > lead:
        start = pos - lead
        space = before.rfind(" ", 0, start + 1)
        start = space + 1 if space > start - 20 else start
    prefix = "…" if start else ""
    return (
        truncate(prefix + before[start:], limit),
        truncate(prefix + after[start:], limit),
    )
