"""history.json: rows read off run views with the schema's counting rules, the compact file,
its bounds, and one clear refusal for every kind of bad file."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from history_synth import Suite, run_wire, timestamp

from axl_action.errors import InputFileError
from axl_action.history import (
    ARTIFACT_FILE_NAME,
    History,
    HistoryError,
    HistoryFile,
    append,
    decode,
    encode,
    history_bytes,
    history_entry,
    load_history,
    measure_fingerprint,
    parse_history,
    write_history,
)
from axl_action.history.model import MAX_FILE_BYTES
from axl_action.schema import load_run_views, scorer_values
from axl_action.schema.view import RunView, item_error_rate, sample_counts, wire_view

LEGACY = Path(__file__).resolve().parents[2] / "fixtures" / "axl-eval-0.16.1"
SUITE = Suite(n=12, kinds={"judge": "levels", "exact": "deterministic"}, seed=2, day_sigma=0.05)


def view(k: int, suite: Suite = SUITE, **kw: Any) -> RunView:
    return wire_view(run_wire(suite, k, run_id=f"r{k}", timestamp=timestamp(k), **kw))


def history_of(count: int, suite: Suite = SUITE, **kw: Any) -> History:
    h = History(suite="default")
    prev = None
    for k in range(count):
        v = view(k, suite)
        h = append(h, history_entry([v], run_id=str(100 + k), commit=f"{k:040x}", previous=prev), **kw)
        prev = [v]
    return h


# ------------------------------------------------------------------ rows from run views


def test_a_row_is_read_with_the_schema_counting_rules() -> None:
    v = view(3, failed_items=(2, 5))
    entry = history_entry([v], run_id="7", commit="abc")
    row = entry.summary
    for name in ("judge", "exact"):
        values = scorer_values(v.items, name)
        counts = sample_counts(v.items, name)
        assert row.scorers[name].n == len(values) == 10
        assert row.scorers[name].mean == pytest.approx(float(values.mean()))
        assert (row.scorers[name].scored, row.scorers[name].failed) == (counts.scored, counts.failed)
    assert row.scorers["judge"].type == "llm" and row.scorers["exact"].type == "deterministic"
    rate = item_error_rate(v, 1.0)
    assert row.item_error_rate == pytest.approx(rate.failed / rate.attempted) == pytest.approx(2 / 12)
    assert row.latency_ms == v.header.summary.timing.mean  # type: ignore[union-attr]
    assert row.cost.known == 0.01 and row.cost.completeness == "complete" and row.cost.certified is None
    assert (row.run_id, row.commit, row.date, row.result_id) == ("7", "abc", timestamp(3), "r3")
    # Item scores: three decimals, NaN where the item errored; keys in item order.
    assert entry.keys == [f"id:item-{i:05d}" for i in range(12)]
    assert math.isnan(entry.scores["judge"][2]) and math.isnan(entry.scores["exact"][5])
    assert entry.scores["exact"][0] == v.items.column("exact").score[0]


def test_cost_certification_uses_the_compare_rule_against_the_previous_run() -> None:
    a, b = view(1), view(2)
    assert history_entry([b], previous=[a]).summary.cost.certified is True
    # A different dataset size: not the same work.
    other = view(3, Suite(n=10, kinds=SUITE.kinds, seed=2))
    row = history_entry([other], previous=[a]).summary
    assert row.cost.certified is False and row.cost.reason


def test_a_multi_run_result_is_one_row_averaged_over_runs() -> None:
    runs = [view(1), view(2), view(3)]
    row = history_entry(runs).summary
    assert row.runs == 3
    means = [float(scorer_values(r.items, "judge").mean()) for r in runs]
    assert row.scorers["judge"].mean == pytest.approx(sum(means) / 3)
    assert row.scorers["judge"].n == 36


def test_fingerprint_uses_metadata_else_the_names() -> None:
    a, b = view(1), view(2)
    assert measure_fingerprint(a.header) == measure_fingerprint(b.header)
    bigger = view(1, Suite(n=13, kinds=SUITE.kinds, seed=2))
    assert measure_fingerprint(bigger.header) != measure_fingerprint(a.header)
    legacy = load_run_views(LEGACY / "math20-baseline.json").runs
    row = history_entry(legacy).summary  # a TypeScript file: no fingerprint, no accounting
    assert row.fingerprint.startswith("sha256:") and row.cost.completeness == "unverified"
    again = history_entry(load_run_views(LEGACY / "math20-candidate.json").runs).summary
    assert again.fingerprint == row.fingerprint  # same dataset name, size and scorers


# ----------------------------------------------------------------------- the file


def test_round_trip_through_the_compact_file() -> None:
    h = history_of(6)
    data = history_bytes(h).data
    back = parse_history(data)
    assert len(back) == 6 and back.limit == 50 and back.suite == "default"
    for a, b in zip(h.entries, back.entries, strict=True):
        assert a.summary == b.summary and a.keys == b.keys
        for name in a.scores:
            np.testing.assert_array_equal(a.scores[name], b.scores[name])
    doc = json.loads(data)
    assert doc["keys"] == [f"id:item-{i:05d}" for i in range(12)]  # each key once
    assert all(row["keyRanges"] == [[0, 12]] for row in doc["rows"])
    # Whole numbers are written as integers, missing scores as null.
    assert set(doc["rows"][0]["scores"]["exact"]) <= {0, 1}
    HistoryFile.model_validate(doc)


def test_gzip_and_plain_files_read_the_same(tmp_path: Path) -> None:
    h = history_of(3)
    plain = write_history(tmp_path / "history.json", h)
    packed = write_history(tmp_path / ARTIFACT_FILE_NAME, h)
    assert packed.data[:2] == b"\x1f\x8b" and gzip.decompress(packed.data) == plain.data
    assert history_bytes(h, gzipped=True).data == packed.data  # deterministic bytes
    for name in ("history.json", ARTIFACT_FILE_NAME):
        assert [e.summary for e in load_history(tmp_path / name).entries] == [e.summary for e in h.entries]


def test_a_history_that_cannot_be_written_under_a_file_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("x")
    with pytest.raises(InputFileError, match=r"cannot write .*plain/history\.json"):
        write_history(tmp_path / "plain" / "history.json", history_of(2))


def test_append_keeps_the_newest_rows_and_replaces_a_rerun() -> None:
    h = history_of(5, limit=3)
    assert [e.summary.run_id for e in h.entries] == ["102", "103", "104"]
    again = append(h, history_entry([view(9)], run_id="103"))
    assert [e.summary.run_id for e in again.entries] == ["102", "104", "103"]
    assert again.entries[-1].summary.result_id == "r9"


def test_keys_of_changed_datasets_share_one_table() -> None:
    h = History()
    for k, n in enumerate((4, 6, 6, 3)):
        h = append(h, history_entry([view(k, Suite(n=n, kinds=SUITE.kinds, seed=2))], run_id=str(k)))
    doc = json.loads(encode(h).data)
    assert len(doc["keys"]) == 6
    assert [row["keyRanges"] for row in doc["rows"]] == [[[0, 4]], [[0, 6]], [[0, 6]], [[0, 3]]]
    assert [e.keys for e in decode(HistoryFile.model_validate(doc)).entries] == [e.keys for e in h.entries]


def test_the_writer_drops_old_item_scores_to_stay_under_its_target() -> None:
    h = history_of(8, Suite(n=400, kinds=SUITE.kinds, seed=4))
    full = encode(h)
    assert full.dropped == 0
    small = encode(h, target_bytes=len(full.data) // 2)
    assert 0 < small.dropped < 8 and len(small.data) <= len(full.data) // 2
    back = parse_history(small.data)
    kept = [e.keys is not None for e in back.entries]
    assert kept == [False] * small.dropped + [True] * (8 - small.dropped)  # the oldest go first
    assert all(e.summary == f.summary for e, f in zip(back.entries, h.entries, strict=True))


# ------------------------------------------------------------------ refusals


def _doc() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(history_bytes(history_of(2)).data)
    return data


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: "not json", "is not valid JSON"),
        (lambda d: {**d, "format": "something-else"}, 'is not an axl-eval history file (it has no "format"'),
        (lambda d: [d], "is not an axl-eval history file"),
        (
            lambda d: {**d, "version": 2},
            "written by a newer axl-eval (history format 2; this version reads 1)",
        ),
        (lambda d: {**d, "suite": "other"}, "is the history of suite 'other', not 'default'"),
        (lambda d: {**d, "rows": "oops"}, "at rows: Input should be a valid list"),
        (lambda d: {**d, "keys": d["keys"][:3]}, "is outside the 3 keys"),
        (lambda d: {**d, "limit": 1}, "2 rows exceed the file's limit of 1"),
        (lambda d: {**d, "extra": 1}, "at extra: Extra inputs are not permitted"),
    ],
)
def test_bad_files_are_refused_with_one_message(mutate: Any, message: str) -> None:
    doc = mutate(_doc())
    raw = doc.encode() if isinstance(doc, str) else json.dumps(doc).encode()
    with pytest.raises(HistoryError) as err:
        parse_history(raw, "h.json", suite="default")
    assert message in str(err.value) and str(err.value).startswith("h.json")


def test_row_level_problems_name_the_row() -> None:
    doc = _doc()
    doc["rows"][1]["scores"]["judge"] = doc["rows"][1]["scores"]["judge"][:-1]
    with pytest.raises(
        HistoryError, match=r"at rows\[1\]: Value error, scores\.judge holds 11 scores for 12 items"
    ):
        parse_history(json.dumps(doc).encode(), "h.json")
    doc = _doc()
    doc["rows"][0]["scorers"]["judge"]["mean"] = float("nan")
    with pytest.raises(HistoryError, match="is not valid JSON"):
        parse_history(json.dumps(doc).encode(), "h.json")  # NaN is not JSON


def test_a_gzip_bomb_stops_at_the_size_limit(tmp_path: Path) -> None:
    bomb = gzip.compress(b" " * (MAX_FILE_BYTES + 10), compresslevel=9)
    assert len(bomb) < 200_000
    with pytest.raises(HistoryError, match="larger than 64 MiB uncompressed"):
        parse_history(bomb, "bomb.json.gz")
    with pytest.raises(HistoryError, match="truncated gzip"):
        parse_history(gzip.compress(b"{}")[:-8], "cut.json.gz")


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="history file not found"):
        load_history(tmp_path / "nope.json")
    with pytest.raises(HistoryError, match="is a directory"):
        load_history(tmp_path)
