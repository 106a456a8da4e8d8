"""Under ``AXL_REQUIRE_LOCAL_MODEL=1`` (what ``.ci/run`` sets) a missing llama-cpp-python fails
the real-model tests instead of skipping them; elsewhere they skip with the install command.

The suite runs in a child pytest whose ``llama_cpp`` import is blocked, so this holds whether
or not the model is installed here, and no server is started.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUITE = Path(__file__).with_name("test_local_model_e2e.py")
# sys.modules[name] = None is the documented way to make an import (and find_spec) fail.
CHILD = (
    "import sys; sys.modules['llama_cpp'] = None; import pytest; "
    f"sys.exit(pytest.main(['-q', '-rs', '-p', 'no:cacheprovider', {str(SUITE)!r}]))"
)


def _child(required: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AXL_REQUIRE_LOCAL_MODEL": required}
    return subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )


def test_required_and_missing_fails() -> None:
    proc = _child("1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "AXL_REQUIRE_LOCAL_MODEL=1 but llama-cpp-python is not installed" in proc.stdout
    assert "bash .ci/setup-local-model.sh" in proc.stdout
    assert "skipped" not in proc.stdout.splitlines()[-1]
    assert "Traceback" not in proc.stdout


@pytest.mark.parametrize("required", ["", "0"])
def test_optional_and_missing_skips(required: str) -> None:
    proc = _child(required)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "llama-cpp-python is not installed; install it with: bash .ci/setup-local-model.sh" in proc.stdout
    assert proc.stdout.splitlines()[-1].split()[1] == "skipped"
