"""The container suite imports the loopback fake GitHub and the e2e harness from ``tests``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
