"""``metadata.sources``: the local files an eval used, recorded at run time for scoped runs.

An axl-action extension under ``metadata`` (an axl-eval 0.24 reader ignores the key). A run
whose record is incomplete says so with ``unknown`` and must be re-run: the safe default.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import Field

from axl_action.schema.base import WireModel


def sha256_bytes(data: bytes) -> str:
    """The ``sha256:<hex>`` digest of ``data``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str | None:
    """The digest of a file's content, or None when it cannot be read."""
    try:
        return sha256_bytes(path.read_bytes())
    except OSError:
        return None


def sha256_text(value: str) -> str:
    """The digest of a text value (an env var's: the value is never stored)."""
    return sha256_bytes(value.encode("utf-8"))


class EvalSources(WireModel):
    """What one eval read from the repository, each file by its content hash."""

    root: str = "."
    """The sources root the paths are relative to (as given to ``--sources-root``)."""
    eval_file: str | None = None
    """The eval file itself, relative to the root (``evalFile``): a scoped run re-runs a file."""
    modules: dict[str, str] = Field(default_factory=dict)
    """Repository-local modules imported by the eval: relative path -> digest."""
    data: dict[str, str] = Field(default_factory=dict)
    """Data files opened while the eval ran (the dataset file included): path -> digest."""
    env: dict[str, str | None] = Field(default_factory=dict)
    """Declared env vars (``define_eval(env=[...])``): name -> digest of the value (None: unset)."""
    pricing: str | None = None
    """Digest of the pricing file in force, when there was one."""
    tool_version: str | None = None
    """The axl-action version that ran the eval."""
    unknown: bool = False
    """True when recording was incomplete: the eval must be re-run."""
    reason: str | None = None
    """Why recording was incomplete."""

    def files(self) -> dict[str, str]:
        """Every recorded file (modules and data) by relative path."""
        return {**self.modules, **self.data}


class CarriedOver(WireModel):
    """``metadata.carriedOver``: a result a scoped pull-request run did not re-run.

    Its items, scores and costs are the baseline's, copied unchanged, because none of the files
    the eval used changed since (``action/scope_step.py``). An axl-eval 0.24 reader ignores it.
    """

    reason: str = "unchanged"
    """Why it was not re-run (``unchanged``: no recorded file, declared env var or input changed)."""
    baseline_run_id: str | None = None
    """The workflow run that produced the baseline it was copied from."""
    baseline_commit: str | None = None
    """That run's commit."""
