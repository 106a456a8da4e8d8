"""Provider tests: every transport a test opened is closed after it (see ``OPEN_TRANSPORTS``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.llm_servers import close_open_transports


@pytest.fixture(autouse=True)
def _close_transports() -> Iterator[None]:
    yield
    close_open_transports()
