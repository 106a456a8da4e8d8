"""The Azure-Blob-like store on its own port: signed downloads, and Put Block, Put Block List
and Put Blob uploads; like Azure it refuses any request that carries Authorization."""

from __future__ import annotations

import hmac
import time
from xml.etree import ElementTree

from tests.fakes.github.state import GitHubState
from tests.fakes.github.wire import _Response, _xml_error


class BlobStore(GitHubState):
    """The ``blob`` server's requests."""

    def _blob(
        self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], body: bytes
    ) -> _Response:
        if "authorization" in headers:
            # Azure refuses a foreign Authorization header even when the SAS is valid.
            return _xml_error(
                403,
                "AuthorizationFailure",
                "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.",
            )
        if not path.startswith("/blobs/"):
            return _xml_error(404, "ResourceNotFound", "The specified resource does not exist.")
        key = path.removeprefix("/blobs/")
        q = {k: v[0] for k, v in query.items()}
        try:
            expiry = int(q.get("se", "0"))
        except ValueError:
            expiry = 0
        perm = q.get("sp", "")
        if not hmac.compare_digest(q.get("sig", ""), self._sas_sig(key, expiry, perm)):
            return _xml_error(403, "AuthenticationFailed", "Signature did not match.")
        if expiry < time.time():
            return _xml_error(403, "AuthenticationFailed", "Signed expiry time has passed.")
        if method == "GET":
            if "r" not in perm:
                return _xml_error(
                    403,
                    "AuthorizationPermissionMismatch",
                    "This request is not authorized to perform this operation using this permission.",
                )
            with self.lock:
                data = self.blobs.get(key)
            if data is None:
                return _xml_error(404, "BlobNotFound", "The specified blob does not exist.")
            content_type = self.blob_types.get(key, "application/zip")
            return _Response(200, data, {"content-type": content_type, "x-ms-blob-type": "BlockBlob"})
        if method != "PUT" or "w" not in perm:
            return _xml_error(
                403,
                "AuthorizationPermissionMismatch",
                "This request is not authorized to perform this operation using this permission.",
            )
        comp = q.get("comp")
        with self.lock:
            if comp == "block":
                block_id = q.get("blockid", "")
                staged = self.staged_blocks.setdefault(key, {})
                if not block_id or any(len(b) != len(block_id) for b in staged):
                    return _xml_error(
                        400,
                        "InvalidQueryParameterValue",
                        "Value for one of the query parameters specified in the request URI is invalid.",
                    )
                if headers.get("content-length") is None:
                    return _xml_error(411, "MissingContentLengthHeader", "Content-Length header is required.")
                staged[block_id] = body
                return _Response(201)
            if comp == "blocklist":
                try:
                    root = ElementTree.fromstring(body)
                except ElementTree.ParseError:
                    return _xml_error(400, "InvalidXmlDocument", "XML specified is not syntactically valid.")
                staged = self.staged_blocks.get(key, {})
                ids = [el.text or "" for el in root]
                if any(i not in staged for i in ids):
                    return _xml_error(400, "InvalidBlockList", "The specified block list is invalid.")
                self.blobs[key] = b"".join(staged[i] for i in ids)
                self.blob_types[key] = headers.get("x-ms-blob-content-type", "application/octet-stream")
                self.staged_blocks.pop(key, None)
                return _Response(201)
            if comp is None:
                if headers.get("x-ms-blob-type") != "BlockBlob":
                    return _xml_error(
                        400,
                        "MissingRequiredHeader",
                        "An HTTP header that's mandatory for this request is not specified.",
                    )
                self.blobs[key] = body
                return _Response(201)
        return _xml_error(
            400,
            "InvalidQueryParameterValue",
            "Value for one of the query parameters specified in the request URI is invalid.",
        )
