"""Shared test helpers: paths to the bundled fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
LEGACY = FIXTURES / "axl-eval-0.16.1"
REPO = Path(__file__).parent.parent


@pytest.fixture
def legacy_dir() -> Path:
    return LEGACY


@pytest.fixture
def spec_example_path() -> Path:
    return FIXTURES / "spec-0.24-example.json"
