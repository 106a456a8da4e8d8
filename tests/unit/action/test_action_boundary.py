"""The child's environment and the token hand-over (action/boundary.py)."""

from __future__ import annotations

import os

from axl_action.action import boundary

TOKEN = "ghs_" + "a" * 36


def test_the_child_gets_the_jobs_variables_and_no_token() -> None:
    env = {
        "PATH": "/usr/bin",
        "OPENAI_API_KEY": "sk-test",
        "GITHUB_REPOSITORY": "o/r",
        "RUNNER_TEMP": "/tmp/r",
        "MY_SETTING": "x",
        "INPUT_GITHUB-TOKEN": TOKEN,
        "INPUT_EVALS": "evals/",
        "ACTIONS_RUNTIME_TOKEN": "eyJ.runtime.token",
        "ACTIONS_RESULTS_URL": "http://127.0.0.1:1/",
        "STATE_isPost": "1",
        "GITHUB_TOKEN": TOKEN,
        "gh_token": TOKEN,
        "GITHUB_ENV": "/github/file_commands/set_env",
        "GITHUB_OUTPUT": "/github/file_commands/set_output",
        "GITHUB_STEP_SUMMARY": "/github/file_commands/summary",
        "COPIED": f"Bearer {TOKEN}",  # any name: the value holds the token
    }
    assert boundary.eval_environment(env) == {
        "PATH": "/usr/bin",
        "OPENAI_API_KEY": "sk-test",
        "GITHUB_REPOSITORY": "o/r",
        "RUNNER_TEMP": "/tmp/r",
        "MY_SETTING": "x",
    }


def test_a_short_token_value_does_not_strip_ordinary_variables() -> None:
    # A token of a few characters is not a token; matching it would drop values like "1".
    env = {"GITHUB_TOKEN": "1", "SHARDS": "1", "NAME": "x1y"}
    assert boundary.eval_environment(env) == {"SHARDS": "1", "NAME": "x1y"}


def test_the_tokens_are_read_back_from_the_pipe_and_the_flag_removed() -> None:
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "wb") as out:
        out.write(b'{"GITHUB_TOKEN": "' + TOKEN.encode() + b'"}')
    args, tokens = boundary.read_tokens(["--x", boundary.SECRETS_FD_FLAG, str(read_end), "--y"])
    assert args == ["--x", "--y"]
    assert tokens == {"GITHUB_TOKEN": TOKEN}
    try:
        os.fstat(read_end)
    except OSError:
        pass  # read once and closed
    else:
        raise AssertionError("the pipe's read end stayed open")


def test_without_the_flag_nothing_is_read() -> None:
    assert boundary.read_tokens(["a"]) == (["a"], {})


def test_token_names_are_matched_case_blind() -> None:
    assert boundary.is_token_name("input_github-token")
    assert not boundary.is_token_name("GITHUB_TOKEN_PATH")
