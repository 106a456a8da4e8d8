"""ActionSettings: INPUT_* parsing, defaults, and one clear error per bad value."""

from __future__ import annotations

import pytest

from axl_action.action.settings import (
    INPUT_NAMES,
    ActionSettings,
    Shard,
    raw_input,
    read_settings,
    secrets_to_mask,
)
from axl_action.errors import ActionInputError, UsageError


def _env(**inputs: str) -> dict[str, str]:
    """INPUT_* as the runner writes them: upper case, dashes kept."""
    return {f"INPUT_{k.replace('_', '-').upper()}": v for k, v in inputs.items()}


def test_defaults_when_every_input_is_empty() -> None:
    # The runner exports every declared input, unset ones as ''.
    env = {f"INPUT_{n.upper()}": "" for n in INPUT_NAMES}
    env["INPUT_EVALS"] = "evals/"
    s = read_settings(env)
    assert s == ActionSettings(evals=("evals/",))
    assert s.mode == "auto" and s.fail_on_regression is True and s.comment == "always"
    assert s.baseline_artifact == "axl-eval-baseline" and s.baseline_branch is None
    assert s.source == "evals"


def test_dashed_and_underscored_names_are_both_read_dash_wins() -> None:
    env = {"INPUT_BASELINE_ARTIFACT": "under", "INPUT_EVALS": "x"}
    assert read_settings(env).baseline_artifact == "under"
    env["INPUT_BASELINE-ARTIFACT"] = "dash"
    assert read_settings(env).baseline_artifact == "dash"
    assert raw_input({"INPUT_MAX-ITEM-ERROR-RATE": "  0.1 \n"}, "max-item-error-rate") == "0.1"


def test_lists_split_on_newlines_and_commas() -> None:
    s = read_settings(_env(evals="a.eval.py\n b/ ,\n\n c/*.py"))
    assert s.evals == ("a.eval.py", "b/", "c/*.py")


def test_full_set_of_values() -> None:
    s = read_settings(
        _env(
            results="out/*.json",
            github_token="ghs_secret_value",
            mode="compare",
            baseline_branch="refs/heads/release",
            threshold="accuracy=0.02, judge=.05",
            fail_on_regression="false",
            max_item_error_rate="0.1",
            max_scorer_error_rate="1",
            max_cost_increase="25",
            comment="on-change",
            suite="rag.v2",
            report_artifact="my-report",
            working_directory="sub/dir",
            capture_requests="TRUE",
            runs="3",
            concurrency="8",
            budget="$2",
        )
    )
    assert s.source == "results"
    assert s.github_token.get_secret_value() == "ghs_secret_value"
    assert "ghs_secret_value" not in repr(s)
    assert s.baseline_branch == "release"
    assert s.threshold == {"accuracy": 0.02, "judge": 0.05}
    assert s.fail_on_regression is False and s.capture_requests is True
    assert s.max_cost_increase == 25.0
    assert (s.runs, s.concurrency, s.budget) == (3, 8, "$2")


def test_shard_and_percent_cost() -> None:
    s = read_settings(_env(evals="e/", shard="2 / 4", max_cost_increase="20 %", threshold="0.1"))
    assert s.shard == Shard(index=2, total=4) and str(s.shard) == "2/4"
    assert s.max_cost_increase == 20.0
    assert s.threshold == 0.1


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        ("mode", "sometimes", "must be one of auto, baseline, compare, comment"),
        ("comment", "yes", "must be one of always, on-change, on-failure, off"),
        ("runs", "0", "whole number of at least 1"),
        ("runs", "2.5", "whole number of at least 1"),
        ("concurrency", "-1", "whole number of at least 1"),
        ("budget", "1e3", "USD amount"),
        ("budget", "-1", "USD amount"),
        ("max-item-error-rate", "1.5", "from 0 to 1"),
        ("max-item-error-rate", "5%", "from 0 to 1"),
        ("max-scorer-error-rate", "abc", "from 0 to 1"),
        ("fail-on-regression", "yes", "true or false"),
        ("capture-requests", "1", "true or false"),
        ("shard", "3/2", "between 1 and the total"),
        ("shard", "0/2", "between 1 and the total"),
        ("shard", "two", "<index>/<total>"),
        ("threshold", "-0.1", "scorer=value"),
        ("threshold", "acc=high", "scorer=value"),
        ("max-cost-increase", "lots", "percentage like 20%"),
        ("max-cost-increase", "-5%", "percentage like 20%"),
        ("max-cost-increase", "$0.50", "percentage like 20%"),
        ("suite", "has space", "letters, digits"),
        ("baseline-artifact", "a/b", "without"),
        ("report-artifact", "x" * 201, "at most 200"),
        ("baseline-branch", "my branch", "branch name"),
        ("report-text-limit", "-1", "0 for no limit"),
        ("report-text-limit", "20k", "0 for no limit"),
    ],
)
def test_bad_values_name_the_input_and_what_is_allowed(name: str, value: str, fragment: str) -> None:
    env = {"INPUT_EVALS": "e/", f"INPUT_{name.upper()}": value}
    with pytest.raises(ActionInputError) as info:
        read_settings(env)
    err = info.value
    assert isinstance(err, UsageError)
    assert err.input_name == name
    assert fragment in err.allowed
    assert str(err).startswith(f"Invalid input {name}")


def test_secret_values_are_never_echoed_in_errors() -> None:
    # github-token accepts anything, so force an error elsewhere and check the token's absence.
    with pytest.raises(ActionInputError) as info:
        read_settings({"INPUT_GITHUB-TOKEN": "ghs_topsecret", "INPUT_MODE": "x", "INPUT_EVALS": "e"})
    assert "ghs_topsecret" not in str(info.value)
    assert '(got "x")' in str(info.value)


def test_sources_are_exclusive_and_required_outside_auto_and_comment() -> None:
    with pytest.raises(ActionInputError, match="only one of evals, command or results") as info:
        read_settings(_env(evals="e/", command="npx axl-eval e --output $AXL_EVAL_OUTPUT"))
    assert info.value.input_name == "command"
    with pytest.raises(ActionInputError, match="set evals") as info:
        read_settings(_env(mode="compare"))
    assert info.value.input_name == "evals"
    # comment mode relays a stored comment and runs nothing; auto decides after reading the event.
    assert read_settings(_env(mode="comment")).source == "none"
    assert read_settings({}).source == "none"
    with pytest.raises(ActionInputError, match="only works with evals"):
        read_settings(_env(results="r.json", shard="1/2"))
    with pytest.raises(ActionInputError, match="differ from baseline-artifact"):
        read_settings(_env(evals="e", report_artifact="same", baseline_artifact="same"))


def test_secrets_to_mask_covers_token_and_credential_env() -> None:
    env = {
        "INPUT_GITHUB-TOKEN": "ghs_tokenvalue",
        "OPENAI_API_KEY": "sk-live-123456",
        "ANTHROPIC_API_KEY": "line-one\nline-two",
        "ACTIONS_RUNTIME_TOKEN": "eyJhbGciOi.payload.sig",
        "MY_SERVICE_SECRET": "hunter22",
        "ACTIONS_RESULTS_URL": "http://127.0.0.1:1/",
        "GITHUB_REPOSITORY": "o/r",
        "SHORT_TOKEN": "ab",
    }
    masked = secrets_to_mask(env)
    assert masked[0] == "ghs_tokenvalue"
    for value in ("sk-live-123456", "line-one", "line-two", "eyJhbGciOi.payload.sig", "hunter22"):
        assert value in masked
    assert "http://127.0.0.1:1/" not in masked and "o/r" not in masked and "ab" not in masked


def test_repeats_input_reaches_the_run_command_and_bad_values_name_the_range() -> None:
    from axl_action.action.evalstep import runner_flags

    settings = read_settings(_env(evals="evals/", repeats="5"))
    assert settings.repeats == 5
    assert runner_flags(settings)[:2] == ("--repeats", "5")
    assert "--repeats" not in runner_flags(read_settings(_env(evals="evals/")))
    for bad in ("0", "1001", "2.5", "three"):
        with pytest.raises(ActionInputError, match=r"repeats.*whole number from 1 to 1000"):
            read_settings(_env(evals="evals/", repeats=bad))


def test_report_text_limit() -> None:
    assert read_settings(_env(evals="e/")).report_text_limit == 20_000
    assert read_settings(_env(evals="e/", report_text_limit="500")).report_text_limit == 500
    assert read_settings(_env(evals="e/", report_text_limit="0")).report_text_limit == 0


def test_every_runner_flag_in_its_order_and_only_when_set() -> None:
    from axl_action.action.evalstep import runner_flags

    every = _env(
        evals="evals/",
        runs="3",
        repeats="auto",
        max_repeats="4",
        budget="$1",
        concurrency="2",
        shard="2/4",
        pricing="p.json",
        max_item_error_rate="0.30000000000000004",
        capture_requests="true",
        stream_usage="false",
    )
    assert runner_flags(read_settings(every)) == (
        *("--runs", "3", "--repeats", "auto", "--max-repeats", "4", "--budget", "$1"),
        *("--concurrency", "2", "--shard", "2/4", "--pricing", "p.json"),
        *("--max-item-error-rate", "0.30000000000000004", "--capture-requests", "--no-stream-usage"),
    )
    assert runner_flags(read_settings(_env(evals="evals/", runs="1"))) == ()
