"""The Twirp JSON services of ``ACTIONS_RESULTS_URL`` and their signed blob storage: what the
artifact uploader (``artifact_upload.py``) and the Actions cache client (``actions_cache.py``)
share, written once.

* A call is ``POST {origin}/twirp/github.actions.results.api.v1.<Service>/<Method>`` with the
  runtime token as a bearer token and a JSON body in proto field names (snake_case, empty
  fields omitted, int64 as strings). Responses may be snake_case (GitHub) or camelCase (act,
  Gitea): :func:`field` reads both.
* Blobs go to the signed URL the service hands out, as Azure's SDK sends them: Put Block per
  chunk, then Put Block List. The SAS in the URL is the credential: no Authorization header,
  and the URL is never logged (its signature is handed to ``on_secret`` to be masked).
* Calls and blob requests are retried by the layer's one rule (``axl_action.retry``): 429/5xx and
  network errors, waiting 3 s, then twice as long each time, plus up to 25 % jitter.
"""

from __future__ import annotations

import base64
import json
import random
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, TypedDict
from urllib.parse import parse_qs, quote, urlsplit

import requests

from axl_action.github.client import USER_AGENT, http_url, own_session
from axl_action.github.errors import GitHubError, redact
from axl_action.retry import Backoff, Retrier, Retry

BLOCK_SIZE = 8 * 1024 * 1024
AZURE_API_VERSION = "2023-11-03"
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class ServiceOptions(TypedDict, total=False):
    """The keyword arguments of :class:`ResultsService` (their defaults are its own), which a
    subclass's constructor passes on as ``**options``."""

    session: requests.Session | None
    sleep: Callable[[float], None]
    max_attempts: int
    base_delay: float
    timeout: float
    block_size: int
    user_agent: str
    on_secret: Callable[[str], None] | None
    uniform: Callable[[], float] | None


class ResultsService:
    """One Twirp service of the results host, for the current job.

    Subclasses set :attr:`service_path`, :attr:`error` (the exception they raise), :attr:`noun`
    (what a message calls the thing a call is about) and :attr:`hint` (what to check when the
    runtime variables are wrong).
    """

    service_path: str
    error: type[GitHubError] = GitHubError
    noun: str = "object"
    hint: str = ""

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
        user_agent: str = USER_AGENT,
        on_secret: Callable[[str], None] | None = None,
        uniform: Callable[[], float] | None = None,
    ) -> None:
        parts = http_url(results_url, "ACTIONS_RESULTS_URL", self.error, hint=self.hint)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self._token = runtime_token
        self._session = own_session(session)
        self.timeout = timeout
        self.block_size = block_size
        self.user_agent = user_agent
        self.on_secret = on_secret
        self.retrier = Retrier(
            Backoff(attempts=max_attempts, base=base_delay),
            sleep=sleep,
            uniform=uniform or random.Random().random,
        )
        """The layer's one retry rule (``axl_action.retry``) for Twirp calls and blob requests."""

    @classmethod
    def _runtime_credentials(cls, environ: Mapping[str, str], doing: str) -> tuple[str, str]:
        """``ACTIONS_RESULTS_URL`` and ``ACTIONS_RUNTIME_TOKEN`` from ``environ``; a missing one
        is one error saying what cannot be done (``doing``: "upload artifacts")."""
        token = environ.get("ACTIONS_RUNTIME_TOKEN", "")
        url = environ.get("ACTIONS_RESULTS_URL", "")
        missing = [n for n, v in (("ACTIONS_RUNTIME_TOKEN", token), ("ACTIONS_RESULTS_URL", url)) if not v]
        if missing:
            raise cls.error(f"Cannot {doing}: {' and '.join(missing)} not set", hint=cls.hint)
        return url, token

    def _mask_sas(self, url: str) -> None:
        if self.on_secret is None:
            return
        for sig in parse_qs(urlsplit(url).query).get("sig", []):
            self.on_secret(sig)

    def _call(self, method: str, body: dict[str, Any], *, about: str | None = None) -> dict[str, Any]:
        """One Twirp call; ``about`` names what it concerns in messages (an artifact's name)."""
        url = self.origin + self.service_path + method
        headers = {
            "Authorization": f"Bearer {self._token}",
            "Content-Type": "application/json",
            "User-Agent": self.user_agent,
        }
        payload = json.dumps(body, separators=(",", ":"))
        what = f"{method} for {self.noun} {about!r}" if about else method

        def attempt(_: int) -> dict[str, Any]:
            try:
                resp = self._session.post(url, data=payload, headers=headers, timeout=self.timeout)
            except requests.RequestException as exc:
                raise Retry(type(exc).__name__) from None
            if resp.status_code != 200:
                error = self._twirp_error(what, resp)
                if resp.status_code in RETRY_STATUSES:
                    raise Retry(f"HTTP {resp.status_code}", error=error)
                raise error
            try:
                data = resp.json()
            except ValueError:
                raise self.error(f"{method} returned a non-JSON body", hint="re-run the job") from None
            if not isinstance(data, dict):
                raise self.error(f"{method} returned an unexpected body", hint="re-run the job")
            return data

        def give_up(retry: Retry, n: int) -> GitHubError:
            return self.error(
                f"{what} failed after {n} attempts: {retry.problem}",
                hint="check network access to ACTIONS_RESULTS_URL; re-run the job",
            )

        return self.retrier.run(attempt, what=f"{type(self).__name__} {method}", give_up=give_up)

    def _twirp_error(self, what: str, resp: requests.Response) -> GitHubError:
        msg, code = self._twirp_message(resp)
        special = self._special_error(what, resp.status_code, code, msg)
        if special is not None:
            return special
        if resp.status_code in (401, 403):
            return self.error(
                f"{what} was refused ({resp.status_code} {code}: {msg})",
                hint=self.hint,
                status=resp.status_code,
            )
        return self.error(
            f"{what} failed with {resp.status_code} {code}: {msg}".rstrip(": "),
            hint="re-run the job" if resp.status_code >= 500 else None,
            status=resp.status_code,
        )

    def _twirp_message(self, resp: requests.Response) -> tuple[str, str]:
        try:
            data = resp.json()
            msg = str(data.get("msg") or data.get("message") or "")
            code = str(data.get("code") or "")
        except (ValueError, AttributeError):
            msg, code = resp.text[:200], ""
        return redact(msg, self._token), code

    def _special_error(self, what: str, status: int, code: str, msg: str) -> GitHubError | None:
        """A subclass's own reading of an error reply (a quota, a conflict), or ``None``."""
        return None

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
            if resp.status_code in RETRY_STATUSES:
                raise Retry(f"HTTP {resp.status_code}")
            code = resp.headers.get("x-ms-error-code", "")
            raise self.error(
                f"Uploading to the {self.noun} storage host {host} failed with {resp.status_code} {code}".rstrip(),
                hint="the signed upload URL may have expired; re-run the job",
                status=resp.status_code,
            )

        def give_up(retry: Retry, n: int) -> GitHubError:
            return self.error(
                f"Uploading to the {self.noun} storage host {host} failed after {n} attempts ({retry.problem})",
                hint="re-run the job",
            )

        self.retrier.run(attempt, what=f"Blob upload to {host}", give_up=give_up)

    def _blob_get(self, url: str, *, limit: int) -> bytes:
        """The blob at a signed download URL, at most ``limit`` bytes."""
        host = urlsplit(url).netloc

        def attempt(_: int) -> bytes:
            try:
                resp = self._session.get(
                    url, headers={"User-Agent": self.user_agent}, timeout=self.timeout, stream=True
                )
            except requests.RequestException as exc:
                raise Retry(type(exc).__name__) from None
            with resp:
                if resp.status_code in RETRY_STATUSES:
                    raise Retry(f"HTTP {resp.status_code}")
                if resp.status_code != 200:
                    code = resp.headers.get("x-ms-error-code", "")
                    raise self.error(
                        f"Downloading from the {self.noun} storage host {host} failed with {resp.status_code} {code}".rstrip(),
                        hint="the signed download URL may have expired; re-run the job",
                        status=resp.status_code,
                    )
                chunks: list[bytes] = []
                size = 0
                try:
                    for chunk in resp.iter_content(1 << 20):
                        size += len(chunk)
                        if size > limit:
                            raise self.error(
                                f"The {self.noun} at {host} is larger than {limit} bytes",
                                hint="it is skipped",
                            )
                        chunks.append(chunk)
                except requests.RequestException as exc:
                    raise Retry(type(exc).__name__) from None
                return b"".join(chunks)

        def give_up(retry: Retry, n: int) -> GitHubError:
            return self.error(
                f"Downloading from the {self.noun} storage host {host} failed after {n} attempts ({retry.problem})",
                hint="re-run the job",
            )

        return self.retrier.run(attempt, what=f"Blob download from {host}", give_up=give_up)


def field(body: Mapping[str, Any], snake: str) -> Any:
    """Read a Twirp response field in proto (snake) or JSON (lowerCamel) casing."""
    if snake in body:
        return body[snake]
    head, *rest = snake.split("_")
    return body.get(head + "".join(p.title() for p in rest))


__all__ = ["AZURE_API_VERSION", "BLOCK_SIZE", "RETRY_STATUSES", "ResultsService", "ServiceOptions", "field"]
