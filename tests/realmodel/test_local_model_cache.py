"""The response cache against the real model (issue 22): a second identical run of the local
example makes 0 calls to the llama.cpp server, and its scores and answers equal the first's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.realmodel.conftest import EXAMPLE, PRICING, axl
from tests.realmodel.server import RecordingProxy


def test_a_second_identical_run_makes_no_call_and_scores_the_same(
    proxy: RecordingProxy, api_key: str, tmp_path: Path
) -> None:
    env = {"OPENAI_BASE_URL": proxy.base_url, "OPENAI_API_KEY": api_key, "LOCAL_MODEL_VARIANT": "baseline"}
    cache = ["--cache", "on", "--cache-dir", str(tmp_path / "cache"), "--pricing", str(PRICING)]
    runs = []
    calls = []
    for name in ("first.json", "second.json"):
        mark = proxy.mark()
        done = axl(str(EXAMPLE), "--output", str(tmp_path / name), *cache, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        calls.append(len(proxy.since(mark)))
        runs.append(json.loads((tmp_path / name).read_text()))
    first, second = runs
    assert calls[0] > 0 and calls[1] == 0
    assert [i["output"] for i in second["items"]] == [i["output"] for i in first["items"]]
    assert [i["scores"] for i in second["items"]] == [i["scores"] for i in first["items"]]
    replayed = second["accounting"]["replayed"]
    assert replayed["calls"] == calls[0] and second["accounting"]["knownCost"] == 0
    assert first["accounting"]["knownCost"] > 0
    # Summed in another order (items settle concurrently): equal to the last bits only.
    assert replayed["cost"] == pytest.approx(first["accounting"]["knownCost"], rel=1e-12)
