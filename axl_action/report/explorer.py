"""Item-explorer data for the HTML report, packed: columns for the table, chunks for the detail.

The report carries three data elements (see docs/reports.md, "Packed item data"):

* ``axl-rows``: small plain JSON (scorer names, whether there is a baseline, item count,
  chunk size, the history strips' shape). The headline, gates and charts are static HTML and
  need none of the rest.
* ``axl-cols``: the table's columns (title, outcomes, flags, cost, latency, both sides'
  scores, regressed scorers, the cost as shown, flaky scorers) as one JSON object of arrays,
  raw-deflated and base85-encoded (:func:`b85`). Money is formatted here by :mod:`axl_action.formatting`,
  never by the page's script.
* ``axl-details``: the text an item's detail needs (input, annotations, both outputs, judge
  reasoning, errors), ``CHUNK_ITEMS`` items per independently raw-deflated JSON array, base85,
  chunks joined by ``.``. The page inflates a chunk with the browser's ``DecompressionStream``
  only when an item in it is opened or searched.

Each output, input, annotation and reasoning is stored cut to the report's text limit
(``--report-text-limit``, default ``REPORT_TEXT_LIMIT``), with a visible mark. Items are
paired by index, as the compare engine pairs them.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Collection, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from axl_action.formatting import spend_shown, usd
from axl_action.report.escape import cut_text, dumps_finite_bytes, json_for_script, to_text, truncate
from axl_action.schema import EvalItem, EvalResult, ItemCall, ItemRepeat, item_key
from axl_action.schema.view import DEFAULT_PASS_SCORE, item_columns, pass_counts

FLAG_REGRESSED = 1
FLAG_IMPROVED = 2
FLAG_CHANGED = 4
FLAG_FAILED = 8
FLAG_BUDGET = 16
FLAG_SKIPPED = 32
FLAG_SCORER_ERRORS = 64
FLAG_FLAKY = 128

#: Detail JSON larger than this is deflated on worker threads, the rest inline.
PARALLEL_ABOVE = 1_000_000
#: zlib level: 6 costs ~3x the time of 1 for ~15% smaller output on eval text.
COMPRESS_LEVEL = 6
#: Deflate threads (bounded by the CPU count).
COMPRESS_WORKERS = 4
#: Items per detail chunk: the unit the page inflates when an item is opened.
CHUNK_ITEMS = 1000
#: The default longest output/input kept in the report (characters; 0: no limit).
REPORT_TEXT_LIMIT = 20_000
#: The packed elements' ``data-encoding``.
PACKED = "deflate-raw+base85"
#: The base85 digits 0..84: printable ASCII without ``< > & " ' ` \\ -`` and ``.``. Without
#: ``<`` no ``</script`` or ``<!--`` can occur in the element's text; ``.`` separates chunks.
B85_DIGITS = "".join(c for c in map(chr, range(0x21, 0x7F)) if c not in "<>&\"'`\\-.")
_B85_BYTES = np.frombuffer(B85_DIGITS.encode("ascii"), dtype=np.uint8)
TITLE_CHARS = 100
REASON_KEYS = ("reasoning", "reason", "explanation", "rationale")


@dataclass(frozen=True)
class ExplorerHistory:
    """Per candidate item, its recent baseline scores and the scorers it is flaky for
    (``axl_action.history.panel.item_history``)."""

    labels: list[str]
    """The baseline runs the strips cover, oldest first (short commits)."""
    strips: npt.NDArray[np.float64]
    """Scores, shape (items, scorers, runs): each item's score per scorer in each of those
    runs (NaN: none)."""
    flaky: list[list[int]]
    """Per item: indices of the scorers it is flaky for."""


def b85(data: bytes) -> str:
    """``data`` in base85 with the digits of :data:`B85_DIGITS`: each 4 bytes (big-endian) as
    5 digits, most significant first; a last group of k < 4 bytes is zero-padded and written
    as its first k + 1 digits (as ``base64.b85encode`` does). 5 characters per 4 bytes against
    base64's 5.33, decoded by the page in one pass."""
    pad = -len(data) % 4
    words = np.frombuffer(data + b"\0" * pad, dtype=">u4").astype(np.uint64)
    digits = np.empty((len(words), 5), dtype=np.uint8)
    for k in range(4, -1, -1):
        digits[:, k] = words % 85
        words //= 85
    text = _B85_BYTES[digits].tobytes()
    return text[: len(text) - pad].decode("ascii")


def pack_bytes(data: bytes) -> str:
    """``data`` as the packed elements carry it (:data:`PACKED`): raw deflate, then base85."""
    packer = zlib.compressobj(COMPRESS_LEVEL, zlib.DEFLATED, -15)
    return b85(packer.compress(data) + packer.flush())


#: ``strips`` travel as int32 thousandths (NaN: this value), packed like the item data.
STRIP_NONE = -(2**31)


def encode_strips(strips: npt.NDArray[np.float64]) -> str:
    """The score strips as little-endian int32 thousandths, packed (:func:`pack_bytes`).

    Scores are stored with three decimals, so thousandths are exact; binary keeps 10,000
    items × 4 scorers × 20 runs to a few hundred kilobytes and costs no JSON encoding.
    """
    with np.errstate(invalid="ignore"):
        scaled = np.where(np.isnan(strips), STRIP_NONE, np.round(strips * 1000))
    return pack_bytes(np.clip(scaled, STRIP_NONE, 2**31 - 1).astype("<i4").tobytes())


@dataclass(frozen=True)
class ExplorerPayload:
    """The bodies of the report's data elements."""

    rows_json: str
    """``axl-rows``: scorer names, baseline or not, item count, chunk size (escaped JSON)."""
    columns_text: str
    """``axl-cols``: the table's columns, base85 of raw-deflated JSON."""
    details_text: str
    """``axl-details``: per-chunk base85 of raw-deflated JSON arrays, joined by ``.``."""
    items: int
    """Number of items."""
    chunk_items: int = CHUNK_ITEMS
    """Items per detail chunk."""
    history_text: str = ""
    """The explorer's score strips (:func:`encode_strips`), empty without a history."""
    details_encoding: str = PACKED
    """``data-encoding`` of the packed elements."""


def display_text(value: Any) -> str:
    """An output or input for reading: strings verbatim, structures pretty-printed."""
    return to_text(value, indent=2)


def _raw(value: Any, limit: int) -> Any:
    """A JSON value for the detail payload: strings cut to ``limit``; a structure whose JSON
    is longer than ``limit`` becomes its pretty-printed text, cut; the rest as-is."""
    if isinstance(value, str):
        return cut_text(value, limit)
    if limit <= 0 or value is None or isinstance(value, bool | int | float):
        return value
    try:
        size = len(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS))
    except TypeError:  # orjson.JSONEncodeError is one
        size = limit + 1
    return value if size <= limit else cut_text(display_text(value), limit)


def _repeats_detail(repeats: Sequence[ItemRepeat], scorers: list[str], limit: int) -> dict[str, Any]:
    """An item's repeats for its detail: each scorer's passed/tried (the gate's one rule,
    ``schema.view.pass_counts``) and per repeat its outcome, scores, output and error."""
    columns = item_columns([run.to_wire() for run in repeats], scorers)
    counts = [pass_counts(columns, name) for name in scorers]
    return {
        "ps": DEFAULT_PASS_SCORE,
        "pass": [f"{c.passed}/{c.tried}" if c.tried else "—" for c in counts],
        "runs": [
            [
                run.outcome,
                [run.scores.get(s) for s in scorers],
                _raw(run.output, limit),
                cut_text(run.error or "", limit),
            ]
            for run in repeats
        ],
    }


def _call_row(call: ItemCall) -> list[Any]:
    """One row of the item detail's "Model calls" table (templates/report.js, ``calls``):
    model, purpose, input and output tokens, cost as read, wire ms, tools, outcome, repeat."""
    if call.outcome == "replayed":
        cost = f"$0 (replayed, {usd(call.certified_cost)} certified)"
    elif call.outcome == "unknown":
        cost = f"unknown ({call.reason or 'no cost'})"
    else:
        cost = usd(call.cost)
    return [
        call.model,
        call.purpose,
        call.input_tokens,
        call.output_tokens,
        cost,
        call.wire_ms,
        ", ".join(call.tools or ()),
        call.outcome,
        call.repeat,
    ]


#: A detail's ``it``: its input is the item's title (a string), or the title's JSON.
INPUT_IS_TITLE = 1
INPUT_IS_TITLE_JSON = 2


def _title_and_input(value: Any, limit: int) -> tuple[str, dict[str, Any]]:
    """The item's title (its input on one line, cut to ``TITLE_CHARS``) and its detail's input
    field: ``{"in": value}`` (cut to ``limit``), or, when the title already is the whole input,
    ``{"it": INPUT_IS_TITLE}`` / ``{"it": INPUT_IS_TITLE_JSON}`` so it is stored once."""
    text = value if isinstance(value, str) else to_text(value)
    title = truncate(" ".join(text[: TITLE_CHARS * 4].split()), TITLE_CHARS)
    if title == text and value is not None:
        if isinstance(value, str):
            return title, {"it": INPUT_IS_TITLE}
        try:
            same = orjson.loads(text) == value  # NaN (not JSON) and default=str values differ
        except orjson.JSONDecodeError:
            same = False
        if same:
            return title, {"it": INPUT_IS_TITLE_JSON}
    return title, {"in": _raw(value, limit)}


def reasoning_of(metadata: dict[str, Any] | None) -> str:
    """A scorer's explanation: the usual reasoning key, else its whole metadata as JSON."""
    if not metadata:
        return ""
    for key in REASON_KEYS:
        value = metadata.get(key)
        if isinstance(value, str) and value:
            rest = {k: v for k, v in metadata.items() if k != key}
            return value + ("\n\n" + display_text(rest) if rest else "")
    return display_text(metadata)


def _failure_text(item: EvalItem) -> str:
    if item.bucket == "completed":
        return ""
    parts = [item.error or item.bucket]
    f = item.failure
    if f is not None:
        bits = [f.name]
        if f.provider:
            bits.append(f"provider {f.provider}")
        if f.status is not None:
            bits.append("network error" if f.status == 0 else f"HTTP {f.status:g}")
        if f.retryable is not None:
            bits.append("retryable" if f.retryable else "not retryable")
        if f.request_id:
            bits.append(f"request {f.request_id}")
        parts.append(", ".join(bits))
    return "\n".join(parts)


def _item_cost(item: EvalItem | None) -> float | None:
    """Known spend of the item (for sorting); None when it holds no cost at all."""
    if item is None:
        return None
    if item.accounting is not None:
        return item.accounting.known_cost
    total = (item.cost or 0) + (item.scorer_cost or 0)
    return total if item.cost is not None or item.scorer_cost is not None else None


class _Money:
    """``usd`` of each distinct amount once: a suite's items share a handful of costs, and
    formatting one is most of an item's share of the render."""

    def __init__(self) -> None:
        self.texts: dict[float | None, str] = {}

    def usd(self, amount: float | None) -> str:
        text = self.texts.get(amount)
        if text is None:
            text = self.texts[amount] = usd(amount)
        return text

    def spend(self, total: float | None, item: EvalItem) -> str:
        """:func:`spend_shown` of ``total`` with the item's accounting."""
        return spend_shown(total, item.accounting, self.usd(total))

    def cost_cell(self, item: EvalItem | None, cost: float | None) -> str:
        """The Cost cell of ``item`` (its known spend ``cost``): ``$0.00128``, ``unpriced``,
        ``unknown`` or ``≥ $0.002`` (one money printer)."""
        return "—" if item is None else self.spend(cost, item)


def _models_of(item: EvalItem) -> list[str]:
    names = list(item.timing or {})
    used = (item.metadata or {}).get("models")
    if isinstance(used, list):
        names += [m for m in used if isinstance(m, str)]
    return list(dict.fromkeys(names))


def _unknown_spend(item: EvalItem, unpriced: Collection[str]) -> str | None:
    """``1 unpriced_model (no price for openai:x)`` for an item whose spend is not all known."""
    acc = item.accounting
    if acc is None or acc.completeness == "complete":
        return None
    text = ", ".join(f"{n} {r}" for r, n in acc.reasons.items()) or acc.completeness
    missing = [m for m in _models_of(item) if m in unpriced] if acc.reasons.get("unpriced_model") else []
    return text + (f" (no price for {', '.join(missing)})" if missing else "")


class _DetailSink:
    """Collects detail records in chunks and deflates each chunk on its own.

    zlib releases the GIL, so once the payload is known to be large, chunk k is compressed on
    a worker thread while the caller builds chunk k+1. Chunks are JSON arrays; the packed ones
    are joined by ``.`` (not a base85 digit) and the page inflates the one it needs.
    """

    def __init__(self, chunk_items: int = CHUNK_ITEMS) -> None:
        self.chunk_items = chunk_items
        self.buffer: list[dict[str, Any]] = []
        self.size = 0
        self.futures: list[Future[str] | str] = []
        self.pool: ThreadPoolExecutor | None = None

    def add(self, record: dict[str, Any]) -> None:
        self.buffer.append(record)
        if len(self.buffer) >= self.chunk_items:
            self._flush()

    def _flush(self) -> None:
        if not self.buffer:
            return
        text = dumps_finite_bytes(self.buffer)
        self.buffer = []
        self.size += len(text)
        if self.pool is None and self.size > PARALLEL_ABOVE:
            self.pool = ThreadPoolExecutor(max_workers=max(1, min(COMPRESS_WORKERS, os.cpu_count() or 1)))
        self.futures.append(self.pool.submit(pack_bytes, text) if self.pool is not None else pack_bytes(text))

    def finish(self) -> str:
        """The details element's text: the packed chunks joined by ``.``."""
        self._flush()
        try:
            return ".".join(f if isinstance(f, str) else f.result() for f in self.futures)
        finally:
            if self.pool is not None:
                self.pool.shutdown()


def pack_json(data: Any) -> str:
    """``data`` as packed compact JSON (NaN and infinities as null)."""
    return pack_bytes(dumps_finite_bytes(data))


def _paired_baseline(
    n: int, b_items: Sequence[EvalItem], pairs: Sequence[int | None] | None
) -> list[EvalItem | None]:
    """Per candidate item, the baseline item it pairs with (None: not in the baseline)."""
    if pairs is None:
        return [b_items[i] if i < len(b_items) else None for i in range(n)]
    at = [pairs[i] if i < len(pairs) else None for i in range(n)]
    return [b_items[bj] if bj is not None and bj < len(b_items) else None for bj in at]


def _regressed_scorers(scorers: list[str], regressions: Collection[tuple[int, str]]) -> dict[int, list[int]]:
    """Per candidate item, the sorted indices of its regressed scorers (known scorers only)."""
    index_of = {name: k for k, name in enumerate(scorers)}
    found: dict[int, set[int]] = {}
    for j, name in regressions:
        if name in index_of:
            found.setdefault(j, set()).add(index_of[name])
    return {j: sorted(ks) for j, ks in found.items()}


def _scorer_entries(
    c_details: dict[str, Any], b_details: dict[str, Any], scorers: list[str], errors: list[str], cap: int
) -> tuple[list[dict[str, Any] | None], bool]:
    """An item's per-scorer detail (outcome, both sides' reasoning, error) and whether any skipped."""
    skipped = False
    by_scorer: list[dict[str, Any] | None] = []
    for k, name in enumerate(scorers):
        cd = c_details.get(name)
        bd = b_details.get(name)
        if cd is not None and (cd.skipped or cd.outcome == "skipped"):
            skipped = True
        entry: dict[str, Any] = {}
        if cd is not None and cd.outcome:
            entry["o"] = cd.outcome
        cr = reasoning_of(cd.metadata) if cd is not None else ""
        br = reasoning_of(bd.metadata) if bd is not None else ""
        if cr:
            entry["cr"] = cut_text(cr, cap)
        if br:
            entry["br"] = cut_text(br, cap)
        if cd is not None and cd.outcome == "failed" and k < len(errors):
            entry["ce"] = truncate(errors[k], 2000)
        by_scorer.append(entry or None)
    return by_scorer, skipped


def _error_text(item: EvalItem, errors: list[str]) -> str:
    """The detail's error box: the item's failure, then its scorer errors ("" when neither)."""
    err = _failure_text(item)
    if errors:
        err = (err + "\n" if err else "") + "Scorer errors:\n" + "\n".join(f"- {e}" for e in errors)
    return err


def _add_accounting(detail: dict[str, Any], item: EvalItem, unpriced: Collection[str]) -> None:
    """The detail's token, operation and unknown-spend fields, from the item's accounting."""
    acc = item.accounting
    if acc is None:
        return
    detail["tok"] = [
        int(acc.usage.input_tokens),
        int(acc.usage.output_tokens),
        int(acc.usage.reasoning_tokens),
    ]
    detail["ops"] = [acc.operations.settled, acc.operations.unknown, acc.operations.denied]
    unknown = _unknown_spend(item, unpriced)
    if unknown:
        detail["unp"] = unknown


@dataclass(frozen=True)
class _DetailOptions:
    """What every item's detail record is built with, shared by the whole report."""

    scorers: list[str]
    cap: int
    unpriced: Collection[str]
    money: _Money


def _stream_details(
    sink: _DetailSink,
    items: Sequence[EvalItem],
    paired: Sequence[EvalItem | None],
    same: Sequence[bool],
    opts: _DetailOptions,
) -> tuple[list[str], list[bool]]:
    """Each item's detail record into ``sink``; returns the titles and skipped marks on the way.

    The titles and skipped marks fall out of the detail's input and scorer work, so they are
    taken here rather than computed again for the table.
    """
    scorers, cap, money = opts.scorers, opts.cap, opts.money
    titles: list[str] = []
    skipped: list[bool] = []
    for item, b, same_output in zip(items, paired, same, strict=True):
        errors = item.scorer_errors or []
        b_details = (b.score_details or {}) if b is not None else {}
        by_scorer, any_skipped = _scorer_entries(item.score_details or {}, b_details, scorers, errors, cap)
        skipped.append(any_skipped)
        title, input_field = _title_and_input(item.input, cap)
        titles.append(title)
        # Structured values stay JSON values; the page pretty-prints them on demand, which
        # is far cheaper than Python's indenting encoder for 100,000 items.
        detail: dict[str, Any] = {
            "key": item_key(item.input),
            **input_field,
            "co": _raw(item.output, cap),
            "sc": by_scorer,
            "gc": money.spend(item.cost, item) if item.cost is not None else "—",
            "jc": money.usd(item.scorer_cost),
        }
        if item.has("annotations"):
            detail["an"] = _raw(item.annotations, cap)
        if b is not None:
            if same_output:
                detail["bs"] = 1  # baseline output identical: not stored twice
            else:
                detail["bo"] = _raw(b.output, cap)
            detail["bc"] = money.cost_cell(b, _item_cost(b))
            detail["bl"] = b.duration
        err = _error_text(item, errors)
        if err:
            detail["err"] = cut_text(err, cap)
        _add_accounting(detail, item, opts.unpriced)
        if item.diagnostics is not None:
            detail["refs"] = [op.operation_id for op in item.diagnostics.operations]
        if item.repeats:
            detail["rp"] = _repeats_detail(item.repeats, scorers, cap)
        if item.calls:
            detail["calls"] = [_call_row(call) for call in item.calls]
        sink.add(detail)
    return titles, skipped


@dataclass(frozen=True)
class _ItemMarks:
    """Per item, what its flags are read from besides the item and its pair."""

    same: Sequence[bool]
    regressed: Sequence[list[int] | int]
    improved: Collection[int]
    flaky: Sequence[list[int] | int]
    skipped: Sequence[bool]


def _flag_column(
    items: Sequence[EvalItem], paired: Sequence[EvalItem | None], marks: _ItemMarks
) -> list[int]:
    """Each item's ``FLAG_*`` bits, for the table's filter chips."""
    flag_col: list[int] = []
    for i, (item, b) in enumerate(zip(items, paired, strict=True)):
        flags = 0
        if marks.regressed[i]:
            flags |= FLAG_REGRESSED
        if i in marks.improved:
            flags |= FLAG_IMPROVED
        if b is not None and (not marks.same[i] or item.bucket != b.bucket):
            flags |= FLAG_CHANGED
        if item.bucket in ("failed", "cancelled"):
            flags |= FLAG_FAILED
        if item.bucket in ("budget_skipped", "budget_interrupted"):
            flags |= FLAG_BUDGET
        if item.scorer_errors:
            flags |= FLAG_SCORER_ERRORS
        if marks.flaky[i]:
            flags |= FLAG_FLAKY
        if marks.skipped[i]:
            flags |= FLAG_SKIPPED
        flag_col.append(flags)
    return flag_col


def _table_columns(
    items: Sequence[EvalItem],
    paired: Sequence[EvalItem | None],
    scorers: list[str],
    titles: list[str],
    marks: _ItemMarks,
    money: _Money,
) -> dict[str, Any]:
    """The table's columns (see templates/report.js, "columns"), in the order the page reads them."""
    costs = [_item_cost(item) for item in items]
    return {
        "title": titles,
        "out": [item.bucket for item in items],
        "bout": [b.bucket if b is not None else None for b in paired],
        "flags": _flag_column(items, paired, marks),
        "cost": costs,
        "lat": [item.duration for item in items],
        "b": [[b.scores.get(name) if b is not None else None for b in paired] for name in scorers],
        "c": [[item.scores.get(name) for item in items] for name in scorers],
        "rs": marks.regressed,
        "ct": [money.cost_cell(item, cost) for item, cost in zip(items, costs, strict=True)],
    }


def build_explorer(
    candidate: EvalResult,
    baseline: EvalResult | None,
    scorers: list[str],
    *,
    regressions: Collection[tuple[int, str]] = (),
    improvements: Collection[tuple[int, str]] = (),
    page_size: int = 100,
    pairs: Sequence[int | None] | None = None,
    unpriced: Collection[str] = (),
    history: ExplorerHistory | None = None,
    text_limit: int = REPORT_TEXT_LIMIT,
    chunk_items: int = CHUNK_ITEMS,
) -> ExplorerPayload:
    """Columns and details for every candidate item.

    Candidate item ``i`` pairs with baseline item ``pairs[i]`` (None: not in the baseline),
    or with baseline item ``i`` when ``pairs`` is not given. ``unpriced`` names the models
    without a price, for an item's "Unknown spend" line. With ``history``, items carry the
    flaky flag and the ``fk`` column (flaky scorer indices or 0), details the score strip.
    ``text_limit`` cuts each output, input, annotation, reasoning and error (0: no limit).
    """
    items = candidate.items
    n = len(items)
    paired = _paired_baseline(n, baseline.items if baseline is not None else [], pairs)
    same = [b is not None and b.output == item.output for item, b in zip(items, paired, strict=True)]
    money = _Money()
    sink = _DetailSink(chunk_items)
    # Details first: their chunks deflate on worker threads while the columns are built.
    titles, skipped = _stream_details(
        sink, items, paired, same, _DetailOptions(scorers, text_limit, unpriced, money)
    )
    regressed_at = _regressed_scorers(scorers, regressions)
    known = set(scorers)
    flaky = history.flaky if history is not None else []
    marks = _ItemMarks(
        same=same,
        regressed=[regressed_at.get(i) or 0 for i in range(n)],
        improved={j for j, name in improvements if name in known},
        flaky=[(flaky[i] if i < len(flaky) else None) or 0 for i in range(n)],
        skipped=skipped,
    )
    columns = _table_columns(items, paired, scorers, titles, marks, money)
    meta: dict[str, Any] = {
        "v": 2,
        "scorers": scorers,
        "hasBaseline": baseline is not None,
        "pageSize": page_size,
        "items": n,
        "chunkItems": chunk_items,
    }
    history_text = ""
    if history is not None:
        columns["fk"] = marks.flaky
        shape = history.strips.shape
        meta["history"] = {"labels": history.labels, "scorers": int(shape[1]), "points": int(shape[2])}
        history_text = encode_strips(history.strips)
    return ExplorerPayload(
        rows_json=json_for_script(meta),
        columns_text=pack_json(columns),
        details_text=sink.finish(),
        items=n,
        chunk_items=chunk_items,
        history_text=history_text,
    )
