"""The one redaction rule (``axl_action.redaction``): registry, derived forms, runs, edges."""

from __future__ import annotations

import base64
import io
import string
from urllib.parse import quote

from hypothesis import given, settings
from hypothesis import strategies as st

from axl_action.github.workflow_commands import WorkflowCommands
from axl_action.redaction import (
    MIN_RUN,
    REDACTED,
    SecretRegistry,
    base64_middle,
    redact,
    secret_env_values,
)

SECRET_CHARS = string.ascii_letters + string.digits + "-_./+=:@!"
values = st.text(SECRET_CHARS, min_size=12, max_size=80)
surround = st.binary(max_size=7)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(min_size=6, max_size=60), before=surround, after=surround)
def test_base64_middle_is_in_every_encoding_of_the_bytes_at_that_alignment(
    data: bytes, before: bytes, after: bytes
) -> None:
    encoded = base64.b64encode(before + data + after).decode()
    assert base64_middle(data, len(before) % 3) in encoded


@settings(max_examples=150, deadline=None)
@given(value=values, pad=st.text("xyz ", max_size=5), wrap=st.sampled_from(["{}", "Bearer {}", "user:{}"]))
def test_every_base64_form_at_every_alignment_is_redacted(value: str, pad: str, wrap: str) -> None:
    registry = SecretRegistry()
    registry.add(value)
    data = (pad + wrap.format(value) + "?!").encode()
    for encoded in (base64.b64encode(data).decode(), base64.urlsafe_b64encode(data).decode()):
        out = registry.redact(f"header: {encoded};")
        assert REDACTED in out
        for offset in range(3):
            middle = base64_middle(wrap.format(value).encode(), offset)
            assert middle not in out
            assert middle.translate(str.maketrans("+/", "-_")) not in out


@settings(max_examples=150, deadline=None)
@given(
    value=values,
    start=st.integers(0, 70),
    length=st.integers(MIN_RUN, 80),
    noise=st.text(" ,;\n", max_size=3),
)
def test_any_run_of_eight_or_more_characters_is_redacted_whole(
    value: str, start: int, length: int, noise: str
) -> None:
    registry = SecretRegistry()
    registry.add(value)
    run = value[start : start + length]
    if len(run) < MIN_RUN or any(len(set(value[i : i + MIN_RUN])) < 4 for i in range(len(value) - 7)):
        return
    out = registry.redact(f"echo{noise}{run}{noise}end")
    assert run not in out and REDACTED in out
    assert all(value[i : i + MIN_RUN] not in out for i in range(len(value) - MIN_RUN + 1))


def test_raw_url_encoded_and_short_runs() -> None:
    registry = SecretRegistry()
    value = "plain/token+with=odd&chars-0123"
    registry.add(value)
    assert registry.redact(f"a {value} b") == f"a {REDACTED} b"
    assert registry.redact(f"u={quote(value, safe='')}") == f"u={REDACTED}"
    assert registry.redact(f"u={quote(value, safe='').lower()}") == f"u={REDACTED}"
    assert registry.redact("7 chars: plain/t.") == "7 chars: plain/t."  # below MIN_RUN: ordinary text
    assert registry.redact("nothing here") == "nothing here"


def test_low_entropy_runs_do_not_hide_ordinary_numbers() -> None:
    registry = SecretRegistry()
    registry.add("00000000-0000-4000-8000-000000000001")
    assert registry.redact("id 00000000-0000-4000-8000-000000000001") == f"id {REDACTED}"
    other = "run 99999999-0000-4000-1111-000000000002 done"
    assert registry.redact(other) == other


def test_short_values_are_not_registered_and_lines_are() -> None:
    registry = SecretRegistry()
    registry.add("abc")
    registry.add("")
    registry.add(None)
    assert len(registry) == 0
    registry.add("first-line-secret\nsecond-line-secret")
    assert "first-line-secret" in registry and "second-line-secret" in registry
    assert registry.redact("second-line-secret") == REDACTED


def test_key_shapes_are_redacted_unregistered_and_deep_values() -> None:
    registry = SecretRegistry()
    gh = "gh" + "p_" + "a1B2" * 9
    text = f"tokens {gh} and sk-{'x' * 30} and Bearer abc.def and https://h/v1?key=SECRET&x=1"
    out = registry.redact(text)
    assert gh not in out and "sk-x" not in out and "abc.def" not in out
    assert out.endswith(f"?key={REDACTED}&x=1")
    registry.add("deep-secret-value")
    assert registry.redact_deep({"k deep-secret-value": ["deep-secret-value", 3, None]}) == {
        f"k {REDACTED}": [REDACTED, 3, None]
    }


def test_credential_named_environment_variables() -> None:
    env = {
        "OPENAI_API_KEY": "k1",
        "GITHUB_TOKEN": "t1",
        "MY_SECRET": "s1",
        "HOME": "/root",
        "INPUT_GITHUB-TOKEN": "handled by the action",
        "ACTIONS_RUNTIME_URL": "https://not-a-secret",
    }
    assert sorted(secret_env_values(env)) == ["k1", "s1", "t1"]


def test_add_mask_registers_and_annotations_summary_are_redacted() -> None:
    stream = io.StringIO()
    commands = WorkflowCommands(stream)
    masked = "masked-value-" + "q7Xz3kP9wR2m"
    commands.add_mask(masked)
    commands.error(f"failed with {masked[-10:]}", title=f"about {masked}")
    commands.append_summary(f"| {base64.b64encode(masked.encode()).decode()} |")
    lines = stream.getvalue().splitlines()
    assert lines[0] == f"::add-mask::{masked}"  # the mask itself must carry the value
    assert masked[-10:] not in lines[1] and masked not in lines[1] and REDACTED in lines[1]
    # Only the trailing base64 character that also depends on what follows the value is left.
    (summary,) = commands.summary_parts
    assert summary.startswith(f"| {REDACTED}") and len(summary) <= len(f"| {REDACTED}xx= |")
    assert masked not in redact(f"x {masked} y")


def test_hex_forms_and_their_half_runs_are_redacted_in_either_case() -> None:
    registry = SecretRegistry()
    value = "plain-" + "Zq7Kx2Lm9Wp4Rt6Yv8Nb3Hc5"
    registry.add(value)
    hexed = value.encode().hex()
    for text in (hexed, hexed.upper(), hexed[len(hexed) // 2 :], f"id={hexed[10:42].upper()};"):
        out = registry.redact(f"debug {text} end")
        assert REDACTED in out
        assert not any(
            form[i : i + 16] in out for form in (hexed, hexed.upper()) for i in range(0, len(form) - 15, 2)
        )
    # A commit hash and an 8-hex-digit fragment (4 bytes) are not taken for the secret.
    assert registry.redact(f"at {hexed[:8]} and b7e0d64f") == f"at {hexed[:8]} and b7e0d64f"


def test_a_unicode_escaped_key_is_redacted_and_other_escapes_kept() -> None:
    registry = SecretRegistry()
    value = "plain-" + "Zq7Kx2Lm9Wp4Rt6Yv8Nb3Hc5"
    registry.add(value)
    whole = "".join(f"\\u{ord(c):04x}" for c in value)
    some = value[:3] + "".join(f"\\u{ord(c):04X}" for c in value[3:9]) + value[9:]
    for text in (whole, some):
        assert registry.redact(f'"said \\u00e9 {text}"') == f'"said \\u00e9 {REDACTED}"'
    # Without a secret behind them, escapes stay as they are (JSON's meaning is kept).
    assert registry.redact('"\\u0041\\u0042 \\u0022"') == '"\\u0041\\u0042 \\u0022"'
