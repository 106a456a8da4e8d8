"""Scoped pull-request runs, end to end: a push stores three suites' baselines (three evals that
share a helper module), and pull requests re-run only the evals whose recorded files changed.

Each eval appends its name to ``ran.txt`` per item, so the test sees exactly what ran; the
carried suites' comments say "Not re-run", and their candidates hold the baseline's results
marked ``metadata.carriedOver``.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.action.test_action_e2e import ActionRun, Harness, _unzip
from tests.fakes.github_server import FakeGitHub

pytestmark = pytest.mark.slow

HELPERS = """\
from pathlib import Path

def note(name):
    with open(Path(__file__).with_name("ran.txt"), "a") as fh:
        fh.write(name + "\\n")

def grade(output, expected):
    return 1.0 if output == expected else 0.0
"""

EVAL = """\
from pathlib import Path
from axl_action import dataset, define_eval, scorer
import helpers

PROMPT = "Answer with the word."
{extra}

def execute_workflow(value, runtime):
    helpers.note("{name}")
    return {{"output": value}}

eval = define_eval(
    "{name}",
    dataset("{name}-set", items={items}),
    [scorer("same", lambda output, input: helpers.grade(output, input))],{options}
)
"""

WORDS_AT_IMPORT = 'WORDS = Path(__file__).with_name("b_words.txt").read_text().split()'
# Opened while the eval loads, then gone before the record is made: it cannot be hashed.
VANISHING = (
    'scratch = Path(__file__).with_name("scratch.txt")\n'
    'scratch.write_text("x")\n'
    "scratch.read_text()\n"
    "scratch.unlink()"
)


def _write_eval(
    folder: Path,
    name: str,
    *,
    extra: str = "",
    items: str = '[{"input": "x"}, {"input": "y"}]',
    options: str = "",
) -> None:
    text = EVAL.format(name=name, extra=extra, items=items, options=options)
    (folder / f"{name}_eval.py").write_text(text)


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    with FakeGitHub() as gh:
        harness = Harness(gh, tmp_path)
        ws = harness.workspace
        (ws / "helpers.py").write_text(HELPERS)
        (ws / "b_words.txt").write_text("alpha beta\n")
        _write_eval(ws, "a")
        _write_eval(ws, "b", extra=WORDS_AT_IMPORT, items='[{"input": w} for w in WORDS]')
        _write_eval(ws, "c")
        yield harness


SUITES = ("a", "b", "c")


def _inputs(suite: str, **more: str) -> dict[str, str]:
    return {"evals": f"{suite}_eval.py", "suite": suite, **more}


def _ran(h: Harness) -> set[str]:
    """The evals that ran since the last look (the ledger is emptied)."""
    path = h.workspace / "ran.txt"
    if not path.exists():
        return set()
    names = set(path.read_text().split())
    path.unlink()
    return names


def _push_baselines(h: Harness, suites: tuple[str, ...] = SUITES) -> None:
    run, payload, env = h.push(h.main[-1])
    for suite in suites:
        pushed = h.run("push", run, payload, env, inputs=_inputs(suite))
        assert pushed.code == 0, pushed.log
    assert _ran(h) == set(suites)
    [stored] = h.artifacts("axl-eval-baseline-a", run)
    files = _unzip(stored.data)
    assert set(files) >= {"results.json", "scope.json"}
    sources = json.loads(files["results.json"])["metadata"]["sources"]
    assert sources["evalFile"] == "a_eval.py"
    assert set(sources["modules"]) == {"a_eval.py", "helpers.py"}


def _pr(
    h: Harness, number: int, suites: tuple[str, ...] = SUITES, labels: tuple[str, ...] = (), **more: str
) -> dict[str, ActionRun]:
    pr_run, payload, env, _head = h.pull_request(number)
    payload["pull_request"]["labels"] = [{"name": name, "color": "ededed"} for name in labels]
    out = {}
    for suite in suites:
        result = h.run("pull_request", pr_run, payload, env, inputs=_inputs(suite, **more))
        assert result.code == 0, result.log
        assert result.outputs["mode"] == "compare", result.log
        out[suite] = result
    return out


def _comment(h: Harness, number: int, suite: str) -> str:
    bodies = [c.body for c in h.gh.comments_on(h.repo, number) if f'suite="{suite}"' in c.body]
    assert len(bodies) == 1, bodies
    return str(bodies[0])


def _candidate(h: Harness, result: ActionRun) -> Any:
    return json.loads((h.workspace / result.outputs["results-path"]).read_text())


def test_an_unchanged_pull_request_runs_nothing_and_says_so(h: Harness) -> None:
    _push_baselines(h)
    runs = _pr(h, 5)
    assert _ran(h) == set()
    for suite in SUITES:
        body = _comment(h, 5, suite)
        assert f"**Not re-run:** {suite}\\_eval.py (unchanged, not re-run" in body, body
        candidate = _candidate(h, runs[suite])
        assert candidate["metadata"]["carriedOver"]["reason"] == "unchanged"
        assert f"{suite}_eval.py: not re-run: unchanged" in runs[suite].log
    assert runs["a"].outputs["verdict"] == "pass"


def test_only_what_a_change_touched_re_runs(h: Harness) -> None:
    _push_baselines(h)

    # The prompt of one eval: that eval alone.
    (h.workspace / "a_eval.py").write_text(
        (h.workspace / "a_eval.py").read_text().replace("the word", "one word")
    )
    runs = _pr(h, 6)
    assert _ran(h) == {"a"}
    assert "a_eval.py: runs: file-changed (a_eval.py)" in runs["a"].log
    assert "Not re-run" not in _comment(h, 6, "a")
    assert (
        "metadata" not in _candidate(h, runs["a"])
        or "carriedOver" not in _candidate(h, runs["a"])["metadata"]
    )
    assert "Not re-run" in _comment(h, 6, "b")

    # A data file one eval reads: that eval alone.
    (h.workspace / "b_words.txt").write_text("alpha beta gamma\n")
    _pr(h, 7)
    assert _ran(h) == {"a", "b"}  # a's prompt still differs from the baseline's

    # The helper every eval imports: all of them.
    (h.workspace / "helpers.py").write_text(HELPERS + "\n# reworded\n")
    runs = _pr(h, 8)
    assert _ran(h) == set(SUITES)
    assert "c_eval.py: runs: file-changed (helpers.py)" in runs["c"].log


def test_force_run_and_the_label_re_run_everything(h: Harness) -> None:
    _push_baselines(h, ("a",))
    _pr(h, 5, ("a",), **{"force-run": "true"})
    assert _ran(h) == {"a"}
    runs = _pr(h, 6, ("a",), labels=("bug", "axl-eval:full-run"))
    assert _ran(h) == {"a"}
    assert "a_eval.py: runs: label (axl-eval:full-run)" in runs["a"].log
    _pr(h, 7, ("a",), labels=("bug",))
    assert _ran(h) == set()


def test_a_changed_input_or_declared_env_var_re_runs(h: Harness) -> None:
    _push_baselines(h, ("a",))
    runs = _pr(h, 5, ("a",), concurrency="2")
    assert _ran(h) == {"a"}
    assert "stamp-changed" in runs["a"].log
    # A declared variable: its value's hash is recorded, and a new value re-runs the eval.
    _write_eval(
        h.workspace,
        "c",
        extra='import os\nMODE = os.environ.get("QUICKSTART_VARIANT")',
        options='\n    env=["QUICKSTART_VARIANT"],',
    )
    run, payload, env = h.push(h.main[-1])
    assert h.run("push", run, payload, env, inputs=_inputs("c"), variant="baseline").code == 0
    _ran(h)
    pr_run, pr_payload, pr_env, _ = h.pull_request(6)
    same = h.run("pull_request", pr_run, pr_payload, pr_env, inputs=_inputs("c"), variant="baseline")
    assert same.code == 0 and _ran(h) == set(), same.log
    changed = h.run("pull_request", pr_run, pr_payload, pr_env, inputs=_inputs("c"), variant="candidate")
    assert changed.code == 0 and _ran(h) == {"c"}, changed.log
    assert "c_eval.py: runs: env-changed (QUICKSTART_VARIANT)" in changed.log


def test_a_file_that_could_not_be_recorded_re_runs(h: Harness) -> None:
    _write_eval(h.workspace, "d", extra=VANISHING)
    run, payload, env = h.push(h.main[-1])
    assert h.run("push", run, payload, env, inputs=_inputs("d")).code == 0
    assert _ran(h) == {"d"}
    runs = _pr(h, 5, ("d",))
    assert _ran(h) == {"d"}
    assert "d_eval.py: runs: record-unknown (could not read scratch.txt)" in runs["d"].log


def _rewrite_baseline(h: Harness, suite: str, change: Any) -> None:
    """Edit a stored baseline artifact's files as an older action would have written them."""
    [stored] = h.artifacts(f"axl-eval-baseline-{suite}")
    files = change(_unzip(stored.data))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    stored.data = buf.getvalue()
    stored.digest = "sha256:" + hashlib.sha256(stored.data).hexdigest() if stored.digest else None


def test_a_baseline_without_records_or_stamp_re_runs_everything(h: Harness) -> None:
    _push_baselines(h)

    def no_stamp(files: dict[str, bytes]) -> dict[str, bytes]:
        return {k: v for k, v in files.items() if k != "scope.json"}

    def no_sources(files: dict[str, bytes]) -> dict[str, bytes]:
        results = json.loads(files["results.json"])
        del results["metadata"]["sources"]
        return {**files, "results.json": json.dumps(results).encode()}

    _rewrite_baseline(h, "a", no_stamp)
    _rewrite_baseline(h, "b", no_sources)
    runs = _pr(h, 5)
    assert _ran(h) == {"a", "b"}
    assert "a_eval.py: runs: no-baseline-stamp" in runs["a"].log
    assert "b_eval.py: runs: no-record" in runs["b"].log
    assert "Not re-run" not in _comment(h, 5, "a") and "Not re-run" not in _comment(h, 5, "b")
    assert "Not re-run" in _comment(h, 5, "c")
