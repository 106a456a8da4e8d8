"""Measure one model call's HTTP exchange: recognition, admission, settlement, timing, capture.

This module is the one place that turns an HTTP request to a model API into an accounting
operation (``runtime.scope``), whoever sent it: the application's own SDK clients through
the hooks of ``providers/intercept.py`` today, the project's own providers later. Its two
seams are :meth:`Exchange.dispatch` (a request is about to leave: the admission check) and
:meth:`Exchange.settle` (its reply is complete: usage, price, timing, capture). The response
cache sits exactly there (``--cache MODE``, docs/cache.md): :meth:`Exchange.cached` answers a
call from a recorded reply before admission (settled *replayed*: billed $0, certified at what it
cost when it was made), and a live reply the one rule allows is stored once it settled.

Recognition is by path and request/reply shape, never by host, so ``base_url`` overrides and
compatible servers (vLLM, llama.cpp, LiteLLM, Ollama) are measured too:

* OpenAI ``…/chat/completions``, ``…/responses``, ``…/embeddings``;
* Anthropic ``…/messages``;
* Gemini ``…/models/<model>:generateContent`` and ``:streamGenerateContent``.

One operation per logical call, one attempt per HTTP request: an SDK's retry (the
``x-stainless-retry-count`` header says so, or the same request again right after a failed
attempt in the same context) joins the operation its first attempt opened. A 2xx with usage is
priced; a 4xx/5xx attempt is free (a call whose every attempt failed settles at a known 0); a
2xx whose reply is cut off, not of the expected shape, or reports unusable counts settles
``usage_missing`` with a warning naming the item, never a guessed or zero price.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

from axl_action.providers import anthropic as anthropic_wire
from axl_action.providers import google as google_wire
from axl_action.providers import openai as openai_wire
from axl_action.providers.base import usable_cost
from axl_action.providers.capture import MAX_RECORD_BYTES, build_record, sink_setting
from axl_action.providers.pricing import PricingTable, default_pricing
from axl_action.providers.redact import redact_headers, redact_secrets
from axl_action.providers.types import CallTiming, TokenUsage, WireExchange
from axl_action.runtime.scope import (
    AdmissionDeniedError,
    Operation,
    Scope,
    current_scope,
    open_operation,
)
from axl_action.schema.numbers import finite_number, usable_number

if TYPE_CHECKING:
    from axl_action.cache import CacheRequest, CertifiedCost, Purpose
    from axl_action.cache.calls import ResponseCache

DENIED_STATUS = 402
"""HTTP status of the reply a refused request gets instead of being sent ("Payment Required")."""
DENIED_HEADER = "x-axl-eval-admission"
"""Header (value ``denied``) that marks a reply made up by the budget, never by a server."""

_GEMINI_PATH = re.compile(r"/models/([^/:]+):(generateContent|streamGenerateContent)$")
_MAX_BODY = 32 * 1024 * 1024  # a reply larger than this is not parsed for usage


@dataclass(frozen=True, slots=True)
class Call:
    """A recognised model call: which API, which model, streamed or not."""

    api: str
    """``openai.chat``, ``openai.responses``, ``openai.embeddings``, ``anthropic.messages``,
    ``gemini.generate``."""
    provider: str
    """The provider half of the model URI: ``openai``, ``anthropic`` or ``google``."""
    model: str
    """The model the request names (``""`` when it names none)."""
    stream: bool
    """The request asks for server-sent events."""

    @property
    def kind(self) -> str:
        """The operation kind (``scope.KINDS``)."""
        if self.api == "openai.embeddings":
            return "embedding"
        return "stream" if self.stream else "chat"


def recognise_path(method: str, path: str) -> str | None:
    """The API a request path belongs to (cheap: no body is read), or ``None``."""
    if method != "POST":
        return None
    if path.endswith("/chat/completions"):
        return "openai.chat"
    if path.endswith("/responses"):
        return "openai.responses"
    if path.endswith("/embeddings"):
        return "openai.embeddings"
    if path.endswith("/messages"):
        return "anthropic.messages"
    if ":generateContent" in path or ":streamGenerateContent" in path:
        return "gemini.generate"
    return None


_REQUIRED_FIELDS: dict[str, frozenset[str]] = {
    "openai.chat": frozenset({"messages"}),
    "openai.responses": frozenset({"input"}),
    "openai.embeddings": frozenset({"input"}),
    "anthropic.messages": frozenset({"messages", "max_tokens"}),
}
"""The body fields each API needs besides ``model``: a body without them passes unmeasured."""
_NO_FIELDS: frozenset[str] = frozenset()


def recognise(api: str, path: str, body: bytes) -> Call | None:
    """The call a request of ``api`` (from :func:`recognise_path`) makes, or ``None`` when its
    body is not the JSON object that API takes (then it passes unmeasured)."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    if api == "gemini.generate":
        return _gemini_call(api, path)
    model = data.get("model")
    # A keys-view superset test: one C-level check, not a generator per call.
    if not isinstance(model, str) or not data.keys() >= _REQUIRED_FIELDS.get(api, _NO_FIELDS):
        return None
    if api == "openai.embeddings":
        return Call(api, "openai", model, False)
    provider = "anthropic" if api == "anthropic.messages" else "openai"
    return Call(api, provider, model, data.get("stream") is True)


def _gemini_call(api: str, path: str) -> Call | None:
    """Gemini names the model and whether it streams in the path, not the body."""
    match = _GEMINI_PATH.search(path)
    if match is None:
        return None
    return Call(api, "google", match.group(1), match.group(2) == "streamGenerateContent")


def wants_usage_injection(call: Call, body: bytes) -> bytes | None:
    """The request body with ``stream_options.include_usage`` added for a streamed OpenAI chat
    call that did not ask for usage (OpenAI streams usage only then), else ``None``."""
    if call.api != "openai.chat" or not call.stream:
        return None
    data = orjson.loads(body)
    options = data.get("stream_options")
    if isinstance(options, dict) and "include_usage" in options:
        return None  # the app decided (true or false): never overridden
    data["stream_options"] = {**(options if isinstance(options, dict) else {}), "include_usage": True}
    return orjson.dumps(data)


class BadReply(Exception):
    """A 2xx reply whose usage cannot be trusted (wrong shape, unusable counts)."""


def _check_counts(raw: Any, where: str) -> None:
    """Every token count in a usage block is a finite number >= 0 (nested details included).

    Replies here are parsed by orjson, so JSON objects are ``dict``: the checks below say
    ``dict``, not ``Mapping`` (an ABC check is ~10x slower, and this runs on every call)."""
    if not isinstance(raw, dict):
        return
    for key, value in raw.items():
        kind = type(value)
        if kind is int and value >= 0:
            # The common case, decided without a call: orjson's integers fit in 64 bits, so a
            # non-negative one is a usable count (``usable_number``) whatever its key.
            continue
        if isinstance(value, dict):
            _check_counts(value, f"{where}.{key}")
        elif (
            value is not None
            and ("token" in key.lower() or key.endswith("Count"))
            and not usable_number(value)  # one test per count; which fault only on a bad one
        ):
            if finite_number(value):
                raise BadReply(f"{where}.{key} is negative ({value!r})")
            raise BadReply(f"{where}.{key} is not a number ({value!r})")


def _responses_usage(raw: Any) -> TokenUsage | None:
    if not isinstance(raw, dict) or ("input_tokens" not in raw and "output_tokens" not in raw):
        return None
    details = raw.get("input_tokens_details")
    out_details = raw.get("output_tokens_details")
    return TokenUsage(
        input_tokens=raw.get("input_tokens") or 0,
        output_tokens=raw.get("output_tokens") or 0,
        cached_tokens=(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0,
        reasoning_tokens=(out_details.get("reasoning_tokens") or 0) if isinstance(out_details, dict) else 0,
    )


def parse_usage(api: str, raw: Any) -> TokenUsage | None:
    """Normalised usage from an API's usage block (``None`` when it reports none); raises
    :class:`BadReply` for counts that are negative or not numbers."""
    _check_counts(raw, "usage")
    if api in ("openai.chat", "openai.embeddings"):
        return openai_wire.parse_usage(raw)
    if api == "openai.responses":
        return _responses_usage(raw)
    if api == "anthropic.messages":
        return anthropic_wire.parse_usage(raw)
    return google_wire.parse_usage(raw)


class _Reply:
    """What a reply reported so far: its usage block, model, provider cost, first content."""

    __slots__ = ("api", "ended", "events", "model", "usage_raw")

    def __init__(self, api: str) -> None:
        self.api = api
        self.usage_raw: Any = None
        self.model = ""
        self.events: list[Any] = []
        self.ended = False
        """A stream's terminal event arrived (Anthropic ``message_stop``, Responses
        ``response.completed``; OpenAI chat's ``[DONE]`` is the decoder's): the reply is whole
        even when the app closes the stream without reading past it."""

    def body(self, data: Any) -> None:
        """A whole (non-streamed) JSON reply."""
        if not isinstance(data, dict):
            raise BadReply("the reply is not a JSON object")
        api = self.api
        is_reply, why_not = _REPLY_SHAPES.get(api, _CHAT_SHAPE)
        if not is_reply(data):
            raise BadReply(why_not)
        self.usage_raw = data.get("usageMetadata") if api == "gemini.generate" else data.get("usage")
        model = data.get("modelVersion") if api == "gemini.generate" else data.get("model")
        self.model = model if isinstance(model, str) else ""

    def event(self, data: Any) -> bool:
        """One streamed event's JSON; True when it carries content (the first token)."""
        if not isinstance(data, dict):
            return False
        self.events.append(data)
        return _EVENT_READERS.get(self.api, _Reply._gemini_event)(self, data)

    def _chat_event(self, data: dict[str, Any]) -> bool:
        if isinstance(data.get("usage"), dict):
            self.usage_raw = data["usage"]
        self._model(data.get("model"))
        for choice in data.get("choices") or ():
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if isinstance(delta, dict) and (delta.get("content") or delta.get("tool_calls")):
                return True
        return False

    def _responses_event(self, data: dict[str, Any]) -> bool:
        kind = data.get("type")
        response = data.get("response")
        if kind in ("response.completed", "response.incomplete", "response.failed") and isinstance(
            response, dict
        ):
            self.usage_raw = response.get("usage")
            self._model(response.get("model"))
            self.ended = kind == "response.completed"
        return kind in ("response.output_text.delta", "response.function_call_arguments.delta")

    def _anthropic_event(self, data: dict[str, Any]) -> bool:
        kind = data.get("type")
        if kind == "message_start":
            message = data.get("message")
            if isinstance(message, dict):
                self._model(message.get("model"))
                usage = message.get("usage")
                self.usage_raw = dict(usage) if isinstance(usage, dict) else None
        elif kind == "message_delta":
            usage = data.get("usage")
            if isinstance(usage, dict):
                # Cumulative, and it may revise input_tokens: the latest value of each
                # count replaces the earlier one, never adds to it.
                self.usage_raw = {**(self.usage_raw or {}), **usage}
        elif kind == "message_stop":
            self.ended = True
        return kind == "content_block_delta"

    def _gemini_event(self, data: dict[str, Any]) -> bool:
        # Every chunk is a GenerateContentResponse; the last usageMetadata is final.
        if isinstance(data.get("usageMetadata"), dict):
            self.usage_raw = data["usageMetadata"]
        self._model(data.get("modelVersion"))
        for candidate in data.get("candidates") or ():
            content = candidate.get("content") if isinstance(candidate, dict) else None
            parts = content.get("parts") if isinstance(content, dict) else None
            if isinstance(parts, list) and any(isinstance(p, dict) and p for p in parts):
                return True
        return False

    def _model(self, value: Any) -> None:
        if isinstance(value, str) and value:
            self.model = value


_ReplyShape = tuple[Callable[[dict[str, Any]], bool], str]
_CHAT_SHAPE: _ReplyShape = (lambda d: isinstance(d.get("choices"), list), "the reply has no choices list")
_REPLY_SHAPES: dict[str, _ReplyShape] = {
    "anthropic.messages": (
        lambda d: d.get("type") == "message",
        'the reply is not a message (type is not "message")',
    ),
    "gemini.generate": (
        lambda d: "candidates" in d or "usageMetadata" in d,
        "the reply has neither candidates nor usageMetadata",
    ),
    "openai.embeddings": (lambda d: isinstance(d.get("data"), list), "the reply has no data list"),
    "openai.responses": (
        lambda d: d.get("object") == "response",
        'the reply is not a response (object is not "response")',
    ),
}
"""Per API, what makes a whole JSON reply one of its replies, and what to say when it is not
(any other API: an OpenAI chat completion's)."""

_EVENT_READERS: dict[str, Callable[[_Reply, dict[str, Any]], bool]] = {
    "openai.chat": _Reply._chat_event,
    "openai.responses": _Reply._responses_event,
    "anthropic.messages": _Reply._anthropic_event,
}
"""Per API, how one streamed event is read (any other API: Gemini's chunks)."""


class Settings:
    """What one installed interception measures with."""

    __slots__ = ("cache", "include_usage", "pricing", "redact_content", "unattributed")

    def __init__(
        self,
        pricing: PricingTable | None,
        include_usage: bool,
        redact_content: bool,
        unattributed: Scope[Any] | None,
        cache: ResponseCache | None = None,
    ) -> None:
        self.cache = cache
        """The run's response cache (``Runtime(cache=...)``), or ``None``: every call is live."""
        self.pricing = pricing
        self.include_usage = include_usage
        """Add ``stream_options.include_usage`` to streamed OpenAI chat calls lacking it."""
        self.redact_content = redact_content
        self.unattributed = unattributed
        """The scope calls no item owns are recorded in (``None``: the detached default)."""

    def table(self) -> PricingTable:
        if self.pricing is None:
            self.pricing = default_pricing()
        return self.pricing


@dataclass(slots=True)
class _Logical:
    """One logical call across its attempts (kept in the calling context for retries)."""

    op: Operation
    url: object
    """The first attempt's URL as the client holds it (compared as text, see :meth:`retried_by`)."""
    headers: Mapping[str, str]
    body: bytes
    """The first attempt's request: a later one is its retry when it is the same request
    (:meth:`retried_by`). Kept whole, not as a key, so that its headers are read only when an
    attempt failed (most calls never retry, and a client's header lookup is not free)."""
    attempts: int = 0
    rate_limited: int = 0
    retry_ms: float = 0.0
    wire_ms: float = 0.0
    failed_at: float | None = None
    """perf_counter when the last attempt failed (``None``: none failed / it succeeded)."""
    last_status: int = 0

    def retried_by(self, url: object, headers: Mapping[str, str], body: bytes) -> bool:
        """``(url, headers, body)`` is a retry of this call: the same request (URL, body and
        idempotency key), not marked as a first attempt (``x-stainless-retry-count: 0``)."""
        return (
            self.body == body
            and str(self.url) == str(url)
            and headers.get("x-stainless-retry-count") != "0"
            and self.headers.get("idempotency-key", "") == headers.get("idempotency-key", "")
        )


_last: ContextVar[_Logical | None] = ContextVar("axl_measured_call", default=None)


def _item_label(op: Operation) -> str:
    home = op.home
    index = home.correlation.get("caseIndex") if home is not None else None
    return f"item {index}" if index is not None else "a call outside any item"


def _warn(message: str) -> None:
    from axl_action.evals.log import warn  # the runner's advisory channel (stderr)

    warn(message)


class Exchange:
    """One HTTP attempt of a measured call, from dispatch to settlement."""

    __slots__ = (
        "_first",
        "_key",
        "_reply",
        "_settles",
        "_t0",
        "_ttfb",
        "_url",
        "call",
        "injected",
        "keeps_reply",
        "logical",
        "request_body",
        "request_headers",
        "response_headers",
        "settings",
        "status",
    )

    def __init__(
        self,
        call: Call,
        settings: Settings,
        url: object,
        request_headers: Mapping[str, str],
        request_body: bytes,
        injected: bool,
    ) -> None:
        self.call = call
        self.settings = settings
        self._url = url
        self.request_headers = request_headers
        self.request_body = request_body
        self.injected = injected
        """``stream_options.include_usage`` was added by us (recorded in the capture)."""
        self.logical: _Logical | None = None
        self.status = 0
        self.response_headers: dict[str, str] = {}
        """The reply's headers a cache entry keeps (content type, request id)."""
        cache = settings.cache
        self.keeps_reply = cache is not None and cache.writes
        """True when a live reply may be stored: its bytes are kept as they are read (decided
        once: the hooks and the settlement each ask)."""
        self._key: tuple[str, CacheRequest] | None = None
        self._reply = _Reply(call.api)
        self._t0 = 0.0
        self._ttfb = 0.0
        self._first: float | None = None
        # Settling runs once, whichever thread gets there first (a stream's reader or its
        # close): ``next`` on a count is one C call, atomic under the GIL, so no lock is made
        # and taken on every call.
        self._settles = itertools.count()

    @property
    def url(self) -> str:
        """The request URL. Given as the client's own URL object (or text) and made text when
        first read: most calls never read it (a warning, the capture and the cache key do)."""
        url = self._url
        if not isinstance(url, str):
            url = self._url = str(url)
        return url

    # ---- seam 0: the response cache

    def cache_request(self) -> tuple[str, CacheRequest] | None:
        """The cache key of this call, and the request as keyed: the whole JSON body at its
        endpoint, the repeat of ``--runs`` and the purpose (credentials never part of it).
        ``None`` for a body that cannot be keyed (a number that is not finite): such a call is
        live and not stored, as ``runtime.chat``'s would fail to key."""
        if self._key is None:
            from axl_action.cache import CacheError, CacheRequest

            cache = self.settings.cache
            assert cache is not None
            parts = urlsplit(self.url)
            call = self.call
            try:
                request = CacheRequest(
                    provider=call.provider,
                    endpoint=parts.path + (f"?{parts.query}" if parts.query else ""),
                    base_url=f"{parts.scheme}://{parts.netloc}",
                    model=call.model or "-",
                    body=orjson.loads(self.request_body),
                    purpose=call_purpose(f"{call.provider}:{call.model}"),
                    headers={k.lower(): v for k, v in self.request_headers.items()},
                )
                self._key = cache.keyed(request)
            except CacheError:
                return None
        return self._key

    def cached(self) -> tuple[int, Mapping[str, str], bytes] | None:
        """The reply (status, headers, body) when the cache answers this call, else ``None``
        (send it). A hit opens the call's operation and settles it replayed; no timing is
        recorded (latency statistics leave hits out). Under ``replay`` a miss is answered
        with an error reply naming the nearest recorded request, never sent, never retried."""
        cache = self.settings.cache
        if cache is None or not cache.reads:
            return None
        keyed_call = self.cache_request()
        if keyed_call is None:
            return None
        key, keyed = keyed_call
        entry = cache.store.get(key)
        call = self.call
        if entry is None:
            if cache.mode != "replay":
                return None
            miss = cache.replay_miss(keyed, f"a {call.provider}:{call.model} {call.api} call")
            body = {"error": {"message": miss.message, "type": "cache_replay_miss", "code": miss.code}}
            return REPLAY_MISS_STATUS, REPLAY_MISS_HEADERS, orjson.dumps(body)
        reply = entry.reply
        home = current_scope() or self.settings.unattributed
        try:
            op = open_operation(call.kind, model=f"{call.provider}:{reply.model or call.model}", home=home)
        except AdmissionDeniedError:
            return DENIED_STATUS, DENIED_HEADERS, orjson.dumps(denied_body(call))
        op.replay(reply.cost.usd if reply.cost is not None else None)
        headers = {**reply.headers, "content-type": reply.headers.get("content-type", "application/json")}
        return reply.status, headers, entry.body_bytes()

    def _store(
        self, parsed: Any, raw: bytes | None, usage: TokenUsage, model: str, cost: CertifiedCost | None
    ) -> None:
        """Keep a settled live reply when the mode writes and the one rule allows it."""
        from axl_action.cache import NotCacheable, request_record, settle_reply

        cache = self.settings.cache
        if cache is None or not cache.writes:
            return
        try:
            reply = settle_reply(
                status=self.status,
                body=parsed if raw is None else raw,
                usage=usage.to_wire(),
                model=model,
                complete=True,
                headers=self.response_headers,
                finish_reason=_finish_reason(self.call.api, parsed, self._reply.events),
                cost=cost,
            )
        except NotCacheable:
            return
        keyed_call = self.cache_request()
        if keyed_call is not None:
            cache.store.put(keyed_call[0], request_record(keyed_call[1]), reply)

    # ---- seam 1: a request is about to be dispatched

    def dispatch(self) -> bool:
        """Open (or, for a retry, rejoin) the call's operation and check admission.

        False when the budget refused: the request must not be sent (the operation was
        retracted, or a retry settled ``usage_missing``), and :func:`denied_body` is the reply.
        """
        call = self.call
        previous = _last.get()
        logical: _Logical | None = None
        if (
            previous is not None
            and previous.failed_at is not None
            and previous.op.state == "open"
            and previous.retried_by(self._url, self.request_headers, self.request_body)
        ):
            logical = previous
            logical.retry_ms += (time.perf_counter() - previous.failed_at) * 1000.0
        else:
            if previous is not None and previous.failed_at is not None:
                _close_failed(previous)
            home = current_scope()
            if home is None:
                home = self.settings.unattributed
            try:
                # The first attempt leaves now: opening is its admission check.
                op = open_operation(
                    call.kind, model=f"{call.provider}:{call.model}", home=home, dispatched=True
                )
            except AdmissionDeniedError:
                return False
            logical = _Logical(op, self._url, self.request_headers, self.request_body)
            _last.set(logical)
        self.logical = logical
        if logical.attempts:  # a retry: admitted again before it is sent
            try:
                logical.op.before_dispatch()
            except AdmissionDeniedError:
                return False
        logical.attempts += 1
        logical.failed_at = None
        self._t0 = time.perf_counter()
        return True

    def headers_received(self, status: int, headers: Mapping[str, str] | None = None) -> None:
        """The reply's status line and headers arrived (``headers``: those a cache entry keeps)."""
        self.status = status
        if headers:
            self.response_headers = {k: v for k, v in headers.items() if v}
        self._ttfb = (time.perf_counter() - self._t0) * 1000.0

    def failed(self, status: int) -> None:
        """The attempt failed: a 4xx/5xx reply (free) or no reply (``status`` 0)."""
        logical = self.logical
        if logical is None:
            return
        now = time.perf_counter()
        logical.wire_ms += (now - self._t0) * 1000.0
        logical.failed_at = now
        logical.last_status = status
        if status == 429:
            logical.rate_limited += 1
        # Settled when no retry follows: by the next call in this context, or when its scope
        # ends (Operation.on_abandon): a 4xx/5xx is free, a lost connection unknown.
        logical.op.on_abandon = "free" if status >= 400 else "usage_missing"

    # ---- the reply, as it is read

    @property
    def stream_ended(self) -> bool:
        """The streamed reply's terminal event arrived (see ``_Reply.ended``)."""
        return self._reply.ended

    def feed_event(self, data: Any) -> None:
        """One streamed event (already parsed)."""
        if self._reply.event(data) and self._first is None:
            self._first = time.perf_counter()

    # ---- seam 2: the reply is settled

    def settle(
        self,
        body: bytes | None,
        *,
        events: bool,
        complete: bool,
        broken: str | None = None,
        raw: bytes | None = None,
    ) -> None:
        """Settle the attempt's operation from its (2xx) reply; runs once.

        ``body``: the whole JSON reply (non-streamed); ``events``: the reply was streamed and
        its events were fed; ``complete``: the reply was read to its end; ``broken``: why
        reading it failed (a stream cut off mid-event); ``raw``: a streamed reply's bytes, kept
        when the cache writes (:attr:`keeps_reply`).
        """
        if next(self._settles):
            return
        logical = self.logical
        if logical is None:
            return
        op = logical.op
        call = self.call
        reply = self._reply
        end = time.perf_counter()
        logical.wire_ms += (end - self._t0) * 1000.0
        usage, parsed, problem = self._read_usage(body, complete=complete, broken=broken)
        op.tools = tool_names(call.api, parsed, reply.events)
        model = reply.model or call.model
        model_uri = f"{call.provider}:{model}"
        if op.model != model_uri:
            op.model = model_uri  # priced and counted by the model the reply names
        if problem is not None:
            op.unknown("usage_missing")
            _warn(
                f"{_item_label(op)}: {call.api} reply from {self.url} not measured: {problem} (usage_missing)"
            )
        else:
            provider_cost = None
            if call.provider == "openai" and isinstance(reply.usage_raw, dict):
                provider_cost = usable_cost(reply.usage_raw.get("cost"))
            keeps = self.keeps_reply
            timing = CallTiming(
                attempts=logical.attempts,
                retry_ms=logical.retry_ms,
                ttfb_ms=self._ttfb,
                first_token_ms=(self._first - self._t0) * 1000.0 if self._first is not None else None,
                wire_ms=logical.wire_ms,
                rate_limit_retries=logical.rate_limited,
            )
            certified = settle_usage(
                op,
                model_uri,
                usage,
                provider_cost,
                "provider_reported",
                self.settings.table(),
                certify=keeps,
                timing=timing,
            )
            if keeps and usage is not None and complete and (raw is not None or not events):
                self._store(parsed, raw, usage, model, certified)
        self._capture(op, model, parsed if events is False else {"events": reply.events})

    def _read_usage(
        self, body: bytes | None, *, complete: bool, broken: str | None
    ) -> tuple[TokenUsage | None, Any, str | None]:
        """The reply's usage and its parsed body (a whole reply's), or why it cannot be measured."""
        reply = self._reply
        problem = broken
        usage: TokenUsage | None = None
        parsed: Any = None
        if problem is None and body is not None:
            try:
                parsed = orjson.loads(body)
                reply.body(parsed)
            except orjson.JSONDecodeError:
                problem = "the reply is not valid JSON" + ("" if complete else " (cut off)")
            except BadReply as exc:
                problem = str(exc)
        if problem is None:
            try:
                usage = parse_usage(self.call.api, reply.usage_raw)
            except BadReply as exc:
                problem = str(exc)
        return usage, parsed, problem

    def _capture(self, op: Operation, model: str, response_body: Any) -> None:
        home = op.home
        if home is None or home.capture is None:
            return
        try:
            request_body: Any = orjson.loads(self.request_body)
        except orjson.JSONDecodeError:
            request_body = None
        exchange = WireExchange(
            method="POST",
            url=redact_secrets(self.url),
            request_headers=redact_headers(dict(self.request_headers)),
            request_body=request_body,
            status=self.status,
            response_body=response_body,
            attempts=self.logical.attempts if self.logical is not None else 1,
        )
        redact_content = self.settings.redact_content or bool(sink_setting(home.capture, "redact_content"))
        limit = sink_setting(home.capture, "max_record_bytes")
        record = build_record(
            provider=self.call.provider,
            model=model,
            exchange=exchange,
            redact_content=redact_content,
            max_record_bytes=limit if isinstance(limit, int) else MAX_RECORD_BYTES,
        )
        record["api"] = self.call.api
        if self.injected:
            record["includeUsageAdded"] = True
        op.capture(record)


def _close_failed(logical: _Logical) -> None:
    """The previous call of this context ended failed with no retry: settle it now."""
    op = logical.op
    if op.state == "open" and logical.failed_at is not None:
        op.abandon()


REPLAY_MISS_STATUS = 424
"""HTTP status of the reply a ``--cache replay`` miss gets instead of being sent."""
REPLAY_MISS_HEADERS: Mapping[str, str] = {
    "content-type": "application/json",
    "x-should-retry": "false",  # never retried: no recorded reply will appear by retrying
    DENIED_HEADER: "replay-miss",
}


def call_purpose(model_uri: str) -> Purpose:
    """Why the calling context makes a model call, as the cache keys it: a judge's grading
    call inside a scorer's scope, else a generation (one rule for ``runtime.chat`` and the
    app's own SDK calls)."""
    from axl_action.cache import GENERATION, Purpose

    scope = current_scope()
    if scope is not None and scope.purpose == "judging":
        return Purpose(kind="judge", model=model_uri)
    return GENERATION


def _finish_reason(api: str, parsed: Any, events: list[Any]) -> str | None:
    """The reply's finish reason, where the API states one (a refusal is never cached)."""
    found: Any = None
    for data in [parsed] if parsed is not None else events:
        if not isinstance(data, dict):
            continue
        if api == "anthropic.messages":
            delta = data.get("delta")
            found = (
                data.get("stop_reason")
                or (delta.get("stop_reason") if isinstance(delta, dict) else None)
                or found
            )
        else:
            key = "finishReason" if api == "gemini.generate" else "finish_reason"
            for choice in data.get("candidates" if api == "gemini.generate" else "choices") or ():
                if isinstance(choice, dict) and choice.get(key):
                    found = choice[key]
    return found if isinstance(found, str) else None


def tool_names(api: str, parsed: Any, events: list[Any]) -> tuple[str, ...]:
    """The tools a reply asks the app to call, in order (each call of an agent loop lists its
    own): read from the whole reply, or from a stream's events, in each API's own shape."""
    found: list[str] = []
    for data in [parsed] if parsed is not None else events:
        if isinstance(data, dict):
            found.extend(_TOOL_READERS.get(api, _gemini_tools)(data))
    if not found:  # most replies
        return ()
    return tuple(name for name in found if isinstance(name, str) and name)


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [entry for entry in value if isinstance(entry, dict)] if isinstance(value, list) else []


def _chat_tools(data: dict[str, Any]) -> list[Any]:
    names: list[Any] = []
    for choice in _dicts(data.get("choices")):
        # A whole reply's message, or a stream chunk's delta (a call's name is in its first chunk).
        message = choice.get("message") or choice.get("delta")
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        if calls:  # most replies call no tool
            for tool_call in _dicts(calls):
                function = tool_call.get("function")
                if isinstance(function, dict) and "name" in function:
                    names.append(function["name"])
    return names


def _responses_tools(data: dict[str, Any]) -> list[Any]:
    if data.get("type") == "response.output_item.added":  # a stream announces each output item
        items = _dicts([data.get("item")])
    elif data.get("object") == "response":
        items = _dicts(data.get("output"))
    else:
        return []
    return [item.get("name") for item in items if item.get("type") == "function_call"]


def _anthropic_tools(data: dict[str, Any]) -> list[Any]:
    if data.get("type") == "content_block_start":
        blocks = _dicts([data.get("content_block")])
    else:
        blocks = _dicts(data.get("content"))
    return [block.get("name") for block in blocks if block.get("type") == "tool_use"]


def _gemini_tools(data: dict[str, Any]) -> list[Any]:
    names: list[Any] = []
    for candidate in _dicts(data.get("candidates")):
        content = candidate.get("content")
        for part in _dicts(content.get("parts") if isinstance(content, dict) else None):
            function = part.get("functionCall")
            if isinstance(function, dict):
                names.append(function.get("name"))
    return names


_TOOL_READERS: dict[str, Callable[[dict[str, Any]], list[Any]]] = {
    "openai.chat": _chat_tools,
    "openai.responses": _responses_tools,
    "anthropic.messages": _anthropic_tools,
    "openai.embeddings": lambda _data: [],
}
"""Per API, the tool names one reply or stream event names (any other API: Gemini's)."""


def settle_usage(
    op: Operation,
    model_uri: str,
    usage: TokenUsage | None,
    provider_cost: float | None,
    provenance: str,
    table: PricingTable,
    *,
    certify: bool = True,
    timing: CallTiming | None = None,
) -> CertifiedCost | None:
    """The one settlement rule for a call's reported usage (spec §7.1), for ``runtime.chat``
    and the application's own SDK calls alike:

    a provider-reported cost is used as it is; else usage priced by the table
    (``price_table_estimate``); usage without a price -> ``unpriced_model`` (never $0); no
    usage -> ``usage_missing``. Returns the cost it settled at with its provenance (what a
    cache entry certifies, docs/cache.md), or ``None``; ``certify=False`` (nothing will store
    the reply) settles the same and returns ``None``: the certificate is a validated model,
    built on every call otherwise. ``timing``: the call's timing, recorded in the same step
    (``Operation.record_timing``), whatever it settles at.
    """
    timed = (model_uri, timing) if timing is not None else None
    if provider_cost is not None:
        table.note_call(model_uri, "provider_cost")
        op.settle(provider_cost, usage, provenance, timing=timed)
        if not certify or op.state != "settled":
            return None
        from axl_action.cache import CertifiedCost  # imported when used: a call-time import is not free

        known = provenance if provenance in ("provider_reported", "adapter_reported") else "provider_reported"
        return CertifiedCost(usd=provider_cost, provenance=known)
    if usage is None:
        table.note_call(model_uri, "no_usage")
        op.unknown("usage_missing", timing=timed)
        return None
    estimate = table.price(model_uri, usage)
    if estimate is None:
        op.unknown("unpriced_model", usage, timing=timed)
        return None
    op.settle(estimate, usage, "price_table_estimate", timing=timed)
    if not certify:
        return None
    from axl_action.cache import CertifiedCost

    return CertifiedCost(
        usd=estimate, provenance="price_table_estimate", price_table=" + ".join(table.sources)
    )


def denied_body(call: Call) -> dict[str, Any]:
    """The error body, in the call's own provider format, of a request the budget refused."""
    message = "axl-eval: the run budget is closed; this request was not sent"
    if call.provider == "anthropic":
        return {"type": "error", "error": {"type": "budget_exceeded", "message": message}}
    if call.provider == "google":
        return {"error": {"code": DENIED_STATUS, "message": message, "status": "ADMISSION_DENIED"}}
    return {"error": {"message": message, "type": "budget_exceeded", "code": "ADMISSION_DENIED"}}


DENIED_HEADERS: Mapping[str, str] = {
    "content-type": "application/json",
    # openai and anthropic obey it before their status rules: the refusal is never retried.
    "x-should-retry": "false",
    DENIED_HEADER: "denied",
}


class SSEDecoder:
    """Incremental server-sent-events decoder feeding an :class:`Exchange` its events."""

    __slots__ = ("_buffer", "_feed", "broken", "done")

    def __init__(self, feed: Callable[[Any], None]) -> None:
        self._buffer = b""
        self._feed = feed
        self.broken: str | None = None
        self.done = False
        """The ``[DONE]`` sentinel arrived (OpenAI chat): the stream is whole."""

    def feed(self, chunk: bytes) -> None:
        buffer = self._buffer + chunk
        if b"\r" in buffer:
            buffer = buffer.replace(b"\r\n", b"\n")
        while True:
            end = buffer.find(b"\n\n")
            if end < 0:
                break
            self._event(buffer[:end])
            buffer = buffer[end + 2 :]
        self._buffer = buffer

    def _event(self, block: bytes) -> None:
        data = b"\n".join(line[5:].lstrip(b" ") for line in block.split(b"\n") if line.startswith(b"data:"))
        if data == b"[DONE]":
            self.done = True
            return
        if not data:
            return
        try:
            parsed = orjson.loads(data)
        except orjson.JSONDecodeError:
            self.broken = "a streamed event is not valid JSON"
            return
        self._feed(parsed)

    def finish(self) -> None:
        """End of stream: an event left without its blank line is still decoded (a broken
        one marks the stream ``broken``)."""
        if self._buffer.strip():
            self._event(self._buffer)
        self._buffer = b""
