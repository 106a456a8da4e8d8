"""The results file as a resume source: when a run finished, was stopped by its budget, or was
killed after its journal was deleted, ``--resume`` continues from the results file ``--output``
names, each of its results checked as a journal segment is (``checks.py``)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic_core
from pydantic import ValidationError

from axl_action.errors import read_input_bytes
from axl_action.evals.journal.base import JournalChanged, JournalError, iso_utc, journal_path
from axl_action.evals.journal.checks import check_segment, mismatch
from axl_action.evals.journal.reader import SegmentRecord
from axl_action.evals.log import warn
from axl_action.schema.journal import JournalFlags, JournalSegment, RunFacts, RunGroup, ShardFacts


@dataclass
class EarlierResults:
    """The results file of an earlier attempt, read as a journal is: when a run finished, was
    stopped by its budget, or was killed after its journal was deleted, ``--resume`` continues
    from it. Its results pair with the command's results in order (the same command makes
    them in the same order), each checked as a journal segment is before any item runs."""

    path: Path
    raw: bytes
    results: list[dict[str, Any]]
    taken: int = 0

    def take(
        self, facts: RunFacts, label: str, group: RunGroup | None, *, force: bool = False
    ) -> tuple[SegmentRecord, list[str]]:
        """The next result as a journal segment record, and what ``force`` accepted as changed;
        refuses one that is not this eval's."""
        number, result = self._next(label)
        self._check_identity(result, facts, label, group)
        record = SegmentRecord(number, self._segment(result, facts, label))
        try:
            forced = check_segment(self.path, record, facts, label, force=force)
        except JournalError as err:
            if isinstance(err, JournalChanged):
                raise
            raise JournalError(err.message, hint=_RESULTS_HINT) from None
        for line in forced:
            warn(f"[axl-eval] WARNING: --force: {line}; the items of {self.path.name} are kept.")
        for index, item in enumerate(result["items"]):
            if not isinstance(item, dict) or not isinstance(item.get("outcome"), str):
                raise self._refuse(f"items[{index}] is not an item with an outcome")
            record.items[index] = item
            if isinstance(item.get("accounting"), dict):
                record.spent.append(item["accounting"])
        return record, forced

    def _next(self, label: str) -> tuple[int, dict[str, Any]]:
        """The number and the result :meth:`take` continues; refuses when none is left, or when
        it was recovered from a journal."""
        number = self.taken
        if number >= len(self.results):
            raise self._refuse(
                f"it holds {len(self.results)} result(s) and this command makes more (eval {label})"
            )
        result = self.results[number]
        self.taken += 1
        if result["metadata"].get("recovered"):
            raise self._refuse(
                "it was written from a journal after a hard stop; resume from that journal "
                f"({journal_path(self.path).name}), which --resume uses when it is there"
            )
        return number, result

    def _check_identity(
        self, result: dict[str, Any], facts: RunFacts, label: str, group: RunGroup | None
    ) -> None:
        """Refuse a result of another dataset name, or another run of a ``--runs`` batch."""
        if result.get("dataset") != facts.dataset:
            raise JournalError(
                mismatch(
                    self.path,
                    f"the dataset name of eval {label} changed",
                    result.get("dataset"),
                    facts.dataset,
                ).message,
                hint=_RESULTS_HINT,
            )
        run_index = result["metadata"].get("runIndex")
        want = group.index if group is not None else None
        if run_index != want:
            raise JournalError(
                mismatch(self.path, "--runs differs", _runs_of(run_index), _runs_of(want)).message,
                hint=_RESULTS_HINT,
            )

    def _segment(self, result: dict[str, Any], facts: RunFacts, label: str) -> JournalSegment:
        """The segment line a journal would hold for ``result``: ``facts`` with the result's id,
        fingerprint, shard and size, for :func:`check_segment` to compare with ``facts``."""
        meta = result["metadata"]
        try:
            shard = ShardFacts.model_validate(meta["shard"]) if meta.get("shard") is not None else None
        except ValidationError:
            raise self._refuse("its metadata.shard is not a shard") from None
        earlier = facts.model_copy(
            update={
                "result_id": result["id"],
                "fingerprint": meta.get("fingerprint") if isinstance(meta.get("fingerprint"), dict) else {},
                "shard": shard,
                "items": len(result["items"]),
            }
        )
        return JournalSegment(
            command="run",
            key=label,
            label=label,
            started=iso_utc(),
            tool="",
            flags=JournalFlags(),
            facts=earlier,
        )

    def keep_unused(self) -> None:
        """Results of the earlier file that no eval of this command took would be lost when the
        new results file replaces it: the earlier file is kept beside it, and a line says so."""
        left = len(self.results) - self.taken
        if left <= 0:
            return
        keep = self.path.with_name(self.path.name + ".before-resume")
        try:
            keep.write_bytes(self.raw)
        except OSError as err:
            warn(
                f"[axl-eval] WARNING: could not keep the earlier results file as {keep}: {err.strerror or err}"
            )
            return
        print(
            f"[axl-eval] {left} result(s) of the earlier {self.path.name} matched no eval this command ran; "
            f"that file was kept as {keep}.",
            file=sys.stderr,
        )

    def check_runs(self, runs: int) -> None:
        """Refuse, before anything runs, a file of single runs for ``--runs N`` or the other way
        round (a journal's flags are checked as early: :func:`check_flags`)."""
        batch = [isinstance(r["metadata"].get("runIndex"), int) for r in self.results]
        if (runs > 1 and not all(batch)) or (runs == 1 and any(batch)):
            before = "--runs N" if any(batch) else "single runs"
            raise JournalError(
                f"cannot resume from the results file {self.path}: --runs differs (it holds {before}, "
                f"this command is --runs {runs})",
                hint=_RESULTS_HINT,
            )

    def _refuse(self, why: str) -> JournalError:
        return JournalError(f"cannot resume from the results file {self.path}: {why}", hint=_RESULTS_HINT)


_RESULTS_HINT = (
    "run the same command that wrote it, or run without --resume to start over (every item runs again)"
)


def _runs_of(index: int | None) -> str:
    return "a single run" if index is None else f"run {index + 1} of a --runs batch"


def earlier_results(output: Path) -> EarlierResults | None:
    """The results file ``--output`` names, as a resume source; ``None`` when there is none.
    A file that is not a results file is refused (one line)."""
    if not output.exists():
        return None
    raw = read_input_bytes(output, "results file", JournalError)
    try:
        data = pydantic_core.from_json(raw, allow_inf_nan=True)
    except ValueError as err:
        raise JournalError(
            f"cannot resume from the results file {output}: it is not JSON ({str(err).removeprefix('Invalid JSON: ')})",
            hint="pass the --output of the run to continue, or run without --resume",
        ) from None
    results = data if isinstance(data, list) else [data]
    for number, result in enumerate(results):
        if not (
            isinstance(result, dict)
            and isinstance(result.get("id"), str)
            and isinstance(result.get("items"), list)
            and isinstance(result.get("metadata"), dict)
        ):
            where = f"result {number}" if isinstance(data, list) else "it"
            raise JournalError(
                f"cannot resume from the results file {output}: {where} is not an axl-eval result "
                "(an object with id, items and metadata)",
                hint="pass the --output of the run to continue, or run without --resume",
            )
    return EarlierResults(path=output, raw=raw, results=results)
