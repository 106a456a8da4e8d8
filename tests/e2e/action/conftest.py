"""The e2e action tests import the loopback fake GitHub from ``tests.fakes``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
