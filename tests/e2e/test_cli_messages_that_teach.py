"""Issue 11's messages, end to end: each mistake a newcomer made gets a line that says what is
wrong and how to fix it (real subprocesses where the console matters, in-process otherwise)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from axl_action.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART_BASELINE = ROOT / "examples" / "quickstart" / "baseline.json"


def axl(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "axl_action.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def write_eval(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def test_failed_items_print_their_errors_redacted(tmp_path: Path) -> None:
    secret = "sk-proj-Zq8v2LmN4pR7tX1yB3cD5fG6hJ9kW0aE"
    path = write_eval(
        tmp_path,
        "key_eval.py",
        """\
        import os
        from axl_action import dataset, define_eval, scorer

        def execute_workflow(q, runtime):
            if q["id"] == "q2":
                raise KeyError("answer")
            raise RuntimeError("upstream refused key " + os.environ["MY_SERVICE_API_KEY"])

        eval = define_eval(
            "k", dataset("k", items=[{"input": {"id": f"q{i}"}} for i in range(3)]),
            [scorer("s", lambda o: 1.0)], execute_workflow=execute_workflow,
        )
        """,
    )
    proc = axl(str(path), env={"MY_SERVICE_API_KEY": secret})
    assert proc.returncode == 1
    out = proc.stdout
    # Once only "Failure causes: 3 × other"; now the errors themselves, counted.
    assert "  Failure causes: 3 × other" in out
    assert "  Item errors (2 distinct messages):" in out
    assert "    2 × upstream refused key [REDACTED]" in out
    assert "    1 × 'answer'" in out
    assert secret not in proc.stdout + proc.stderr


def test_a_missing_api_key_reaches_the_console(tmp_path: Path) -> None:
    path = write_eval(
        tmp_path,
        "openai_eval.py",
        """\
        from axl_action import dataset, define_eval, scorer
        eval = define_eval(
            "k", dataset("k", items=[{"input": {"id": "q1"}}]), [scorer("s", lambda o: 1.0)],
            execute_workflow=lambda q, rt: {"output": rt.chat("openai:gpt-4o-mini", "hi").text},
        )
        """,
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    proc = subprocess.run(
        [sys.executable, "-m", "axl_action.cli.main", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert "1 × The openai provider needs an API key but OPENAI_API_KEY is not set" in proc.stdout


def test_a_bool_scorer_says_how_to_fix_it_and_warns(tmp_path: Path) -> None:
    path = write_eval(
        tmp_path,
        "bool_eval.py",
        """\
        from axl_action import dataset, define_eval, scorer
        items = [{"input": {"id": f"q{i}"}, "annotations": {"answer": "4"}} for i in range(3)]
        eval = define_eval(
            "b", dataset("b", items=items),
            [scorer("exact", lambda output, _input, notes: output == notes["answer"])],
            execute_workflow=lambda q, rt: {"output": "4"},
        )
        """,
    )
    proc = axl(str(path), "--output", str(tmp_path / "r.json"))
    assert proc.returncode == 0  # no gate is configured for it: a warning, not a failure
    message = 'Scorer "exact" returned a bool (True); return a number, e.g. float(...)'
    assert message in proc.stdout
    assert "out-of-range score undefined" not in proc.stdout
    assert (
        f'[axl-eval] WARNING: {path} scorer "exact" failed on every item (3/3): it produced no score. '
        f"First error: {message}"
    ) in proc.stderr
    saved = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert saved["items"][0]["scorerErrors"][0].startswith(message)


PRICED_EVAL = """\
from axl_action import dataset, define_eval, scorer
from axl_action.providers import MockProvider, register_provider

register_provider("local", MockProvider(cost=None))  # reports usage, no cost: the table prices it

eval = define_eval(
    "p", dataset("p", items=[{"input": {"id": f"q{i}"}} for i in range(4)]), [scorer("s", lambda o: 1.0)],
    execute_workflow=lambda q, rt: {"output": rt.chat("local:smollm2-135m", "hi").text},
)
"""


def test_unpriced_model_is_named_and_a_mistyped_pricing_key_gets_the_nearest(tmp_path: Path) -> None:
    path = write_eval(tmp_path, "priced_eval.py", PRICED_EVAL)
    unpriced = axl(str(path), "--quiet")
    assert (
        "[axl-eval] NOTE: no price for local:smollm2-135m (4 calls): their cost is unknown, so the run's "
        "accounting is incomplete (unpriced_model)."
    ) in unpriced.stderr
    assert "pass it with --pricing FILE" in unpriced.stderr
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"version": 1, "models": {"local:smollm2-135M": {"input": 0, "output": 0}}}))
    typo = axl(str(path), "--quiet", "--pricing", str(prices))
    assert (
        f'[axl-eval] WARNING: pricing file {prices}: "local:smollm2-135M" matched no call; did you mean '
        '"local:smollm2-135m"? Keys must match the model URI exactly.'
    ) in typo.stderr
    prices.write_text(
        json.dumps({"version": 1, "models": {"local:smollm2-135m": {"input": 0.1, "output": 0.2}}})
    )
    fixed = axl(str(path), "--pricing", str(prices), "--output", str(tmp_path / "r.json"))
    assert "no price" not in fixed.stderr and "matched no call" not in fixed.stderr
    # Four calls of a few tokens at $0.1 / $0.2 per million: not "$0.00".
    assert re.search(r"Cost: \$0\.00000\d+ \|", fixed.stdout), fixed.stdout


def test_a_run_without_output_says_nothing_was_saved(tmp_path: Path) -> None:
    path = write_eval(
        tmp_path,
        "ok_eval.py",
        """\
        from axl_action import dataset, define_eval, scorer
        eval = define_eval("o", dataset("o", items=[{"input": 1}]), [scorer("s", lambda o: 1.0)],
                           execute_workflow=lambda q, rt: {"output": q})
        """,
    )
    proc = axl(str(path))
    assert proc.returncode == 0
    assert "[axl-eval] NOTE: results were not saved; pass --output FILE to keep them." in proc.stderr
    saved = axl(str(path), "--output", str(tmp_path / "r.json"))
    assert "not saved" not in saved.stderr


def test_an_empty_scorers_list_gets_its_own_message(tmp_path: Path) -> None:
    path = write_eval(
        tmp_path,
        "empty_eval.py",
        """\
        from axl_action import dataset, define_eval
        eval = define_eval("e", dataset("e", items=[{"input": 1}]), [], execute_workflow=lambda q, rt: {"output": q})
        """,
    )
    proc = axl(str(path))
    assert proc.returncode == 1
    assert f"Error: {path} exports an empty scorers list; at least one scorer is required." in proc.stderr
    assert "missing scorers" not in proc.stderr


def _newer_copy(tmp_path: Path, variant: str) -> Path:
    data = json.loads(QUICKSTART_BASELINE.read_text(encoding="utf-8"))
    data["id"] = "0e0e0e0e-0000-4000-8000-000000000000"
    data["timestamp"] = "2099-01-01T00:00:00.000Z"
    data["metadata"]["variant"] = variant
    path = tmp_path / "newer.json"
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def test_swapped_compare_arguments_get_a_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    newer = _newer_copy(tmp_path, "candidate")
    assert main(["compare", str(newer), str(QUICKSTART_BASELINE), "--seed", "1"]) == 0
    err = capsys.readouterr().err
    assert (
        '[axl-eval] NOTE: the arguments may be swapped: the baseline\'s metadata says variant "candidate"'
        in err
    )
    assert "the baseline (2099-01-01 00:00:00.000) is newer than the candidate" in err
    assert "The order is axl-eval compare <baseline.json> <candidate.json>" in err
    # The right order says nothing of the kind.
    assert main(["compare", str(QUICKSTART_BASELINE), str(newer), "--seed", "1"]) == 0
    assert "swapped" not in capsys.readouterr().err
    # `report` names its own argument order.
    assert (
        main(
            ["report", str(QUICKSTART_BASELINE), "--baseline", str(newer), "--html", str(tmp_path / "r.html")]
        )
        == 0
    )
    assert "axl-eval report <candidate.json> --baseline <baseline.json>" in capsys.readouterr().err


def test_the_same_file_on_both_sides_gets_a_hint(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(QUICKSTART_BASELINE), str(QUICKSTART_BASELINE), "--seed", "1"]) == 0
    assert "[axl-eval] NOTE: the baseline and the candidate are the same file, so every change is 0." in (
        capsys.readouterr().err
    )


def test_an_eval_file_passed_to_compare() -> None:
    eval_file = ROOT / "examples" / "quickstart" / "triage_eval.py"
    proc = axl("compare", str(eval_file), str(QUICKSTART_BASELINE))
    assert proc.returncode == 1
    assert proc.stderr == (
        f"Error: {eval_file} is an eval file, not a results file (run it first with "
        f"`axl-eval {eval_file} --output results.json`, then pass results.json)\n"
    )
    assert "Traceback" not in proc.stderr and "Extra data" not in proc.stderr


def test_report_exits_1_on_a_failed_gate_only_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    candidate = _newer_copy(tmp_path, "candidate")
    # The quickstart runs lose one item each: over a 0 limit, the item-error-rate gate refuses.
    args = ["report", str(candidate), "--baseline", str(QUICKSTART_BASELINE), "--max-item-error-rate", "0"]
    assert main([*args, "--markdown", str(tmp_path / "c.md")]) == 0  # documented: the reports are the product
    assert "Verdict: fail (failed: Item error rate)" in capsys.readouterr().out
    assert main([*args, "--markdown", str(tmp_path / "c.md"), "--fail-on-gate"]) == 1
    assert (tmp_path / "c.md").read_text(encoding="utf-8").startswith("### ❌ axl-eval fail")
    assert (
        main(["report", str(QUICKSTART_BASELINE), "--fail-on-gate", "--html", str(tmp_path / "r.html")]) == 0
    )


def test_help_says_what_commands_do(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--fail-on-gate" in text and 'even when the verdict is "fail"' in text
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert capsys.readouterr().out.startswith("usage: axl-eval [run] [-h] [--output FILE]")


def test_a_mistyped_command_names_the_command_it_looks_like(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no file named like the typo
    assert main(["compre", "a.json", "b.json"]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        'Error: unknown command "compre" (did you mean `axl-eval compare`?)'
    ]
    # A path that exists, or looks like one, is still an eval path.
    (tmp_path / "compre").mkdir()
    assert main(["compre"]) == 1
    assert "compre: the directory holds no eval files" in capsys.readouterr().err


UNUSABLE_EVAL = """\
from axl_action import dataset, define_eval, scorer

eval = define_eval(
    "u", dataset("u", items=[{"input": {"id": f"q{i}"}} for i in range(2)]), [scorer("s", lambda o: 1.0)],
    execute_workflow=lambda q, rt: {"output": rt.chat("openai:smollm2-135m", q["id"]).text},
)
"""


def test_a_priced_model_whose_calls_could_not_be_priced_is_not_said_to_match_no_call(tmp_path: Path) -> None:
    from tests.fakes.llm_servers import FakeLLMServer

    path = write_eval(tmp_path, "unusable_eval.py", UNUSABLE_EVAL)
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps({"version": 1, "models": {"openai:smollm2-135m": {"input": 1, "output": 2}}})
    )
    with FakeLLMServer("openai") as server:
        server.enqueue(server.no_usage("fine"), server.error(400, "bad request"))
        run = axl(
            str(path),
            "--quiet",
            "--pricing",
            str(prices),
            env={
                "OPENAI_BASE_URL": server.base_url,
                "OPENAI_API_KEY": "sk-test-" + "k" * 20,
                "AXL_EVAL_CONCURRENCY": "1",
            },
        )
    assert "matched no call" not in run.stderr, run.stderr
    assert (
        f'[axl-eval] WARNING: pricing file {prices}: "openai:smollm2-135m" matched 2 calls, but none could be '
        "priced: 1 reported no token usage and 1 failed."
    ) in run.stderr, run.stderr


BASE_URL_EVAL = """\
from axl_action import dataset, define_eval, scorer

eval = define_eval(
    "w", dataset("w", items=[{"input": {"id": f"q{i}"}} for i in range(3)]), [scorer("s", lambda o: 1.0)],
    execute_workflow=lambda q, rt: {"output": rt.chat("openai:gpt-4o-mini", q["id"]).text},
)
"""


def test_a_wrong_base_url_path_names_the_url_and_the_variable_and_costs_nothing(tmp_path: Path) -> None:
    from tests.fakes.llm_servers import FakeLLMServer

    path = write_eval(tmp_path, "base_url_eval.py", BASE_URL_EVAL)
    key = {"OPENAI_API_KEY": "sk-test-" + "k" * 20, "AXL_EVAL_CONCURRENCY": "1"}
    with FakeLLMServer("openai") as server:
        server.enqueue(*[server.error(404, "Not Found")] * 3)
        wrong = f"{server.base_url.removesuffix('/v1')}/api/v9"
        run = axl(str(path), env={**key, "OPENAI_BASE_URL": wrong})
    assert (
        f"POST {wrong}/chat/completions has no such route; the URL comes from OPENAI_BASE_URL={wrong}: "
        "check its path"
    ) in run.stdout + run.stderr, run.stdout + run.stderr
    assert "Cost: $0.00 (no call succeeded) |" in run.stdout, run.stdout
    assert "Cost: unknown" not in run.stdout
    # Nothing listens there: the same, for a refused connection.
    refused = axl(str(path), env={**key, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert "the URL comes from OPENAI_BASE_URL=http://127.0.0.1:9/v1" in refused.stdout + refused.stderr
    assert "Cost: $0.00 (no call succeeded) |" in refused.stdout, refused.stdout


JUDGED_EVAL = """\
from axl_action import dataset, define_eval, llm_scorer
from axl_action.providers import MockProvider, register_provider

# Reports usage, no cost: the price table prices it, and it has no price for this model.
register_provider("local", MockProvider(['{"score": 1, "reasoning": "ok"}'] * 40, cost=None))

eval = define_eval(
    "j", dataset("j", items=[{"input": {"id": f"q{i}"}} for i in range(40)]),
    [llm_scorer("judge", "local:smollm2-135m", "Grade it.")],
    execute_workflow=lambda q, rt: {"output": "answer"},
)
"""


def test_the_unpriced_note_counts_each_judge_call_once(tmp_path: Path) -> None:
    # Issue 25 item 12: the gateway and llm_scorer both priced a judge reply: "(80 calls)" for 40.
    path = write_eval(tmp_path, "judged_eval.py", JUDGED_EVAL)
    proc = axl(str(path), "--quiet")
    assert "no price for local:smollm2-135m (40 calls)" in proc.stderr, proc.stderr
