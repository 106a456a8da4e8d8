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

Twirp calls and blob requests are retried by the layer's one rule (``axl_action.retry``): 5
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
import struct
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Unpack
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from axl_action.github.errors import ArtifactError, GitHubError
from axl_action.github.results_service import ResultsService, ServiceOptions
from axl_action.github.results_service import field as _field

log = logging.getLogger("axl_action.github")

SERVICE_PATH = "/twirp/github.actions.results.api.v1.ArtifactService/"
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


#: The largest size, offset or count a zip without zip64 records holds.
_ZIP_MAX = 0xFFFFFFFF


def _dos_time(when: datetime) -> tuple[int, int]:
    y, mo, d, h, mi, sec = when.timetuple()[:6]
    if y < 1980:
        raise ValueError("ZIP does not support timestamps before 1980")
    return (h << 11) | (mi << 5) | (sec // 2), ((y - 1980) << 9) | (mo << 5) | d


def zip_files(
    files: Mapping[str, bytes],
    *,
    level: int = 6,
    strategy: int = zlib.Z_DEFAULT_STRATEGY,
    when: datetime | None = None,
) -> bytes:
    """Zip ``{relative path: bytes}`` with deflate (the toolkit's default level 6).

    ``strategy`` is zlib's: ``zlib.Z_HUFFMAN_ONLY`` entropy-codes the bytes without looking
    for repeats, for data that is packed already (the HTML report: 20 % smaller than stored,
    at three times the speed of level 6). Every entry is deflated, files in path order, with
    mode 0644 and the time ``when``; sizes and offsets up to 4 GiB (no zip64).
    """
    if not files:
        raise ArtifactError("Nothing to upload: no files were given", hint="this is a bug in the caller")
    clock, date = _dos_time(when or datetime.now(UTC))
    body = io.BytesIO()
    directory: list[bytes] = []
    for path, data in sorted(files.items()):
        clean = path.replace("\\", "/")
        bad = sorted({c for c in clean if c in _PATH_FORBIDDEN})
        if bad or clean.startswith("/") or ".." in clean.split("/") or not clean.strip("/"):
            raise ArtifactError(
                f"Invalid file path {path!r} for an artifact",
                hint='use a relative path without "..", line breaks or " : < > | * ?',
            )
        packer = zlib.compressobj(level, zlib.DEFLATED, -15, 8, strategy)
        packed = packer.compress(data) + packer.flush()
        offset = body.tell()
        if max(len(data), len(packed), offset) >= _ZIP_MAX or len(directory) >= 0xFFFF:
            raise ArtifactError(f"{path!r} does not fit an artifact zip", hint="artifacts hold up to 4 GiB")
        name = clean.encode("utf-8")
        flags = 0 if name.isascii() else 0x800  # bit 11: the name is UTF-8
        crc = zlib.crc32(data)
        # version needed 2.0 (deflate), method 8, DOS time and date, CRC, sizes, name length.
        fields = (20, flags, 8, clock, date, crc, len(packed), len(data), len(name))
        body.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, *fields, 0) + name)
        body.write(packed)
        # made by 2.0 on Unix; no extra field, comment, disk; mode 0644; local header offset.
        directory.append(
            struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0x0314, *fields, 0, 0, 0, 0, 0o644 << 16, offset)
            + name
        )
    start = body.tell()
    central = b"".join(directory)
    if start + len(central) >= _ZIP_MAX:
        raise ArtifactError("the files do not fit an artifact zip", hint="artifacts hold up to 4 GiB")
    body.write(central)
    body.write(
        struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(directory), len(directory), len(central), start, 0)
    )
    return body.getvalue()


class ArtifactUploader(ResultsService):
    """Client for the artifacts v4 results service of the *current* job.

    Args:
        results_url: ``ACTIONS_RESULTS_URL`` (only its origin is used).
        runtime_token: ``ACTIONS_RUNTIME_TOKEN``.
        session: a ``requests.Session`` to reuse.
        sleep: waits between retries (tests pass a recorder).
        max_attempts: attempts per Twirp call and per blob request.
        base_delay: first backoff in seconds (``axl_action.retry``: doubled per attempt, plus up
            to 25 % jitter); 3 s is the toolkit's first wait.
        max_retention_days: ``GITHUB_RETENTION_DAYS``, the repository's cap.
        on_secret: called with every credential-like value the service hands out (the SAS
            signature), so the caller can ``::add-mask::`` it.
        clock: the current time: artifact expiry and the zip entries' timestamps.
        uniform: the jitter's random source, draws in [0, 1) (tests pass a fixed one).
    """

    service_path = SERVICE_PATH
    error = ArtifactError
    noun = "artifact"
    hint = RUNTIME_HINT

    def __init__(
        self,
        results_url: str,
        runtime_token: str,
        *,
        max_retention_days: int | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        **options: Unpack[ServiceOptions],
    ) -> None:
        super().__init__(results_url, runtime_token, **options)
        self.ids = backend_ids_from_token(runtime_token)
        self.max_retention_days = max_retention_days
        self.clock = clock

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **kwargs: Any) -> ArtifactUploader:
        """Build from ``ACTIONS_RESULTS_URL``, ``ACTIONS_RUNTIME_TOKEN``, ``GITHUB_RETENTION_DAYS``."""
        url, token = cls._runtime_credentials(environ, "upload artifacts")
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
        strategy: int = zlib.Z_DEFAULT_STRATEGY,
    ) -> UploadedArtifact:
        """Zip ``files`` (deflate ``strategy``, see :func:`zip_files`) and upload them as
        artifact ``name``; return its id, size and digest."""
        validate_artifact_name(name)
        data = zip_files(files, strategy=strategy, when=self.clock())
        return self.upload_zip(name, data, retention_days=retention_days, overwrite=overwrite)

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
        created = self._call("CreateArtifact", create, about=name)
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
            "FinalizeArtifact",
            {**self._ids(), "name": name, "size": str(len(data)), "hash": digest},
            about=name,
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
        resp = self._call("ListArtifacts", body, about=name)
        items = resp.get("artifacts") or []
        return [{_snake(k): v for k, v in item.items()} for item in items if isinstance(item, dict)]

    def delete(self, name: str) -> int | None:
        """Delete artifact ``name`` of the current run; return its id, or None if absent."""
        if not self.list_artifacts(name):
            return None
        resp = self._call("DeleteArtifact", {**self._ids(), "name": name}, about=name)
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

    def _special_error(self, what: str, status: int, code: str, msg: str) -> GitHubError | None:
        if "insufficient usage" in msg:
            return ArtifactError(
                f"{what} failed: artifact storage quota has been hit ({msg})",
                hint="delete old artifacts or wait for storage usage to be recalculated (every 6-12 hours)",
                status=status,
            )
        if status == 409 or code == "already_exists":
            return ArtifactError(
                f"{what} failed: an artifact with this name already exists on the workflow run",
                hint="this happens on a job re-run; upload with overwrite, or put the run attempt in the name",
                status=status,
            )
        return None


def _snake(key: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in key)
