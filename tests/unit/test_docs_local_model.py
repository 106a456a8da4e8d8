"""docs/local-model.md's install block offers the source build and the cached setup as
alternatives: run together, the second only finds the first's 6-minute build installed."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "local-model.md"


def test_the_install_block_says_either_or() -> None:
    text = DOC.read_text(encoding="utf-8")
    install = text.split("## Install", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", install, re.S)
    assert block is not None
    lines = block.group(1).splitlines()
    pip = next(i for i, line in enumerate(lines) if line.startswith("pip install"))
    script = next(i for i, line in enumerate(lines) if line.startswith("bash .ci/setup-local-model.sh"))
    assert lines[pip - 1].startswith("# either") and lines[script - 1].startswith("# or"), lines
