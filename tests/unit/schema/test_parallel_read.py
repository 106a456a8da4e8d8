"""Reading several results files at once: the same views and the same first error as reading
them one after the other, whether a forked child or this process reads each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from axl_action.errors import ResultFileError
from axl_action.schema import load_run_view_files, load_run_views
from axl_action.schema import reading as schema_reading

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures" / "axl-eval-0.16.1"
BASELINE = FIXTURES / "math20-baseline.json"
CANDIDATE = FIXTURES / "math20-candidate.json"
RUNS3 = FIXTURES / "math20-baseline-runs3.json"

forking = pytest.mark.skipif(not schema_reading._can_fork(), reason="reads in a child only on Linux")


# The forking tests run in a fresh interpreter: the reader forks only while no other thread
# runs, and a test session keeps threads of its own (session-wide servers, event loops).
_SAME = """
import numpy as np

def same(a, b):
    assert a.header == b.header
    assert a.items.keys == b.items.keys
    assert a.items.errors == b.items.errors
    assert a.items.failures == b.items.failures
    for name in ("outcome", "errored", "duration", "cost", "scorer_cost", "unpriced"):
        assert np.array_equal(getattr(a.items, name), getattr(b.items, name), equal_nan=True), name
    assert list(a.items.scorers) == list(b.items.scorers)
    for scorer, column in a.items.scorers.items():
        other = b.items.scorers[scorer]
        assert np.array_equal(column.score, other.score, equal_nan=True)
        assert np.array_equal(column.sample, other.sample)
"""


def _fresh(code: str, *paths: Path) -> str:
    """Run ``code`` (with ``same`` and ``PATHS`` defined) in a new interpreter; its stdout."""
    return _python(f"{_SAME}\nPATHS = {[str(p) for p in paths]!r}\n{code}")


def _python(program: str) -> str:
    """Run ``program`` in a new interpreter that imports this checkout; its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@forking
def test_views_read_in_a_child_equal_views_read_here() -> None:
    out = _fresh(
        """
from axl_action.schema import io, load_run_view_files, load_run_views
from axl_action.schema import reading
assert reading._can_fork()
files = load_run_view_files(PATHS)
for got, path in zip(files, PATHS, strict=True):
    expected = load_run_views(path)
    assert got.path == path and got.is_list == expected.is_list
    assert len(got.runs) == len(expected.runs)
    for a, b in zip(got.runs, expected.runs, strict=True):
        same(a, b)
print("same")
""",
        BASELINE,
        CANDIDATE,
        RUNS3,
    )
    assert out.strip() == "same"


@forking
def test_children_read_every_file() -> None:
    # Reads made in a child come back as its pickled views, not through this spy.
    out = _fresh(
        """
import json, os
from pathlib import Path
from axl_action.schema import io
readers = []
real = io.load_run_views
def spy(path):
    views = real(path)
    readers.append([Path(path).name, os.getpid()])
    return views
io.load_run_views = spy
files = io.load_run_view_files(PATHS)
print(json.dumps({"readers": readers, "me": os.getpid(), "runs": [len(f.runs) for f in files]}))
""",
        BASELINE,
        CANDIDATE,
    )
    seen = json.loads(out)
    assert seen["readers"] == []
    assert seen["runs"] == [1, 1]


@forking
def test_the_caller_goes_on_while_children_read() -> None:
    """``ViewFileReads`` forks at once; work done before ``wait`` overlaps the reading, and
    leaving the block without waiting reaps the children."""
    out = _fresh(
        """
import os
from axl_action.schema import ViewFileReads, load_run_views
with ViewFileReads(PATHS) as reads:
    pids = [pid for pid, _ in reads._children]
    assert len(pids) == 2
    files = reads.wait()
same(files[0].runs[0], load_run_views(PATHS[0]).runs[0])
with ViewFileReads(PATHS) as reads:
    left = [pid for pid, _ in reads._children]
for pid in [*pids, *left]:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        continue
    raise AssertionError(f"child {pid} was not reaped")
print("reaped")
""",
        BASELINE,
        CANDIDATE,
    )
    assert out.strip() == "reaped"


@forking
def test_a_child_that_dies_is_replaced_by_reading_here() -> None:
    out = _fresh(
        """
import os, signal
from axl_action.schema import io, load_run_view_files, load_run_views
real_fork = os.fork
def fork_then_die():
    pid = real_fork()
    if pid == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    return pid
os.fork = fork_then_die
files = load_run_view_files(PATHS)
same(files[1].runs[0], load_run_views(PATHS[1]).runs[0])
print("replaced")
""",
        BASELINE,
        CANDIDATE,
    )
    assert out.strip() == "replaced"


def test_the_first_bad_file_in_argument_order_is_reported(tmp_path: Path) -> None:
    bad_first = tmp_path / "first.json"
    bad_first.write_text("{not json")
    bad_second = tmp_path / "second.json"
    bad_second.write_text('{"items": [], "summary": 3}')
    with pytest.raises(ResultFileError, match=r"first\.json"):
        load_run_view_files([bad_first, bad_second])
    with pytest.raises(ResultFileError, match=r"second\.json is not a valid axl-eval result") as caught:
        load_run_view_files([BASELINE, bad_second])
    assert caught.value.hint  # the child's error arrives whole, hint included


def test_missing_file_in_a_child_is_the_same_error(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError, match="results file not found"):
        load_run_view_files([BASELINE, tmp_path / "absent.json"])


def test_no_fork_while_other_threads_run() -> None:
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        assert not schema_reading._can_fork()
        files = load_run_view_files([BASELINE, CANDIDATE])
        assert [f.path for f in files] == [str(BASELINE), str(CANDIDATE)]
    finally:
        stop.set()
        worker.join()


def _bad_variants(tmp_path: Path) -> dict[str, Path]:
    """Files with two problems each; the one earlier in the file must be the one reported."""
    good = json.loads(BASELINE.read_text())
    bad_header = {**good, "dataset": 7}
    bad_item = json.loads(json.dumps(good))
    bad_item["items"][1]["scores"] = {name: "high" for name in good["summary"]["scorers"]}
    both = json.loads(json.dumps(bad_item))
    both["dataset"] = 7
    odd_scorers = {**good, "summary": {**good["summary"], "scorers": [1]}}
    variants = {
        "header-then-item": both,
        "header-then-not-an-object": [bad_header, 3],
        "item-then-header": [bad_item, bad_header],
        "good-then-header": [good, bad_header],
        "scorers-not-an-object": odd_scorers,
    }
    paths = {}
    for name, data in variants.items():
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps(data))
    return paths


def test_the_first_problem_in_a_file_is_reported_however_it_is_read(tmp_path: Path) -> None:
    """Headers are validated after the item pass (by the parent of a forked reader); the
    problem reported is still the first one in file order, the same on both paths."""
    paths = _bad_variants(tmp_path)
    expected = {
        "header-then-item": "at dataset",
        "header-then-not-an-object": "at [0].dataset",
        "item-then-header": "at [0].items[1].scores",
        "good-then-header": "at [1].dataset",
        "scorers-not-an-object": "at summary.scorers",
    }
    here = {}
    for name, path in paths.items():
        with pytest.raises(ResultFileError) as caught:
            load_run_views(path)
        here[name] = str(caught.value)
        assert expected[name] in here[name], (name, here[name])
    if not schema_reading._can_fork():
        return
    code = """
import json
from axl_action.errors import ResultFileError
from axl_action.schema import load_run_view_files, load_run_views
seen = {}
for path in PATHS:
    try:
        load_run_view_files([path, path])
    except ResultFileError as err:
        seen[path] = str(err)
print(json.dumps(seen))
"""
    forked = json.loads(_fresh(code, *paths.values()))
    assert forked == {str(p): here[name] for name, p in paths.items()}


def test_the_reader_forks_before_numpy_and_pydantic_are_imported() -> None:
    """compare's readers come from ``schema.reading``, which (with the CLI up to that point and
    the lazy ``schema`` package) imports neither, so the parent imports them while children parse."""
    out = _python(
        "import sys\n"
        "import axl_action.cli.main, axl_action.cli.compare, axl_action.schema.reading\n"
        'print(sorted(m for m in ("numpy", "pydantic") if m in sys.modules))\n'
    )
    assert out.strip() == "[]"


def test_the_lazy_schema_package_exports_every_api_name() -> None:
    import axl_action.schema as schema
    from axl_action.schema import _api

    for name in _api.__all__:
        assert getattr(schema, name) is getattr(_api, name), name
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = schema.nothing  # type: ignore[attr-defined]


@forking
def test_identical_inputs_are_unpickled_once_and_shared(tmp_path: Path) -> None:
    """Children send each run's inputs as their own pickle: runs whose inputs are the same
    bytes share one list (pairing then compares them by identity), others keep their own."""
    changed = json.loads(CANDIDATE.read_text(encoding="utf-8"))
    changed["items"][0]["input"] = {"question": "changed"}
    other = tmp_path / "changed.json"
    other.write_text(json.dumps(changed), encoding="utf-8")
    out = _fresh(
        """
from axl_action.schema import load_run_view_files, load_run_views
files = load_run_view_files(PATHS)
base, cand, changed = (f.runs[0].items.inputs for f in files[:3])
runs3 = [run.items.inputs for run in files[3].runs]
here = [load_run_views(path).runs[0].items.inputs for path in PATHS[:3]]
print(base is cand, all(r is base for r in runs3), changed is base)
print(base == here[0], cand == here[1], changed == here[2], changed != base)
""",
        BASELINE,
        CANDIDATE,
        other,
        RUNS3,
    )
    assert out.split() == ["True", "True", "False", "True", "True", "True", "True"]
