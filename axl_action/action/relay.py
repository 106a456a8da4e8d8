"""The fork relay's trust boundary: what a fork PR run hands over, and how it is checked.

A fork PR's run is untrusted: the fork controls the workflow file, the evals and every byte it
uploads. So it hands over **data only**: the results file and a small manifest naming the
suite, repository, PR number and head commit (:func:`relay_artifact_files`). The trusted
``workflow_run`` job (``mode: comment``) downloads that artifact from the triggering run,
validates it (:func:`read_relay_artifact`: size, zip safety, manifest schema, result schema),
checks the manifest against the event and the PR's current head (:func:`verify_target`), and
then compares, gates and renders with its own baseline, inputs and templates. Nothing the
fork wrote is ever posted verbatim; untrusted text reaches the comment only through the report
layer's escaping.

The results themselves remain the fork's claim: the relay cannot prove the evals ran as
reported, and the comment says that it was relayed for a fork PR.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from axl_action.errors import AxlError
from axl_action.github.api import GitHubApi
from axl_action.github.artifacts import download_artifact
from axl_action.github.client import repo_path
from axl_action.github.errors import ArtifactError, GitHubPermissionError
from axl_action.github.safezip import ZipLimits, extract_zip
from axl_action.schema import ResultFile, parse_result_text

RELAY_FORMAT = "axl-eval-relay/1"
MANIFEST_FILE = "manifest.json"
RESULTS_FILE = "results.json"
MAX_RELAY_BYTES = 128 * 1024 * 1024
"""Largest relay artifact accepted, zipped and unpacked (a 10,000-item results file is ~30 MB)."""
_MAX_MANIFEST_BYTES = 16 * 1024
_SHA = r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$"


class RelayManifest(BaseModel):
    """What a fork PR run says about the results it hands to the relay (``manifest.json``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, use_attribute_docstrings=True)

    format: Literal["axl-eval-relay/1"] = "axl-eval-relay/1"
    """Version of this artifact layout."""
    suite: str = Field(min_length=1, max_length=100)
    """The suite the results belong to; must equal the relay's own ``suite`` input."""
    repository: str = Field(min_length=3, max_length=200)
    """``owner/name`` of the base repository; must equal the repository the relay runs in."""
    pr_number: int = Field(gt=0, lt=2**31)
    """The PR the results are for (``workflow_run.pull_requests`` is empty for forks)."""
    head_sha: str = Field(pattern=_SHA)
    """The PR head commit the run evaluated (lower-case hex)."""


def relay_artifact_name(suite: str) -> str:
    """Where a fork PR run stores its results for the relay (one artifact per suite)."""
    return "axl-eval-relay" if suite == "default" else f"axl-eval-relay-{suite}"


def relay_artifact_files(results: bytes, manifest: RelayManifest) -> dict[str, bytes]:
    """The files of a relay artifact: the results as the runner wrote them, and the manifest."""
    return {
        MANIFEST_FILE: manifest.model_dump_json(indent=2).encode("utf-8"),
        RESULTS_FILE: results,
    }


@dataclass(frozen=True)
class RelayedRun:
    """A relay artifact that passed every schema check (not yet checked against the PR)."""

    manifest: RelayManifest
    candidate: ResultFile
    """The fork run's results, parsed; ``path`` is the local copy the relay wrote."""


@dataclass(frozen=True)
class RelayTarget:
    """The PR to comment on, as the base repository's API describes it (trusted)."""

    pr_number: int
    head_sha: str
    base_sha: str | None


class StaleRelayError(ArtifactError):
    """The PR's head moved past the commit the fork run evaluated; a newer run will report."""

    code = "RELAY_STALE"


def _rejected(why: str, hint: str | None = None) -> ArtifactError:
    return ArtifactError(
        f"The fork run's relay artifact was rejected: {why}",
        hint=hint or "the relay only accepts the manifest.json and results.json this action uploads",
    )


def find_relay_artifact(github: GitHubApi, repo: str, run_id: int, name: str) -> dict[str, Any] | None:
    """The newest unexpired artifact ``name`` of run ``run_id``, or None when it stored none."""
    found = github.get_json(
        f"{repo_path(repo)}/actions/runs/{int(run_id)}/artifacts",
        {"name": name, "per_page": 100},
        permission_hint="the relay job cannot list the triggering run's artifacts: add `actions: read` to its `permissions:`",
    )
    listed = found.get("artifacts", []) if isinstance(found, dict) else []
    matches = [a for a in listed if isinstance(a, dict) and a.get("name") == name and not a.get("expired")]
    if not matches:
        return None
    return max(matches, key=lambda a: (str(a.get("created_at") or ""), int(a.get("id") or 0)))


def download_relay_artifact(
    github: GitHubApi, repo: str, artifact: Mapping[str, Any], name: str
) -> dict[str, bytes]:
    """Download and unpack the relay artifact under the relay's size and zip limits."""
    size = artifact.get("size_in_bytes")
    if isinstance(size, int) and size > MAX_RELAY_BYTES:
        raise _rejected(f"it is {size} bytes, over the {MAX_RELAY_BYTES}-byte limit")
    try:
        artifact_id = int(artifact["id"])
    except (KeyError, TypeError, ValueError):
        raise _rejected("the artifact listing has no usable id") from None
    data = download_artifact(
        github, repo, artifact_id, expected_digest=artifact.get("digest"), max_bytes=MAX_RELAY_BYTES
    )
    limits = ZipLimits(max_entries=4, max_total_bytes=MAX_RELAY_BYTES)
    return extract_zip(data, limits, source=f"artifact {name!r} (id {artifact_id})")


def read_relay_artifact(files: Mapping[str, bytes], *, save_to: Path) -> RelayedRun:
    """Validate the unpacked relay artifact; the results are copied to ``save_to``.

    Raises :class:`ArtifactError` naming what is wrong (missing or extra files, a manifest
    that breaks the schema, a results file that is not an axl-eval result).
    """
    unexpected = sorted(set(files) - {MANIFEST_FILE, RESULTS_FILE})
    if unexpected:
        raise _rejected(f"it holds unexpected files ({', '.join(repr(n[:80]) for n in unexpected[:4])})")
    for name in (MANIFEST_FILE, RESULTS_FILE):
        if name not in files:
            raise _rejected(f"it holds no {name}")
    manifest = parse_manifest(files[MANIFEST_FILE])
    raw = files[RESULTS_FILE]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _rejected(f"{RESULTS_FILE} is not UTF-8 text") from None
    try:
        parsed = parse_result_text(text, RESULTS_FILE)
    except AxlError as err:
        raise _rejected(f"{err.message}", hint="it must be the results file written by the PR run") from None
    except (RecursionError, ValueError):
        # Pathological JSON (absurd nesting, giant integers) that json itself refuses.
        raise _rejected(f"{RESULTS_FILE} is not a JSON document the relay can read") from None
    save_to.parent.mkdir(parents=True, exist_ok=True)
    save_to.write_bytes(raw)
    return RelayedRun(manifest=manifest, candidate=dataclasses.replace(parsed, path=str(save_to)))


def parse_manifest(data: bytes) -> RelayManifest:
    """``manifest.json`` under the strict schema; raises :class:`ArtifactError`."""
    if len(data) > _MAX_MANIFEST_BYTES:
        raise _rejected(f"{MANIFEST_FILE} is {len(data)} bytes, over {_MAX_MANIFEST_BYTES}")
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _rejected(f"{MANIFEST_FILE} is not UTF-8 JSON") from None
    try:
        return RelayManifest.model_validate(obj)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise _rejected(f"{MANIFEST_FILE} at {where}: {first['msg']}") from None


def verify_target(
    github: GitHubApi,
    manifest: RelayManifest,
    *,
    repository: str,
    suite: str,
    triggering_head_sha: str | None,
) -> RelayTarget:
    """Check the manifest against this workflow's event and the PR as it is now.

    Raises :class:`ArtifactError` when the manifest contradicts the event (another repository
    or suite, a head commit the triggering run did not build, a PR that does not exist), and
    :class:`StaleRelayError` when the PR has moved on since (nothing wrong; nothing to post).
    """
    if manifest.repository.casefold() != repository.casefold():
        raise _rejected(f"it names repository {manifest.repository!r}, not {repository!r}")
    if manifest.suite != suite:
        raise _rejected(
            f"it is for suite {manifest.suite!r}, not {suite!r}",
            hint="give the relay job the same `suite` input as the pull request job",
        )
    if not triggering_head_sha:
        raise _rejected("the workflow_run event names no head commit to check it against")
    built = triggering_head_sha.lower()
    if manifest.head_sha != built:
        raise _rejected(
            f"it claims head commit {manifest.head_sha[:7]}, but the triggering run built {built[:7]}",
            hint="a run may only report on the commit it built; nothing was posted",
        )
    try:
        pull = github.get_json(f"{repo_path(repository)}/pulls/{manifest.pr_number}")
    except GitHubPermissionError as err:
        if err.status == 404:
            raise _rejected(
                f"it names PR #{manifest.pr_number}, which does not exist in {repository}"
            ) from None
        raise
    head = (pull.get("head") or {}).get("sha") if isinstance(pull, dict) else None
    base = (pull.get("base") or {}).get("sha") if isinstance(pull, dict) else None
    if not isinstance(head, str) or not re.fullmatch(_SHA, head.lower()):
        raise ArtifactError(
            f"GET /pulls/{manifest.pr_number} returned no head commit", hint="is GITHUB_API_URL a GitHub API?"
        )
    if head.lower() != built:
        raise StaleRelayError(
            f"PR #{manifest.pr_number} is now at {head.lower()[:7]}, but the triggering run evaluated {built[:7]}; "
            "not posting results for an old commit",
            hint="the run for the newer push relays its own results",
        )
    return RelayTarget(
        pr_number=manifest.pr_number,
        head_sha=built,
        base_sha=base.lower() if isinstance(base, str) else None,
    )
