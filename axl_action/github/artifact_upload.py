"""Upload a workflow artifact the way ``@actions/artifact`` v2+ does (artifacts v4).

The protocol (see the platform notes, §1):

1. The backend IDs come from the ``scp`` claim of ``ACTIONS_RUNTIME_TOKEN``, a JWT whose
   payload we decode without verifying: the entry ``Actions.Results:<runId>:<jobId>``.
2. ``CreateArtifact`` on the Twirp JSON service at the *origin* of ``ACTIONS_RESULTS_URL``
   returns a signed blob URL. Requests use proto field names (snake_case) and omit empty
   fields; int64 values travel as strings. Responses may be snake_case (GitHub) or camelCase
   (act/Gitea), so both are read.
3. The zip is sent to the blob URL as Azure's SDK sends it: Put Block per 8 MiB chunk, then
   Put Block List. The SAS in the URL is the credential, so no Authorization header.
4. ``FinalizeArtifact`` with the byte count and ``sha256:<hex>`` returns the artifact id,
   the same id the REST API lists.

Twirp calls and blob requests are retried by the layer's one rule (``github.retry``): 5
attempts on 429/5xx and network errors, waiting 3 s (the toolkit's first wait), then twice as
long each time, plus up to 25 % jitter. A name that already exists in the run (a re-run of the job)
answers 409; ``overwrite=True`` deletes the old artifact first, as upload-artifact does.

Only a container (or JavaScript) action receives the two variables; a ``run:`` step and a
composite action do not. GHES does not support artifacts v4 (:func:`artifacts_supported`).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import logging
import mimetypes
import random
import time
import uuid
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import requests
from pydantic import BaseModel, ConfigDict

from axl_action.github.client import USER_AGENT, own_session
from axl_action.github.errors import ArtifactError, redact
from axl_action.github.retry import Backoff, Retrier, Retry

log = logging.getLogger("axl_action.github")

SERVICE_PATH = "/twirp/github.actions.results.api.v1.ArtifactService/"
BLOCK_SIZE = 8 * 1024 * 1024
AZURE_API_VERSION = "2023-11-03"
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_NAME_FORBIDDEN = '":<>|*?\r\n\\/'
_PATH_FORBIDDEN = '":<>|*?\r\n'
RUNTIME_HINT = (
    "artifacts can only be uploaded from the action itself (a container or JavaScript action); "
    "`run:` steps and composite actions do not receive ACTIONS_RUNTIME_TOKEN / ACTIONS_RESULTS_URL, "
    "and self-hosted runners need v2.308.0 or newer"
)


@dataclass(frozen=True)
class BackendIds:
    """The run and job IDs the results service knows this job by."""

    workflow_run_backend_id: str
    workflow_job_run_backend_id: str


class UploadedArtifact(BaseModel):
    """What an upload produced."""

    model_config = ConfigDict(frozen=True)

    id: int
    """Artifact id (the same as the REST ``artifact.id``)."""
    name: str
    """Artifact name."""
    size: int
    """Bytes uploaded (the zip)."""
    digest: str
    """``sha256:<hex>`` of the uploaded bytes; REST reports the same ``digest``."""


def artifacts_supported(server_url: str) -> bool:
    """True on github.com, ``*.ghe.com`` (GHE.com) and ``*.localhost``; False on GHES.

    Mirrors the toolkit's ``isGhes()``: artifacts v4 are not available on GHES.
    """
    host = (urlsplit(server_url).hostname or "").lower()
    return (
        host == "github.com"
        or host.endswith(".ghe.com")
        or host.endswith(".localhost")
        or host == "localhost"
    )


def backend_ids_from_token(token: str) -> BackendIds:
    """Read the backend IDs from the runtime token's ``scp`` claim (no signature check).

    Raises :class:`ArtifactError` when the token is not a JWT or lacks an
    ``Actions.Results:<run>:<job>`` scope. The token is never part of the message.
    """
    invalid = ArtifactError(
        "Failed to get backend IDs: the ACTIONS_RUNTIME_TOKEN is invalid and/or missing claims",
        hint=RUNTIME_HINT,
    )
    parts = token.split(".")
    if len(parts) != 3:
        raise invalid
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, UnicodeDecodeError):
        raise invalid from None
    scp = payload.get("scp") if isinstance(payload, dict) else None
    if not isinstance(scp, str) or not scp:
        raise invalid
    for scope in scp.split(" "):
        pieces = scope.split(":")
        if pieces[0] != "Actions.Results":
            continue
        if len(pieces) != 3 or not pieces[1] or not pieces[2]:
            raise invalid
        return BackendIds(pieces[1], pieces[2])
    raise invalid


def validate_artifact_name(name: str) -> None:
    """Reject names the service refuses: empty, or containing ``" : < > | * ? \\r \\n \\ /``."""
    bad = sorted({c for c in name if c in _NAME_FORBIDDEN})
    if not name or bad:
        raise ArtifactError(
            f"Invalid artifact name {name!r}"
            + (f": it contains {', '.join(map(repr, bad))}" if bad else ": empty"),
            hint='artifact names may not contain " : < > | * ? \\ / or line breaks',
        )


def zip_files(files: Mapping[str, bytes], *, level: int = 6, when: datetime | None = None) -> bytes:
    """Zip ``{relative path: bytes}`` with deflate (the toolkit's default level 6)."""
    if not files:
        raise ArtifactError("Nothing to upload: no files were given", hint="this is a bug in the caller")
    stamp = (when or datetime.now(UTC)).timetuple()[:6]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as zf:
        for path, data in sorted(files.items()):
            clean = path.replace("\\", "/")
            bad = sorted({c for c in clean if c in _PATH_FORBIDDEN})
            if bad or clean.startswith("/") or ".." in clean.split("/") or not clean.strip("/"):
                raise ArtifactError(
                    f"Invalid file path {path!r} for an artifact",
                    hint='use a relative path without "..", line breaks or " : < > | * ?',
                )
            info = zipfile.ZipInfo(clean, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, data, compresslevel=level)
    return buf.getvalue()


class ArtifactUploader:
    """Client for the artifacts v4 results service of the *current* job.

    Args:
        results_url: ``ACTIONS_RESULTS_URL`` (only its origin is used).
        runtime_token: ``ACTIONS_RUNTIME_TOKEN``.
        session: a ``requests.Session`` to reuse.
        sleep: waits between retries (tests pass a recorder).
        max_attempts: attempts per Twirp call and per blob request.
        base_delay: first backoff in seconds (``github.retry``: doubled per attempt, plus up
            to 25 % jitter); 3 s is the toolkit's first wait.
        max_retention_days: ``GITHUB_RETENTION_DAYS``, the repository's cap.
        on_secret: called with every credential-like value the service hands out (the SAS
            signature), so the caller can ``::add-mask::`` it.
        clock: the current time: artifact expiry and the zip entries' timestamps.
        uniform: the jitter's random source, draws in [0, 1) (tests pass a fixed one).
    """

    def __init__(
        self,
        results_url: str,
        runtime_token: str,
        *,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
        max_attempts: int = 5,
        base_delay: float = 3.0,
        timeout: float = 120.0,
        block_size: int = BLOCK_SIZE,
        max_retention_days: int | None = None,
        user_agent: str = USER_AGENT,
        on_secret: Callable[[str], None] | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        uniform: Callable[[], float] | None = None,
    ) -> None:
        parts = urlsplit(results_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ArtifactError(
                f"ACTIONS_RESULTS_URL {results_url!r} is not an http(s) URL", hint=RUNTIME_HINT
            )
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self._token = runtime_token
        self.ids = backend_ids_from_token(runtime_token)
        self._session = own_session(session)
        self.timeout = timeout
        self.block_size = block_size
        self.max_retention_days = max_retention_days
        self.user_agent = user_agent
        self.on_secret = on_secret
        self.clock = clock
        self.retrier = Retrier(
            Backoff(attempts=max_attempts, base=base_delay),
            sleep=sleep,
            uniform=uniform or random.Random().random,
        )
        """The layer's one retry rule (``github.retry``) for Twirp calls and blob requests."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **kwargs: Any) -> ArtifactUploader:
        """Build from ``ACTIONS_RESULTS_URL``, ``ACTIONS_RUNTIME_TOKEN``, ``GITHUB_RETENTION_DAYS``."""
        token = environ.get("ACTIONS_RUNTIME_TOKEN", "")
        url = environ.get("ACTIONS_RESULTS_URL", "")
        missing = [n for n, v in (("ACTIONS_RUNTIME_TOKEN", token), ("ACTIONS_RESULTS_URL", url)) if not v]
        if missing:
            raise ArtifactError(
                f"Cannot upload artifacts: {' and '.join(missing)} not set", hint=RUNTIME_HINT
            )
        retention = environ.get("GITHUB_RETENTION_DAYS", "")
        kwargs.setdefault("max_retention_days", int(retention) if retention.isdigit() else None)
        return cls(url, token, **kwargs)

    def __repr__(self) -> str:
        return f"ArtifactUploader(origin={self.origin!r}, token=***)"

    # -- public API -------------------------------------------------------------------------

    def upload(
        self,
        name: str,
        files: Mapping[str, bytes],
        *,
        retention_days: int | None = None,
        overwrite: bool = False,
    ) -> UploadedArtifact:
        """Zip ``files`` and upload them as artifact ``name``; return its id, size and digest."""
        validate_artifact_name(name)
        return self.upload_zip(
            name, zip_files(files, when=self.clock()), retention_days=retention_days, overwrite=overwrite
        )

    def upload_zip(
        self, name: str, data: bytes, *, retention_days: int | None = None, overwrite: bool = False
    ) -> UploadedArtifact:
        """Upload an already-built zip as artifact ``name``."""
        return self._upload(name, data, None, retention_days=retention_days, overwrite=overwrite)

    def upload_file(
        self,
        file_name: str,
        data: bytes,
        *,
        mime_type: str | None = None,
        retention_days: int | None = None,
        overwrite: bool = False,
    ) -> UploadedArtifact:
        """Upload one file as-is, not zipped (artifacts version 7, like upload-artifact's
        ``archive: false``): the artifact is named after the file and a browser opens it
        directly from the run page, which suits a self-contained ``report.html``.

        GitHub accepts this since February 2026; act and Gitea reject the ``mime_type``
        field, so fall back to :meth:`upload` when targeting them.
        """
        if mime_type is None:
            mime_type = mimetypes.guess_type(file_name)[0] or "application/octet-stream"
        return self._upload(file_name, data, mime_type, retention_days=retention_days, overwrite=overwrite)

    def _upload(
        self,
        name: str,
        data: bytes,
        mime_type: str | None,
        *,
        retention_days: int | None,
        overwrite: bool,
    ) -> UploadedArtifact:
        validate_artifact_name(name)
        if overwrite and self.delete(name) is not None:
            log.info("Deleted the existing artifact %r before uploading it again", name)
        # version 4 without mime_type is what every backend (GitHub, act, Gitea) accepts for
        # zips; version 7 + mime_type marks a raw single-file artifact.
        create: dict[str, Any] = {**self._ids(), "name": name, "version": 4}
        if mime_type is not None:
            create.update(version=7, mime_type=mime_type)
        expires = self._expires_at(retention_days)
        if expires is not None:
            create["expires_at"] = expires
        created = self._call("CreateArtifact", create)
        if not created.get("ok"):
            raise ArtifactError(
                f"CreateArtifact for {name!r}: response from backend was not ok", hint="re-run the job"
            )
        upload_url = _field(created, "signed_upload_url")
        if not isinstance(upload_url, str) or not upload_url:
            raise ArtifactError(f"CreateArtifact for {name!r} returned no upload URL", hint="re-run the job")
        self._mask_sas(upload_url)
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        self._put_blocks(upload_url, data, mime_type or "application/zip")
        finalized = self._call(
            "FinalizeArtifact", {**self._ids(), "name": name, "size": str(len(data)), "hash": digest}
        )
        artifact_id = _field(finalized, "artifact_id")
        if not finalized.get("ok") or artifact_id is None:
            raise ArtifactError(
                f"FinalizeArtifact for {name!r}: response from backend was not ok", hint="re-run the job"
            )
        log.info("Uploaded artifact %r (%d bytes, id %s)", name, len(data), artifact_id)
        return UploadedArtifact(id=int(artifact_id), name=name, size=len(data), digest=digest)

    def list_artifacts(self, name: str | None = None) -> list[dict[str, Any]]:
        """Artifacts of the current run (optionally one name), with snake_case keys."""
        body: dict[str, Any] = self._ids()
        if name is not None:
            body["name_filter"] = name
        resp = self._call("ListArtifacts", body)
        items = resp.get("artifacts") or []
        return [{_snake(k): v for k, v in item.items()} for item in items if isinstance(item, dict)]

    def delete(self, name: str) -> int | None:
        """Delete artifact ``name`` of the current run; return its id, or None if absent."""
        if not self.list_artifacts(name):
            return None
        resp = self._call("DeleteArtifact", {**self._ids(), "name": name})
        artifact_id = _field(resp, "artifact_id")
        return int(artifact_id) if artifact_id is not None else None

    # -- internals --------------------------------------------------------------------------

    def _ids(self) -> dict[str, Any]:
        return {
            "workflow_run_backend_id": self.ids.workflow_run_backend_id,
            "workflow_job_run_backend_id": self.ids.workflow_job_run_backend_id,
        }

    def _expires_at(self, retention_days: int | None) -> str | None:
        days = retention_days
        if days is not None and days <= 0:
            days = None  # 0 means "the repository default", as upload-artifact documents
        if self.max_retention_days is not None and days is not None and days > self.max_retention_days:
            log.warning(
                "Retention days cannot be greater than the maximum allowed retention set within the "
                "repository (%d); using %d",
                self.max_retention_days,
                self.max_retention_days,
            )
            days = self.max_retention_days
        if days is None:
            return None
        when = self.clock() + timedelta(days=days)
        return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"

    def _mask_sas(self, url: str) -> None:
        if self.on_secret is None:
            return
        for sig in parse_qs(urlsplit(url).query).get("sig", []):
            self.on_secret(sig)

    def _call(self, method: str, body: dict[str, Any]) -> dict[str, Any]:
        url = self.origin + SERVICE_PATH + method
        headers = {
            "Authorization": f"Bearer {self._token}",
            "Content-Type": "application/json",
            "User-Agent": self.user_agent,
        }
        payload = json.dumps(body, separators=(",", ":"))

        def attempt(_: int) -> dict[str, Any]:
            try:
                resp = self._session.post(url, data=payload, headers=headers, timeout=self.timeout)
            except requests.RequestException as exc:
                raise Retry(type(exc).__name__) from None
            if resp.status_code != 200:
                error = self._twirp_error(method, body.get("name"), resp)
                if resp.status_code in _RETRY_STATUSES:
                    raise Retry(f"HTTP {resp.status_code}", error=error)
                raise error
            try:
                data = resp.json()
            except ValueError:
                raise ArtifactError(f"{method} returned a non-JSON body", hint="re-run the job") from None
            if not isinstance(data, dict):
                raise ArtifactError(f"{method} returned an unexpected body", hint="re-run the job")
            return data

        def give_up(retry: Retry, n: int) -> ArtifactError:
            what = f"{method} for artifact {body['name']!r}" if body.get("name") else method
            return ArtifactError(
                f"{what} failed after {n} attempts: {retry.problem}",
                hint="check network access to ACTIONS_RESULTS_URL; re-run the job",
            )

        return self.retrier.run(attempt, what=f"Artifact service {method}", give_up=give_up)

    def _twirp_error(self, method: str, name: object, resp: requests.Response) -> ArtifactError:
        try:
            data = resp.json()
            msg = str(data.get("msg") or data.get("message") or "")
            code = str(data.get("code") or "")
        except (ValueError, AttributeError):
            msg, code = resp.text[:200], ""
        msg = redact(msg, self._token)
        what = f"{method} for artifact {name!r}" if name else method
        if "insufficient usage" in msg:
            return ArtifactError(
                f"{what} failed: artifact storage quota has been hit ({msg})",
                hint="delete old artifacts or wait for storage usage to be recalculated (every 6-12 hours)",
                status=resp.status_code,
            )
        if resp.status_code == 409 or code == "already_exists":
            return ArtifactError(
                f"{what} failed: an artifact with this name already exists on the workflow run",
                hint="this happens on a job re-run; upload with overwrite, or put the run attempt in the name",
                status=resp.status_code,
            )
        if resp.status_code in (401, 403):
            return ArtifactError(
                f"{what} was refused ({resp.status_code} {code}: {msg})",
                hint=RUNTIME_HINT,
                status=resp.status_code,
            )
        return ArtifactError(
            f"{what} failed with {resp.status_code} {code}: {msg}".rstrip(": "),
            hint="re-run the job" if resp.status_code >= 500 else None,
            status=resp.status_code,
        )

    def _put_blocks(self, upload_url: str, data: bytes, content_type: str) -> None:
        sep = "&" if urlsplit(upload_url).query else "?"
        prefix = uuid.uuid4().hex[:16]
        block_ids: list[str] = []
        for index, start in enumerate(range(0, max(len(data), 1), self.block_size)):
            # Azure requires every block id of a blob to have the same length.
            block_id = base64.b64encode(f"{prefix}{index:06d}".encode()).decode()
            block_ids.append(block_id)
            self._blob_put(
                f"{upload_url}{sep}comp=block&blockid={quote(block_id, safe='')}",
                data[start : start + self.block_size],
                {"x-ms-version": AZURE_API_VERSION},
            )
        xml = '<?xml version="1.0" encoding="utf-8"?><BlockList>'
        xml += "".join(f"<Latest>{b}</Latest>" for b in block_ids) + "</BlockList>"
        self._blob_put(
            f"{upload_url}{sep}comp=blocklist",
            xml.encode(),
            {
                "x-ms-version": AZURE_API_VERSION,
                "x-ms-blob-content-type": content_type,
                "Content-Type": "application/xml",
            },
        )

    def _blob_put(self, url: str, body: bytes, headers: dict[str, str]) -> None:
        host = urlsplit(url).netloc  # never log the URL: its query is a credential
        # Only the SAS authorises this request; the runtime token must not reach the blob host.
        hdrs = {"User-Agent": self.user_agent, "Content-Length": str(len(body)), **headers}

        def attempt(_: int) -> None:
            try:
                resp = self._session.put(url, data=body, headers=hdrs, timeout=self.timeout)
            except requests.RequestException as exc:
                raise Retry(type(exc).__name__) from None
            if resp.status_code in (200, 201):
                return
            if resp.status_code in _RETRY_STATUSES:
                raise Retry(f"HTTP {resp.status_code}")
            code = resp.headers.get("x-ms-error-code", "")
            raise ArtifactError(
                f"Uploading to the artifact storage host {host} failed with {resp.status_code} {code}".rstrip(),
                hint="the signed upload URL may have expired; re-run the job",
                status=resp.status_code,
            )

        def give_up(retry: Retry, n: int) -> ArtifactError:
            return ArtifactError(
                f"Uploading to the artifact storage host {host} failed after {n} attempts ({retry.problem})",
                hint="re-run the job",
            )

        self.retrier.run(attempt, what=f"Blob upload to {host}", give_up=give_up)


def _field(body: Mapping[str, Any], snake: str) -> Any:
    """Read a Twirp response field in proto (snake) or JSON (lowerCamel) casing."""
    if snake in body:
        return body[snake]
    head, *rest = snake.split("_")
    return body.get(head + "".join(p.title() for p in rest))


def _snake(key: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in key)
