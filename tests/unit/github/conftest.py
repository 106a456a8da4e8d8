"""Fixtures for the GitHub-layer integration tests: a running fake GitHub."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.fakes.github_server import FakeGitHub


@pytest.fixture
def fake_github() -> Iterator[FakeGitHub]:
    """A started fake GitHub (API, blob host, results service), stopped after the test."""
    with FakeGitHub() as gh:
        yield gh


class SleepRecorder:
    """Stands in for ``time.sleep``: records the waits instead of waiting."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()
