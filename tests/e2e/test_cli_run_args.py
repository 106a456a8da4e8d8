"""Run-command argument parsing in-process: values, defaults and the environment fallback."""

from __future__ import annotations

import pytest

from axl_action.cli.run import build_parser, env_int, run
from axl_action.errors import UsageError


def test_defaults_and_values() -> None:
    args = build_parser().parse_args(
        ["evals", "more_eval.py", "--runs", "3", "--scorers", "a, b,a,", "--shard", "2/4"]
    )
    assert args.paths == ["evals", "more_eval.py"]
    assert args.runs == 3 and args.scorers == ["a", "b"] and args.shard == (2, 4)
    assert args.budget is None and args.max_item_error_rate is None and not args.quiet


@pytest.mark.parametrize("raw", ["0", "1", "0.02", ".5", " 0.5 "])
def test_item_error_rate_accepts(raw: str) -> None:
    assert 0 <= build_parser().parse_args(["x", "--max-item-error-rate", raw]).max_item_error_rate <= 1


@pytest.mark.parametrize("raw", ["1.5", "5", "0.5abc", "-0.1", "abc", "1.", "1e-1", "0,5"])
def test_item_error_rate_rejects(raw: str) -> None:
    with pytest.raises(UsageError, match=r"must be a number in \[0, 1\]"):
        build_parser().parse_args(["x", "--max-item-error-rate", raw])


def test_abbreviations_are_not_accepted() -> None:
    with pytest.raises(UsageError, match="unknown flag: --out"):
        build_parser().parse_args(["x", "--out", "f.json"])


@pytest.mark.parametrize(
    ("raw", "value"), [("8", 8), ("", None), ("abc", None), ("0", None), ("-3", None), ("12x", 12)]
)
def test_env_int(monkeypatch: pytest.MonkeyPatch, raw: str, value: int | None) -> None:
    monkeypatch.setenv("AXL_EVAL_CONCURRENCY", raw)
    assert env_int("AXL_EVAL_CONCURRENCY") == value


def test_scorers_needs_a_single_file() -> None:
    with pytest.raises(UsageError, match=r"--scorers requires a single eval file \(matched 2\)"):
        run(["examples/quickstart/triage_eval.py", "tests/e2e/test_cli_run_args.py", "--scorers", "category"])


def test_paths_and_flags_may_be_intermixed() -> None:
    args = build_parser().parse_intermixed_args(["a_eval.py", "--quiet", "b_eval.py", "--runs", "2", "c"])
    assert args.paths == ["a_eval.py", "b_eval.py", "c"] and args.quiet and args.runs == 2
