"""``--cache MODE`` end to end: real CLI processes, a loopback OpenAI-compatible server that
counts requests, and the result files they write (docs/cache.md, issue 22)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.llm_servers import FakeLLMServer

ROOT = Path(__file__).resolve().parents[2]

CACHED_EVAL = """\
import os
from axl_action import dataset, define_eval, scorer

PROMPT = os.environ.get("PROMPT", "Say ok to item")

def execute_workflow(value, runtime):
    response = runtime.chat(
        "openai:gpt-4o-mini",
        [{"role": "user", "content": f"{PROMPT} {value['id']}"}],
        temperature=0,
    )
    return {"output": {"id": value["id"], "text": response.text}}

eval = define_eval(
    "cached",
    dataset("cached", items=[{"input": {"id": i}} for i in range(int(os.environ.get("ITEMS", "12")))]),
    [scorer("answered", lambda output: 1.0 if output["text"] else 0.0)],
    concurrency=4,
)
"""


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer("openai") as srv:
        yield srv


def _env(server: FakeLLMServer, **extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AXL_EVAL_"))}
    return {**base, "OPENAI_API_KEY": "sk-test-cache-0123456789", "OPENAI_BASE_URL": server.base_url, **extra}


def _axl(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "axl_action.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=180,
        check=False,
    )


def _result(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _chat_requests(server: FakeLLMServer) -> int:
    return sum(1 for r in server.requests if r.path.endswith("/chat/completions"))


def test_an_unchanged_call_is_paid_once_and_certified_at_what_it_cost(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    (tmp_path / "cached_eval.py").write_text(CACHED_EVAL)
    env = _env(server)
    # Prices large enough that the compare block's 3-decimal totals are not 0.
    (tmp_path / "prices.json").write_text(
        json.dumps({"version": 1, "models": {"openai:gpt-4o-mini": {"input": 5000, "output": 5000}}})
    )
    live = _axl(
        ["cached_eval.py", "--cache", "on", "--pricing", "prices.json", "--output", "live.json"],
        env,
        tmp_path,
    )
    assert live.returncode == 0, live.stderr
    assert _chat_requests(server) == 12
    first = _result(tmp_path / "live.json")
    assert first["accounting"]["knownCost"] > 0
    assert "replayed" not in first["accounting"]
    assert first["metadata"]["cache"] == {"mode": "on"}

    again = _axl(
        ["cached_eval.py", "--cache", "on", "--pricing", "prices.json", "--output", "cached.json"],
        env,
        tmp_path,
    )
    assert again.returncode == 0, again.stderr
    assert _chat_requests(server) == 12  # not one request more
    second = _result(tmp_path / "cached.json")
    accounting = second["accounting"]
    assert accounting["knownCost"] == 0  # billed
    assert accounting["replayed"]["calls"] == 12
    assert accounting["replayed"]["cost"] == pytest.approx(first["accounting"]["knownCost"])
    assert accounting["completeness"] == "complete"
    assert [i["output"] for i in second["items"]] == [i["output"] for i in first["items"]]
    assert "billed $0" in again.stdout and "replayed from cache (12 of 12 calls)" in again.stdout
    # Item accounting carries the same split, so the report's per-item cost stays certifiable.
    assert all(i["accounting"]["replayed"]["calls"] == 1 for i in second["items"])

    # The cost delta compares certified cost on both sides: no "100 % cheaper".
    compared = _axl(["compare", "live.json", "cached.json", "--json", "cmp.json"], env, tmp_path)
    assert compared.returncode == 0, compared.stderr
    cost = _result(tmp_path / "cmp.json")["comparison"]["cost"]
    assert cost["delta"] == 0 and cost["candidateTotal"] == cost["baselineTotal"] > 0

    # Against a live baseline, compare says the candidate's answers were replayed.
    plain = _axl(["cached_eval.py", "--pricing", "prices.json", "--output", "plain.json"], env, tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert _axl(["compare", "plain.json", "cached.json", "--json", "vs.json"], env, tmp_path).returncode == 0
    messages = _result(tmp_path / "vs.json")["comparison"]["compatibility"]["messages"]
    assert any("candidate ran with --cache on (12 calls replayed)" in m for m in messages), messages
    assert _result(tmp_path / "vs.json")["comparison"]["cost"]["delta"] == 0


def test_each_repeat_of_runs_has_its_own_entries(tmp_path: Path, server: FakeLLMServer) -> None:
    (tmp_path / "cached_eval.py").write_text(CACHED_EVAL)
    env = _env(server, ITEMS="5")
    first = _axl(["cached_eval.py", "--runs", "2", "--cache", "on", "--output", "a.json"], env, tmp_path)
    assert first.returncode == 0, first.stderr
    assert _chat_requests(server) == 10  # the second repeat was not served the first one's reply
    second = _axl(["cached_eval.py", "--runs", "2", "--cache", "on", "--output", "b.json"], env, tmp_path)
    assert second.returncode == 0, second.stderr
    assert _chat_requests(server) == 10
    runs = _result(tmp_path / "b.json")
    assert [r["accounting"]["replayed"]["calls"] for r in runs] == [5, 5]


def test_the_entries_a_run_reads_are_not_recorded_as_the_evals_data_files(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    # The default cache folder lies under the sources root. Its entries are the tool's, not
    # the eval's input: recorded, they would list every entry read and change the record
    # (so a scoped run would re-run the eval) whenever the cache gained an entry.
    (tmp_path / "cached_eval.py").write_text(CACHED_EVAL)
    (tmp_path / "prompt.txt").write_text("Say ok to item")
    reading = CACHED_EVAL.replace(
        'PROMPT = os.environ.get("PROMPT", "Say ok to item")', 'PROMPT = open("prompt.txt").read()'
    )
    (tmp_path / "cached_eval.py").write_text(reading)
    env = _env(server, ITEMS="4")
    records = []
    for name in ("a.json", "b.json"):
        ran = _axl(["cached_eval.py", "--cache", "on", "--output", name], env, tmp_path)
        assert ran.returncode == 0, ran.stderr
        records.append(_result(tmp_path / name)["metadata"]["sources"])
    assert _chat_requests(server) == 4  # the second run was served from the cache
    assert _result(tmp_path / "b.json")["accounting"]["replayed"]["calls"] == 4
    assert set(records[1]["data"]) == {"prompt.txt"}, records[1]["data"]
    assert records[0] == records[1]


def test_replay_never_calls_a_model_and_a_miss_names_the_field_that_differs(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    (tmp_path / "cached_eval.py").write_text(CACHED_EVAL)
    recorded = _axl(
        ["cached_eval.py", "--cache", "write", "--output", "rec.json"], _env(server, ITEMS="3"), tmp_path
    )
    assert recorded.returncode == 0, recorded.stderr
    assert _chat_requests(server) == 3
    replay = _axl(
        ["cached_eval.py", "--cache", "replay", "--output", "replay.json", "--max-item-error-rate", "1"],
        _env(server, ITEMS="3", PROMPT="Say OK to item"),
        tmp_path,
    )
    assert _chat_requests(server) == 3  # a miss is never sent
    items = _result(tmp_path / "replay.json")["items"]
    assert all("no recorded reply" in item["error"] for item in items), items
    assert all("differs at body.messages[0].content" in item["error"] for item in items)
    assert replay.returncode == 1


def test_write_mode_never_reads_and_off_leaves_no_directory(tmp_path: Path, server: FakeLLMServer) -> None:
    (tmp_path / "cached_eval.py").write_text(CACHED_EVAL)
    env = _env(server, ITEMS="2")
    for _ in range(2):
        ran = _axl(["cached_eval.py", "--cache", "write", "--cache-dir", "c"], env, tmp_path)
        assert ran.returncode == 0, ran.stderr
    assert _chat_requests(server) == 4
    assert len(list((tmp_path / "c" / "entries").rglob("*"))) > 0
    plain = _axl(["cached_eval.py"], env, tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert not (tmp_path / ".axl-cache").exists()


def test_a_damaged_entry_is_one_warning_and_a_live_call_never_a_wrong_answer(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    (tmp_path / "cached_eval.py").write_text(CACHED_EVAL)
    env = _env(server, ITEMS="4")
    assert _axl(["cached_eval.py", "--cache", "on"], env, tmp_path).returncode == 0
    entries = sorted(p for p in (tmp_path / ".axl-cache" / "entries").rglob("*") if p.is_file())
    for entry in entries[:2]:
        data = bytearray(entry.read_bytes())
        data[-5] ^= 0x20
        entry.write_bytes(bytes(data))
    again = _axl(["cached_eval.py", "--cache", "on", "--output", "r.json"], env, tmp_path)
    assert again.returncode == 0, again.stderr
    assert _chat_requests(server) == 6  # the two damaged entries were called again
    assert again.stderr.count("is damaged") == 1
    assert "Traceback" not in again.stderr
    assert _result(tmp_path / "r.json")["accounting"]["replayed"]["calls"] == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cache", "sometimes"], '--cache: "sometimes" is not a cache mode'),
        (["--cache-dir", "x"], "--cache-dir needs --cache"),
    ],
)
def test_a_bad_cache_flag_is_one_line_and_nothing_runs(
    tmp_path: Path, server: FakeLLMServer, args: list[str], message: str
) -> None:
    (tmp_path / "cached_eval.py").write_text(CACHED_EVAL)
    ran = _axl(["cached_eval.py", *args], _env(server), tmp_path)
    assert ran.returncode == 1
    assert message in ran.stderr and "Traceback" not in ran.stderr
    assert _chat_requests(server) == 0


JUDGED_EVAL = """\
import os
from axl_action import dataset, define_eval, llm_scorer

eval = define_eval(
    "judged",
    dataset("judged", items=[{"input": f"question {i}"} for i in range(3)]),
    [llm_scorer("helpful", os.environ.get("JUDGE", "openai:gpt-4o-mini"), os.environ["JUDGE_PROMPT"])],
    execute_workflow=lambda value, runtime: {"output": f"answer to {value}"},
)
"""


def test_a_judge_is_replayed_until_its_prompt_or_model_changes(tmp_path: Path, server: FakeLLMServer) -> None:
    (tmp_path / "judged_eval.py").write_text(JUDGED_EVAL)

    def judge(prompt: str, model: str = "openai:gpt-4o-mini") -> dict[str, Any]:
        server.enqueue(*[server.ok('{"score": 0.75, "reasoning": "fine"}') for _ in range(3)])
        ran = _axl(
            ["judged_eval.py", "--cache", "on", "--output", "j.json"],
            _env(server, JUDGE_PROMPT=prompt, JUDGE=model),
            tmp_path,
        )
        assert ran.returncode == 0, ran.stderr
        return _result(tmp_path / "j.json")

    first = judge("Rate how helpful the answer is.")
    assert _chat_requests(server) == 3 and first["accounting"]["breakdown"]["judging"] > 0
    again = judge("Rate how helpful the answer is.")
    assert _chat_requests(server) == 3  # the grades were replayed
    assert again["accounting"]["replayed"]["calls"] == 3
    assert [i["scores"] for i in again["items"]] == [i["scores"] for i in first["items"]]
    judge("Rate how correct the answer is.")  # a changed judge prompt never reuses old grades
    assert _chat_requests(server) == 6
    judge("Rate how correct the answer is.", model="openai:gpt-4o")  # nor a swapped judge model
    assert _chat_requests(server) == 9


def test_rescore_replays_the_judges_it_already_paid_for(tmp_path: Path, server: FakeLLMServer) -> None:
    (tmp_path / "judged_eval.py").write_text(JUDGED_EVAL)
    env = _env(server, JUDGE_PROMPT="Rate it.")
    server.enqueue(*[server.ok('{"score": 0.5, "reasoning": "meh"}') for _ in range(3)])
    assert _axl(["judged_eval.py", "--output", "src.json"], env, tmp_path).returncode == 0
    assert _chat_requests(server) == 3
    server.enqueue(*[server.ok('{"score": 1, "reasoning": "good"}') for _ in range(3)])
    for name in ("r1.json", "r2.json"):
        ran = _axl(
            ["rescore", "src.json", "judged_eval.py", "--cache", "on", "--output", name], env, tmp_path
        )
        assert ran.returncode == 0, ran.stderr
    assert _chat_requests(server) == 6  # the second rescore made no judge call
    second = _result(tmp_path / "r2.json")
    assert second["accounting"]["replayed"]["calls"] == 3
    assert [i["scores"] for i in second["items"]] == [
        i["scores"] for i in _result(tmp_path / "r1.json")["items"]
    ]
    assert second["metadata"]["cache"] == {"mode": "on"}


CRASHING_EVAL = CACHED_EVAL.replace(
    "def execute_workflow(value, runtime):\n",
    "def execute_workflow(value, runtime):\n"
    "    if os.environ.get('CRASH_AT') == str(value['id']):\n"
    "        import signal\n"
    "        os.kill(os.getpid(), signal.SIGKILL)\n",
).replace("concurrency=4", "concurrency=1")


def test_a_resumed_run_takes_the_journal_then_the_cache_and_pays_for_neither(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    (tmp_path / "cached_eval.py").write_text(CRASHING_EVAL)
    env = _env(server, ITEMS="10")
    assert _axl(["cached_eval.py", "--cache", "on", "--cache-dir", "c"], env, tmp_path).returncode == 0
    assert _chat_requests(server) == 10
    # A run that dies at item 6: items 0-5 are in its journal, all 10 in the cache.
    crashed = _axl(
        ["cached_eval.py", "--cache", "on", "--cache-dir", "c", "--output", "r.json"],
        {**env, "CRASH_AT": "6"},
        tmp_path,
    )
    assert crashed.returncode != 0 and (tmp_path / "r.json.journal.jsonl").exists()
    resumed = _axl(
        ["cached_eval.py", "--cache", "on", "--cache-dir", "c", "--output", "r.json", "--resume"],
        env,
        tmp_path,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert _chat_requests(server) == 10  # neither the journaled items nor the cached ones were paid again
    result = _result(tmp_path / "r.json")
    assert result["metadata"]["resumed"]["itemsFromJournal"] == 6
    assert result["accounting"]["knownCost"] == 0 and result["accounting"]["replayed"]["calls"] == 10


def test_replay_needs_no_key_so_a_forks_run_replays_what_was_recorded(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    (tmp_path / "cached_eval.py").write_text(CACHED_EVAL)
    (tmp_path / "judged_eval.py").write_text(JUDGED_EVAL)
    env = _env(server, ITEMS="4", JUDGE_PROMPT="Rate it.")
    assert _axl(["cached_eval.py", "--cache", "on", "--output", "rec.json"], env, tmp_path).returncode == 0
    server.enqueue(*[server.ok('{"score": 1, "reasoning": "good"}') for _ in range(3)])
    assert _axl(["judged_eval.py", "--cache", "on"], env, tmp_path).returncode == 0
    assert _chat_requests(server) == 7
    keyless = {k: v for k, v in env.items() if k != "OPENAI_API_KEY"}
    replayed = _axl(["cached_eval.py", "--cache", "replay", "--output", "fork.json"], keyless, tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    judged = _axl(["judged_eval.py", "--cache", "replay", "--output", "fork-judged.json"], keyless, tmp_path)
    assert judged.returncode == 0, judged.stderr
    assert _chat_requests(server) == 7
    assert [i["output"] for i in _result(tmp_path / "fork.json")["items"]] == [
        i["output"] for i in _result(tmp_path / "rec.json")["items"]
    ]
    assert all(i["scores"]["helpful"] == 1 for i in _result(tmp_path / "fork-judged.json")["items"])
    # A changed prompt is a miss that says so, not a missing key.
    missed = _axl(
        ["cached_eval.py", "--cache", "replay", "--output", "miss.json", "--max-item-error-rate", "1"],
        {**keyless, "PROMPT": "Another prompt"},
        tmp_path,
    )
    errors = [i["error"] for i in _result(tmp_path / "miss.json")["items"]]
    assert all("no recorded reply" in e and "API key" not in e for e in errors), errors
    assert missed.returncode == 1 and _chat_requests(server) == 7
    # Without replay, a missing key is still the one clear error it was.
    live = _axl(
        ["cached_eval.py", "--cache", "on", "--output", "live.json"], {**keyless, "PROMPT": "p"}, tmp_path
    )
    assert "OPENAI_API_KEY is not set" in live.stderr + live.stdout


SDK_EVAL = """\
import os
import openai
from axl_action import dataset, define_eval, scorer

client = openai.OpenAI(max_retries=0)
CHANGED = os.environ.get("CHANGED", "")

def execute_workflow(value, runtime):
    prompt = "Say ok to item, in detail" if str(value["id"]) == CHANGED else "Say ok to item"
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": f"{prompt} {value['id']}"}], temperature=0
    )
    return {"output": {"id": value["id"], "text": reply.choices[0].message.content}}

eval = define_eval(
    "sdk-cached",
    dataset("sdk-cached", items=[{"input": {"id": i}} for i in range(10)]),
    [scorer("answered", lambda output: 1.0 if output["text"] else 0.0)],
    concurrency=4,
)
"""


def test_the_apps_own_sdk_calls_are_cached_and_the_cost_delta_stays_certified(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    (tmp_path / "sdk_eval.py").write_text(SDK_EVAL)
    env = _env(server)
    (tmp_path / "prices.json").write_text(
        json.dumps({"version": 1, "models": {"openai:gpt-4o-mini": {"input": 5000, "output": 5000}}})
    )
    # Usage grows with the prompt, so the changed prompt costs more.
    server.responder = lambda request: server.ok(
        "ok",
        usage={
            "prompt_tokens": len(request.raw),
            "completion_tokens": 3,
            "total_tokens": len(request.raw) + 3,
        },
        model="gpt-4o-mini",
    )
    flags = ["--pricing", "prices.json", "--quiet"]
    # The baseline is uncached; the PR records and reads the cache and changes one prompt.
    base = _axl(["sdk_eval.py", *flags, "--output", "base.json"], env, tmp_path)
    assert base.returncode == 0, base.stderr
    warm = _axl(["sdk_eval.py", *flags, "--cache", "on", "--output", "warm.json"], env, tmp_path)
    assert warm.returncode == 0, warm.stderr
    assert _chat_requests(server) == 20
    pr = _axl(
        ["sdk_eval.py", "--pricing", "prices.json", "--cache", "on", "--output", "pr.json"],
        {**env, "CHANGED": "3"},
        tmp_path,
    )
    assert pr.returncode == 0, pr.stderr
    assert _chat_requests(server) == 21  # only the changed prompt went out
    assert "replayed from cache (9 of 10 calls)" in pr.stdout
    assert "9 replayed calls not timed (answered from the cache)" in pr.stdout
    candidate, baseline = _result(tmp_path / "pr.json"), _result(tmp_path / "base.json")
    assert candidate["accounting"]["replayed"]["calls"] == 9
    changed_before = baseline["items"][3]["cost"]
    changed_after = candidate["items"][3]["cost"]
    assert changed_after > changed_before
    compared = _axl(["compare", "base.json", "pr.json", "--json", "cmp.json"], env, tmp_path)
    assert compared.returncode == 0, compared.stderr
    cost = _result(tmp_path / "cmp.json")["comparison"]["cost"]
    # The changed prompt's cost change, not "90 % cheaper" because nine calls were replayed.
    assert cost["delta"] == pytest.approx(changed_after - changed_before, rel=1e-3, abs=1e-3)
