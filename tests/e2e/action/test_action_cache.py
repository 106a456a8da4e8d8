"""``cache:`` in the action, end to end: the entrypoint as the container runs it, the fake
GitHub's Actions cache service scoping by the runtime token's ``ac`` claim, and a loopback
OpenAI-compatible server counting the calls (docs/cache.md, "In the action")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.action.test_action_e2e import Harness
from tests.fakes.actions_cache import ac_claim, pull_request_scopes, push_scopes
from tests.fakes.github_server import FakeGitHub, FakeRun
from tests.fakes.llm_servers import FakeLLMServer

pytestmark = pytest.mark.slow

CHAT_EVAL = """\
from axl_action import dataset, define_eval, scorer

def execute_workflow(value, runtime):
    reply = runtime.chat("openai:gpt-4o-mini", [{"role": "user", "content": f"triage ticket {value}"}], temperature=0)
    return {"output": reply.text}

eval = define_eval(
    "chat",
    dataset("chat", items=[{"input": i} for i in range(6)]),
    [scorer("answered", lambda output: 1.0 if output else 0.0)],
    execute_workflow,
)
"""


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    with FakeGitHub() as gh:
        harness = Harness(gh, tmp_path)
        (harness.workspace / "chat_eval.py").write_text(CHAT_EVAL)
        yield harness


@pytest.fixture
def model() -> Iterator[FakeLLMServer]:
    with FakeLLMServer("openai") as server:
        yield server


def _env(
    h: Harness, model: FakeLLMServer, run: FakeRun, scopes: tuple[tuple[str, int], ...]
) -> dict[str, str]:
    return {
        "OPENAI_API_KEY": "sk-test-action-cache-0123456789",
        "OPENAI_BASE_URL": model.base_url,
        "ACTIONS_RUNTIME_TOKEN": h.gh.runtime_token(run, ac=ac_claim(*scopes)),
    }


def _calls(model: FakeLLMServer) -> int:
    return sum(1 for r in model.requests if r.path.endswith("/chat/completions"))


INPUTS = {"evals": "chat_eval.py", "cache": "on"}


def test_the_baseline_writes_and_a_pull_request_reads_it_and_writes_only_its_own(
    h: Harness, model: FakeLLMServer
) -> None:
    run, payload, env = h.push(h.main[-1])
    baseline = h.run("push", run, payload, {**env, **_env(h, model, run, push_scopes())}, inputs=INPUTS)
    assert baseline.code == 0, baseline.log
    assert _calls(model) == 6
    assert "starts cold" in baseline.log  # the first run of the suite
    assert len(h.gh.cache.in_scope("refs/heads/main")) == 1

    pr_run, pr_payload, pr_env, _ = h.pull_request(7)
    pr = h.run(
        "pull_request",
        pr_run,
        pr_payload,
        {**pr_env, **_env(h, model, pr_run, pull_request_scopes(7))},
        # Nothing changed, so a scoped run would carry the baseline: run it to read the cache.
        inputs={**INPUTS, "force-run": "true"},
    )
    assert pr.code == 0, pr.log
    assert _calls(model) == 6  # every unchanged call was replayed from the baseline's entries
    assert "Response cache: restored 6 entries" in pr.log
    assert "replayed from cache (6 of 6 calls)" in pr.log
    assert len(h.gh.cache.in_scope("refs/pull/7/merge")) == 1
    assert len(h.gh.cache.in_scope("refs/heads/main")) == 1  # the base branch's scope is untouched


def test_a_run_that_may_not_write_keeps_going_with_a_warning(h: Harness, model: FakeLLMServer) -> None:
    run, payload, env = h.push(h.main[-1])
    read_only = (("refs/heads/main", 1),)
    result = h.run("push", run, payload, {**env, **_env(h, model, run, read_only)}, inputs=INPUTS)
    assert result.code == 0, result.log
    assert "could not be saved" in result.log and "may not write that cache scope" in result.log
    assert h.gh.cache.entries == []


def test_cache_off_never_touches_the_service(h: Harness, model: FakeLLMServer) -> None:
    run, payload, env = h.push(h.main[-1])
    result = h.run(
        "push", run, payload, {**env, **_env(h, model, run, push_scopes())}, inputs={"evals": "chat_eval.py"}
    )
    assert result.code == 0, result.log
    assert h.gh.cache.calls == []
