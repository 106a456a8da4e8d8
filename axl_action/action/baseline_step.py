"""The job's baseline searches, with their log lines and warnings: the baseline a pull request
is compared with (:func:`find_baseline`), the history it brought (:func:`baseline_history`),
and the previous baseline a baseline job extends the history of (:func:`previous_baseline`).

The search itself, and every way of not finding one, is ``action/baseline.py``'s.
"""

from __future__ import annotations

from axl_action.action.baseline import BaselineLookup, PullRequestRefs, locate_baseline
from axl_action.action.history_step import BaselineHistory, read_baseline_history
from axl_action.action.job import Job, artifact_name
from axl_action.errors import AxlError
from axl_action.github.api import GitHubApi
from axl_action.github.errors import GitHubPermissionError


def find_baseline(job: Job) -> BaselineLookup:
    """The baseline this run is compared with (a lookup without results says why there is none)."""
    name = artifact_name(job.settings.baseline_artifact, job.settings.suite)
    with job.commands.group("Find the baseline"):
        if job.github is None:
            return BaselineLookup(reason="no github-token was given, so no baseline could be looked up")
        if not job.branch:
            return BaselineLookup(reason="the baseline branch is unknown; set the baseline-branch input")
        ctx = job.ctx
        pull = PullRequestRefs(ctx.pr_head_sha, ctx.pr_base_sha) if ctx.pr_number else None
        try:
            lookup = _locate(job, job.github, name, job.branch, pull)
        except AxlError as err:
            lookup = BaselineLookup(reason=f"the baseline search failed: {err}", problem=str(err))
        if lookup.results is not None and lookup.choice is not None:
            job.commands.echo(
                f"Baseline: run {lookup.choice.run_id} at {lookup.choice.head_sha[:7]} ({lookup.reason})."
            )
        else:
            job.commands.echo(f"No baseline: {lookup.reason}.")
        if lookup.problem:
            job.commands.warning(lookup.reason, title="Baseline not usable")
        for warning in lookup.warnings:
            job.commands.warning(warning, title="Baseline")
        return lookup


def baseline_history(job: Job, lookup: BaselineLookup) -> BaselineHistory:
    """The history the PR's baseline download brought (a warning when missing or bad)."""
    history = read_baseline_history(lookup, suite=job.settings.suite)
    warn_history(job, history)
    return history


def warn_history(job: Job, history: BaselineHistory) -> None:
    """One ``Baseline history`` warning for each problem reading the history."""
    for warning in history.warnings:
        job.commands.warning(warning[:1].upper() + warning[1:] + ".", title="Baseline history")


def previous_baseline(job: Job) -> BaselineLookup | None:
    """The baseline job's predecessor, whose history it extends (None: start a new one).

    The same search and pure policy as a pull request's, without a PR: the newest baseline.
    Every way of not finding one is at most a warning; the baseline is stored either way.
    """
    if job.settings.history_limit == 0 or job.github is None or not job.branch:
        return None
    name = artifact_name(job.settings.baseline_artifact, job.settings.suite)
    restart = "this baseline starts a new history"
    with job.commands.group("Fetch the previous baseline's history"):
        try:
            lookup = locate_baseline(
                job.github,
                job.ctx.repository,
                artifact_name=name,
                branch=job.branch,
                pull=None,
                now=job.clock(),
            )
        except GitHubPermissionError as err:
            job.commands.warning(
                f"Could not read the previous baseline to carry its history forward ({err.message}); {restart}. "
                "Add `actions: read` to the baseline workflow's permissions.",
                title="Baseline history",
            )
            return None
        except AxlError as err:
            job.commands.warning(
                f"Could not read the previous baseline ({err}); {restart}.", title="Baseline history"
            )
            return None
        if lookup.results is None or lookup.choice is None:
            if lookup.problem:
                job.commands.warning(
                    f"The previous baseline could not be used ({lookup.reason}); {restart}.",
                    title="Baseline history",
                )
            else:
                job.commands.echo(
                    f"No previous baseline ({lookup.reason}); the history starts with this run."
                )
            return None
        job.commands.echo(f"Previous baseline: run {lookup.choice.run_id} at {lookup.choice.head_sha[:7]}.")
        return lookup


def _locate(
    job: Job, github: GitHubApi, name: str, branch: str, pull: PullRequestRefs | None
) -> BaselineLookup:
    repo = job.ctx.repository
    try:
        return locate_baseline(github, repo, artifact_name=name, branch=branch, pull=pull, now=job.clock())
    except GitHubPermissionError as err:
        if pull is None or job.relayed is None:
            raise
        # The relay job's documented permissions leave out contents: read; on a private
        # repository the merge-base lookup then answers 403, and the newest baseline will do.
        lookup = locate_baseline(github, repo, artifact_name=name, branch=branch, pull=None, now=job.clock())
        lookup.warnings.insert(
            0,
            f"could not compute the PR's merge base ({err.message}); using the newest baseline. "
            "Add `contents: read` to the relay job's permissions to compare against the merge base",
        )
        return lookup
