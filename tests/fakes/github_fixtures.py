"""Pytest fixtures for the fake GitHub, importable from any conftest::

from tests.fakes.github_fixtures import fake_github, sleeps  # noqa: F401
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.github_contract import validate_exchanges
from tests.fakes.github_server import FakeGitHub


@pytest.fixture
def fake_github() -> Iterator[FakeGitHub]:
    """A started fake GitHub (API, blob host, results service), stopped after the test.

    On teardown every REST exchange of the test (what the client sent and what the fake
    answered) is validated against GitHub's OpenAPI description, so a test passing against
    a fake that drifted from GitHub, or a client sending an invalid request, fails loudly.
    """
    with FakeGitHub() as gh:
        yield gh
        exchanges = list(gh.exchanges)
    validate_exchanges(exchanges)


class SleepRecorder:
    """Stands in for ``time.sleep``: records the waits instead of waiting."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def sleeps() -> SleepRecorder:
    """A ``sleep`` replacement that records the requested waits."""
    return SleepRecorder()
