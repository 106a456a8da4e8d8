"""The baseline history end to end: 30 baseline pushes, then a PR that shows all of them.

Every run is the real entrypoint in a subprocess against the loopback fake GitHub (see
``test_action_e2e.py``). The runs gate prebuilt results files (``results:``) drawn from a
synthetic suite with known noise, so the history has real spread and runs in seconds each.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.action.test_action_e2e import Harness
from tests.fakes.github_server import FakeGitHub

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "unit" / "history"))
from history_synth import Suite, run_wire, timestamp

pytestmark = pytest.mark.slow


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    with FakeGitHub() as gh:
        yield Harness(gh, tmp_path)


SUITE = Suite(n=30, kinds={"judge": "levels", "exact": "deterministic"}, seed=5, day_sigma=0.03)


def _unzip(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _write_results(h: Harness, name: str, wire: dict[str, Any]) -> str:
    path = h.workspace / "runs" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(wire), encoding="utf-8")
    return f"runs/{name}"


def _push(h: Harness, sha: str, k: int, inputs: dict[str, str] | None = None) -> Any:
    results = _write_results(
        h,
        f"b{k:02d}.json",
        run_wire(SUITE, k, run_id=f"base-{k}", timestamp=timestamp(k), cost=0.01 + k / 1000),
    )
    run, payload, env = h.push(sha)
    result = h.run("push", run, payload, env, inputs={"evals": "", "results": results, **(inputs or {})})
    assert result.code == 0, result.log
    return run, result


def _stored_history(h: Harness, run: Any) -> dict[str, Any]:
    [artifact] = h.artifacts("axl-eval-baseline", run)
    files = _unzip(artifact.data)
    assert sorted(files) == ["history.json.gz", "results.json"]
    data: dict[str, Any] = json.loads(gzip.decompress(files["history.json.gz"]))
    return data


def test_thirty_baselines_then_a_pr_shows_the_whole_history(h: Harness) -> None:
    commits = h.gh.add_chain(30, parent=h.main[-1])
    runs = []
    for k, sha in enumerate(commits):
        run, result = _push(h, sha, k)
        runs.append(run)
        if k == 0:
            assert "the history starts with this run" in result.stdout, result.log
        else:
            assert f"Previous baseline: run {runs[k - 1].id}" in result.stdout, result.log
            assert f"with a history of {k + 1} baseline runs" in result.stdout, result.log
        assert "::warning" not in result.stdout, result.log
    history = _stored_history(h, runs[-1])
    assert history["format"] == "axl-eval-history" and history["limit"] == 50
    assert [row["runId"] for row in history["rows"]] == [str(r.id) for r in runs]
    assert [row["commit"] for row in history["rows"]] == commits
    assert all(row["keyRanges"] == [[0, 30]] for row in history["rows"])
    # Consecutive rows measured the same work, so their cost changes are certified.
    assert [row["cost"].get("certified") for row in history["rows"]][1:] == [True] * 29

    # The PR: one baseline download, the whole history in the comment and the report.
    h.main = commits
    run, payload, env, _ = h.pull_request(12)
    cand = _write_results(
        h, "cand.json", run_wire(SUITE, 999, run_id="cand", timestamp=timestamp(40), shift={"judge": -0.3})
    )
    downloads_before = len(h.gh.requests_to("api", "GET", r"/artifacts/\d+/zip$"))
    result = h.run(
        "pull_request",
        run,
        payload,
        env,
        inputs={"evals": "", "results": cand, "threshold": "auto", "fail-on-regression": "true"},
    )
    downloads = h.gh.requests_to("api", "GET", r"/artifacts/\d+/zip$")[downloads_before:]
    assert len(downloads) == 1, downloads
    assert result.outputs["baseline-run-id"] == str(runs[-1].id)
    assert "title=Baseline history" not in result.stdout, result.log
    assert "title=threshold: auto" not in result.stdout, "30 runs are enough to measure every scorer"
    [comment] = h.gh.comments_on(h.repo, 12)
    body = comment.body
    assert "<b>History</b> · 30 baseline runs · thresholds measured from history" in body, body
    judge_row = next(
        line for line in body.splitlines() if line.startswith("| judge | ") and "baseline runs vary" in line
    )
    spark = re.search(r"\| judge \| ([▁▂▃▄▅▆▇█]{20}) ", judge_row)
    assert spark, judge_row
    assert re.search(r"Δ -0\.\d{3}; baseline runs vary ±0\.\d{3} \(last 20\) · threshold 0\.\d{3}", judge_row)
    # The judge dropped far beyond its measured band: a significant regression, and the gate fails.
    assert result.code == 1 and result.outputs["verdict"] == "fail", result.log
    assert "🔻 regressed" in body
    [report] = h.artifacts("axl-eval-report", run)
    html = _unzip(report.data)["report.html"].decode()
    assert 'id="history"' in html and "30 baseline runs" in html
    table = html.split('<table class="h-runs">', 1)[1].split("</table>", 1)[0]
    assert table.count("<tr") == 31  # the header and one row per baseline run
    for sha in (commits[0], commits[-1]):
        assert f'href="https://github.com/{h.repo.full_name}/commit/{sha}"' in html


def test_a_corrupt_history_is_a_warning_and_the_pr_still_gates(h: Harness) -> None:
    commits = h.gh.add_chain(2, parent=h.main[-1])
    _push(h, commits[0], 0)
    run1, _ = _push(h, commits[1], 1)
    # Break the stored history: the results stay fine.
    [artifact] = h.artifacts("axl-eval-baseline", run1)
    files = _unzip(artifact.data)
    files["history.json.gz"] = gzip.compress(b'{"format": "axl-eval-history", "version": 1, "rows": "oops"}')
    del h.gh.artifacts[artifact.id]
    h.gh.add_artifact(run1, "axl-eval-baseline", files)

    h.main = commits
    run, payload, env, _ = h.pull_request(5)
    cand = _write_results(
        h, "cand.json", run_wire(SUITE, 77, run_id="cand", timestamp=timestamp(9), shift={"judge": -0.5})
    )
    result = h.run(
        "pull_request", run, payload, env, inputs={"evals": "", "results": cand, "threshold": "auto"}
    )
    line = next(x for x in result.stdout.splitlines() if x.startswith("::warning title=Baseline history::"))
    assert "is not a valid history file" in line and "history.json.gz" in line, line
    # No history: threshold auto falls back to the defaults and says so; the gates still decide.
    assert "::notice title=threshold%3A auto::threshold: auto needs 5 baseline runs" in result.stdout
    assert result.code == 1 and result.outputs["verdict"] == "fail", result.log
    assert result.outputs["baseline-run-id"] == str(run1.id)
    [comment] = h.gh.comments_on(h.repo, 5)
    assert "is not a valid history file" in comment.body
    assert "keeps its default threshold" in comment.body

    # The next baseline warns too, and starts the history again from the previous baseline.
    sha = h.gh.add_chain(1, parent=commits[-1])[0]
    run2, pushed = _push(h, sha, 2)
    assert "::warning title=Baseline history::The baseline's history was not used" in pushed.stdout
    rows = _stored_history(h, run2)["rows"]
    assert [row["runId"] for row in rows] == [str(run1.id), str(run2.id)]


@pytest.mark.parametrize("problem", ["missing", "foreign"])
def test_a_missing_or_foreign_history_is_a_warning(h: Harness, problem: str) -> None:
    sha = h.gh.add_chain(1, parent=h.main[-1])[0]
    run0, _ = _push(h, sha, 0)
    [artifact] = h.artifacts("axl-eval-baseline", run0)
    files = _unzip(artifact.data)
    if problem == "missing":
        del files["history.json.gz"]
    else:
        history = json.loads(gzip.decompress(files["history.json.gz"]))
        history["suite"] = "another-suite"
        files["history.json.gz"] = gzip.compress(json.dumps(history).encode())
    del h.gh.artifacts[artifact.id]
    h.gh.add_artifact(run0, "axl-eval-baseline", files)
    h.main = [sha]
    run, payload, env, _ = h.pull_request(6)
    cand = _write_results(h, "cand.json", run_wire(SUITE, 55, run_id="cand", timestamp=timestamp(5)))
    result = h.run("pull_request", run, payload, env, inputs={"evals": "", "results": cand})
    assert result.code == 0, result.log
    line = next(x for x in result.stdout.splitlines() if x.startswith("::warning title=Baseline history::"))
    expected = (
        "holds no history.json.gz" if problem == "missing" else "is the history of suite 'another-suite'"
    )
    assert expected in line, line
    assert len(h.gh.comments_on(h.repo, 6)) == 1


def test_history_limit_keeps_the_newest_rows_and_zero_stores_none(h: Harness) -> None:
    commits = h.gh.add_chain(4, parent=h.main[-1])
    runs = [_push(h, sha, k, {"history-limit": "2"})[0] for k, sha in enumerate(commits[:3])]
    assert [row["runId"] for row in _stored_history(h, runs[-1])["rows"]] == [str(r.id) for r in runs[1:]]
    run, result = _push(h, commits[3], 3, {"history-limit": "0"})
    [artifact] = h.artifacts("axl-eval-baseline", run)
    assert sorted(_unzip(artifact.data)) == ["results.json"]
    assert "Previous baseline" not in result.stdout
