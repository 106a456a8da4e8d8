"""Re-running a job must not pay twice: hand the run journal from one attempt to the next.

When the eval step stops before its results are complete (the job is cancelled, the runner
crashes mid-run after the step's own signal handling, a workflow raises), ``axl-eval run``
leaves ``<results>.journal.jsonl`` behind (``evals/journal/writer.py``). The orchestrator uploads it
on the way out as the artifact :func:`journal_artifact_name` (one per suite and shard). A
re-run of the job is the same workflow run (``GITHUB_RUN_ID``) with a higher
``GITHUB_RUN_ATTEMPT``: that attempt downloads the artifact through the REST API, puts the
journal next to its results file and runs the evals with ``--resume``, so the items the
earlier attempt settled are neither run nor paid for again. Once a resumed run completes, the
artifact is deleted, so a later re-run starts fresh.

It does not apply to ``command:`` or ``results:`` (the action does not run those evals), to a
first attempt, without a ``github-token`` that can read the run's artifacts, or when the earlier
attempt was killed before it could upload (a runner that lost power, ``SIGKILL``).
"""

from __future__ import annotations

from pathlib import Path

from axl_action.errors import AxlError
from axl_action.evals.journal.base import JOURNAL_SUFFIX
from axl_action.github.api import GitHubApi
from axl_action.github.artifacts import DEFAULT_MAX_DOWNLOAD_BYTES, download_artifact, list_run_artifacts
from axl_action.github.errors import ArtifactError
from axl_action.github.safezip import ZipLimits, extract_zip

JOURNAL_FILE = "results.json" + JOURNAL_SUFFIX
"""The journal's name inside the artifact."""


def journal_artifact_name(suite: str, shard: str | None = None) -> str:
    """The artifact an attempt stores its journal in (per suite, and per shard leg)."""
    name = "axl-eval-journal" if suite == "default" else f"axl-eval-journal-{suite}"
    if shard is not None:
        name += "-shard-" + shard.replace("/", "-of-")
    return name


def fetch_journal(github: GitHubApi, repo: str, run_id: int, name: str, dest: Path) -> int | None:
    """Download this run's journal artifact ``name`` to ``dest``; its artifact id, or None when
    no earlier attempt stored one. Raises ``AxlError`` when one exists but cannot be fetched."""
    found = [a for a in list_run_artifacts(github, repo, run_id, name=name) if not a.expired]
    if not found:
        return None
    artifact = found[0]  # newest first
    if artifact.size_in_bytes > DEFAULT_MAX_DOWNLOAD_BYTES:
        raise ArtifactError(
            f"the journal artifact {name!r} is {artifact.size_in_bytes} bytes, over the "
            f"{DEFAULT_MAX_DOWNLOAD_BYTES}-byte limit"
        )
    data = download_artifact(github, repo, artifact.id, expected_digest=artifact.digest)
    files = extract_zip(
        data,
        ZipLimits(max_entries=2, max_total_bytes=DEFAULT_MAX_DOWNLOAD_BYTES),
        source=f"artifact {name!r} (id {artifact.id})",
    )
    content = files.get(JOURNAL_FILE)
    if content is None:
        raise ArtifactError(f"the artifact {name!r} (id {artifact.id}) holds no {JOURNAL_FILE}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(content)
    return artifact.id


def describe(err: Exception) -> str:
    """One line for a failure around the journal artifact."""
    return str(err) if isinstance(err, AxlError) else f"{type(err).__name__}: {err}"
