"""``llm_scorer(...)``: an LLM judge (spec §4.5).

The judge sends two messages (``system`` and a fixed evaluation prompt embedding the input,
optional annotations, the output and the expected JSON schema) through the run's measured
provider facade, extracts the JSON object from the reply, validates it and returns
``{"score", "metadata"?, "cost"?}``. Any unusable reply raises ``JudgeResponseError`` with the
message ``LLM scorer "<name>" returned an invalid response: ...``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError, create_model

from axl_action.errors import AxlError
from axl_action.evals.scorer import Scorer
from axl_action.providers.gateway import pricing_for
from axl_action.schema.jsonio import dumps_js
from axl_action.schema.numbers import finite_number, usable_number

DEFAULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "reasoning": {"type": "string"},
    },
    "required": ["score", "reasoning"],
    "additionalProperties": False,
}
"""``score`` in [0, 1] plus a required string ``reasoning``."""

SchemaLike = Mapping[str, Any] | type[BaseModel]


class JudgeResponseError(AxlError):
    """The judge's reply was not a JSON object matching the schema."""

    code = "JUDGE_RESPONSE"

    def __init__(self, message: str, *, cost: float | None = None) -> None:
        super().__init__(message)
        self.cost = cost
        """What the unusable reply cost, so the runner can still attribute it (spec §4.2)."""


class JudgeConfigError(AxlError):
    """An ``llm_scorer`` definition that cannot work (e.g. a schema without ``score``)."""

    code = "EVAL_DEFINITION"


# --- schema handling -------------------------------------------------------------------------

_JSON_TYPES: dict[type, str] = {bool: "boolean", int: "integer", float: "number", str: "string"}


def _fields_model(fields: Mapping[str, Any]) -> type[BaseModel]:
    """A pydantic model from ``{"score": float, "reasoning": str}``-style field types."""
    definitions: dict[str, Any] = {name: (tp, ...) for name, tp in fields.items()}
    model: type[BaseModel] = create_model("JudgeReply", **definitions)
    return model


def _is_fields_mapping(schema: Mapping[str, Any]) -> bool:
    return bool(schema) and all(isinstance(v, type) for v in schema.values())


class _Validator:
    """Validates parsed replies against a JSON-schema subset or a pydantic model."""

    def __init__(self, schema: SchemaLike | None) -> None:
        self.model: type[BaseModel] | None = None
        if schema is None:
            self.json_schema: dict[str, Any] = DEFAULT_SCHEMA
        elif isinstance(schema, type) and issubclass(schema, BaseModel):
            self.model = schema
            self.json_schema = schema.model_json_schema()
        elif isinstance(schema, Mapping) and _is_fields_mapping(schema):
            self.model = _fields_model(schema)
            self.json_schema = self.model.model_json_schema()
        elif isinstance(schema, Mapping):
            self.json_schema = dict(schema)
        else:
            raise JudgeConfigError(
                f"llm_scorer schema must be a JSON-schema dict or a pydantic model, got {type(schema).__name__}"
            )
        props = self.json_schema.get("properties")
        score = props.get("score") if isinstance(props, Mapping) else None
        if not isinstance(score, Mapping) or score.get("type") not in ("number", "integer"):
            raise JudgeConfigError(
                "llm_scorer schema must declare a numeric score property",
                hint='e.g. {"type": "object", "properties": {"score": {"type": "number"}}, "required": ["score"]}',
            )

    def validate(self, value: Any) -> tuple[dict[str, Any] | None, list[str]]:
        """``(validated fields, [])`` or ``(None, ["path: message", ...])``."""
        if self.model is not None:
            try:
                return self.model.model_validate(value).model_dump(mode="json"), []
            except ValidationError as exc:
                return None, [_issue(tuple(str(p) for p in err["loc"]), err["msg"]) for err in exc.errors()]
        issues: list[str] = []
        cleaned = _check(value, self.json_schema, (), issues)
        if issues:
            return None, issues
        assert isinstance(cleaned, dict)
        return cleaned, []


def _issue(path: Sequence[str], message: str) -> str:
    return f"{'.'.join(path)}: {message}" if path else message


def _received(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


_Path = tuple[str, ...]


def _check(value: Any, schema: Mapping[str, Any], path: _Path, issues: list[str]) -> Any:
    """Validate ``value`` against a JSON-schema subset (type, properties, required, items,
    enum, minimum/maximum, minLength/maxLength); unknown properties are dropped (like zod)."""
    kind = schema.get("type")
    if "enum" in schema and value not in schema["enum"]:
        options = " | ".join(json.dumps(v) for v in schema["enum"])
        issues.append(_issue(path, f"Invalid enum value. Expected {options}"))
        return None
    if kind is None and "properties" in schema:
        kind = "object"
    guard = _TYPES.get(kind) if isinstance(kind, str) else None
    if guard is None:
        return value  # a type this subset does not check
    expected, is_kind, refine = guard
    if not is_kind(value):
        issues.append(_issue(path, f"Expected {expected}, received {_received(value)}"))
        return None
    return refine(value, schema, path, issues) if refine is not None else value


def _object(value: dict[str, Any], schema: Mapping[str, Any], path: _Path, issues: list[str]) -> Any:
    """An object's required keys present and its declared properties checked; the rest dropped."""
    out: dict[str, Any] = {}
    for name in schema.get("required") or []:
        if name not in value:
            issues.append(_issue((*path, name), "Required"))
    for name, sub in (schema.get("properties") or {}).items():
        if name in value:
            out[name] = _check(value[name], sub, (*path, name), issues)
    return out


def _array(value: list[Any], schema: Mapping[str, Any], path: _Path, issues: list[str]) -> Any:
    """An array's elements, each checked against ``items``."""
    item_schema = schema.get("items") or {}
    return [_check(v, item_schema, (*path, str(i)), issues) for i, v in enumerate(value)]


def _number(value: float, schema: Mapping[str, Any], path: _Path, issues: list[str]) -> Any:
    """A number that is an integer for ``integer``, within ``minimum``/``maximum``."""
    if schema.get("type") == "integer" and not float(value).is_integer():
        issues.append(_issue(path, "Expected integer, received float"))
    if "minimum" in schema and value < schema["minimum"]:
        issues.append(_issue(path, f"Number must be greater than or equal to {schema['minimum']}"))
    if "maximum" in schema and value > schema["maximum"]:
        issues.append(_issue(path, f"Number must be less than or equal to {schema['maximum']}"))
    return value


def _string(value: str, schema: Mapping[str, Any], path: _Path, issues: list[str]) -> Any:
    """A string within ``minLength``/``maxLength``."""
    if "minLength" in schema and len(value) < schema["minLength"]:
        issues.append(_issue(path, f"String must contain at least {schema['minLength']} character(s)"))
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        issues.append(_issue(path, f"String must contain at most {schema['maxLength']} character(s)"))
    return value


_Refine = Callable[[Any, Mapping[str, Any], _Path, list[str]], Any]
_TYPES: dict[str, tuple[str, Callable[[Any], bool], _Refine | None]] = {
    "object": ("object", lambda v: isinstance(v, dict), _object),
    "array": ("array", lambda v: isinstance(v, list), _array),
    "number": ("number", finite_number, _number),
    "integer": ("number", finite_number, _number),
    "string": ("string", lambda v: isinstance(v, str), _string),
    "boolean": ("boolean", lambda v: isinstance(v, bool), None),
}
"""Per schema ``type``: the name a wrong value is told it should be, the test of the type, and
the checks of a value of that type."""


# --- reply parsing ---------------------------------------------------------------------------


def extract_json(text: str) -> str:
    """The first balanced JSON object in ``text`` (code fences and chatter around it ignored);
    the stripped text itself when there is none."""
    start = text.find("{")
    while start != -1:
        depth = 0
        in_string = escaped = False
        for index in range(start, len(text)):
            char = text[index]
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    candidate = text[start : index + 1]
                    try:
                        json.loads(candidate)
                    except ValueError:
                        break
                    return candidate
        start = text.find("{", start + 1)
    return text.strip()


def build_prompt(input: Any, annotations: Any, output: Any, schema_json: str) -> str:
    """The user message, line for line as the reference builds it (spec §4.5)."""
    return "\n".join(
        [
            "Evaluate the following output.",
            "",
            "## Input",
            _js_json(input),
            f"\n## Annotations (Ground Truth)\n{_js_json(annotations)}" if _js_truthy(annotations) else "",
            "",
            "## Output to Evaluate",
            _js_json(output),
            "",
            "Respond with valid JSON matching this schema:",
            schema_json,
        ]
    )


def _js_truthy(value: Any) -> bool:
    """JS truthiness: ``{}`` and ``[]`` are truthy, ``0``/``""``/``NaN``/null are not."""
    if value is None or value is False or value == "":
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value == value and value != 0
    return True


def _js_json(value: Any) -> str:
    # JSON.stringify(undefined) is undefined, which the template literal prints as "undefined".
    try:
        return dumps_js(value, indent=2)
    except (TypeError, ValueError):
        return str(value)


def llm_scorer(
    name: str,
    model: str,
    system: str,
    schema: SchemaLike | None = None,
    temperature: float = 0.2,
    max_tokens: int | None = None,
    description: str | None = None,
    applies: Callable[..., Any] | None = None,
    *,
    stop: Sequence[str] | None = None,
    provider_options: Mapping[str, Any] | None = None,
    timeout: float | None = None,
) -> Scorer:
    """Define an LLM judge scoring with ``model`` (a ``provider:model`` URI).

    ``schema`` is a JSON-schema dict, a pydantic model, or a ``{"field": type}`` mapping; it
    must have a numeric ``score``. The default asks for ``score`` in [0, 1] and ``reasoning``.
    Fields other than ``score`` become the scorer detail's ``metadata``.
    """
    validator = _Validator(schema)
    schema_json = json.dumps(validator.json_schema, indent=2, ensure_ascii=False)

    def score(output: Any, input: Any, annotations: Any = None, context: Any = None) -> dict[str, Any]:
        resolve = getattr(context, "resolve_provider", None)
        if resolve is None:
            raise AxlError(
                f'LLM scorer "{name}" has no provider. '
                "Ensure you are running via run_eval() with a real Runtime instance."
            )
        provider, bare_model = resolve(model)
        response = provider.chat(
            [
                {"role": "system", "content": system},
                {"role": "user", "content": build_prompt(input, annotations, output, schema_json)},
            ],
            model=bare_model,
            temperature=temperature,
            max_tokens=max_tokens,
            stop=stop,
            provider_options=provider_options,
            response_format={"type": "json_object"},
            timeout=timeout,
        )
        cost = _response_cost(response, model, context)
        try:
            parsed = json.loads(extract_json(response.text))
        except ValueError as exc:
            raise JudgeResponseError(
                f'LLM scorer "{name}" returned an invalid response: not valid JSON ({exc.msg})'
                if isinstance(exc, json.JSONDecodeError)
                else f'LLM scorer "{name}" returned an invalid response: not valid JSON',
                cost=cost,
            ) from None
        validated, issues = validator.validate(parsed)
        if validated is None:
            raise JudgeResponseError(
                f'LLM scorer "{name}" returned an invalid response: {"; ".join(issues)}', cost=cost
            )
        rest = {k: v for k, v in validated.items() if k != "score"}
        result: dict[str, Any] = {"score": validated["score"]}
        if rest:
            result["metadata"] = rest
        if cost is not None:
            result["cost"] = cost
        return result

    # What changes a grade: hashed into metadata.fingerprint.config, so compare and --resume
    # tell two judges apart (a changed prompt or model is another judge, issue 25 item 4).
    config = {
        "model": model,
        "system": system,
        "schema": validator.json_schema,
        "temperature": temperature,
        "maxTokens": max_tokens,
        "stop": list(stop) if stop else None,
        "providerOptions": dict(provider_options) if provider_options else None,
    }
    return Scorer(
        name=name, score=score, description=description or "", applies=applies, is_llm=True, config=config
    )


def _response_cost(response: Any, model_uri: str, context: Any) -> float | None:
    """What the reply cost as the adapter sees it (provider-reported, else a price-table
    estimate); only used by the runner on uninstrumented runtimes (spec §4.5)."""
    cost = getattr(response, "provider_cost", None)
    if usable_number(cost):
        return float(cost)
    usage = getattr(response, "usage", None)
    if usage is None:
        return None
    table = pricing_for(getattr(context, "runtime", None), None)
    # quote, not price: the gateway priced this reply already and counted it in the table's
    # unpriced-call note; pricing it again counted every judge call twice (issue 25).
    return table.quote(model_uri, usage)


__all__ = ["DEFAULT_SCHEMA", "JudgeResponseError", "build_prompt", "extract_json", "llm_scorer"]
