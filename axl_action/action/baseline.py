"""Find, download and read the baseline results for a comparison.

Every way of not getting a baseline (none stored yet, all expired, 410 between listing and
download, a corrupt or hostile zip, a file that is not a result) ends in a ``BaselineLookup``
without results and with a sentence saying why: no baseline is never a failure by itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from axl_action.errors import AxlError
from axl_action.github.api import GitHubApi
from axl_action.github.artifacts import BaselineQuery, FetchedBaseline, fetch_baseline, merge_base
from axl_action.github.baseline_policy import EXPIRED_ON_DOWNLOAD, BaselineChoice
from axl_action.github.errors import ArtifactError, ArtifactExpiredError, GitHubPermissionError
from axl_action.schema import ResultFile, parse_result_text

RESULTS_NAME = "results.json"
"""File name of the results inside a baseline (and shard) artifact."""


@dataclass(frozen=True)
class PullRequestRefs:
    """The commits a PR comparison needs (from the event payload)."""

    head_sha: str | None
    base_sha: str | None


@dataclass
class BaselineLookup:
    """The outcome of the search: the chosen artifact and its results, or why there are none."""

    reason: str
    """Why this baseline was chosen, or why there is none."""
    choice: BaselineChoice | None = None
    results: ResultFile | None = None
    problem: str | None = None
    """Set when a baseline existed but could not be used (expired, corrupt, unreadable)."""
    warnings: list[str] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    """Every file of the downloaded artifact (the results and, when stored, the history)."""


def age_text(seconds: float) -> str:
    """``45 minutes``, ``3 hours``, ``2 days``: the baseline's age for people."""
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{max(minutes, 0)} minute{'s' if minutes != 1 else ''}"
    hours = minutes // 60
    if hours < 48:
        return f"{hours} hour{'s' if hours != 1 else ''}"
    days = hours // 24
    return f"{days} days"


def locate_baseline(
    client: GitHubApi,
    repo: str,
    *,
    artifact_name: str,
    branch: str,
    pull: PullRequestRefs | None,
    now: datetime,
) -> BaselineLookup:
    """Pick the baseline for this run and read its results (see ``github.artifacts``)."""
    warnings: list[str] = []
    merge_base_sha: str | None = None
    if pull is not None and pull.head_sha and pull.base_sha:
        try:
            merge_base_sha = merge_base(client, repo, pull.base_sha, pull.head_sha)
        except GitHubPermissionError:
            raise
        except AxlError as err:
            warnings.append(f"could not compute the PR's merge base ({err}); using the newest baseline")
    try:
        query = BaselineQuery(
            artifact_name=artifact_name,
            branch=branch,
            now=now,
            merge_base_sha=merge_base_sha,
            base_sha=pull.base_sha if pull else None,
        )
        fetched = fetch_baseline(client, repo, query)
    except GitHubPermissionError:
        raise
    except ArtifactExpiredError as err:
        return BaselineLookup(
            reason=f"every baseline chosen expired before it could be downloaded: {err}",
            problem=str(err),
            warnings=warnings,
        )
    except AxlError as err:
        return BaselineLookup(
            reason=f"the baseline artifact {artifact_name!r} was rejected: {err}",
            problem=str(err),
            warnings=warnings,
        )
    if not isinstance(fetched, FetchedBaseline):
        # Expired or out of the window: a baseline existed, so say so loudly (a ::warning::).
        unusable = fetched.cause in ("expired", "too-old")
        return BaselineLookup(
            reason=fetched.reason, problem=fetched.reason if unusable else None, warnings=warnings
        )
    found = fetched.choice
    gone = [s for s in found.skipped if s.reason == EXPIRED_ON_DOWNLOAD]
    if gone:
        runs = ", ".join(str(s.run_id) for s in gone)
        warnings.append(
            f"a newer baseline (run {runs}) expired before it could be downloaded (410 Gone); "
            f"compared against run {found.run_id} instead"
        )
    try:
        results = _read_results(fetched.files, found)
    except AxlError as err:
        return BaselineLookup(
            reason=f"the baseline artifact {found.artifact_name!r} from run {found.run_id} was rejected: {err}",
            choice=found,
            problem=str(err),
            warnings=warnings,
            files=fetched.files,
        )
    return BaselineLookup(
        reason=found.reason, choice=found, results=results, warnings=warnings, files=fetched.files
    )


def _results_name(files: dict[str, bytes]) -> str | None:
    """Which file of a baseline artifact is its results file (None: none, or several)."""
    if RESULTS_NAME in files:
        return RESULTS_NAME
    jsons = [n for n in files if n.endswith(".json")]
    return jsons[0] if len(jsons) == 1 else None


def baseline_results_bytes(lookup: BaselineLookup) -> bytes | None:
    """The results file of the baseline ``lookup`` found, as downloaded (None without one)."""
    name = _results_name(lookup.files) if lookup.results is not None else None
    return lookup.files[name] if name is not None else None


def _read_results(files: dict[str, bytes], choice: BaselineChoice) -> ResultFile:
    where = f"artifact {choice.artifact_name!r} ({choice.artifact_id})"
    name = _results_name(files)
    if name is None:
        raise ArtifactError(
            f"{where} holds no {RESULTS_NAME} (found: {', '.join(sorted(files)) or 'nothing'})",
            hint="a baseline artifact holds the results file uploaded by this action on the baseline branch",
        )
    try:
        text = files[name].decode("utf-8")
    except UnicodeDecodeError:
        raise ArtifactError(f"{where}: {name} is not UTF-8 text") from None
    return parse_result_text(text, f"{where}/{name}")
