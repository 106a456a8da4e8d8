"""Fixtures for the GitHub-layer tests: the fake GitHub and a recording sleep."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.fakes.github_fixtures import fake_github, sleeps  # noqa: F401
