"""Reading several results files at once: the same views and the same first error as reading
them one after the other, whether a forked child or this process reads each."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import numpy as np
import pytest

from axl_action.errors import ResultFileError
from axl_action.schema import io as schema_io
from axl_action.schema import load_run_view_files, load_run_views
from axl_action.schema.view import RunView

FIXTURES = Path(__file__).parent.parent.parent / "fixtures" / "axl-eval-0.16.1"
BASELINE = FIXTURES / "math20-baseline.json"
CANDIDATE = FIXTURES / "math20-candidate.json"
RUNS3 = FIXTURES / "math20-baseline-runs3.json"

forking = pytest.mark.skipif(not schema_io._can_fork(), reason="reads in a child only on Linux")


def _same(a: RunView, b: RunView) -> None:
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


@forking
def test_views_read_in_a_child_equal_views_read_here() -> None:
    files = load_run_view_files([BASELINE, CANDIDATE, RUNS3])
    for got, path in zip(files, (BASELINE, CANDIDATE, RUNS3), strict=True):
        expected = load_run_views(path)
        assert got.path == str(path) and got.is_list == expected.is_list
        assert len(got.runs) == len(expected.runs)
        for a, b in zip(got.runs, expected.runs, strict=True):
            _same(a, b)


@forking
def test_a_child_reads_the_later_files(monkeypatch: pytest.MonkeyPatch) -> None:
    # Only while no other thread runs does the reader fork: a thread an earlier test left
    # behind (a loopback server never shut down) would make this read sequentially.
    assert schema_io._can_fork(), f"threads left running: {[t.name for t in threading.enumerate()]}"
    parent = os.getpid()
    readers: list[tuple[str, int]] = []
    real = schema_io.load_run_views

    def spy(path: str | os.PathLike[str]) -> schema_io.ViewFile:
        views = real(path)
        # The child's reads come back through its pickled views, not through this list.
        readers.append((Path(path).name, os.getpid()))
        return views

    monkeypatch.setattr(schema_io, "load_run_views", spy)
    load_run_view_files([BASELINE, CANDIDATE])
    assert readers == [(BASELINE.name, parent)]


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


@forking
def test_a_child_that_dies_is_replaced_by_reading_here(monkeypatch: pytest.MonkeyPatch) -> None:
    real_fork = os.fork

    def fork_then_die() -> int:
        pid = real_fork()
        if pid == 0:
            os.kill(os.getpid(), signal.SIGKILL)
        return pid

    monkeypatch.setattr(os, "fork", fork_then_die)
    files = load_run_view_files([BASELINE, CANDIDATE])
    _same(files[1].runs[0], load_run_views(CANDIDATE).runs[0])


def test_no_fork_while_other_threads_run() -> None:
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        assert not schema_io._can_fork()
        files = load_run_view_files([BASELINE, CANDIDATE])
        assert [f.path for f in files] == [str(BASELINE), str(CANDIDATE)]
    finally:
        stop.set()
        worker.join()
