"""Shared test helpers: paths to the bundled fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from axl_action.redaction import SECRETS

FIXTURES = Path(__file__).parent / "fixtures"
LEGACY = FIXTURES / "axl-eval-0.16.1"
REPO = Path(__file__).parent.parent


@pytest.fixture(autouse=True)
def _fresh_secret_registry() -> Iterator[None]:
    """The redaction registry is process-wide: a secret one test registers (an env key, an
    ``::add-mask::`` value) must not redact another test's golden output."""
    yield
    SECRETS.clear()


@pytest.fixture
def legacy_dir() -> Path:
    return LEGACY


@pytest.fixture
def spec_example_path() -> Path:
    return FIXTURES / "spec-0.24-example.json"
