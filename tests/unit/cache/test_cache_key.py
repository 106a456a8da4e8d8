"""The cache key: canonical (spelling does not matter), strict (every parameter matters),
credential-free."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axl_action.cache import CacheKeyError, CacheRequest, Purpose, cache_key, request_record
from axl_action.cache.key import canonical_base_url, canonical_request
from axl_action.redaction import SECRETS
from tests.unit.cache.cache_helpers import chat_body, chat_request

JUDGE = Purpose.judge("helpful", "openai:gpt-4o", "Grade the answer to {input} from 0 to 1.")


def test_a_key_is_sha256_hex_and_stable() -> None:
    key = cache_key(chat_request())
    assert len(key) == 64 and set(key) <= set("0123456789abcdef")
    assert key == cache_key(chat_request())


def _system(prompt: str) -> dict[str, Any]:
    body = chat_body()
    body["messages"] = [{"role": "system", "content": prompt}, *body["messages"][1:]]
    return body


# Each case changes exactly one thing; every one must be a different key (a miss).
ONE_CHANGE: dict[str, dict[str, Any]] = {
    "temperature": {"body": chat_body(temperature=0.7)},
    "max_tokens": {"body": chat_body(max_tokens=201)},
    "tools": {"body": chat_body(tools=[])},
    "tool schema": {
        "body": chat_body(
            tools=[
                {
                    "type": "function",
                    "function": {
                        "name": "lookup_invoice",
                        "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}},
                    },
                }
            ]
        )
    },
    "system prompt": {"body": _system("You triage support tickets politely.")},
    "seed": {"body": chat_body(seed=8)},
    "stop": {"body": chat_body(stop=["\n"])},
    "response_format": {"body": chat_body(response_format={"type": "text"})},
    "an added parameter": {"body": chat_body(top_p=0.9)},
    "model": {"model": "gpt-4o"},
    "provider": {"provider": "openrouter"},
    "base URL": {"base_url": "http://127.0.0.1:8000/v1"},
    "endpoint": {"endpoint": "/responses"},
    "repeat index 1": {"repeat": 1},
    "repeat index 2": {"repeat": 2},
    "judge purpose": {"purpose": JUDGE},
    "judge prompt": {"purpose": Purpose.judge("helpful", "openai:gpt-4o", "Grade {input} strictly.")},
    "judge model": {"purpose": Purpose.judge("helpful", "anthropic:claude-sonnet-4-5", JUDGE.prompt or "")},
    "judge scorer": {"purpose": Purpose.judge("correct", "openai:gpt-4o", JUDGE.prompt or "")},
    "a behaviour header": {"headers": {"anthropic-beta": "tools-2024-04-04"}},
}


def test_changing_any_one_keyed_field_is_a_different_key() -> None:
    base = cache_key(chat_request())
    keys = {name: cache_key(chat_request(**change)) for name, change in ONE_CHANGE.items()}
    assert base not in keys.values()
    assert len(set(keys.values())) == len(keys), "two different changes produced the same key"


def test_judge_prompt_and_model_differ_from_the_base_judge() -> None:
    judged = cache_key(chat_request(purpose=JUDGE))
    assert judged != cache_key(chat_request(**ONE_CHANGE["judge prompt"]))
    assert judged != cache_key(chat_request(**ONE_CHANGE["judge model"]))


def test_each_repeat_index_is_its_own_key() -> None:
    keys = [cache_key(chat_request(repeat=i)) for i in range(3)]
    assert len(set(keys)) == 3


# -- canonical spelling ------------------------------------------------------------------------


def test_key_order_and_number_spelling_do_not_matter() -> None:
    body = chat_body()
    reordered = json.loads(json.dumps(dict(reversed(list(body.items())))))
    respelled = {**body, "temperature": 0.0, "max_tokens": 200.0, "seed": 7e0}
    same = {cache_key(chat_request(body=b)) for b in (body, reordered, respelled)}
    assert len(same) == 1
    assert cache_key(chat_request(body=chat_body(temperature=-0.0))) == cache_key(chat_request())
    assert cache_key(chat_request(body=chat_body(temperature=0.1))) == cache_key(
        chat_request(
            body=json.loads('{"temperature": 1e-1}') | {k: v for k, v in body.items() if k != "temperature"}
        )
    )


def test_booleans_are_not_numbers() -> None:
    assert cache_key(chat_request(body=chat_body(stream=True))) != cache_key(
        chat_request(body=chat_body(stream=1))
    )


def test_base_url_spelling_is_normalised() -> None:
    assert canonical_base_url("HTTPS://API.OpenAI.com:443/v1/") == "https://api.openai.com/v1"
    assert canonical_base_url("http://127.0.0.1:80/v1#frag") == "http://127.0.0.1/v1"
    assert canonical_base_url("https://x.test/v1?b=2&a=1") == "https://x.test/v1?a=1&b=2"
    urls = ["https://api.openai.com/v1", "HTTPS://api.OPENAI.com/v1/", "https://api.openai.com:443/v1"]
    assert len({cache_key(chat_request(base_url=u)) for u in urls}) == 1


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_a_json_round_trip_and_shuffled_keys_keep_the_key(value: Any) -> None:
    """Any body, serialised and parsed again (floats become their shortest spelling, objects are
    rebuilt in another order), keys the same."""

    def shuffle(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: shuffle(v[k]) for k in sorted(v, reverse=True)}
        if isinstance(v, list):
            return [shuffle(x) for x in v]
        return v

    body = {"input": value}
    again = json.loads(json.dumps(shuffle(body)))
    assert cache_key(chat_request(body=body)) == cache_key(chat_request(body=again))


# -- credentials ---------------------------------------------------------------------------------


def test_credentials_are_never_part_of_the_key_or_the_record() -> None:
    secret = "sk-test-ABCDEFGHIJKLMNOP0123456789"
    clean = chat_request()
    dirty = chat_request(
        base_url=f"https://user:{secret}@api.openai.com/v1?key={secret}",
        endpoint=f"/chat/completions?api_key={secret}",
        body={**chat_body(), "api_key": secret, "Api-Key": secret, "access_token": secret},
        headers={"Authorization": f"Bearer {secret}", "x-api-key": secret},
    )
    assert cache_key(dirty) == cache_key(clean)
    assert secret not in json.dumps(canonical_request(dirty))
    assert secret not in json.dumps(request_record(dirty))


def test_credential_names_deeper_in_the_body_are_kept() -> None:
    """A tool whose schema declares an api_key property is a different tool, not a credential."""
    with_prop = chat_body(
        tools=[{"type": "function", "function": {"name": "f", "parameters": {"properties": {"api_key": {}}}}}]
    )
    without = chat_body(
        tools=[{"type": "function", "function": {"name": "f", "parameters": {"properties": {}}}}]
    )
    assert cache_key(chat_request(body=with_prop)) != cache_key(chat_request(body=without))


def test_the_record_is_redacted_by_the_one_rule() -> None:
    secret = "hunter2-correct-horse-battery"
    SECRETS.add(secret)
    record = request_record(chat_request(body=_system(f"The admin password is {secret}.")))
    text = json.dumps(record)
    assert secret not in text and "[REDACTED]" in text


# -- invalid input -------------------------------------------------------------------------------


def test_a_number_json_cannot_hold_is_one_clear_error() -> None:
    with pytest.raises(CacheKeyError) as info:
        cache_key(chat_request(body=chat_body(temperature=float("nan"))))
    assert "body.temperature" in str(info.value) and "nan" in str(info.value)


def test_a_value_that_is_not_json_names_its_path() -> None:
    body = chat_body()
    body["messages"][1]["content"] = object()
    with pytest.raises(CacheKeyError, match=r"body\.messages\[1\]\.content is a object"):
        cache_key(chat_request(body=body))


def test_a_judge_purpose_must_name_its_judge() -> None:
    with pytest.raises(ValueError, match="names at least its model"):
        Purpose(kind="judge", scorer="helpful")
    with pytest.raises(ValueError, match="no scorer"):
        Purpose(kind="generation", model="openai:gpt-4o")


def test_repeat_must_not_be_negative() -> None:
    with pytest.raises(ValueError):
        CacheRequest(provider="openai", endpoint="/x", base_url="", model="m", body={}, repeat=-1)
