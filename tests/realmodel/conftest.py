"""Session fixtures: the real SmolLM2 server, the recording proxy and the example's runs.

Without llama-cpp-python these tests skip, except under ``AXL_REQUIRE_LOCAL_MODEL=1`` (set by
``.ci/run``), where a missing model fails them: CI must never pass by not running them.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from axl_action.schema import EvalResult, load_result_file
from tests.realmodel.server import (
    Exchange,
    LlamaServer,
    LocalModelMissing,
    RecordingProxy,
    find_gguf,
    require_server_module,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "local-model"
PRICING = EXAMPLE / "pricing.json"


def axl_command() -> list[str]:
    """The installed ``axl-eval`` console script, as a user runs it."""
    script = shutil.which("axl-eval")
    return [script] if script else [sys.executable, "-m", "axl_action.cli.main"]


@pytest.fixture(scope="session")
def api_key() -> str:
    # Key-shaped, so the project's redaction treats it like a real one; built at run time so
    # that no secret-looking literal sits in the repository.
    return "sk-" + "local" + secrets.token_hex(16)


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory, api_key: str) -> Iterator[LlamaServer]:
    missing: str | None = None
    try:
        require_server_module()
        gguf = find_gguf()
    except LocalModelMissing as exc:
        missing = f"{exc}; install it with: bash .ci/setup-local-model.sh (see docs/local-model.md)"
    if missing is not None:
        if os.environ.get("AXL_REQUIRE_LOCAL_MODEL") == "1":
            pytest.fail(f"AXL_REQUIRE_LOCAL_MODEL=1 but {missing}", pytrace=False)
        pytest.skip(missing)
    log = tmp_path_factory.mktemp("llama") / "server.log"
    server = LlamaServer(gguf, api_key, log).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def proxy(llama_server: LlamaServer) -> Iterator[RecordingProxy]:
    recorder = RecordingProxy(llama_server.port).start()
    try:
        yield recorder
    finally:
        recorder.stop()


@dataclass(frozen=True)
class Run:
    """One ``axl-eval`` run of the example and what the server saw during it."""

    path: Path
    result: EvalResult
    raw: dict[str, Any]
    exchanges: list[Exchange]
    proc: subprocess.CompletedProcess[str]


def axl(
    *args: str, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*axl_command(), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )


@pytest.fixture(scope="session")
def run_example(proxy: RecordingProxy, api_key: str, tmp_path_factory: pytest.TempPathFactory) -> Any:
    out = tmp_path_factory.mktemp("runs")
    cache: dict[tuple[str, bool], Run] = {}

    def run(variant: str, *, priced: bool) -> Run:
        key = (variant, priced)
        if key not in cache:
            path = out / f"{variant}-{'priced' if priced else 'unpriced'}.json"
            mark = proxy.mark()
            pricing = ["--pricing", str(PRICING)] if priced else []
            proc = axl(
                str(EXAMPLE),
                "--output",
                str(path),
                "--capture-requests",
                *pricing,
                env={
                    "OPENAI_BASE_URL": proxy.base_url,
                    "OPENAI_API_KEY": api_key,
                    "LOCAL_MODEL_VARIANT": variant,
                },
            )
            assert proc.returncode == 0, proc.stdout + proc.stderr
            # The file must also pass the project's own reader (schema validation).
            loaded = load_result_file(path)
            assert not loaded.is_list and len(loaded.results) == 1
            cache[key] = Run(path, loaded.results[0], json.loads(path.read_text()), proxy.since(mark), proc)
        return cache[key]

    return run
