"""plan_scope: which evals a pull request re-runs and which it carries from the baseline."""

from __future__ import annotations

from pathlib import Path

from axl_action.action.scoping import FULL_RUN_LABEL, ScopeStamp, plan_scope
from axl_action.schema import EvalSources

EVALS = ["alpha", "beta", "gamma"]
STAMP = ScopeStamp.of({"model": "m1", "repeats": "1"}, pricing="sha256:p")


def _record(prompt: str, data: dict[str, str] | None = None) -> EvalSources:
    return EvalSources(
        modules={prompt: "sha256:" + prompt, "helpers.py": "sha256:h"},
        data=data or {},
        env={"API_FLAVOUR": "sha256:v"},
    )


RECORDS: dict[str, EvalSources | None] = {
    "alpha": _record("alpha.py"),
    "beta": _record("beta.py", {"data/beta.jsonl": "sha256:d"}),
    "gamma": _record("gamma.py"),
}
FILES: dict[str, str | None] = {
    "alpha.py": "sha256:alpha.py",
    "beta.py": "sha256:beta.py",
    "gamma.py": "sha256:gamma.py",
    "helpers.py": "sha256:h",
    "data/beta.jsonl": "sha256:d",
}
ENV: dict[str, str | None] = {"API_FLAVOUR": "sha256:v"}


def _plan(
    files: dict[str, str | None] = FILES,
    records: dict[str, EvalSources | None] = RECORDS,
    env: dict[str, str | None] = ENV,
    stamp: ScopeStamp = STAMP,
    baseline_stamp: ScopeStamp | None = STAMP,
    force: bool = False,
    labels: tuple[str, ...] = (),
) -> tuple[list[str], list[str]]:
    plan = plan_scope(
        EVALS,
        records,
        files,
        env,
        baseline_stamp=baseline_stamp,
        current_stamp=stamp,
        force=force,
        labels=labels,
    )
    return plan.to_run, plan.carried


def test_nothing_changed_carries_every_eval() -> None:
    assert _plan() == ([], EVALS)


def test_one_prompt_changed_reruns_only_that_eval() -> None:
    assert _plan({**FILES, "beta.py": "sha256:new"}) == (["beta"], ["alpha", "gamma"])


def test_shared_helper_changed_reruns_all() -> None:
    assert _plan({**FILES, "helpers.py": "sha256:new"}) == (EVALS, [])


def test_data_file_changed_or_gone_reruns_its_eval() -> None:
    assert _plan({**FILES, "data/beta.jsonl": "sha256:x"}) == (["beta"], ["alpha", "gamma"])
    assert _plan({**FILES, "data/beta.jsonl": None}) == (["beta"], ["alpha", "gamma"])


def test_force_label_stamp_and_pricing_rerun_all() -> None:
    assert _plan(force=True) == (EVALS, [])
    assert _plan(labels=("bug", FULL_RUN_LABEL)) == (EVALS, [])
    assert _plan(stamp=ScopeStamp.of({"model": "m2", "repeats": "1"}, "sha256:p")) == (EVALS, [])
    assert _plan(stamp=ScopeStamp.of({"model": "m1", "repeats": "1"}, "sha256:q")) == (EVALS, [])
    assert _plan(baseline_stamp=None) == (EVALS, [])


def test_declared_env_change_reruns() -> None:
    assert _plan(env={"API_FLAVOUR": "sha256:other"}) == (EVALS, [])
    assert _plan(env={}) == (EVALS, [])


def test_missing_or_unknown_record_reruns() -> None:
    assert _plan(records={**RECORDS, "alpha": None}) == (["alpha"], ["beta", "gamma"])
    unknown = EvalSources(unknown=True, reason="audit hook unavailable")
    assert _plan(records={**RECORDS, "gamma": unknown}) == (["gamma"], ["alpha", "beta"])
    assert _plan(records={}) == (EVALS, [])


def test_stamp_is_order_independent_and_a_changed_file_is_named() -> None:
    assert ScopeStamp.of({"a": "1", "b": "2"}, None) == ScopeStamp.of({"b": "2", "a": "1"}, None)
    plan = plan_scope(
        EVALS, RECORDS, {**FILES, "alpha.py": None}, ENV, baseline_stamp=STAMP, current_stamp=STAMP
    )
    assert plan.carried == ["beta", "gamma"]
    assert plan.decisions[0].reason == "file-changed"
    assert plan.decisions[0].detail == "alpha.py"


def test_sources_round_trip_through_wire() -> None:
    record = EvalSources(modules={"a.py": "sha256:1"}, pricing="sha256:p", tool_version="1.0")
    wire = record.to_wire()
    assert wire == {"modules": {"a.py": "sha256:1"}, "pricing": "sha256:p", "toolVersion": "1.0"}
    assert EvalSources.model_validate(wire) == record


def test_labels_come_from_the_event_and_odd_entries_are_skipped() -> None:
    from axl_action.github.event import _label_names

    raw = [{"name": "axl-eval:full-run"}, {"name": 3}, "bug", {"color": "fff"}, {"name": "docs"}]
    assert _label_names(raw) == ("axl-eval:full-run", "docs")
    assert _label_names(None) == () and _label_names({"name": "x"}) == ()


def test_eval_files_are_named_relative_to_the_working_directory(tmp_path: Path) -> None:
    from axl_action.action.scope_step import eval_files

    (tmp_path / "evals").mkdir()
    for name in ("b_eval.py", "a_eval.py", "helpers.py"):
        (tmp_path / "evals" / name).write_text("")
    assert eval_files(["evals"], tmp_path) == ["evals/a_eval.py", "evals/b_eval.py"]
    assert eval_files(["evals/*_eval.py", "evals/a_eval.py"], tmp_path) == [
        "evals/a_eval.py",
        "evals/b_eval.py",
    ]
    assert eval_files(["nothing/*.py"], tmp_path) is None  # the runner says why
    assert eval_files([str(tmp_path.parent)], tmp_path) is None


def test_the_stamp_follows_the_inputs_that_reach_the_runner(tmp_path: Path) -> None:
    from axl_action.action.scope_step import current_stamp
    from axl_action.action.settings import read_settings

    def stamp(**inputs: str) -> ScopeStamp:
        env = {f"INPUT_{k.upper()}": v for k, v in {"evals": "a_eval.py", **inputs}.items()}
        return current_stamp(read_settings(env), tmp_path)

    assert stamp() == stamp(threshold="0.1", comment="off", **{"force-run": "true"})
    assert stamp() != stamp(runs="3")
    assert stamp() != stamp(setup="pip install x")
    (tmp_path / "prices.json").write_text("{}")
    with_pricing = stamp(pricing="prices.json")
    (tmp_path / "prices.json").write_text('{"m": {}}')
    assert stamp(pricing="prices.json").pricing != with_pricing.pricing
