"""``axl-eval run`` closes the providers it built when the command ends, so their keep-alive
connections are not left to the garbage collector (a ResourceWarning, an error under the
suite's ``filterwarnings = ["error"]``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from axl_action.cli.run import run
from axl_action.providers.registry import default_registry
from axl_action.providers.transport import HttpTransport
from tests.fakes.llm_servers import FakeLLMServer

EVAL = """\
from axl_action import dataset, define_eval, scorer

eval = define_eval(
    "w", dataset("w", items=[{"input": {"id": f"q{i}"}} for i in range(2)]), [scorer("s", lambda o: 1.0)],
    execute_workflow=lambda q, rt: {"output": rt.chat("openai:gpt-4o-mini", q["id"]).text},
)
"""


def test_the_run_command_closes_the_provider_that_served_its_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "closing_eval.py"
    path.write_text(textwrap.dedent(EVAL), encoding="utf-8")
    closed: list[str] = []
    close = HttpTransport.close

    def recording(self: HttpTransport) -> None:
        closed.append(self.provider)
        close(self)

    monkeypatch.setattr(HttpTransport, "close", recording)
    with FakeLLMServer("openai") as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-" + "c" * 20)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("AXL_EVAL_CONCURRENCY", "1")
        try:
            assert run([str(path), "--quiet"]) == 0
            assert len(server.requests) == 2
            assert closed == ["openai"]
        finally:
            default_registry.close()  # the process-wide registry, whatever the test's outcome
