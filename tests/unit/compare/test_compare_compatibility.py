"""Item pairing by key and fingerprint compatibility (our extension beyond the reference)."""

from __future__ import annotations

from compare_builders import fingerprint, make_run

from axl_action.compare.engine import CompareOptions, compare_results

DET = {"a": "deterministic"}


def compare(base: object, cand: object) -> object:
    return compare_results(base, cand, CompareOptions(seed=2))  # type: ignore[arg-type]


def test_reordered_dataset_is_matched_by_key_not_by_position() -> None:
    inputs = [{"id": f"t{i}"} for i in range(4)]
    scores = [0.1, 0.4, 0.7, 1.0]
    base = make_run([{"a": s} for s in scores], inputs=inputs, types=DET)
    order = [2, 0, 3, 1]
    cand = make_run([{"a": scores[j]} for j in order], inputs=[inputs[j] for j in order], types=DET)
    result = compare_results(base, cand, CompareOptions(seed=2))
    assert result.regressions == [] and result.improvements == []
    assert result.scorers["a"].n == 4
    assert result.compatibility.items.mode == "key"
    assert result.compatibility.items.reordered is True
    assert result.compatibility.status == "changed"
    assert "items are in a different order; they were matched by key" in result.compatibility.messages


def test_added_and_removed_items_are_reported() -> None:
    base = make_run([{"a": 1}] * 3, inputs=[{"id": "x"}, {"id": "y"}, {"id": "z"}], types=DET)
    cand = make_run([{"a": 1}] * 3, inputs=[{"id": "x"}, {"id": "z"}, {"id": "new"}], types=DET)
    result = compare_results(base, cand, CompareOptions(seed=2))
    items = result.compatibility.items
    assert (items.mode, items.matched, items.removed, items.added) == ("key", 2, ["id:y"], ["id:new"])
    assert result.regressions == []
    assert any("only in the baseline: id:y" in m for m in result.compatibility.messages)
    # Position matching would have paired y with z and z with new; cost is still index-based.
    assert result.cost is not None and result.cost.certified


def test_key_matched_changes_carry_the_key_and_candidate_index() -> None:
    base = make_run([{"a": 1}, {"a": 1}], inputs=[{"id": "p"}, {"id": "q"}], types=DET)
    cand = make_run([{"a": 0}, {"a": 1}], inputs=[{"id": "q"}, {"id": "p"}], types=DET)
    result = compare_results(base, cand, CompareOptions(seed=2))
    assert [(c.item_index, c.candidate_index, c.key) for c in result.regressions] == [(1, 0, "id:q")]


def test_duplicate_keys_fall_back_to_position_with_a_reason() -> None:
    base = make_run([{"a": 1}, {"a": 1}], inputs=[{"id": "d"}, {"id": "d"}], types=DET)
    cand = make_run([{"a": 1}, {"a": 0}], inputs=[{"id": "e"}, {"id": "d"}], types=DET)
    result = compare_results(base, cand, CompareOptions(seed=2))
    assert result.compatibility.items.mode == "position"
    assert (
        result.compatibility.items.reason is not None
        and "more than once" in result.compatibility.items.reason
    )
    assert [c.item_index for c in result.regressions] == [1]


def test_inputs_without_ids_match_by_content_hash() -> None:
    inputs = [{"q": "hello"}, {"q": "world"}]
    base = make_run([{"a": 0.2}, {"a": 0.9}], inputs=inputs, types=DET)
    cand = make_run([{"a": 0.9}, {"a": 0.2}], inputs=inputs[::-1], types=DET)
    result = compare_results(base, cand, CompareOptions(seed=2))
    assert result.regressions == [] and result.compatibility.items.mode == "key"


def test_fingerprints_unknown_same_and_changed() -> None:
    rows = [{"a": 1}] * 3
    legacy = compare_results(make_run(rows), make_run(rows), CompareOptions(seed=1)).compatibility
    assert legacy.status == "unknown" and legacy.dataset.status == "unknown"
    fp = fingerprint()
    same = compare_results(
        make_run(rows, fingerprint=fp), make_run(rows, fingerprint=fp), CompareOptions(seed=1)
    )
    assert same.compatibility.status == "compatible" and same.compatibility.messages == []
    changed_fp = fingerprint(
        dataset="sha256:other",
        items=4,
        scorers={"a": "llm", "b": "llm"},
        pricingVersion="2026-12",
    )
    base_fp = fingerprint(pricingVersion="2026-11")
    result = compare_results(
        make_run(rows, fingerprint=base_fp), make_run(rows, fingerprint=changed_fp), CompareOptions(seed=1)
    ).compatibility
    assert result.status == "changed"
    assert result.dataset.status == "changed"
    assert result.scorers.added == ["b"] and result.scorers.type_changed == {"a": ["deterministic", "llm"]}
    assert result.pricing_version.to_wire() == {
        "status": "changed",
        "baseline": "2026-11",
        "candidate": "2026-12",
    }
    assert result.messages[0] == "dataset changed (3 -> 4 items): the two sides did not score the same items"
    assert any(m.startswith("pricing table changed (2026-11 -> 2026-12)") for m in result.messages)


def test_scorer_definition_change_is_named() -> None:
    rows = [{"a": 1}]
    base = fingerprint()
    cand = dict(fingerprint(), scorers="sha256:different")
    result = compare_results(
        make_run(rows, fingerprint=base), make_run(rows, fingerprint=cand), CompareOptions(seed=1)
    )
    assert result.compatibility.scorers.definitions_changed is True
    assert any("scorer definitions changed" in m for m in result.compatibility.messages)
