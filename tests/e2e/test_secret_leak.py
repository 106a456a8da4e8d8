"""Secret-leak test: planted credentials echoed back in every derived form never leave the run.

A loopback OpenAI-compatible server echoes the planted ``OPENAI_API_KEY``, a GitHub token and a
plain (not key-shaped) token from the environment, raw, as a 12-character tail, URL-encoded,
as lower- and upper-case hex (whole and a half), ``\\u``-escaped, and as standard and
URL-safe base64 of the value, of ``Bearer <value>`` and of ``user:<value>`` at all three byte
alignments, in completion text, error bodies and response headers. The workflow itself prints
and logs the forms too (whole, split across two ``write()`` calls, through ``logging`` and
through ``sys.stdout.buffer``). A real eval (``axl-eval run`` with request capture) and its reports (``axl-eval report``
with HTML, comment and summary) run as subprocesses; every file they write and everything
they print is scanned for every form. The count must be 0.
"""

from __future__ import annotations

import base64
import html
import os
import re
import secrets
import string
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, quote_plus

from tests.fakes.llm_servers import FakeLLMServer, Reply

ROOT = Path(__file__).resolve().parents[2]

EVAL = """\
import base64, logging, os, sys
from axl_action import dataset, define_eval, scorer

logging.basicConfig(level=logging.INFO)  # a handler made while the command runs
_log = logging.getLogger("leaky")

def _print_secrets():
    for name in ("OPENAI_API_KEY", "GITHUB_TOKEN", "CUSTOM_GATEWAY_TOKEN"):
        value = os.environ[name]
        half = len(value) // 2
        print("raw", value, "halves", value[:half], value[half:])
        print("hex", value.encode().hex(), value.encode().hex().upper(), "half", value[half:].encode().hex())
        print("bearer64", base64.b64encode(("Bearer " + value).encode()).decode(), file=sys.stderr)
        sys.stdout.write("split " + value[:half])
        sys.stdout.flush()
        sys.stdout.write(value[half:] + "\\n")
        sys.stderr.write("no newline " + value[:5])
        sys.stderr.flush()
        sys.stderr.write(value[5:] + "\\n")
        sys.stdout.buffer.write(("bytes " + value + "\\n").encode())
        _log.warning("logged %s and %s", value, value.encode().hex())

def execute_workflow(input, runtime):
    if input["id"] == "crash":
        # Let the journal's background flush write what settled, then die as an OOM kill does.
        import signal, time
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGKILL)
    if input["id"] == "own-exception":
        # The user's own code quoting credentials in an exception.
        raise RuntimeError(
            "workflow broke with " + os.environ["GITHUB_TOKEN"] + " / tail " + os.environ["OPENAI_API_KEY"][-12:]
        )
    if input["id"] == "echo-ok":
        _print_secrets()
    response = runtime.chat("openai:gpt-4o-mini", [{"role": "user", "content": input["id"]}])
    # The workflow itself also copies a credential from the environment into its output.
    return {"output": {"text": response.text, "debug": "gateway " + os.environ["CUSTOM_GATEWAY_TOKEN"]}}

eval = define_eval(
    workflow="leak",
    dataset=dataset("leak", items=[{"input": {"id": i}} for i in ("echo-ok", "echo-error", "own-exception")
                                   + (("crash",) if os.environ.get("LEAK_CRASH") else ())]),
    scorers=[scorer("nonempty", lambda output: float(bool(output)))],
)
"""


def _alnum(n: int) -> str:
    return "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(n))


def _stable_base64(data: bytes, offset: int, alphabet: bytes | None) -> str:
    """The base64 characters of ``data`` at ``offset`` (mod 3) that do not depend on its
    surroundings: skip those mixing in preceding bytes, stop before the last partial one."""
    encoded = base64.b64encode(b"\0" * offset + data, altchars=alphabet).decode()
    return encoded[-(-8 * offset // 6) : 8 * (offset + len(data)) // 6]


def _echoes(value: str) -> list[str]:
    """The forms the server sends back, each embedded in a longer string."""
    hexed = value.encode().hex()
    escaped = "".join(f"\\u{ord(c):04x}" for c in value)
    out = [value, f"tail {value[-12:]}", quote(value, safe=""), quote_plus(value)]
    out += [hexed, hexed.upper(), hexed[len(hexed) // 2 :], f"escaped {escaped}"]
    for wrapped in (value, f"Bearer {value}", f"user:{value}"):
        for pad in ("", "x", "xy"):
            data = (pad + wrapped + "!?").encode()
            out.append(base64.b64encode(data).decode())
            out.append(base64.urlsafe_b64encode(data).decode())
    return out


def _leak_needles(value: str) -> set[str]:
    """What must not appear anywhere: every 8-character run, the URL-encoded forms and the
    stable middle of each base64 form at each alignment."""
    needles = {value[i : i + 8] for i in range(len(value) - 7)}
    needles |= {quote(value, safe=""), quote_plus(value)}
    hexed = value.encode().hex()
    needles |= {form[i : i + 16] for form in (hexed, hexed.upper()) for i in range(0, len(form) - 15, 2)}
    for wrapped in (value, f"Bearer {value}", f"user:{value}"):
        for offset in range(3):
            for alphabet in (None, b"-_"):
                needles.add(_stable_base64(wrapped.encode(), offset, alphabet))
    return needles


def _views(text: str) -> list[str]:
    """The text as written and with HTML/JSON escapes undone (a leak may hide behind them)."""
    unescaped = html.unescape(text).replace("\\/", "/")
    decoded = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), unescaped)
    return [text, unescaped, decoded]


def test_no_derived_form_of_a_planted_secret_reaches_any_output(tmp_path: Path) -> None:
    planted = {
        "OPENAI_API_KEY": "sk-" + "proj-" + _alnum(20) + "/+" + _alnum(40),
        "GITHUB_TOKEN": "gh" + "p_" + _alnum(36),
        "CUSTOM_GATEWAY_TOKEN": "plain-" + _alnum(30),  # no known shape: only the registry hides it
    }
    forms = [form for value in planted.values() for form in _echoes(value)]
    echo = " | ".join(forms)
    # Each needle really occurs in what the server sends (checks the test's own arithmetic).
    needles = {name: _leak_needles(value) for name, value in planted.items()}
    for value_needles in needles.values():
        assert all(n in echo for n in value_needles if len(n) >= 8)
    key, token, custom = planted.values()
    headers = {
        "x-echo-bearer": base64.b64encode(f"Bearer {key}".encode()).decode(),
        "x-echo-basic": base64.b64encode(f"user:{token}".encode()).decode(),
        "x-echo-tail": f"..{custom[-12:]}",
    }
    (tmp_path / "leak_eval.py").write_text(EVAL)
    out = tmp_path / "out"
    with FakeLLMServer("openai") as server:
        server.enqueue(
            server.ok(echo, headers=headers),
            Reply(400, {"error": {"message": echo, "type": "invalid_request_error"}}, headers),
        )
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AXL_EVAL_"))},
            **planted,
            "OPENAI_BASE_URL": server.base_url,
            "AXL_EVAL_CONCURRENCY": "1",  # the scripted replies go to the items in order
        }
        runs = [
            _axl(env, tmp_path, "leak_eval.py", "--output", str(out / "results.json"), "--capture-requests"),
            _axl(
                env,
                tmp_path,
                "report",
                str(out / "results.json"),
                "--baseline",
                str(out / "results.json"),
                "--html",
                str(out / "report.html"),
                "--markdown",
                str(out / "comment.md"),
                "--summary",
                str(out / "summary.md"),
            ),
        ]
        assert len(server.requests) == 2  # both model calls really happened
        # The same run killed after its items settled leaves its journal: scanned like the rest.
        server.enqueue(
            server.ok(echo, headers=headers),
            Reply(400, {"error": {"message": echo, "type": "invalid_request_error"}}, headers),
        )
        crashed = subprocess.run(
            [
                sys.executable,
                "-m",
                "axl_action.cli.main",
                "leak_eval.py",
                "--output",
                str(out / "crashed" / "results.json"),
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**env, "LEAK_CRASH": "1", "PYTHONPATH": str(ROOT)},
            timeout=120,
            check=False,
        )
        assert crashed.returncode == -9, crashed.stderr
        runs.append(crashed)
    # The workflow's own print, write and logging output reached the console (redacted).
    assert "split [REDACTED]" in runs[0].stdout and "bytes [REDACTED]" in runs[0].stdout
    assert "logged [REDACTED] and [REDACTED]" in runs[0].stderr and "no newline" in runs[0].stderr
    texts = {f"stdout/stderr of run {i}": p.stdout + p.stderr for i, p in enumerate(runs)}
    written = sorted(p for p in out.rglob("*") if p.is_file())
    assert {p.name for p in written} >= {
        "results.json",
        "results.requests.jsonl",
        "report.html",
        "comment.md",
        "summary.md",
    }
    texts.update({str(p.relative_to(tmp_path)): p.read_text(encoding="utf-8") for p in written})
    results = texts["out/results.json"]
    # The run did what the test intends: a success, a provider error, the workflow's exception.
    assert "[REDACTED]" in results and "invalid_request_error" in results and "workflow broke with" in results
    assert "[REDACTED]" in texts["out/results.requests.jsonl"]
    journal = texts["out/crashed/results.json.journal.jsonl"]
    assert journal.count('{"segment":') == 3 and "[REDACTED]" in journal and "workflow broke with" in journal
    leaks = [
        (where, name, needle)
        for where, text in texts.items()
        for view in _views(text)
        for name, value_needles in needles.items()
        for needle in value_needles
        if needle in view
    ]
    assert len(leaks) == 0, leaks[:10]


def _axl(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "axl_action.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**env, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr  # 1: item errors may fail a gate; never a crash
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc
