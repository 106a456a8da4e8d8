"""The fake GitHub's responses: JSON, GitHub's REST error body, Azure's XML errors, Twirp
errors, and the encodings the servers share (base64url, zips)."""

from __future__ import annotations

import base64
import io
import json
import zipfile
from dataclasses import dataclass, field
from typing import Any

DOCS = "https://docs.github.com/rest"

TWIRP_PREFIX = "/twirp/github.actions.results.api.v1.ArtifactService/"

CACHE_PREFIX = "/twirp/github.actions.results.api.v1.CacheService/"

FORBIDDEN_INTEGRATION = "Resource not accessible by integration"


@dataclass
class _Response:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


def _json(status: int, payload: Any, headers: dict[str, str] | None = None) -> _Response:
    hdrs = {"content-type": "application/json; charset=utf-8"}
    hdrs.update(headers or {})
    return _Response(status, json.dumps(payload).encode(), hdrs)


def _error(status: int, message: str, doc: str = DOCS, **extra: Any) -> _Response:
    return _json(status, {"message": message, "documentation_url": doc, "status": str(status), **extra})


def _xml_error(status: int, code: str, message: str) -> _Response:
    body = f'<?xml version="1.0" encoding="utf-8"?><Error><Code>{code}</Code><Message>{message}</Message></Error>'
    return _Response(status, body.encode(), {"content-type": "application/xml", "x-ms-error-code": code})


def _twirp_error(status: int, code: str, msg: str) -> _Response:
    return _json(status, {"code": code, "msg": msg})


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def make_zip(files: dict[str, bytes]) -> bytes:
    """Zip ``files`` (deflated), as upload-artifact does."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()
