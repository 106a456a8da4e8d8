"""The GitHub Actions cache service (Twirp ``CacheService``) for the fake GitHub.

It speaks what ``@actions/cache`` 4.x speaks, and checks it: every request and response field
is checked against the message definitions vendored from the toolkit
(tests/fixtures/actions-cache/cache.js, parsed here), so a field we invent or misspell fails.

Scoping follows the runtime token's ``ac`` claim, a JSON list of ``{"Scope": ref,
"Permission": n}`` (read 1, write 2, both 3), as GitHub issues it:

* a lookup searches the readable scopes in the claim's order; in each, the exact key first,
  then each restore key as a prefix (the newest entry wins), as the service documents;
* an entry is created in the first writable scope only; a job without one is refused (403);
* a key that exists in the write scope cannot be created again (409 ``already_exists``).

Entries expire (``expire_after``, 7 days unused by default) and the blob lives in the fake's
blob store behind a signed URL, like an artifact's.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.fakes.github.wire import _json, _Response, _twirp_error

if TYPE_CHECKING:
    from tests.fakes.github.state import GitHubState

CACHE_PREFIX = "/twirp/github.actions.results.api.v1.CacheService/"
DEFINITIONS = Path(__file__).resolve().parents[1] / "fixtures" / "actions-cache" / "cache.js"
READ, WRITE = 1, 2


def message_fields() -> dict[str, dict[str, str]]:
    """``{message name: {proto field name: kind}}`` from the vendored ``cache.js``."""
    text = DEFINITIONS.read_text("utf-8")
    out: dict[str, dict[str, str]] = {}
    for match in re.finditer(r'super\("github\.actions\.results\.api\.v1\.(\w+)", \[(.*?)\]\);', text, re.S):
        fields = {
            m.group(1): ("repeated " if "repeat:" in m.group(0) else "") + m.group(2)
            for m in re.finditer(r'name: "(\w+)", kind: "(\w+)"[^}]*', match.group(2))
        }
        out[match.group(1)] = fields
    return out


MESSAGES = message_fields()


@dataclass
class CacheEntry:
    scope: str
    key: str
    version: str
    blob: str
    size: int = 0
    created: float = field(default_factory=time.time)
    used: float = field(default_factory=time.time)
    finalized: bool = False
    id: int = 0


@dataclass
class FakeCacheService:
    """The cache service of one fake GitHub (``FakeGitHub.cache``)."""

    github: GitHubState
    entries: list[CacheEntry] = field(default_factory=list)
    expire_after: float = 7 * 86400.0
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def handle(self, rpc: str, claims: dict[str, Any], req: dict[str, Any]) -> _Response:
        request_type = f"{rpc}Request"
        allowed = MESSAGES.get(request_type)
        if allowed is None:
            return _twirp_error(404, "bad_route", f"no handler for {rpc}")
        unknown = set(req) - set(allowed)
        if unknown:
            return _twirp_error(400, "malformed", f"unknown field {sorted(unknown)[0]!r} in {request_type}")
        for name, kind in allowed.items():
            if name in req and kind.startswith("repeated") and not isinstance(req[name], list):
                return _twirp_error(400, "malformed", f"{name} must be a list")
        self.calls.append((rpc, req))
        scopes = _scopes(claims)
        if scopes is None:
            return _twirp_error(401, "unauthenticated", "the runtime token has no cache scopes (ac claim)")
        self._expire()
        reply: dict[str, Any] | _Response = getattr(self, f"_{rpc}")(scopes, req)
        if not isinstance(reply, dict):
            return reply
        response_fields = MESSAGES[f"{rpc}Response"]
        assert set(reply) <= set(response_fields), f"fake answers a field {rpc}Response lacks: {reply}"
        return _json(200, self.github._out(reply))

    def _expire(self) -> None:
        now = time.time()
        self.entries = [e for e in self.entries if now - e.used <= self.expire_after]

    def _GetCacheEntryDownloadURL(self, scopes: list[tuple[str, int]], req: dict[str, Any]) -> Any:
        key, version = req.get("key"), req.get("version")
        if not isinstance(key, str) or not key or not isinstance(version, str) or not version:
            return _twirp_error(400, "invalid_argument", "key and version are required")
        readable = [s for s, p in scopes if p & READ]
        prefixes = [k for k in req.get("restore_keys", []) if isinstance(k, str)]
        for scope in readable:
            done = [e for e in self.entries if e.scope == scope and e.version == version and e.finalized]
            exact = [e for e in done if e.key == key]
            if exact:
                return self._found(exact[0])
            for prefix in prefixes:
                under = sorted((e for e in done if e.key.startswith(prefix)), key=lambda e: e.created)
                if under:
                    return self._found(under[-1])
        return {"ok": False}

    def _found(self, entry: CacheEntry) -> dict[str, Any]:
        entry.used = time.time()
        return {
            "ok": True,
            "signed_download_url": self.github.sign_blob_url(entry.blob, ttl=600),
            "matched_key": entry.key,
        }

    def _CreateCacheEntry(self, scopes: list[tuple[str, int]], req: dict[str, Any]) -> Any:
        key, version = req.get("key"), req.get("version")
        if not isinstance(key, str) or not key or not isinstance(version, str) or not version:
            return _twirp_error(400, "invalid_argument", "key and version are required")
        writable = [s for s, p in scopes if p & WRITE]
        if not writable:
            return _twirp_error(403, "permission_denied", "the runtime token may not write any cache scope")
        scope = writable[0]
        if any(e.scope == scope and e.key == key and e.version == version for e in self.entries):
            return _twirp_error(
                409, "already_exists", "cache entry with the same key, version and scope already exists"
            )
        blob = f"caches/{uuid.uuid4()}"
        self.entries.append(CacheEntry(scope=scope, key=key, version=version, blob=blob))
        return {"ok": True, "signed_upload_url": self.github.sign_blob_url(blob, ttl=600, write=True)}

    def _FinalizeCacheEntryUpload(self, scopes: list[tuple[str, int]], req: dict[str, Any]) -> Any:
        writable = [s for s, p in scopes if p & WRITE]
        entry = next(
            (
                e
                for e in self.entries
                if writable
                and e.scope == writable[0]
                and e.key == req.get("key")
                and e.version == req.get("version")
            ),
            None,
        )
        if entry is None or entry.finalized:
            return _twirp_error(404, "not_found", "no cache entry is being uploaded under this key")
        size = req.get("size_bytes")
        data = self.github.blobs.get(entry.blob)
        if not isinstance(size, str) or not size.isdigit():
            return _twirp_error(400, "malformed", "size_bytes must be an int64 encoded as a string")
        if data is None or int(size) != len(data):
            return _twirp_error(400, "invalid_argument", "size_bytes does not match the uploaded blob")
        entry.size, entry.finalized, entry.id = len(data), True, self.github.next_id()
        return {"ok": True, "entry_id": str(entry.id)}

    def in_scope(self, scope: str) -> list[str]:
        """Keys of the finalized entries of ``scope``."""
        return [e.key for e in self.entries if e.scope == scope and e.finalized]


def _scopes(claims: dict[str, Any]) -> list[tuple[str, int]] | None:
    raw = claims.get("ac")
    if not isinstance(raw, str):
        return None
    try:
        parsed = json.loads(raw)
    except ValueError:
        return None
    out = [
        (s["Scope"], int(s["Permission"]))
        for s in parsed
        if isinstance(s, dict) and isinstance(s.get("Scope"), str) and isinstance(s.get("Permission"), int)
    ]
    return out or None


def ac_claim(*scopes: tuple[str, int]) -> str:
    """The ``ac`` claim GitHub puts in a runtime token, for ``(ref, permission)`` pairs."""
    return json.dumps([{"Scope": ref, "Permission": perm} for ref, perm in scopes])


def pull_request_scopes(
    number: int, base: str = "main", default: str = "main"
) -> tuple[tuple[str, int], ...]:
    """A pull request's: its merge ref read+write, then its base and the default branch read."""
    refs = [(f"refs/pull/{number}/merge", READ | WRITE), (f"refs/heads/{base}", READ)]
    if default != base:
        refs.append((f"refs/heads/{default}", READ))
    return tuple(refs)


def push_scopes(branch: str = "main") -> tuple[tuple[str, int], ...]:
    """A push's: its branch read+write."""
    return ((f"refs/heads/{branch}", READ | WRITE),)
