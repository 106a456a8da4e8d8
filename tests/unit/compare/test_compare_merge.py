"""merge_results: shard-stamp validation and a recomputed whole-dataset result."""

from __future__ import annotations

from typing import Any

import pytest
from compare_builders import fingerprint, make_run

from axl_action.compare.merge import merge_files, merge_results
from axl_action.errors import CompareError
from axl_action.schema import EvalResult

ROWS: list[Any] = [
    {"a": 0.1, "b": 1},
    {"a": 0.2, "b": None},
    "failed",
    {"a": 0.4, "b": "skip"},
    {"a": 0.5, "b": 1},
    {"a": 0.6, "b": 0},
    {"a": 0.7, "b": 1},
]
TYPES = {"a": "deterministic", "b": "llm"}
FP = fingerprint(items=len(ROWS), scorers=TYPES)


def shard(
    index: int, count: int, *, rows: list[Any] = ROWS, fp: dict[str, Any] = FP, **kw: Any
) -> EvalResult:
    chosen = [j for j in range(len(rows)) if j % count == index - 1]
    return make_run(
        [rows[j] for j in chosen],
        run_id=f"s{index}",
        inputs=[{"id": j} for j in chosen],
        types=TYPES,
        names=list(TYPES),
        fingerprint=fp,
        metadata={"shard": {"index": index, "count": count, "datasetItems": len(rows)}},
        cost=0.25 * index,
        **kw,
    )


def test_merge_restores_dataset_order_and_recomputes_the_summary() -> None:
    shards = [shard(i, 3) for i in (2, 3, 1)]
    merged = merge_results([(f"s{s.id}.json", s) for s in shards], result_id="m")
    whole = make_run(ROWS, types=TYPES, names=list(TYPES))
    assert [i.input for i in merged.items] == [{"id": j} for j in range(len(ROWS))]
    assert [i.scores for i in merged.items] == [i.scores for i in whole.items]
    assert merged.summary.to_wire()["scorers"] == whole.summary.to_wire()["scorers"]
    assert merged.summary.coverage is not None and merged.summary.coverage.items.failed == 1
    assert merged.summary.count == 7 and merged.summary.failures == 1
    assert merged.summary.item_error_rate is not None and merged.summary.item_error_rate.attempted == 7
    assert merged.accounting is not None and merged.accounting.known_cost == pytest.approx(1.5)
    assert merged.total_cost == pytest.approx(1.5)
    assert merged.metadata["merged"] == {"shards": 3, "datasetItems": 7, "ids": ["s1", "s2", "s3"]}
    assert "shard" not in merged.metadata and merged.metadata["fingerprint"] == FP
    assert merged.id == "m"


def test_one_incomplete_shard_taints_the_merged_accounting() -> None:
    shards = [shard(1, 2), shard(2, 2, completeness="incomplete", reasons={"unpriced_model": 1})]
    merged = merge_results([(s.id, s) for s in shards])
    assert merged.accounting is not None and merged.accounting.completeness == "incomplete"
    assert merged.unpriced is True


def test_missing_shard_is_named() -> None:
    with pytest.raises(CompareError, match=r"missing shard\(s\) 2/3"):
        merge_results([("a.json", shard(1, 3)), ("c.json", shard(3, 3))])


def test_duplicated_shard_names_both_files() -> None:
    with pytest.raises(CompareError, match=r"shard 1/2 is given more than once \(a.json, b.json\)"):
        merge_results([("a.json", shard(1, 2)), ("b.json", shard(1, 2)), ("c.json", shard(2, 2))])


def test_mismatched_counts_and_datasets_are_refused() -> None:
    with pytest.raises(CompareError, match=r"is a shard of 3 but a\.json is a shard of 2"):
        merge_results([("a.json", shard(1, 2)), ("b.json", shard(2, 3))])
    other = dict(FP, dataset="sha256:else")
    with pytest.raises(CompareError, match="dataset fingerprints differ"):
        merge_results([("a.json", shard(1, 2)), ("b.json", shard(2, 2, fp=other))])


def test_unstamped_and_truncated_files_are_refused() -> None:
    with pytest.raises(CompareError, match=r"full.json has no shard stamp \(metadata.shard\)"):
        merge_results([("full.json", make_run(ROWS, names=list(TYPES)))])
    short = shard(1, 2)
    short.items.pop()
    with pytest.raises(CompareError, match=r"holds 3 items, expected 4 of a 7-item dataset"):
        merge_results([("a.json", short), ("b.json", shard(2, 2))])


def test_multi_run_shards_merge_run_by_run() -> None:
    files = [("a.json", [shard(1, 2), shard(1, 2)]), ("b.json", [shard(2, 2), shard(2, 2)])]
    merged = merge_files(files)
    assert len(merged) == 2 and all(len(m.items) == 7 for m in merged)
    with pytest.raises(CompareError, match=r"holds 1 run\(s\) but a.json holds 2"):
        merge_files([("a.json", [shard(1, 2), shard(1, 2)]), ("b.json", [shard(2, 2)])])


def test_plain_results_are_labelled_by_id() -> None:
    merged = merge_results([shard(2, 2), shard(1, 2)])
    assert len(merged.items) == 7
    with pytest.raises(CompareError, match=r"missing shard\(s\) 2/2"):
        merge_results([shard(1, 2)])
    with pytest.raises(
        CompareError,
        match=r"shard 1/2 is given more than once \(result s1, result s1\)",
    ):
        merge_results([shard(1, 2), shard(1, 2), shard(2, 2)])
