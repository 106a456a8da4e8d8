"""The GitHub layer: REST client, baseline artifacts, artifact upload, sticky comments,
workflow commands and the run context.

Everything takes its clients and paths as arguments; only the explicit ``from_env``
constructors (and :func:`load_context`) read the environment. Typical use by the action::

    ctx = load_context(os.environ)
    gh = GitHubClient.from_env(os.environ, token=inputs.github_token)
    wc = WorkflowCommands.from_env(os.environ)
    wc.add_mask(inputs.github_token)

    # pull_request: compare against the default branch's baseline
    mb = merge_base(gh, ctx.repository, ctx.pull_request.base_sha, ctx.pull_request.head_sha)
    query = BaselineQuery(artifact_name="axl-eval-baseline", branch=ctx.pull_request.base_ref,
                          now=datetime.now(UTC), workflow=ctx.workflow_file,
                          merge_base_sha=mb, base_sha=ctx.pull_request.base_sha)
    fetched = fetch_baseline(gh, ctx.repository, query)
    ...
    if should_post(mode, verdict, changed, existing=...):
        try:
            upsert_sticky_comment(gh, ctx.repository, pr.number, body, suite=key, head_sha=pr.head_sha)
        except GitHubPermissionError:  # fork PR: store the results for a workflow_run relay
            ArtifactUploader.from_env(os.environ).upload("axl-eval-relay", {"results.json": ..., "manifest.json": ...})

    # push to the default branch: store the baseline
    ArtifactUploader.from_env(os.environ, on_secret=wc.add_mask).upload(
        "axl-eval-baseline", {"results.json": data}, overwrite=True)

The names are loaded on first use (PEP 562): the response cache and the providers import
``github.errors`` for their exception tree, and that must not pull in the REST client,
requests and the artifact code behind them (about 0.2 s of every ``axl-eval run``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from axl_action.lazy import kept_lazy_attributes

if TYPE_CHECKING:
    from axl_action.github.api import GitHubApi
    from axl_action.github.artifact_upload import (
        ArtifactUploader,
        UploadedArtifact,
        artifacts_supported,
        backend_ids_from_token,
        zip_files,
    )
    from axl_action.github.artifacts import (
        BaselineQuery,
        FetchedBaseline,
        download_artifact,
        download_baseline,
        fetch_baseline,
        find_baseline,
        list_artifacts,
        list_run_artifacts,
        list_workflow_runs,
        merge_base,
    )
    from axl_action.github.baseline_policy import (
        ArtifactInfo,
        BaselineChoice,
        Commits,
        NoBaseline,
        SkippedCandidate,
        WorkflowRunInfo,
        choose_baseline,
    )
    from axl_action.github.client import GitHubClient
    from axl_action.github.comments import (
        MAX_COMMENT_CHARS,
        CommentMode,
        CommentResult,
        CommentTooLongError,
        GateVerdict,
        compose_comment_body,
        find_sticky_comment,
        resolve_comment_author,
        should_post,
        upsert_sticky_comment,
    )
    from axl_action.github.errors import (
        ArtifactError,
        ArtifactExpiredError,
        GitHubError,
        GitHubPermissionError,
        GitHubRateLimitError,
    )
    from axl_action.github.event import (
        GitHubContext,
        MergeGroupContext,
        PullRequestContext,
        WorkflowRunTrigger,
        load_context,
    )
    from axl_action.github.safezip import ZipLimits, extract_zip
    from axl_action.github.workflow_commands import SummaryTooLargeError, WorkflowCommands
    from axl_action.retry import Backoff, Retrier, Retry

_HOME = {
    "ArtifactError": ".errors",
    "ArtifactExpiredError": ".errors",
    "ArtifactInfo": ".baseline_policy",
    "ArtifactUploader": ".artifact_upload",
    "Backoff": "axl_action.retry",
    "BaselineChoice": ".baseline_policy",
    "BaselineQuery": ".artifacts",
    "CommentMode": ".comments",
    "CommentResult": ".comments",
    "CommentTooLongError": ".comments",
    "Commits": ".baseline_policy",
    "FetchedBaseline": ".artifacts",
    "GateVerdict": ".comments",
    "GitHubApi": ".api",
    "GitHubClient": ".client",
    "GitHubContext": ".event",
    "GitHubError": ".errors",
    "GitHubPermissionError": ".errors",
    "GitHubRateLimitError": ".errors",
    "MAX_COMMENT_CHARS": ".comments",
    "MergeGroupContext": ".event",
    "NoBaseline": ".baseline_policy",
    "PullRequestContext": ".event",
    "Retrier": "axl_action.retry",
    "Retry": "axl_action.retry",
    "SkippedCandidate": ".baseline_policy",
    "SummaryTooLargeError": ".workflow_commands",
    "UploadedArtifact": ".artifact_upload",
    "WorkflowCommands": ".workflow_commands",
    "WorkflowRunInfo": ".baseline_policy",
    "WorkflowRunTrigger": ".event",
    "ZipLimits": ".safezip",
    "artifacts_supported": ".artifact_upload",
    "backend_ids_from_token": ".artifact_upload",
    "choose_baseline": ".baseline_policy",
    "compose_comment_body": ".comments",
    "download_artifact": ".artifacts",
    "download_baseline": ".artifacts",
    "extract_zip": ".safezip",
    "fetch_baseline": ".artifacts",
    "find_baseline": ".artifacts",
    "find_sticky_comment": ".comments",
    "list_artifacts": ".artifacts",
    "list_run_artifacts": ".artifacts",
    "list_workflow_runs": ".artifacts",
    "load_context": ".event",
    "merge_base": ".artifacts",
    "resolve_comment_author": ".comments",
    "should_post": ".comments",
    "upsert_sticky_comment": ".comments",
    "zip_files": ".artifact_upload",
}

__all__ = [
    "MAX_COMMENT_CHARS",
    "ArtifactError",
    "ArtifactExpiredError",
    "ArtifactInfo",
    "ArtifactUploader",
    "Backoff",
    "BaselineChoice",
    "BaselineQuery",
    "CommentMode",
    "CommentResult",
    "CommentTooLongError",
    "Commits",
    "FetchedBaseline",
    "GateVerdict",
    "GitHubApi",
    "GitHubClient",
    "GitHubContext",
    "GitHubError",
    "GitHubPermissionError",
    "GitHubRateLimitError",
    "MergeGroupContext",
    "NoBaseline",
    "PullRequestContext",
    "Retrier",
    "Retry",
    "SkippedCandidate",
    "SummaryTooLargeError",
    "UploadedArtifact",
    "WorkflowCommands",
    "WorkflowRunInfo",
    "WorkflowRunTrigger",
    "ZipLimits",
    "artifacts_supported",
    "backend_ids_from_token",
    "choose_baseline",
    "compose_comment_body",
    "download_artifact",
    "download_baseline",
    "extract_zip",
    "fetch_baseline",
    "find_baseline",
    "find_sticky_comment",
    "list_artifacts",
    "list_run_artifacts",
    "list_workflow_runs",
    "load_context",
    "merge_base",
    "resolve_comment_author",
    "should_post",
    "upsert_sticky_comment",
    "zip_files",
]

__getattr__ = kept_lazy_attributes(__name__, _HOME, globals())
