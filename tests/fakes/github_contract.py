"""Validate recorded fake-GitHub exchanges against the vendored OpenAPI description.

Requests and responses are checked with ``openapi-core``. The fake listens on an ephemeral
port, so every exchange is replayed against one fixed server URL (``servers`` rewritten) and
the description is loaded once per process. ``GET /user`` is not in the subset and is skipped
by name.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from functools import cache

from openapi_core import OpenAPI
from openapi_core.templating.responses.exceptions import ResponseNotFound
from openapi_core.testing import MockRequest, MockResponse
from openapi_schema_validator import OAS30Validator

from tests.fakes import github_objects
from tests.fakes.github_server import RecordedExchange

BASE_URL = "http://fake-github.test"
NOT_IN_SUBSET = frozenset({"/user"})


@cache
def _basic_error_validator() -> OAS30Validator:
    return OAS30Validator(github_objects.spec()["components"]["schemas"]["basic-error"])


@cache
def openapi() -> OpenAPI:
    """The subset with ``servers`` pointed at :data:`BASE_URL` (loaded once)."""
    spec = copy.deepcopy(github_objects.spec())
    spec["servers"] = [{"url": BASE_URL}]
    return OpenAPI.from_dict(spec)


def validate_exchange(ex: RecordedExchange, *, check_request: bool = True) -> None:
    """Raise an ``openapi-core`` error if the request or the response breaks the description."""
    req = ex.request
    query = {k: v[0] for k, v in req.query.items()}
    mock_req = MockRequest(
        BASE_URL,
        req.method.lower(),
        req.path,
        args=query,
        headers=req.headers,
        data=req.body or None,
        content_type=req.headers.get("content-type", "application/json").split(";")[0],
    )
    api = openapi()
    if check_request:
        api.validate_request(mock_req)
    content_type = ex.headers.get("content-type", "application/json").split(";")[0]
    try:
        api.validate_response(
            mock_req, MockResponse(ex.body, ex.status, headers=ex.headers, content_type=content_type)
        )
    except ResponseNotFound:
        # GitHub answers any endpoint with 401/403/429/5xx, but descriptions list only some
        # statuses per operation; an undocumented error must still be a basic-error body.
        if ex.status < 400:
            raise
        _basic_error_validator().validate(json.loads(ex.body))


def validate_exchanges(exchanges: Iterable[RecordedExchange]) -> int:
    """Validate every exchange on a described path; return how many were checked.

    Requests answered 401 (bad token) or by an injected fault are still checked as
    responses; requests are checked only when the fake accepted them (a test may send a
    deliberately broken request to see the fake refuse it).
    """
    checked = 0
    for ex in exchanges:
        if ex.request.path in NOT_IN_SUBSET:
            continue
        validate_exchange(ex, check_request=ex.status < 400)
        checked += 1
    return checked
