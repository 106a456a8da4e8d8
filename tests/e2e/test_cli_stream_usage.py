"""``axl-eval run --no-stream-usage`` (docs/app-as-is.md, "Streaming"): the app's OpenAI
streaming request goes out as written, and without usage in the stream the call settles
``usage_missing``, never a guess; by default the runner asks for the usage and prices it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from axl_action.cli.main import main
from tests.fakes.llm_servers import FakeLLMServer

STREAM_EVAL = """\
import openai
from axl_action import dataset, define_eval, scorer

client = openai.OpenAI(max_retries=0)

def execute_workflow(value, runtime):
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": f"item {value}"}], stream=True
    )
    return {"output": "".join(c.choices[0].delta.content or "" for c in stream if c.choices)}

eval = define_eval(
    "streamed",
    dataset("streamed", items=[{"input": i} for i in range(2)]),
    [scorer("answered", lambda output: 1.0 if output else 0.0)],
)
"""


@pytest.mark.parametrize("asked", [True, False])
def test_no_stream_usage_leaves_the_request_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], asked: bool
) -> None:
    (tmp_path / "stream_eval.py").write_text(STREAM_EVAL)
    with FakeLLMServer("openai") as server:
        server.responder = lambda request: server.streamed(
            "ok then",
            include_usage=bool((request.body.get("stream_options") or {}).get("include_usage")),
            usage={"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9},
            model="gpt-4o-mini",
        )
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-stream-0123456789")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        out = tmp_path / "r.json"
        flags = [] if asked else ["--no-stream-usage"]
        code = main(["run", str(tmp_path / "stream_eval.py"), "--output", str(out), "--quiet", *flags])
        sent = [r.body.get("stream_options") for r in server.requests if r.path.endswith("/chat/completions")]
    capsys.readouterr()
    assert code == 0  # an incomplete cost is reported, not a failed run
    result = json.loads(out.read_text())
    assert [item["output"] for item in result["items"]] == ["ok then", "ok then"]
    operations = result["accounting"]["operations"]
    if asked:
        assert sent == [{"include_usage": True}] * 2
        assert result["accounting"]["usage"]["inputTokens"] == 14
        assert result["accounting"]["completeness"] == "complete"
    else:
        assert sent == [None, None]
        assert result["accounting"]["completeness"] != "complete"
        assert result["accounting"]["reasons"] == {"usage_missing": 2}
    assert operations["total"] == 2
