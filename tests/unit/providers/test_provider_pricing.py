"""Price table: bundled entries, override files, validation errors, cached-token billing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from axl_action.errors import InputFileError
from axl_action.providers.pricing import ModelPrice, PricingTable, price_usage
from axl_action.providers.types import TokenUsage


def test_bundled_table_has_the_big_three_and_an_as_of_date() -> None:
    table = PricingTable.load()
    assert table.as_of and len(table.as_of) == 10
    for uri in ("openai:gpt-4o-mini", "anthropic:claude-sonnet-4-5", "google:gemini-2.5-flash"):
        assert table.get(uri) is not None, uri


def test_price_is_per_million_tokens() -> None:
    table = PricingTable.load()
    cost = table.price("openai:gpt-4o-mini", TokenUsage(input_tokens=1_000_000, output_tokens=1_000_000))
    assert cost == pytest.approx(0.15 + 0.60)


def test_unknown_model_is_unpriced_not_free() -> None:
    assert PricingTable.load().price("openai:no-such-model", TokenUsage(input_tokens=10)) is None


def test_cached_tokens_billed_once_at_cached_rate() -> None:
    price = ModelPrice(input=2.0, output=8.0, cachedInput=0.5, cacheWrite=2.5)
    usage = TokenUsage(input_tokens=1000, output_tokens=100, cached_tokens=600, cache_write_tokens=100)
    expected = (300 * 2.0 + 600 * 0.5 + 100 * 2.5 + 100 * 8.0) / 1e6
    assert price_usage(price, usage) == pytest.approx(expected)
    no_cache_rate = ModelPrice(input=2.0, output=8.0)
    assert price_usage(no_cache_rate, TokenUsage(input_tokens=1000, cached_tokens=600)) == pytest.approx(
        1000 * 2.0 / 1e6
    )


def test_override_file_replaces_and_extends(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "asOf": "2030-01-01",
                "models": {
                    "openai:gpt-4o-mini": {"input": 1, "output": 1},
                    "openai:my-finetune": {"input": 3, "output": 4, "cachedInput": 1},
                },
            }
        )
    )
    table = PricingTable.load(path)
    assert table.as_of == "2030-01-01"
    assert table.price("openai:gpt-4o-mini", TokenUsage(input_tokens=1_000_000)) == pytest.approx(1)
    assert table.price("openai:my-finetune", TokenUsage(output_tokens=1_000_000)) == pytest.approx(4)
    assert table.get("anthropic:claude-sonnet-4-5") is not None
    assert str(path) in table.sources[-1]


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b'{"models": {"openai:x": {"input": -1, "output": 1}}}', "models.openai:x.input"),
        (b'{"models": {"openai:x": {"input": 1}}}', "models.openai:x.output: Field required"),
        (b'{"models": {"gpt-4o": {"input": 1, "output": 1}}}', "is not a model URI"),
        (b'{"models": {"openai:x": {"input": 1, "output": 1, "cached": 1}}}', "models.openai:x.cached"),
        (b'{"version": 2, "models": {}}', "version"),
        (b'{"models": {"openai:x": {"input": 1, "output": 1}}', "not valid JSON (line 1"),
        # Not JSON text at all: one error, not a traceback.
        (b"\x00\xff\xfe", "is not UTF-8 text (byte 1"),
        (b'\xff\xfe{"x": 1}', "is not UTF-8 text (byte 0"),
        (b"[" * 10_000 + b"]" * 10_000, "is nested too deeply to read"),
    ],
)
def test_bad_override_file_says_which_key_and_what_is_expected(
    tmp_path: Path, content: bytes, fragment: str
) -> None:
    path = tmp_path / "p.json"
    path.write_bytes(content)
    with pytest.raises(InputFileError) as info:
        PricingTable.load(path)
    assert fragment in str(info.value)
    assert str(path) in str(info.value)


def test_missing_override_file(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="Cannot read pricing file"):
        PricingTable.load(tmp_path / "absent.json")


def test_audio_usage_is_unpriced() -> None:
    assert PricingTable.load().price("openai:gpt-4o", TokenUsage(input_tokens=1, audio_seconds=3)) is None


def test_table_remembers_unpriced_models_and_unused_overrides(tmp_path: Path) -> None:

    override = tmp_path / "prices.json"
    override.write_text(
        '{"version": 1, "models": {"openai:smollm2-135M": {"input": 0, "output": 0},'
        ' "openai:gpt-4o-mini-typo": {"input": 1, "output": 1}, "acme:unused": {"input": 1, "output": 1}}}'
    )
    table = PricingTable.load(override)
    assert table.unmatched_overrides() == {}  # nothing called yet: nothing to say
    usage = TokenUsage(input_tokens=10, output_tokens=5)
    assert table.price("openai:smollm2-135m", usage) is None
    assert table.price("openai:smollm2-135m", usage) is None
    assert table.price("openai:gpt-4o-mini", usage) is not None
    assert table.unpriced_calls() == {"openai:smollm2-135m": 2}
    assert table.unmatched_overrides() == {
        "openai:smollm2-135M": "openai:smollm2-135m",  # differs only in case
        "openai:gpt-4o-mini-typo": "openai:gpt-4o-mini",  # nearest by difflib
        "acme:unused": None,
    }
