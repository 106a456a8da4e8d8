"""The results service's artifacts v4 Twirp API (``CreateArtifact``, ``FinalizeArtifact``,
``ListArtifacts``, ``GetSignedArtifactURL``, ``DeleteArtifact``), the checks every Twirp call
passes first, and the dispatch to the cache service (``tests/fakes/actions_cache.py``)."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from tests.fakes import github_objects as obj
from tests.fakes.github.records import FakeArtifact, FakeRun
from tests.fakes.github.state import GitHubState
from tests.fakes.github.wire import CACHE_PREFIX, TWIRP_PREFIX, _json, _Response, _twirp_error


class ResultsService(GitHubState):
    """The ``results`` server's requests."""

    _TWIRP_FIELDS: dict[str, set[str]] = {
        "CreateArtifact": {
            "workflow_run_backend_id",
            "workflow_job_run_backend_id",
            "name",
            "expires_at",
            "version",
            "mime_type",
        },
        "FinalizeArtifact": {
            "workflow_run_backend_id",
            "workflow_job_run_backend_id",
            "name",
            "size",
            "hash",
        },
        "ListArtifacts": {
            "workflow_run_backend_id",
            "workflow_job_run_backend_id",
            "name_filter",
            "id_filter",
        },
        "GetSignedArtifactURL": {"workflow_run_backend_id", "workflow_job_run_backend_id", "name"},
        "DeleteArtifact": {"workflow_run_backend_id", "workflow_job_run_backend_id", "name"},
    }

    def _results(self, method: str, path: str, headers: dict[str, str], body: bytes) -> _Response:
        if method == "POST" and path.startswith(CACHE_PREFIX):
            return self._cache_service(path.removeprefix(CACHE_PREFIX), headers, body)
        if method != "POST" or not path.startswith(TWIRP_PREFIX):
            return _twirp_error(404, "bad_route", f"no handler for path {path!r}")
        rpc = path.removeprefix(TWIRP_PREFIX)
        allowed = self._TWIRP_FIELDS.get(rpc)
        if allowed is None:
            return _twirp_error(404, "bad_route", f"no handler for path {path!r}")
        checked = self._twirp_request(headers, body)
        if isinstance(checked, _Response):
            return checked
        claims, req = checked
        if self.legacy_results_backend:
            allowed = allowed - {"mime_type"}
        unknown = set(req) - allowed
        if unknown:
            return _twirp_error(400, "malformed", f"unknown field {sorted(unknown)[0]!r}")
        scopes = [s.split(":") for s in str(claims.get("scp", "")).split(" ")]
        results = next((s for s in scopes if s[0] == "Actions.Results" and len(s) == 3), None)
        if (
            results is None
            or req.get("workflow_run_backend_id") != results[1]
            or req.get("workflow_job_run_backend_id") != results[2]
        ):
            return _twirp_error(403, "permission_denied", "backend IDs do not match the runtime token")
        run = next((r for r in self.runs.values() if r.run_backend_id == results[1]), None)
        if run is None:
            return _twirp_error(404, "not_found", "workflow run not found")
        with self.lock:
            handler: Callable[[FakeRun, dict[str, Any]], _Response] = getattr(self, f"_t_{rpc}")
            return handler(run, req)

    def _twirp_request(
        self, headers: dict[str, str], body: bytes
    ) -> tuple[dict[str, Any], dict[str, Any]] | _Response:
        """The checks every Twirp call of the results and cache services passes first, in the
        services' order: the runtime token, the content type, a JSON object body."""
        scheme, _, jwt = headers.get("authorization", "").partition(" ")
        claims = self._verify_jwt(jwt) if scheme == "Bearer" else None
        if claims is None:
            return _twirp_error(401, "unauthenticated", "invalid or missing runtime token")
        if not headers.get("content-type", "").startswith("application/json"):
            return _twirp_error(400, "malformed", "unexpected Content-Type")
        try:
            req = json.loads(body)
        except ValueError:
            return _twirp_error(400, "malformed", "the request body is not JSON")
        if not isinstance(req, dict):
            return _twirp_error(400, "malformed", "the request body is not an object")
        return claims, req

    def _cache_service(self, rpc: str, headers: dict[str, str], body: bytes) -> _Response:
        """The Actions cache service (``tests/fakes/actions_cache.py``)."""
        checked = self._twirp_request(headers, body)
        if isinstance(checked, _Response):
            return checked
        claims, req = checked
        with self.lock:
            return self.cache.handle(rpc, claims, req)

    def _run_artifact(self, run: FakeRun, name: str) -> FakeArtifact | None:
        return next((a for a in self.artifacts.values() if a.run is run and a.name == name), None)

    def _t_CreateArtifact(self, run: FakeRun, req: dict[str, Any]) -> _Response:
        name = req.get("name")
        if not isinstance(name, str) or not name or any(c in name for c in '":<>|*?\r\n\\/'):
            return _twirp_error(400, "invalid_argument", "invalid artifact name")
        if req.get("version") not in (4, 7):
            return _twirp_error(400, "invalid_argument", "unsupported artifact version")
        if "expires_at" in req and not isinstance(req["expires_at"], str):
            return _twirp_error(400, "malformed", "expires_at must be an RFC 3339 string")
        if "mime_type" in req and not isinstance(req["mime_type"], str):
            return _twirp_error(400, "malformed", "mime_type must be a plain string")
        if "mime_type" in req and req.get("version") != 7:
            return _twirp_error(400, "invalid_argument", "mime_type is only supported for artifact version 7")
        if self._run_artifact(run, name) is not None or any(
            p["run"] is run and p["name"] == name for p in self.pending_uploads.values()
        ):
            return _twirp_error(
                409,
                "already_exists",
                "Conflict: an artifact with this name already exists on the workflow run",
            )
        key = f"uploads/{run.id}/{uuid.uuid4()}"
        self.pending_uploads[key] = {"run": run, "name": name, "req": req}
        return _json(
            200, self._out({"ok": True, "signed_upload_url": self.sign_blob_url(key, ttl=600, write=True)})
        )

    def _t_FinalizeArtifact(self, run: FakeRun, req: dict[str, Any]) -> _Response:
        name = req.get("name")
        key = next(
            (k for k, p in self.pending_uploads.items() if p["run"] is run and p["name"] == name), None
        )
        if key is None:
            return _twirp_error(404, "not_found", "no pending upload with this name")
        size = req.get("size")
        if not isinstance(size, str) or not size.isdigit():
            return _twirp_error(400, "malformed", "size must be an int64 encoded as a string")
        data = self.blobs.get(key)
        if data is None:
            return _twirp_error(400, "failed_precondition", "blob was not uploaded")
        if int(size) != len(data):
            return _twirp_error(
                400, "invalid_argument", f"size {size} does not match the uploaded {len(data)} bytes"
            )
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        if "hash" in req and req["hash"] != digest:
            return _twirp_error(400, "invalid_argument", "hash does not match the uploaded bytes")
        pending = self.pending_uploads.pop(key)
        created = self.now()
        expires = created + timedelta(days=90)
        if isinstance(pending["req"].get("expires_at"), str):
            expires = datetime.fromisoformat(pending["req"]["expires_at"].replace("Z", "+00:00"))
        art = FakeArtifact(
            id=self.next_id(),
            repo=run.repo,
            name=name or "",
            data=data,
            run=run,
            created_at=created,
            expires_at=expires,
            digest=digest,
            content_type=pending["req"].get("mime_type", "application/zip"),
        )
        self.artifacts[art.id] = art
        return _json(200, self._out({"ok": True, "artifact_id": str(art.id)}))

    def _t_ListArtifacts(self, run: FakeRun, req: dict[str, Any]) -> _Response:
        arts = [a for a in self.artifacts.values() if a.run is run]
        if "name_filter" in req:
            arts = [a for a in arts if a.name == req["name_filter"]]
        if "id_filter" in req:
            arts = [a for a in arts if str(a.id) == str(req["id_filter"])]
        return _json(
            200,
            self._out(
                {
                    "artifacts": [
                        self._out(
                            {
                                "workflow_run_backend_id": run.run_backend_id,
                                "workflow_job_run_backend_id": run.job_backend_id,
                                "database_id": str(a.id),
                                "name": a.name,
                                "size": str(len(a.data)),
                                "created_at": obj.iso(a.created_at),
                                **({"digest": a.digest} if a.digest else {}),
                            }
                        )
                        for a in arts
                    ]
                }
            ),
        )

    def _t_GetSignedArtifactURL(self, run: FakeRun, req: dict[str, Any]) -> _Response:
        art = self._run_artifact(run, str(req.get("name")))
        if art is None:
            return _twirp_error(404, "not_found", "artifact not found")
        key = f"artifacts/{art.id}.zip"
        self.blobs[key] = art.data
        return _json(200, self._out({"signed_url": self.sign_blob_url(key)}))

    def _t_DeleteArtifact(self, run: FakeRun, req: dict[str, Any]) -> _Response:
        art = self._run_artifact(run, str(req.get("name")))
        if art is None:
            return _twirp_error(404, "not_found", "artifact not found")
        del self.artifacts[art.id]
        return _json(200, self._out({"ok": True, "artifact_id": str(art.id)}))
