"""Property tests: key-shaped secrets never survive redaction, wherever they sit."""

from __future__ import annotations

import json
import string

from hypothesis import given, settings
from hypothesis import strategies as st

from axl_action.providers.capture import build_record
from axl_action.providers.redact import redact_secrets, redact_value
from axl_action.providers.types import WireExchange

_KEY_CHARS = string.ascii_letters + string.digits + "_-"
keys = st.one_of(
    st.text(_KEY_CHARS, min_size=20, max_size=60).map(lambda s: "sk-" + s),
    st.text(_KEY_CHARS, min_size=35, max_size=39).map(lambda s: "AIza" + s),
)
noise = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40).filter(
    lambda s: not s or s[0] not in _KEY_CHARS
)


@settings(max_examples=100, deadline=None)
@given(key=keys, before=st.text(max_size=30), after=noise)
def test_key_shaped_strings_are_removed_from_text(key: str, before: str, after: str) -> None:
    text = f"{before} {key}{after}"
    assert key not in redact_secrets(text)


@settings(max_examples=100, deadline=None)
@given(key=keys, content=st.booleans(), depth=st.integers(0, 3))
def test_keys_never_reach_a_capture_record(key: str, content: bool, depth: int) -> None:
    nested: object = f"token {key}"
    for _ in range(depth):
        nested = {"data": [nested]}
    exchange = WireExchange(
        method="POST",
        url=f"http://h/v1?key={key}",
        request_headers={"Authorization": f"Bearer {key}", "x-custom": key},
        request_body={"messages": [{"role": "user", "content": f"my key is {key}"}], "extra": nested},
        status=401,
        response_headers={"x-echo": key},
        response_body={"error": {"message": f"Incorrect API key provided: {key}"}},
        attempts=1,
    )
    record = build_record(provider="openai", model="m", exchange=exchange, redact_content=content)
    assert key not in json.dumps(record, ensure_ascii=False)
    assert key not in json.dumps(redact_value({"k": [key, {"v": key}]}), ensure_ascii=False)
