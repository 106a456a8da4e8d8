"""Model price table: the bundled list prices plus an optional user override file.

A missing price is never a zero price: ``PricingTable.price`` returns ``None`` for a model it
does not know, and the gateway then records the operation as ``unpriced_model`` (accounting
becomes ``incomplete``) instead of pretending it was free.
"""

from __future__ import annotations

import difflib
import functools
import json
import threading
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from axl_action.errors import InputFileError
from axl_action.providers.types import TokenUsage

PER_TOKENS = 1_000_000
"""Prices are USD per this many tokens."""


class ModelPrice(BaseModel):
    """List prices of one model, in USD per million tokens."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    input: float = Field(ge=0, allow_inf_nan=False)
    """Uncached prompt tokens."""
    output: float = Field(ge=0, allow_inf_nan=False)
    """Completion tokens (reasoning tokens included)."""
    cached_input: float | None = Field(default=None, alias="cachedInput", ge=0, allow_inf_nan=False)
    """Prompt tokens read from the provider's cache; the ``input`` rate when absent."""
    cache_write: float | None = Field(default=None, alias="cacheWrite", ge=0, allow_inf_nan=False)
    """Prompt tokens written to the provider's cache; the ``input`` rate when absent."""


class PricingFile(BaseModel):
    """The JSON file format (bundled ``pricing.json`` and user overrides alike)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    version: Literal[1] = 1
    """Format version; only 1 exists."""
    as_of: str | None = Field(default=None, alias="asOf")
    """Date (YYYY-MM-DD) the prices were copied from the providers' price pages."""
    currency: Literal["USD"] = "USD"
    """Always USD."""
    unit: Literal["per 1M tokens"] = "per 1M tokens"
    """Always per million tokens."""
    note: str | None = None
    """Free text for humans."""
    models: dict[str, ModelPrice]
    """Prices keyed by model URI (``provider:model``, exactly as used in eval files)."""

    @field_validator("models")
    @classmethod
    def _uri_keys(cls, models: dict[str, ModelPrice]) -> dict[str, ModelPrice]:
        for key in models:
            provider, sep, model = key.partition(":")
            if not sep or not provider or not model:
                raise ValueError(f'"{key}" is not a model URI like openai:gpt-4o-mini')
        return models


def price_usage(price: ModelPrice, usage: TokenUsage) -> float:
    """USD for ``usage`` at ``price``. Cached reads and cache writes are part of
    ``input_tokens`` and are billed at their own rates, never twice."""
    cached = max(0.0, usage.cached_tokens)
    written = max(0.0, usage.cache_write_tokens)
    uncached = max(0.0, usage.input_tokens - cached - written)
    cached_rate = price.input if price.cached_input is None else price.cached_input
    write_rate = price.input if price.cache_write is None else price.cache_write
    total = (
        uncached * price.input
        + cached * cached_rate
        + written * write_rate
        + max(0.0, usage.output_tokens) * price.output
    )
    return total / PER_TOKENS


class PricingTable:
    """Prices by model URI, from the bundled table overlaid with an optional user file.

    It remembers which models it was asked about, so that the CLI can name the models that
    had no price and the override entries that matched no call (a typo in a key is otherwise
    silent: the call is simply unpriced).
    """

    def __init__(
        self,
        models: dict[str, ModelPrice],
        *,
        as_of: str | None,
        sources: list[str],
        override_keys: Iterable[str] = (),
        override_path: Path | None = None,
    ) -> None:
        self._models = dict(models)
        self.as_of = as_of
        """``asOf`` of the bundled table (the override's when it sets one)."""
        self.sources = sources
        """Where the prices came from, in overlay order (for run metadata / debugging)."""
        self.override_keys = tuple(override_keys)
        """Model URIs the ``--pricing`` file names."""
        self.override_path = override_path
        """The ``--pricing`` file, if any."""
        self._priced: set[str] = set()
        self._missed: dict[str, int] = {}
        self._unusable: dict[str, dict[str, int]] = {}
        """Model URI -> calls that could not be priced at all, by why (``no_usage``, ``failed``)."""
        self._lock = threading.Lock()

    @classmethod
    def load(cls, override_path: Path | None = None) -> PricingTable:
        """The bundled table, with ``override_path`` (same format) replacing or adding models."""
        bundled = _validate(
            json.loads(resources.files("axl_action.providers").joinpath("pricing.json").read_text("utf-8")),
            "the bundled pricing.json",
        )
        models = dict(bundled.models)
        as_of = bundled.as_of
        sources = [f"bundled pricing.json (as of {bundled.as_of})"]
        if override_path is not None:
            override = _validate(_read_json(override_path), f"pricing file {override_path}")
            models.update(override.models)
            as_of = override.as_of or as_of
            sources.append(str(override_path))
            return cls(
                models,
                as_of=as_of,
                sources=sources,
                override_keys=override.models,
                override_path=override_path,
            )
        return cls(models, as_of=as_of, sources=sources)

    def get(self, model_uri: str) -> ModelPrice | None:
        """The price entry for ``model_uri``, or ``None``."""
        return self._models.get(model_uri)

    def models(self) -> list[str]:
        """Priced model URIs, sorted."""
        return sorted(self._models)

    def price(self, model_uri: str, usage: TokenUsage) -> float | None:
        """USD for ``usage`` on ``model_uri``; ``None`` when the model is unpriced (or the
        usage includes audio, which the table has no rate for)."""
        estimate = self.quote(model_uri, usage)
        if estimate is None:
            with self._lock:
                self._missed[model_uri] = self._missed.get(model_uri, 0) + 1
            return None
        if model_uri not in self._priced:  # once per model: the hot path takes no lock
            with self._lock:
                self._priced.add(model_uri)
        return estimate

    def quote(self, model_uri: str, usage: TokenUsage) -> float | None:
        """What :meth:`price` returns, without counting the call: for a reply that the gateway
        already priced (and counted), such as an LLM judge's, so that each call counts once."""
        entry = self._models.get(model_uri)
        if entry is None or usage.audio_seconds > 0:
            return None
        return price_usage(entry, usage)

    def note_call(self, model_uri: str, outcome: str) -> None:
        """Record a call that never reached :meth:`price`: ``provider_cost`` (the provider
        reported its cost), ``no_usage`` (a reply without token usage) or ``failed`` (no
        reply). So a ``--pricing`` key for a model that was called is never said to match no
        call. Off the hot path: a successful reply with usage goes through :meth:`price`."""
        with self._lock:
            if outcome == "provider_cost":
                self._priced.add(model_uri)
                return
            why = self._unusable.setdefault(model_uri, {})
            why[outcome] = why.get(outcome, 0) + 1

    def unpriced_calls(self) -> dict[str, int]:
        """Model URI -> calls with usage that could not be priced, since this table was made."""
        with self._lock:
            return dict(self._missed)

    def unmatched_overrides(self) -> dict[str, str | None]:
        """``--pricing`` keys no call used -> the nearest model URI that was called (or None).

        Only meaningful once something was called; empty before the first call.
        """
        with self._lock:
            called = [*self._missed, *self._priced, *self._unusable]
        if not called:
            return {}
        out: dict[str, str | None] = {}
        for key in self.override_keys:
            if key in called:
                continue
            exact_case = [m for m in called if m.lower() == key.lower()]
            close = exact_case or difflib.get_close_matches(key, called, n=1, cutoff=0.6)
            out[key] = close[0] if close else None
        return out

    def override_warnings(self) -> list[str]:
        """The ``--pricing`` warnings after a run: a key that matched no call (with the nearest
        model that was called), and a key whose model was called but never priced (every call
        reported no token usage or failed), which is not a typo and must not read as one."""
        where = f"pricing file {self.override_path}"
        lines = []
        for key, nearest in self.unmatched_overrides().items():
            hint = f'; did you mean "{nearest}"? Keys must match the model URI exactly' if nearest else ""
            lines.append(f'[axl-eval] WARNING: {where}: "{key}" matched no call{hint}.')
        with self._lock:
            unusable = {
                k: dict(v)
                for k, v in self._unusable.items()
                if k not in self._priced and k not in self._missed
            }
        for key in self.override_keys:
            why = unusable.get(key)
            if not why:
                continue
            calls = sum(why.values())
            reasons = []
            if why.get("no_usage"):
                reasons.append(f"{why['no_usage']} reported no token usage")
            if why.get("failed"):
                reasons.append(f"{why['failed']} failed")
            lines.append(
                f'[axl-eval] WARNING: {where}: "{key}" matched {calls} call{"" if calls == 1 else "s"}, '
                f"but none could be priced: {' and '.join(reasons)}. Their cost is unknown "
                "(usage_missing); the price applies once the server reports usage."
            )
        return lines


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text("utf-8")
    except OSError as exc:
        raise InputFileError(
            f"Cannot read pricing file {path}: {exc.strerror or exc}", hint="check the --pricing path"
        ) from None
    except UnicodeDecodeError as exc:
        raise InputFileError(
            f"Pricing file {path} is not UTF-8 text (byte {exc.start}: {exc.reason})",
            hint='save it as UTF-8 JSON: {"version": 1, "models": {...}}',
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputFileError(
            f"Pricing file {path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
            hint="fix the JSON syntax",
        ) from None
    except RecursionError:
        raise InputFileError(
            f"Pricing file {path} is nested too deeply to read",
            hint='a pricing file is {"version": 1, "models": {"<provider:model>": {"input": ..., "output": ...}}}',
        ) from None


def _validate(data: Any, where: str) -> PricingFile:
    try:
        return PricingFile.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}"
            for err in exc.errors()[:5]
        )
        raise InputFileError(
            f"{where[0].upper()}{where[1:]} is invalid: {problems}",
            hint='expected {"version": 1, "models": {"openai:gpt-4o-mini": {"input": 0.15, "output": 0.6, '
            '"cachedInput": 0.075}}} with USD per million tokens',
        ) from None


@functools.cache
def default_pricing() -> PricingTable:
    """The bundled price table, one per process: runtime.chat, the judges and the app's own SDK
    calls note their calls in the same table, so its unpriced note counts them all."""
    return PricingTable.load()
