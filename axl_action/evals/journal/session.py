"""The journal of one ``axl-eval run`` / ``rescore`` invocation with ``--output``: opening it
(refusing to overwrite paid items, checking a resume's flags), one segment per result, and
deleting or keeping the journal at the end (see ``writer.py`` for what the file promises)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from axl_action.atomic import sync_file_and_directory
from axl_action.errors import InputFileError, UsageError
from axl_action.evals.continuation import Continuation
from axl_action.evals.journal.base import JournalError, iso_utc, journal_path, tool_version
from axl_action.evals.journal.checks import check_flags, check_segment, mismatch
from axl_action.evals.journal.earlier import EarlierResults, earlier_results
from axl_action.evals.journal.lock import JournalLock
from axl_action.evals.journal.reader import Journal, SegmentRecord, read_journal
from axl_action.evals.journal.recovery import recover_results
from axl_action.evals.journal.writer import JournalWriter
from axl_action.evals.log import warn
from axl_action.schema.journal import JournalFlags, JournalSegment, RunFacts, RunGroup


@dataclass(frozen=True)
class Resumed:
    """What one result takes over from the journal."""

    result_id: str
    """The id of the interrupted result (the resumed result keeps it)."""
    completed: dict[int, dict[str, Any]]
    """Items kept as they are, by index (not run again)."""
    prior_accounting: list[dict[str, Any]]
    """Accounting of every item line (charged to the budget, folded into the run's)."""
    spend: float
    """Their known spend."""
    results_file: str | None = None
    """Set when they came from the results file (no journal was left), not a journal."""
    forced: tuple[str, ...] = ()
    """The changes ``--force`` accepted (``metadata.resumed.forced``)."""


@dataclass
class StartedResult:
    """One result's hooks into the journal (see :meth:`JournalSession.start`)."""

    facts: RunFacts
    """The facts to run with (the journal's result id when resuming)."""
    on_settled: Callable[[int, dict[str, Any]], None]
    """Hand every settled item to this."""
    resumed: Resumed | None = None
    """Set when an earlier attempt's segment is continued."""

    def continuation(self, on_abandoned: Callable[[int], None] | None = None) -> Continuation:
        """The runner's (or the rescore's) hooks for this result: settled items go to the
        journal, and a resumed segment's items and accounting are carried over."""
        resumed = self.resumed
        if resumed is None:
            return Continuation(on_settled=self.on_settled, on_abandoned=on_abandoned)
        return Continuation(
            completed=resumed.completed,
            prior_accounting=resumed.prior_accounting,
            on_settled=self.on_settled,
            on_abandoned=on_abandoned,
        )


class JournalSession:
    """The journal of one ``axl-eval run`` / ``rescore`` invocation with ``--output``.

    Opening it refuses to overwrite a journal that holds paid items unless the command
    resumes it (and then checks that the flags match). Each result calls :meth:`start` (which
    checks the eval against the journal and writes its segment line) and hands its settled
    items to the returned callback; :meth:`finish` deletes the journal once the results file
    is in place, or keeps it and says why.
    """

    def __init__(
        self,
        output: Path,
        *,
        command: Literal["run", "rescore"],
        flags: JournalFlags,
        resume: bool,
        interval: float | None = None,
        retry_failed: bool = False,
        wait: bool = False,
        force: bool = False,
        on_fail: Callable[[str], None] | None = None,
    ) -> None:
        self.output = output
        self.on_fail = on_fail
        """Hears why the journal stopped being written (a full disk): the command stops admitting."""
        self.path = journal_path(output)
        self.command = command
        self.flags = flags
        self.previous: Journal | None = None
        self.used: set[int] = set()
        self.incomplete = False
        """Set when a result of the command failed after items settled: keep the journal."""
        self.abandoned = False
        """Set by a hard stop: workers left in flight may still settle, so the file stays open."""
        self.retry_failed = retry_failed
        """``--resume-failed``: items that failed run again instead of being kept."""
        self.force = force
        """``--resume --force``: keep the items of an eval whose judges or source changed."""
        self.refused = False
        """Set when a segment was refused (its error said why the journal stays)."""
        self.earlier_results: EarlierResults | None = None
        """The results file a resume continues when no journal was left (see :func:`earlier_results`)."""
        try:
            self.lock = JournalLock.acquire(self.path, wait=wait)
        except OSError as err:
            raise _cannot_write(self.path, output, err) from None
        try:
            self._open(resume, interval)
        except BaseException:
            self.lock.release()
            raise

    def _open(self, resume: bool, interval: float | None) -> None:
        output, command, flags = self.output, self.command, self.flags
        existing = read_journal(self.path) if self.path.exists() else None
        if existing is not None and existing.item_lines and not resume:
            raise UsageError(
                f"{self.path} holds {existing.item_lines} settled item(s) of an interrupted run, already "
                "paid for; this run would overwrite it",
                hint=f"add --resume to continue that run, or save its items with `axl-eval recover {self.path} "
                "--output FILE` and delete the journal to start over",
            )
        if resume and existing is not None and existing.segments:
            check_flags(existing, flags)
            if existing.segments[0].segment.command != command:
                raise JournalError(
                    f"cannot resume from {self.path}: it was written by `axl-eval "
                    f"{existing.segments[0].segment.command}`, not `axl-eval {command}`",
                    hint="resume it with the command that wrote it",
                )
            self.previous = existing
        elif resume:
            self.earlier_results = earlier_results(output) if command == "run" else None
            if self.earlier_results is not None:
                self.earlier_results.check_runs(flags.runs)
            if self.earlier_results is None:
                print(f"[axl-eval] --resume: no journal at {self.path}, so this is a fresh run.", flush=True)
            else:
                print(
                    f"[axl-eval] --resume: no journal at {self.path}; continuing from the results file {output} "
                    "(its settled items are not run again).",
                    flush=True,
                )
        try:
            if self.previous is not None:
                self.writer = JournalWriter.append_to(self.previous, interval=interval, on_fail=self.on_fail)
            else:
                self.writer = JournalWriter.create(self.path, interval=interval, on_fail=self.on_fail)
        except OSError as err:
            # Before any item runs: nothing is paid for yet.
            raise _cannot_write(self.path, output, err) from None

    def group_id(self, identity: str, label: str, runs: int) -> str | None:
        """The ``runGroupId`` of an earlier attempt of this eval's ``--runs`` batch, if any (the
        eval found by its resolved file, or, in older journals, by its label)."""
        if self.previous is None or runs == 1:
            return None
        for record in self.previous.segments:
            segment, group = record.segment, record.segment.group
            if group is not None and (segment.key.startswith(identity + " run ") or segment.label == label):
                return group.group_id
        return None

    def start(
        self,
        key: str,
        label: str,
        facts: RunFacts,
        *,
        group: RunGroup | None = None,
        source_id: str | None = None,
        rescore_head: Callable[[str], dict[str, Any]] | None = None,
        sources: Mapping[str, str] | None = None,
        old_key: str | None = None,
    ) -> StartedResult:
        """Begin (or continue) the segment of result ``key``; raises :class:`JournalError` when
        the journal's segment of that key belongs to another eval. ``key`` names the eval by its
        resolved file (``LoadedEval.identity``); ``old_key``, its spelling as journals written
        before that used it, is tried when no segment has ``key``. ``sources`` are the eval's
        source hashes (``LoadedEval.sources``)."""
        if self.earlier_results is not None:
            return self._start_from_results(key, label, facts, group, sources)
        previous = self.previous
        record = previous.by_key(key) if previous is not None else None
        if previous is not None and record is None and old_key is not None:
            record = previous.by_key(old_key)
        if record is not None:
            return self._continue(record, facts, label, source_id, sources)
        number = self._begin(
            key,
            label,
            facts,
            sources,
            group=group,
            source_id=source_id,
            rescore_head=rescore_head(facts.result_id) if rescore_head is not None else None,
        )
        return StartedResult(facts, self.writer.sink(number))

    def _continue(
        self,
        record: SegmentRecord,
        facts: RunFacts,
        label: str,
        source_id: str | None,
        sources: Mapping[str, str] | None,
    ) -> StartedResult:
        """:meth:`start` for a result the journal holds a segment of: check it against the eval
        about to run, then continue it, keeping its settled items."""
        try:
            forced = check_segment(self.path, record, facts, label, sources=sources, force=self.force)
        except JournalError:
            # Refused: the error names the journal, which is kept as it is, unreported.
            self.used.add(record.number)
            self.refused = True
            raise
        for line in forced:
            warn(f"[axl-eval] WARNING: --force: {line}; its {len(record.final)} settled item(s) are kept.")
        old_source = record.segment.source_id
        if old_source != source_id:
            raise mismatch(self.path, "the rescored results file changed", old_source, source_id)
        facts = facts.model_copy(update={"result_id": record.segment.facts.result_id})
        resumed = Resumed(
            result_id=facts.result_id,
            completed=self._kept(record),
            prior_accounting=list(record.spent),
            spend=record.known_spend,
            forced=tuple(forced),
        )
        self.used.add(record.number)
        return StartedResult(facts, self.writer.sink(record.number), resumed)

    def _begin(
        self, key: str, label: str, facts: RunFacts, sources: Mapping[str, str] | None, **optional: Any
    ) -> int:
        """Write a new segment line for result ``key`` (``optional``: the segment's other fields);
        return its number."""
        segment = JournalSegment(
            command=self.command,
            key=key,
            label=label,
            started=iso_utc(),
            tool=tool_version(),
            flags=self.flags,
            facts=facts,
            sources=dict(sources) if sources is not None else None,
            **optional,
        )
        number = self.writer.begin(segment)
        self.used.add(number)
        return number

    def _kept(self, record: SegmentRecord) -> dict[int, dict[str, Any]]:
        """The items of ``record`` this resume keeps: the final ones, minus failed ones under
        ``--resume-failed``."""
        final = record.final
        if self.retry_failed:
            return {i: item for i, item in final.items() if item.get("outcome") != "failed"}
        return final

    def _start_from_results(
        self,
        key: str,
        label: str,
        facts: RunFacts,
        group: RunGroup | None,
        sources: Mapping[str, str] | None,
    ) -> StartedResult:
        """:meth:`start` when the resume continues a results file: take its next result, check
        it as a journal segment is checked, then write a fresh journal segment and every item
        that result holds that had run, so that a crash from now on loses none of them."""
        earlier = self.earlier_results
        assert earlier is not None
        record, forced = earlier.take(facts, label, group, force=self.force)
        number = self._begin(key, label, record.segment.facts, sources, group=group)
        sink = self.writer.sink(number)
        for index, item in record.items.items():
            sink(index, item)  # the sink leaves out stubs (budget-skipped, cancelled): nothing ran
        self.writer.flush()
        resumed = Resumed(
            result_id=record.segment.facts.result_id,
            completed=self._kept(record),
            prior_accounting=list(record.spent),
            spend=record.known_spend,
            results_file=earlier.path.name,
            forced=tuple(forced),
        )
        return StartedResult(record.segment.facts, sink, resumed)

    def unused(self) -> list[SegmentRecord]:
        """Segments of the earlier attempt this command did not continue (with items)."""
        if self.previous is None:
            return []
        return [r for r in self.previous.segments if r.number not in self.used and r.items]

    def finish(self, *, complete: bool) -> None:
        """Close the journal (see :meth:`_finish`), then release its lock: the lock is held
        until the journal is deleted or complete, so no other process reads it half-done."""
        try:
            self._finish(complete=complete)
        finally:
            if not self.abandoned:  # after a hard stop, workers may still write: held until exit
                self.lock.release()

    def _finish(self, *, complete: bool) -> None:
        """Close the journal; delete it when ``complete`` (the results file is in place and the
        run was not interrupted) and nothing of another eval is left in it, else say why it
        stays."""
        left = self.unused()
        if self.earlier_results is not None:
            self.earlier_results.keep_unused()
        self.writer.close(sync=not (complete and not left), release=not self.abandoned)
        if complete and not left:
            # The results file must be on disk before the journal stops being: a power cut
            # right after the unlink would otherwise lose both (issue 25 item 6).
            sync_file_and_directory(Path(self.output))
            self.path.unlink(missing_ok=True)
            return
        if not self.path.exists():
            return
        try:
            paid = read_journal(self.path).item_lines
        except JournalError:
            paid = 1
        if not paid:
            self.path.unlink(missing_ok=True)  # nothing settled: nothing to keep
            return
        if left:
            labels = ", ".join(sorted({r.segment.label for r in left}))
            print(
                f"[axl-eval] The journal {self.path} also holds settled items of {labels}, which this "
                f"command did not run; it was kept. `axl-eval recover {self.path} --output FILE` writes them out.",
                file=sys.stderr,
            )
        elif not complete and not self.refused and self.writer.failed is None:
            # (A journal that failed is not the whole story: the results say where the rest went.)
            print(
                f"[axl-eval] The journal {self.path} was kept: the same command with --resume continues "
                "the run without running or paying for its settled items again.",
                file=sys.stderr,
            )

    def write_settled(self, write: Callable[[list[dict[str, Any]]], None]) -> int:
        """The hard stop: flush, then hand ``write`` a result per segment built from the journal
        alone (marked ``recovered``); returns the number of items written (0: nothing called)."""
        self.abandoned = True
        self.writer.flush()
        journal = read_journal(self.path)
        results = recover_results(_keep_items(journal))
        if not results:
            return 0
        write(results)
        return sum(len(r["items"]) for r in results)


def _cannot_write(path: Path, output: Path, err: OSError) -> InputFileError:
    return InputFileError(
        f"cannot write the run journal {path} next to --output {output}: {err.strerror or err}",
        hint="pass an --output in a directory you can write",
    )


def _keep_items(journal: Journal) -> Journal:
    return replace(journal, segments=[r for r in journal.segments if r.items])


def stamp_resumed(result: dict[str, Any], resumed: Resumed | None) -> None:
    """``metadata.resumed``: how much of a result came from the journal."""
    if resumed is None:
        return
    result["metadata"]["resumed"] = {
        "itemsFromJournal": len(resumed.completed),
        "spendFromJournal": resumed.spend,
    }
    if resumed.results_file is not None:
        result["metadata"]["resumed"]["resultsFile"] = resumed.results_file
    if resumed.forced:
        result["metadata"]["resumed"]["forced"] = list(resumed.forced)
