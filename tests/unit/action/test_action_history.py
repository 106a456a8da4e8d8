"""The action's history step, as pure functions: inputs, reading a baseline's history, and
extending it for the next baseline."""

from __future__ import annotations

import gzip
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from axl_action.action.baseline import BaselineLookup
from axl_action.action.history_step import extend_history, read_baseline_history
from axl_action.action.settings import read_settings
from axl_action.errors import ActionInputError
from axl_action.github.baseline_policy import BaselineChoice
from axl_action.history import (
    ARTIFACT_FILE_NAME,
    History,
    append,
    history_bytes,
    history_entry,
    parse_history,
)
from axl_action.schema import as_view, parse_result_data

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "history"))
from history_synth import Suite, run_wire, timestamp

SUITE = Suite(n=10, kinds={"judge": "levels"}, seed=4)


def results(k: int):  # type: ignore[no-untyped-def]
    return parse_result_data(run_wire(SUITE, k, run_id=f"r{k}", timestamp=timestamp(k)), f"r{k}.json")


def choice(run_id: int = 41, sha: str = "a" * 40) -> BaselineChoice:
    return BaselineChoice(
        artifact_id=9,
        artifact_name="axl-eval-baseline",
        size_in_bytes=1,
        digest=None,
        run_id=run_id,
        run_url=None,
        head_sha=sha,
        created_at=datetime(2026, 11, 2, tzinfo=UTC),
        age_seconds=60,
        match="newest",
        reason="newest",
    )


def stored(count: int, suite: str = "default") -> bytes:
    h = History(suite=suite)
    for k in range(count):
        h = append(h, history_entry([as_view(results(k).results[0])], run_id=str(30 + k)))
    return history_bytes(h, gzipped=True).data


def test_inputs_threshold_auto_and_history_limit() -> None:
    s = read_settings({"INPUT_EVALS": "e/", "INPUT_THRESHOLD": "auto", "INPUT_HISTORY-LIMIT": "20"})
    assert s.threshold == "auto" and s.history_limit == 20
    assert read_settings({"INPUT_EVALS": "e/"}).history_limit == 50
    assert read_settings({"INPUT_EVALS": "e/", "INPUT_HISTORY-LIMIT": "0"}).history_limit == 0
    for bad in ("501", "-1", "ten", "2.5"):
        with pytest.raises(
            ActionInputError, match=r"Invalid input history-limit .*: must be a whole number from 0"
        ):
            read_settings({"INPUT_EVALS": "e/", "INPUT_HISTORY-LIMIT": bad})
    with pytest.raises(ActionInputError, match=r"or auto \(measured from the baseline history\)"):
        read_settings({"INPUT_EVALS": "e/", "INPUT_THRESHOLD": "automatic"})


def test_a_pr_reads_the_history_the_baseline_download_brought() -> None:
    lookup = BaselineLookup(
        reason="x", choice=choice(run_id=33), results=results(3), files={ARTIFACT_FILE_NAME: stored(4)}
    )
    got = read_baseline_history(lookup, suite="default")
    assert got.warnings == [] and got.history is not None
    assert [e.summary.run_id for e in got.history.entries] == ["30", "31", "32", "33"]


@pytest.mark.parametrize(
    ("files", "warning"),
    [
        ({}, "holds no history.json.gz: it was stored before the history existed or with history-limit: 0"),
        ({ARTIFACT_FILE_NAME: b"\x1f\x8bnope"}, "is not a valid gzip file"),
        ({ARTIFACT_FILE_NAME: gzip.compress(b"[1, 2]")}, "is not an axl-eval history file"),
        ({ARTIFACT_FILE_NAME: b"PLACEHOLDER"}, "is the history of suite 'other', not 'default'"),
    ],
)
def test_a_missing_corrupt_or_foreign_history_is_a_warning(files: dict[str, bytes], warning: str) -> None:
    if files.get(ARTIFACT_FILE_NAME) == b"PLACEHOLDER":
        files = {ARTIFACT_FILE_NAME: stored(2, suite="other")}
    lookup = BaselineLookup(reason="x", choice=choice(), results=results(1), files=files)
    got = read_baseline_history(lookup, suite="default")
    assert got.history is None
    [message] = got.warnings
    assert warning in message and "artifact 'axl-eval-baseline' (run 41)" in message
    # The baseline job starts again from that baseline's own results.
    seeded = read_baseline_history(lookup, suite="default", seed=True)
    assert seeded.history is not None and [e.summary.run_id for e in seeded.history.entries] == ["41"]
    assert seeded.history.entries[0].summary.commit == "a" * 40
    assert "starts again from that baseline" in seeded.warnings[0]


def test_no_baseline_means_no_history_and_no_warning() -> None:
    assert read_baseline_history(BaselineLookup(reason="none yet"), suite="default").warnings == []


def test_the_baseline_job_appends_its_own_row_and_keeps_the_limit() -> None:
    previous = read_baseline_history(
        BaselineLookup(
            reason="x", choice=choice(run_id=33), results=results(3), files={ARTIFACT_FILE_NAME: stored(4)}
        ),
        suite="default",
        seed=True,
    ).history
    out = extend_history(
        previous,
        results(4),
        limit=3,
        suite="default",
        run_id="99",
        commit="b" * 40,
        previous_results=results(3),
    )
    assert out.rows == 3 and out.dropped == 0 and out.data[:2] == b"\x1f\x8b"
    h = parse_history(out.data, suite="default")
    assert [e.summary.run_id for e in h.entries] == ["32", "33", "99"]
    assert h.limit == 3 and h.entries[-1].summary.cost.certified is True
    assert json.loads(gzip.decompress(out.data))["suite"] == "default"


# ------------------------------------------------------------------ the baseline job, with fakes


def _baseline_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch | None = None, **inputs: str) -> Any:
    from test_action_orchestrator import BASE, NOW, FakeCommands, FakeUploader, _ctx, _evals_from

    from axl_action.action.orchestrator import run_action

    up, cmds = FakeUploader(), FakeCommands()
    outcome = run_action(
        read_settings({"INPUT_EVALS": "e/", **{f"INPUT_{k.upper()}": v for k, v in inputs.items()}}),
        _ctx("push", "refs/heads/main", sha="c" * 40),
        github=None,
        uploader=up,
        commands=cmds,
        clock=lambda: NOW,
        run_evals=_evals_from(BASE),
        workdir=tmp_path,
        scratch=tmp_path / "scratch",
    )
    return outcome, up, cmds


def test_a_first_baseline_stores_a_history_of_its_own_row(tmp_path: Path) -> None:
    outcome, up, _ = _baseline_run(tmp_path)
    assert outcome.exit_code == 0
    stored = up.uploads["axl-eval-baseline"]
    h = parse_history(stored[ARTIFACT_FILE_NAME], suite="default")
    [row] = [e.summary for e in h.entries]
    assert (row.run_id, row.commit, row.dataset) == ("99", "c" * 40, "math-20")
    _, up0, _ = _baseline_run(tmp_path / "off", **{"HISTORY-LIMIT": "0"})
    assert sorted(up0.uploads["axl-eval-baseline"]) == ["results.json", "scope.json"]


def test_a_history_that_cannot_be_built_never_costs_the_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import axl_action.action.publishing as publishing

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk full")

    monkeypatch.setattr(publishing, "extend_history", broken)
    outcome, up, cmds = _baseline_run(tmp_path)
    assert outcome.exit_code == 0
    assert sorted(up.uploads["axl-eval-baseline"]) == ["results.json", "scope.json"]
    assert "baseline artifact" in outcome.published
    assert outcome.problems == ["baseline history: RuntimeError: disk full"]
    assert (
        "axl-eval: publishing failed",
        "Could not publish the baseline history: RuntimeError: disk full",
    ) in cmds.of("warning")
