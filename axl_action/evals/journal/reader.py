"""The journal's reader: a journal file read back and validated line by line, for a resume
(``session.py``) and for ``axl-eval recover`` (``recovery.py``). The file's format is
``schema/journal.py``'s; the writer (``writer.py``) says which lines a crash may leave cut short.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic_core
from pydantic import ValidationError

from axl_action.errors import read_input_bytes
from axl_action.evals.common import empty_accounting_wire
from axl_action.evals.journal.base import JournalError, is_final, line_checksum
from axl_action.evals.log import warn
from axl_action.schema.itempass import ItemShapeError, item_facts
from axl_action.schema.journal import JOURNAL_FORMAT, JournalSegment


@dataclass
class SegmentRecord:
    """One segment of a journal as read back."""

    number: int
    """Its number (position among the segment lines)."""
    segment: JournalSegment
    """The segment line."""
    items: dict[int, dict[str, Any]] = field(default_factory=dict)
    """The latest item line per index."""
    spent: list[dict[str, Any]] = field(default_factory=list)
    """The accounting record of every item line (earlier attempts of an index included)."""

    @property
    def final(self) -> dict[int, dict[str, Any]]:
        """The items a resume keeps (see :func:`is_final`), by index."""
        return {i: item for i, item in self.items.items() if is_final(item)}

    @property
    def known_spend(self) -> float:
        """Known spend of every item line."""
        total = 0.0
        for record in self.spent:
            value = record.get("knownCost")
            if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
                total += value
        return total


@dataclass
class Journal:
    """A journal file as read back."""

    path: Path
    segments: list[SegmentRecord]
    item_lines: int
    """Item lines read (every attempt of every item)."""
    good_bytes: int
    """Length of the file up to the end of its last whole line."""
    torn: bool = False
    """True when the last line was cut short (and dropped)."""

    def by_key(self, key: str) -> SegmentRecord | None:
        """The segment of the result ``key`` (the last one, should a key repeat)."""
        found = None
        for record in self.segments:
            if record.segment.key == key:
                found = record
        return found


_RECOVER_HINT = "it is written by `axl-eval run --output FILE` as FILE.journal.jsonl"
_DAMAGED_HINT = (
    "only a journal's last line can be cut short by a crash; this one was changed by something "
    "else (the disk, a copy, an edit) and nothing from it can be trusted: move it away and run "
    "again without --resume"
)


def read_journal(path: str | os.PathLike[str]) -> Journal:
    """Read a journal; a damaged or foreign file raises :class:`JournalError` (one line).

    Only the last line may be damaged (a crash cut it short, or it fails its checksum): it is
    dropped with a warning. A line that fails its checksum anywhere else refuses the journal:
    its content is not what was written, and nothing after it is trusted either.
    """
    source = Path(path)
    raw = read_input_bytes(source, "journal", JournalError, directory_hint=_RECOVER_HINT)
    end = raw.rfind(b"\n") + 1
    body, tail = raw[:end], raw[end:]
    lines = body.split(b"\n")[:-1] if body else []
    torn = bool(tail.strip(b"\x00 \t\r"))
    segments: list[SegmentRecord] = []
    item_lines = 0
    checked = False
    """True once a line carried a checksum: from then on every line must."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        obj, checked = _sound_line(
            line, source, number, last=number == len(lines) and not tail, checked=checked
        )
        if obj is None:
            torn, end = True, end - len(line) - 1  # the last whole-looking line is cut short
            break
        if "format" in obj:
            segments.append(SegmentRecord(len(segments), _segment(obj, source, number)))
            continue
        if not segments:
            raise JournalError(
                f"{source} is not an axl-eval journal: its first line is not a segment line",
                hint=_RECOVER_HINT,
            )
        _settle(*_item_line(obj, segments, source, number))
        item_lines += 1
    if not segments and lines:
        raise JournalError(f"{source} is not an axl-eval journal: it has no segment line", hint=_RECOVER_HINT)
    if torn:
        warn(
            f"[axl-eval] {source}: dropped the last line, which the crash cut short "
            "(or which fails its checksum)."
        )
    return Journal(path=source, segments=segments, item_lines=item_lines, good_bytes=end, torn=torn)


def _sound_line(
    line: bytes, source: Path, number: int, *, last: bool, checked: bool
) -> tuple[dict[str, Any] | None, bool]:
    """Line ``number`` as an object that passed its checksum, and whether a checksum has been
    seen so far (``checked``: from then on every line must carry one). ``None`` for the last
    line when it is cut short or fails its checksum (the reader drops it); any other line that
    does refuses the journal."""
    try:
        obj = pydantic_core.from_json(line, allow_inf_nan=False)
    except ValueError as err:
        if last:
            return None, checked
        raise JournalError(
            f"{source} is damaged at line {number}: {str(err).removeprefix('Invalid JSON: ')}",
            hint=_DAMAGED_HINT,
        ) from None
    if not isinstance(obj, dict):
        raise JournalError(f"{source} line {number} is not a JSON object", hint=_RECOVER_HINT)
    sound = line_checksum(line, obj)
    if sound is None and checked:
        sound = False  # a checksum lost to damage: the lines before it had theirs
    if sound is False:
        if last:
            return None, checked
        raise JournalError(
            f"{source} is damaged at line {number}: the line fails its checksum",
            hint=_DAMAGED_HINT,
        )
    return obj, checked or sound is True


def _settle(record: SegmentRecord, index: int, item: dict[str, Any]) -> None:
    """Keep an item line as its index's latest, and its accounting among the segment's spend."""
    record.items[index] = item
    accounting = item.get("accounting")
    if accounting is None and "accounting" in item:  # written for the empty record
        item["accounting"] = accounting = empty_accounting_wire()
    if isinstance(accounting, dict):
        record.spent.append(accounting)


def _segment(obj: dict[str, Any], source: Path, number: int) -> JournalSegment:
    found = obj.get("format")
    if found != JOURNAL_FORMAT:
        raise JournalError(
            f"{source} line {number}: unknown journal format {found!r} (this version reads {JOURNAL_FORMAT})",
            hint="resume or recover it with the axl-eval-action version that wrote it",
        )
    try:
        return JournalSegment.model_validate(obj)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise JournalError(
            f"{source} line {number} is not a valid journal segment: at {where}: {first['msg']}",
            hint=_RECOVER_HINT,
        ) from None


def _item_line(
    obj: dict[str, Any], segments: list[SegmentRecord], source: Path, number: int
) -> tuple[SegmentRecord, int, dict[str, Any]]:
    segment, index, item = obj.get("segment"), obj.get("index"), obj.get("item")
    problem = None
    if type(segment) is not int or not 0 <= segment < len(segments):
        problem = f"segment {segment!r} is not a segment line before it"
    elif type(index) is not int or not 0 <= index < segments[segment].segment.facts.items:
        problem = (
            f"index {index!r} is outside the {segments[segment].segment.facts.items} items of its segment"
        )
    elif not isinstance(item, dict) or not isinstance(item.get("outcome"), str):
        problem = "its item is not an object with an outcome"
    else:
        # The fields a run's counts read, checked as a results file's are: here the message
        # can still name the line.
        names = [
            n for part in ("scores", "scoreDetails") if isinstance(item.get(part), dict) for n in item[part]
        ]
        try:
            item_facts([item], list(dict.fromkeys(names)))
        except ItemShapeError as err:
            problem = str(err).replace("items[0]", "item", 1)
    if problem is not None:
        raise JournalError(f"{source} line {number} is not a valid item line: {problem}", hint=_RECOVER_HINT)
    assert isinstance(segment, int) and isinstance(index, int) and isinstance(item, dict)
    return segments[segment], index, item
