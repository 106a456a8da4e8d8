"""The resume checks: a resume continues a journal (or an earlier results file, ``earlier.py``)
only under the settings that wrote it. Another shard, item count, dataset or set of scorers is
refused; changed judges or eval sources are refused unless ``--resume --force``, which records
them in the result."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from axl_action.evals.journal.base import JournalChanged, JournalError
from axl_action.evals.log import warn
from axl_action.schema.journal import JournalFlags, RunFacts

if TYPE_CHECKING:
    from axl_action.evals.journal.reader import Journal, SegmentRecord


def check_flags(journal: Journal, flags: JournalFlags) -> None:
    """Refuse to resume when the command's flags differ from the journal's where it matters."""
    if not journal.segments:
        return
    before = journal.segments[0].segment.flags
    for name, shown in (
        ("shard", "--shard"),
        ("runs", "--runs"),
        ("scorers", "--scorers"),
        ("repeats", "--repeats"),
        ("max_repeats", "--max-repeats"),
        ("baseline", "--baseline (the baseline's contents)"),
        ("pricing", "--pricing (the price table's contents)"),
    ):
        old, new = getattr(before, name), getattr(flags, name)
        if old != new:
            raise mismatch(journal.path, f"{shown} differs", _shown(old), _shown(new))


def check_segment(
    path: Path,
    record: SegmentRecord,
    facts: RunFacts,
    label: str,
    *,
    sources: Mapping[str, str] | None = None,
    force: bool = False,
) -> list[str]:
    """Refuse a segment of the journal at ``path`` whose eval is not the one about to run
    (fingerprints, shard, size).

    Two changes leave the journal's items where they belong but graded or produced by other
    code: the scorer configuration (judge models, prompts, options) and the eval's source files
    (``sources``, see ``LoadedEval.sources``). They are refused too, unless ``force``
    (``--resume --force``); then they are returned, one line each, for the result to record."""
    old = record.segment.facts
    before, now = old.fingerprint, facts.fingerprint
    where = f"eval {label}"
    if "dataset" in before and "dataset" in now and before["dataset"] != now["dataset"]:
        raise mismatch(path, f"the dataset of {where} changed", before["dataset"], now["dataset"])
    for key, what in (
        ("datasetItems", "the number of dataset items"),
        ("scorers", "the scorers (names or types)"),
    ):
        if before.get(key) != now.get(key):
            raise mismatch(path, f"{what} of {where} changed", before.get(key), now.get(key))
    accepted: list[str] = []
    if before.get("config") != now.get("config"):
        what = f"the scorer configuration (judge models or prompts) of {where} changed"
        if not force:
            raise mismatch(path, what, before.get("config"), now.get("config"), forceable=True)
        accepted.append(what)
    changed = source_changes(record.segment.sources, sources)
    if changed:
        what = f"the source of {where} changed ({changed})"
        if not force:
            raise JournalChanged(
                f"cannot resume from {path}: {what} since it was written",
                hint=_FORCE_HINT.format(path=path),
            )
        accepted.append(what)
    _check_items(path, old, facts, where)
    if "dataset" not in before or "dataset" not in now:
        warn(
            f"[axl-eval] WARNING: resuming {where} without a dataset fingerprint to check; only its "
            "size matched."
        )
    return accepted


def _check_items(path: Path, old: RunFacts, facts: RunFacts, where: str) -> None:
    """Refuse another shard, item count or repeat count (a settled item's mean is over its
    repeats: one over another count is not the same item)."""
    if old.shard != facts.shard or old.items != facts.items:
        raise mismatch(path, f"the items of {where} changed", old.items, facts.items)
    if old.repeats != facts.repeats:
        raise mismatch(path, f"the repeats of {where} changed", old.repeats, facts.repeats)


def source_changes(before: Mapping[str, str] | None, now: Mapping[str, str] | None) -> str:
    """Which source files differ between two ``sources`` maps ("" when none, or when either
    side was not recorded): "workflow.py changed, helpers.py added"."""
    if before is None or now is None:
        return ""
    parts = [f"{name} changed" for name in before if name in now and before[name] != now[name]]
    parts += [f"{name} added" for name in now if name not in before]
    parts += [f"{name} removed" for name in before if name not in now]
    return ", ".join(parts)


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, list):
        return ",".join(map(str, value))
    return str(value)


def mismatch(path: Path, what: str, old: Any, new: Any, *, forceable: bool = False) -> JournalError:
    """The refusal of a resume from ``path`` because ``what`` changed from ``old`` to ``new``;
    ``forceable`` ones (:class:`JournalChanged`) say that ``--force`` keeps the items."""
    kind = JournalChanged if forceable else JournalError
    return kind(
        f"cannot resume from {path}: {what} since it was written ({_shown(old)} -> {_shown(new)})",
        hint=_FORCE_HINT.format(path=path)
        if forceable
        else f"run the same command on the same eval; to start over instead, first save its items with "
        f"`axl-eval recover {path} --output FILE` and delete it",
    )


_FORCE_HINT = (
    "the items it holds were made or graded by other code: add --force to keep them anyway (the "
    "result records it in metadata.resumed.forced), or start over after saving them with "
    "`axl-eval recover {path} --output FILE` and deleting it"
)
