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

from axl_action.action.job import Job, Steps, describe
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


def job_journal_name(job: Job) -> str:
    """This job's journal artifact (its suite and, for a shard leg, its slice)."""
    shard = job.settings.shard
    return journal_artifact_name(job.settings.suite, str(shard) if shard is not None else None)


def fetch_earlier_journal(job: Job, dest: Path) -> int | None:
    """On a re-run attempt, the journal of an earlier one (its artifact id), else None."""
    ctx = job.ctx
    attempt = int(ctx.run_attempt) if ctx.run_attempt and ctx.run_attempt.isdigit() else 1
    if attempt <= 1 or not ctx.run_id or not ctx.run_id.isdigit():
        return None
    name = job_journal_name(job)
    with job.commands.group("Resume from the earlier attempt"):
        if job.github is None:
            job.commands.warning(
                f"This is attempt {attempt} of the run, but without a github-token the journal of an "
                "earlier attempt cannot be fetched: every item runs (and is paid for) again.",
                title="Not resumed",
            )
            return None
        try:
            artifact_id = fetch_journal(job.github, ctx.repository, int(ctx.run_id), name, dest)
        except Exception as err:
            job.commands.warning(
                f"Attempt {attempt}: the journal {name!r} of an earlier attempt could not be fetched "
                f"({describe(err)}); every item runs again.",
                title="Not resumed",
            )
            return None
        if artifact_id is None:
            job.commands.echo(
                f"Attempt {attempt}: no earlier attempt left a journal ({name}): it finished its evals, "
                "or was killed before it could upload one. Every item runs."
            )
            return None
        job.commands.echo(
            f"Attempt {attempt}: resuming from the journal of an earlier attempt (artifact {name!r}, id "
            f"{artifact_id}); the items it settled are neither run nor paid for again."
        )
        return artifact_id


def keep_journal(job: Job, journal: Path, resumed: int | None, steps: Steps) -> None:
    """Upload a journal the eval run left behind (it stopped before its results were complete),
    so a re-run of the job resumes from it; once a resumed run completed, delete the artifact."""
    name = job_journal_name(job)
    if journal.is_file():
        if job.uploader is None:
            job.commands.warning(
                f"The eval run left a journal ({journal}) but the artifact service is not available, so a "
                "re-run of this job cannot resume from it.",
                title="Journal not stored",
            )
            return
        uploader = job.uploader

        def upload() -> None:
            uploaded = uploader.upload(name, {JOURNAL_FILE: journal.read_bytes()}, overwrite=True)
            job.commands.echo(
                f"The eval run stopped before its results were complete: stored its journal as artifact "
                f"{name!r} (id {uploaded.id}). Re-running this job resumes from it."
            )

        steps.guard("journal artifact", upload)
    elif resumed is not None and job.uploader is not None:
        deleter = getattr(job.uploader, "delete", None)
        if callable(deleter):
            steps.guard("journal cleanup", lambda: deleter(name))
