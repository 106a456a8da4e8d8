"""The GitHub Actions cache service, as ``actions/cache`` v4+ (``@actions/cache`` 4.x) uses it.

The protocol (the toolkit's ``cache.twirp-client``, vendored under tests/fixtures/actions-cache):

1. ``GetCacheEntryDownloadURL {key, restore_keys, version}`` on the Twirp JSON service
   ``github.actions.results.api.v1.CacheService`` at the origin of ``ACTIONS_RESULTS_URL``
   answers ``{ok, signed_download_url, matched_key}``; ``ok: false`` is a miss. The blob is read
   from the signed URL.
2. ``CreateCacheEntry {key, version}`` answers ``{ok, signed_upload_url}``; the blob is uploaded
   as for artifacts (Put Block, Put Block List); ``FinalizeCacheEntryUpload {key, size_bytes,
   version}`` answers ``{ok, entry_id}``.

**Scoping is the service's, not ours.** The runtime token's ``ac`` claim lists the refs the job
may read and the one it may write. A pull request reads the caches of its own merge ref, its
base branch and the default branch, and writes only its merge ref's; a push to ``main`` writes
``main``'s. So a fork's pull request can never write where the base branch reads. A key that
already exists in the write scope cannot be created again (entries are immutable): saving it
is reported as "already saved", not an error.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from axl_action.github.errors import CacheServiceError, GitHubError
from axl_action.github.results_service import ResultsService, field

log = logging.getLogger("axl_action.github")

CACHE_SERVICE_PATH = "/twirp/github.actions.results.api.v1.CacheService/"
CACHE_HINT = (
    "the Actions cache is reachable only from the action itself (a container or JavaScript action) "
    "with ACTIONS_RUNTIME_TOKEN and ACTIONS_RESULTS_URL; `run:` steps do not receive them"
)
MAX_KEY_LENGTH = 512
"""The toolkit refuses longer keys (``validateKey``)."""


class RestoredCache(BaseModel):
    """A cache entry that was found and downloaded."""

    model_config = ConfigDict(frozen=True)

    key: str
    """The key that matched (the exact key, or the newest entry under a restore prefix)."""
    data: bytes
    """The entry's bytes."""


class ActionsCache(ResultsService):
    """Client of the Actions cache service for the current job (see the module docstring)."""

    service_path = CACHE_SERVICE_PATH
    error = CacheServiceError
    noun = "cache entry"
    hint = CACHE_HINT

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **kwargs: Any) -> ActionsCache:
        """Build from ``ACTIONS_RESULTS_URL`` and ``ACTIONS_RUNTIME_TOKEN``."""
        url, token = cls._runtime_credentials(environ, "use the Actions cache")
        return cls(url, token, **kwargs)

    def __repr__(self) -> str:
        return f"ActionsCache(origin={self.origin!r}, token=***)"

    def restore(
        self, key: str, restore_keys: Sequence[str], version: str, *, limit: int
    ) -> RestoredCache | None:
        """The entry of ``key``, else the newest one whose key starts with one of
        ``restore_keys`` (in order), among the scopes this job may read; ``None`` on a miss.
        An entry larger than ``limit`` bytes is refused."""
        _check_key(key)
        body: dict[str, Any] = {"key": key, "version": version}
        if restore_keys:
            body["restore_keys"] = list(restore_keys)
        found = self._call("GetCacheEntryDownloadURL", body, about=key)
        if not found.get("ok"):
            return None
        url = field(found, "signed_download_url")
        if not isinstance(url, str) or not url:
            raise CacheServiceError(f"GetCacheEntryDownloadURL for {key!r} returned no download URL")
        self._mask_sas(url)
        matched = field(found, "matched_key")
        data = self._blob_get(url, limit=limit)
        return RestoredCache(key=matched if isinstance(matched, str) and matched else key, data=data)

    def save(self, key: str, version: str, data: bytes) -> int | None:
        """Store ``data`` under ``key`` in this job's write scope; its entry id, or ``None`` when
        the key is already saved there (entries are immutable)."""
        _check_key(key)
        try:
            created = self._call("CreateCacheEntry", {"key": key, "version": version}, about=key)
        except CacheServiceError as exc:
            if exc.status == 409:
                return None
            raise
        if not created.get("ok"):
            log.info("Cache entry %r was not created: %s", key, created.get("message") or "already saved")
            return None
        url = field(created, "signed_upload_url")
        if not isinstance(url, str) or not url:
            raise CacheServiceError(
                f"CreateCacheEntry for {key!r} returned no upload URL", hint="re-run the job"
            )
        self._mask_sas(url)
        self._put_blocks(url, data, "application/octet-stream")
        done = self._call(
            "FinalizeCacheEntryUpload",
            {"key": key, "size_bytes": str(len(data)), "version": version},
            about=key,
        )
        entry_id = field(done, "entry_id")
        if not done.get("ok") or entry_id is None:
            raise CacheServiceError(
                f"FinalizeCacheEntryUpload for {key!r}: {done.get('message') or 'the response was not ok'}",
                hint="re-run the job",
            )
        return int(entry_id)

    def _special_error(self, what: str, status: int, code: str, msg: str) -> GitHubError | None:
        if status == 409 or code == "already_exists":
            return CacheServiceError(f"{what}: the key is already saved in this scope", status=409)
        if status == 403:
            return CacheServiceError(
                f"{what} was refused ({msg or code}): this job may not write that cache scope",
                hint="a pull request writes only its own scope; the baseline job (a push) writes the branch's",
                status=403,
            )
        return None


def _check_key(key: str) -> None:
    if not key or len(key) > MAX_KEY_LENGTH or "," in key:
        raise CacheServiceError(
            f"Invalid cache key {key[:80]!r}: a key is 1-{MAX_KEY_LENGTH} characters without commas"
        )


__all__ = ["CACHE_SERVICE_PATH", "ActionsCache", "RestoredCache"]
