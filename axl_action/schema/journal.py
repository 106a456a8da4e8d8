"""The run journal's file format: ``<output>.journal.jsonl`` (see ``evals/journal/``).

One JSON object per line, two kinds:

* a **segment** line (:class:`JournalSegment`) starts the record of one result of the
  command (one eval, one of its ``--runs``). It holds what a resume must check before trusting
  the lines that follow: the eval's identity, the dataset and scorer fingerprints, the flags
  and the budget, plus the facts the runner fixes before the first item runs (everything of
  the result that does not come from the items). The journal's first line is always one.
* an **item** line (:class:`JournalItemLine`): ``{"segment": n, "index": i, "item": {...}}``
  where ``item`` is exactly the wire item the results file holds at ``items[i]`` of segment
  ``n``'s result. A later line for the same index replaces an earlier one (a resumed run that
  re-ran an interrupted item).

Readers tell the kinds apart by the ``format`` key, which only segment lines have.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

JOURNAL_FORMAT = "axl-eval-journal/1"
"""Version of the journal layout; a reader refuses any other."""


class JournalModel(BaseModel):
    """Base of the journal's models: camelCase keys like the results file, unknown keys refused."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        populate_by_name=True,
        alias_generator=to_camel,
        use_attribute_docstrings=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON object of this model (camelCase keys, ``None`` fields left out)."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class ShardFacts(JournalModel):
    """``metadata.shard`` of a ``--shard i/n`` run."""

    index: int = Field(ge=1)
    """The shard this run is, 1-based."""
    count: int = Field(ge=1)
    """How many shards the dataset is split into."""
    dataset_items: int = Field(ge=0)
    """Items of the whole dataset, before sharding."""


class RunGroup(JournalModel):
    """Where a result sits in a ``--runs N`` batch."""

    group_id: str
    """``metadata.runGroupId`` shared by the batch."""
    index: int = Field(ge=0)
    """``metadata.runIndex``, 0-based."""
    count: int = Field(ge=1)
    """N of ``--runs N``."""


class RunFacts(JournalModel):
    """What the runner fixes before the first item runs: every part of a run's result that does
    not come from its items. The runner builds its result from these and the items; so does
    ``axl-eval recover`` from a journal alone."""

    result_id: str
    """``id`` of the result."""
    dataset: str
    """The dataset's name (``dataset``)."""
    workflow: str
    """The eval's workflow label (the ``metadata.workflows`` fallback)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """The eval's own metadata, JSON-safe, copied first into ``metadata``."""
    scorer_types: dict[str, Literal["llm", "deterministic"]]
    """Scorer name -> type, in scorer order (``metadata.scorerTypes``)."""
    dropped_annotation_keys: list[str] = Field(default_factory=list)
    """``metadata.droppedAnnotationKeys`` of the dataset loader."""
    fingerprint: dict[str, Any]
    """``metadata.fingerprint`` (dataset, datasetItems, scorers, scorerSet, config); ``dataset``
    is absent when it could not be computed."""
    shard: ShardFacts | None = None
    """``metadata.shard`` of a ``--shard i/n`` run."""
    items: int = Field(ge=0)
    """Items this run has (after sharding): a complete result holds this many."""
    item_error_limit: float = Field(ge=0, le=1)
    """The item error-rate gate (``--max-item-error-rate`` or the eval's)."""
    scorer_error_limit: float | None = Field(default=None, ge=0, le=1)
    """The eval's ``fail_on_scorer_error_rate``, if any."""
    budget: str | None = None
    """The run budget as given (``"$1"``), if any."""
    repeats: int = Field(default=1, ge=1)
    """Times each item runs (``repeats`` / ``--repeats``); ``metadata.repeats`` when above 1."""


class JournalFlags(JournalModel):
    """The command's flags that change what a resumed run would produce."""

    shard: str | None = None
    """``--shard i/n`` as given."""
    runs: int = Field(default=1, ge=1)
    """``--runs N``."""
    scorers: list[str] | None = None
    """``--scorers a,b``."""
    budget: str | None = None
    """``--budget`` (``None``: the eval's own, or none)."""
    pricing: str | None = None
    """``sha256:`` of the ``--pricing`` file's bytes, if one was given."""
    max_item_error_rate: float | None = None
    """``--max-item-error-rate``."""
    repeats: int | Literal["auto"] | None = None
    """``--repeats N`` or ``auto`` (``None``: the eval's own)."""
    max_repeats: int | None = None
    """``--max-repeats`` of ``--repeats auto``."""
    baseline: str | None = None
    """``sha256:`` of the ``--baseline`` file of ``--repeats auto``, if one was given."""


class JournalSegment(JournalModel):
    """The line that starts the record of one result (the journal's first line is one)."""

    format: Literal["axl-eval-journal/1"] = "axl-eval-journal/1"
    """Version of the journal layout."""
    command: Literal["run", "rescore"]
    """The command that wrote the segment."""
    key: str = Field(min_length=1)
    """Which result of the command this is: the eval's label, plus ``run r/N`` for ``--runs``.
    A resume continues the segment with the same key."""
    label: str
    """The eval as the console names it (its file, and ``#name`` when a file has several)."""
    started: str
    """When the run started (ISO 8601, UTC)."""
    tool: str
    """Version of axl-eval-action that wrote the segment."""
    flags: JournalFlags
    """The command's flags."""
    facts: RunFacts
    """The eval's identity, fingerprints, budget and every other fact of the result that does
    not come from its items."""
    group: RunGroup | None = None
    """Set for one run of a ``--runs N`` batch."""
    source_id: str | None = None
    """``rescore``: the ``id`` of the result whose outputs are rescored."""
    sources: dict[str, str] | None = None
    """``sha256:`` of the eval file and of the local modules importing it loaded, by path
    relative to its folder (``evals/loader.py``): a resume refuses other code unless
    ``--force``. Absent in journals written before source hashes were recorded."""
    rescore_head: dict[str, Any] | None = None
    """``rescore``: the rescored result's fields that do not come from its items (``id``,
    ``dataset``, ``metadata``, ``accounting.source``, the source's timing)."""


class JournalItemLine(JournalModel):
    """One settled item (documentation of the line's shape; the reader checks it by hand)."""

    segment: int = Field(ge=0)
    """Number of the segment line it belongs to (0 for the journal's first segment)."""
    index: int = Field(ge=0)
    """Its position in the result's ``items``."""
    item: dict[str, Any]
    """The wire item, exactly as the results file holds it."""
