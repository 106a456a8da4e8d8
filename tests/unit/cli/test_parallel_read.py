"""compare's reading of its two files in worker processes (cli/parallel_read.py): the same
views and the same first error as reading them one after the other, whether a worker or this
process reads each; the library's ``load_run_view_files`` starts no process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from axl_action.cli import parallel_read
from axl_action.errors import ResultFileError
from axl_action.schema import load_run_view_files, load_run_views

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures" / "axl-eval-0.16.1"
BASELINE = FIXTURES / "math20-baseline.json"
CANDIDATE = FIXTURES / "math20-candidate.json"
RUNS3 = FIXTURES / "math20-baseline-runs3.json"

forking = pytest.mark.skipif(sys.platform != "linux", reason="reads in worker processes only on Linux")


# The forking tests run in a fresh interpreter: the reader forks only while no other thread
# runs, and a test session keeps threads of its own (session-wide servers, event loops).
_SAME = """
def same(a, b):
    import numpy as np  # not before the workers fork: its BLAS threads would forbid that

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
from axl_action.cli.parallel_read import ParallelReads, can_fork
assert can_fork()
with ParallelReads(PATHS) as reads:
    files = reads.wait()
from axl_action.schema import load_run_views
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
def test_workers_read_every_file(tmp_path: Path) -> None:
    # Every file is read in a worker, never by this process (one worker may read both: a
    # worker that finishes the first file before the second is picked takes it too).
    out = _fresh(
        f"""
import json, os
from axl_action.cli import parallel_read
real = parallel_read._read_in_worker
def spy(path):
    with open({str(tmp_path / "readers.log")!r}, "a") as log:
        log.write(f"{{os.getpid()}} {{os.path.basename(path)}}\\n")
    return real(path)
parallel_read._read_in_worker = spy  # the workers fork after this, and run it
with parallel_read.ParallelReads(PATHS) as reads:
    files = reads.wait()
print(json.dumps({{"me": os.getpid(), "runs": [len(f.runs) for f in files]}}))
""",
        BASELINE,
        CANDIDATE,
    )
    seen = json.loads(out)
    readers = [line.split() for line in (tmp_path / "readers.log").read_text().splitlines()]
    assert sorted(name for _, name in readers) == sorted([BASELINE.name, CANDIDATE.name])
    pids = {int(pid) for pid, _ in readers}
    assert pids and seen["me"] not in pids
    assert seen["runs"] == [1, 1]


@forking
def test_the_caller_goes_on_while_workers_read() -> None:
    """The workers start at once, before the pool's own thread, so work done before ``wait``
    overlaps the reading; leaving the block shuts them down."""
    out = _fresh(
        """
import multiprocessing, os, time
from axl_action.cli.parallel_read import ParallelReads
with ParallelReads(PATHS) as reads:
    pids = [p.pid for p in multiprocessing.active_children()]
    assert len(pids) == 2, pids  # started before wait, while this process goes on
    files = reads.wait()
deadline = time.monotonic() + 20
while multiprocessing.active_children() and time.monotonic() < deadline:
    time.sleep(0.05)
assert not multiprocessing.active_children(), "a worker outlived its reads"
from axl_action.schema import load_run_views
same(files[0].runs[0], load_run_views(PATHS[0]).runs[0])
print("shut down")
""",
        BASELINE,
        CANDIDATE,
    )
    assert out.strip() == "shut down"


@forking
def test_a_worker_that_dies_is_replaced_by_reading_here() -> None:
    out = _fresh(
        """
import os, signal
from axl_action.cli import parallel_read
def die(path):
    os.kill(os.getpid(), signal.SIGKILL)
parallel_read._read_in_worker = die  # the workers fork after this, and run it
with parallel_read.ParallelReads(PATHS) as reads:
    assert reads._pool is not None
    files = reads.wait()
from axl_action.schema import load_run_views
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
    assert caught.value.hint
    if sys.platform != "linux":
        return
    code = """
import json
from axl_action.cli.parallel_read import ParallelReads
from axl_action.errors import ResultFileError
seen = []
for pair in (PATHS[:2], PATHS[2:]):
    try:
        with ParallelReads(pair) as reads:
            reads.wait()
    except ResultFileError as err:
        seen.append([str(err), err.hint, type(err.__cause__).__name__])
print(json.dumps(seen))
"""
    seen = json.loads(_fresh(code, bad_first, bad_second, BASELINE, bad_second))
    assert "first.json" in seen[0][0]
    assert "second.json is not a valid axl-eval result" in seen[1][0]
    assert seen[1][1]  # the worker's error arrives whole, hint included
    assert seen[1][2] == "NoneType"  # and without the pool's remote-traceback wrapping


def test_missing_file_in_a_worker_is_the_same_error(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError, match="results file not found"):
        load_run_view_files([BASELINE, tmp_path / "absent.json"])
    if sys.platform != "linux":
        return
    code = """
from axl_action.cli.parallel_read import ParallelReads
from axl_action.errors import ResultFileError
try:
    with ParallelReads(PATHS) as reads:
        reads.wait()
except ResultFileError as err:
    print(err)
"""
    assert "results file not found" in _fresh(code, BASELINE, tmp_path / "absent.json")


def test_the_library_reader_starts_no_process() -> None:
    import multiprocessing

    before = set(multiprocessing.active_children())
    files = load_run_view_files([BASELINE, CANDIDATE])
    assert [f.path for f in files] == [str(BASELINE), str(CANDIDATE)]
    assert set(multiprocessing.active_children()) == before


def test_no_fork_while_another_os_thread_runs() -> None:
    """The guard counts OS threads, so a thread Python does not know of (numpy's BLAS
    workers, an extension's) also keeps the workers from forking."""
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        assert parallel_read.os_threads() is None or parallel_read.os_threads() >= 2  # type: ignore[operator]
        assert not parallel_read.can_fork()
        with parallel_read.ParallelReads([BASELINE, CANDIDATE]) as reads:
            assert reads._pool is None
            files = reads.wait()
        assert [f.path for f in files] == [str(BASELINE), str(CANDIDATE)]
    finally:
        stop.set()
        worker.join()


@forking
def test_an_os_thread_python_does_not_know_of_also_prevents_the_fork() -> None:
    # After `import numpy`, OpenBLAS threads run that threading.active_count() never sees.
    out = _python(
        "import os, threading\n"
        "os.environ['OPENBLAS_NUM_THREADS'] = '2'\n"
        "import numpy\n"
        "from axl_action.cli import parallel_read\n"
        "print(threading.active_count(), parallel_read.os_threads(), parallel_read.can_fork())\n"
    )
    python_threads, os_threads, can = out.split()
    if int(os_threads) == 1:
        pytest.skip("this numpy starts no BLAS threads")
    assert python_threads == "1" and can == "False"


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
    if sys.platform != "linux":
        return
    code = """
import json
from axl_action.cli.parallel_read import ParallelReads
from axl_action.errors import ResultFileError
seen = {}
for path in PATHS:
    try:
        with ParallelReads([path, path]) as reads:
            reads.wait()
    except ResultFileError as err:
        seen[path] = str(err)
print(json.dumps(seen))
"""
    forked = json.loads(_fresh(code, *paths.values()))
    assert forked == {str(p): here[name] for name, p in paths.items()}


def test_the_workers_start_before_numpy_and_pydantic_are_imported() -> None:
    """compare's reader (with the CLI up to that point and the lazy ``schema`` package) imports
    neither, so this process imports them while the workers parse."""
    out = _python(
        "import sys\n"
        "import axl_action.cli.main, axl_action.cli.compare, axl_action.cli.parallel_read\n"
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
    """Workers send each run's inputs as their own pickle: runs whose inputs are the same
    bytes share one list (pairing then compares them by identity), others keep their own."""
    changed = json.loads(CANDIDATE.read_text(encoding="utf-8"))
    changed["items"][0]["input"] = {"question": "changed"}
    other = tmp_path / "changed.json"
    other.write_text(json.dumps(changed), encoding="utf-8")
    out = _fresh(
        """
from axl_action.cli.parallel_read import ParallelReads
with ParallelReads(PATHS) as reads:
    files = reads.wait()
from axl_action.schema import load_run_views
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
