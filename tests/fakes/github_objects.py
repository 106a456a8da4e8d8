"""Build REST objects for the fake GitHub that satisfy the official OpenAPI description.

GitHub's objects are huge (a pull request embeds two full repositories, each with ~80
required fields). Writing them by hand invites drift, so every object the fake serves is
built in two layers: ``skeleton(schema)`` fills every *required* property from the vendored
schema (``tests/fixtures/github-openapi``) with a plausible value, then the fake overlays the
fields that carry its real state (ids, SHAs, branches, bodies, timestamps). A test validates
every response against the same schema, so a wrong overlay is caught.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

SPEC_PATH = Path(__file__).resolve().parents[1] / "fixtures" / "github-openapi" / "api.github.com.subset.json"
PLACEHOLDER_TIME = "2026-01-01T00:00:00Z"


@cache
def spec() -> dict[str, Any]:
    """The vendored OpenAPI subset (parsed once)."""
    data: dict[str, Any] = json.loads(SPEC_PATH.read_text(encoding="utf-8"))
    return data


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        ref = node["$ref"]
        target: Any = spec()
        for part in ref.lstrip("#/").split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
    return node


def _fill(node: dict[str, Any], name: str, depth: int) -> Any:
    node = _resolve(node)
    if "allOf" in node:
        merged: dict[str, Any] = {}
        for sub in node["allOf"]:
            value = _fill(sub, name, depth)
            if isinstance(value, dict):
                merged.update(value)
        return merged
    for key in ("oneOf", "anyOf"):
        if key in node:
            return _fill(node[key][0], name, depth)
    if node.get("nullable") and depth > 0:
        return None
    if "enum" in node:
        return node["enum"][0]
    kind = node.get("type")
    if kind == "object" or "properties" in node:
        out: dict[str, Any] = {}
        for prop in node.get("required", []):
            sub = node.get("properties", {}).get(prop, {})
            out[prop] = _fill(sub, prop, depth + 1)
        return out
    if kind == "array":
        return []
    if kind == "integer":
        return 1
    if kind == "number":
        return 1.0
    if kind == "boolean":
        return False
    fmt = node.get("format")
    if fmt == "date-time":
        return PLACEHOLDER_TIME
    if fmt == "uri" or name.endswith("_url") or name == "url":
        return f"https://api.github.com/placeholder/{name}"
    if fmt == "email":
        return "octocat@example.com"
    return name


def skeleton(schema_name: str) -> dict[str, Any]:
    """A minimal valid instance of ``components/schemas/<schema_name>``."""
    value = _fill({"$ref": f"#/components/schemas/{schema_name}"}, schema_name, 0)
    assert isinstance(value, dict)
    return value


def overlay(target: dict[str, Any], /, **fields: Any) -> dict[str, Any]:
    """Deep-merge ``fields`` into a copy of ``target`` (nested dicts merge, the rest replaces)."""
    out = copy.deepcopy(target)
    for key, value in fields.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = overlay(out[key], **value)
        else:
            out[key] = value
    return out


def iso(when: datetime) -> str:
    """GitHub's timestamp format: second precision, ``Z`` suffix."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def user(base_url: str, login: str, user_id: int, user_type: str = "User") -> dict[str, Any]:
    """A ``simple-user`` (``type`` is ``Bot`` for ``github-actions[bot]``)."""
    api = f"{base_url}/users/{login}"
    return overlay(
        skeleton("simple-user"),
        login=login,
        id=user_id,
        node_id=f"U_{user_id}",
        type=user_type,
        site_admin=False,
        url=api,
        html_url=f"https://github.com/{login}",
        avatar_url=f"https://avatars.githubusercontent.com/u/{user_id}?v=4",
        gravatar_id="",
        followers_url=f"{api}/followers",
        following_url=f"{api}/following{{/other_user}}",
        gists_url=f"{api}/gists{{/gist_id}}",
        starred_url=f"{api}/starred{{/owner}}{{/repo}}",
        subscriptions_url=f"{api}/subscriptions",
        organizations_url=f"{api}/orgs",
        repos_url=f"{api}/repos",
        events_url=f"{api}/events{{/privacy}}",
        received_events_url=f"{api}/received_events",
    )


def repository(
    base_url: str,
    schema_name: str,
    *,
    repo_id: int,
    owner: str,
    name: str,
    default_branch: str,
    private: bool,
    fork: bool,
) -> dict[str, Any]:
    """A ``minimal-repository`` / ``repository`` / ``full-repository`` for ``owner/name``."""
    api = f"{base_url}/repos/{owner}/{name}"
    base = skeleton(schema_name)
    fields: dict[str, Any] = {
        "id": repo_id,
        "node_id": f"R_{repo_id}",
        "name": name,
        "full_name": f"{owner}/{name}",
        "private": private,
        "fork": fork,
        "owner": user(base_url, owner, 1000 + repo_id),
        "html_url": f"https://github.com/{owner}/{name}",
        "url": api,
        "description": None,
    }
    for key in list(base):
        if key.endswith("_url") and key not in fields and isinstance(base[key], str):
            fields[key] = f"{api}/{key.removesuffix('_url')}"
    if "default_branch" in base or schema_name != "minimal-repository":
        fields["default_branch"] = default_branch
    if "visibility" in base:
        fields["visibility"] = "private" if private else "public"
    return overlay(base, **fields)
