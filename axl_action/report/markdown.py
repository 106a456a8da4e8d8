"""Untrusted Markdown to safe HTML, and trusted comment Markdown to a previewable page.

markdown-it-py's default preset passes raw HTML through, unlike markdown-it JS; the
``js-default`` preset disables it. On top of that, links may only point to ``http(s)``,
``mailto`` or an in-page ``#anchor``, and images are switched off entirely because an image
URL is a network request the offline report must never make.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt

_SAFE_LINK = re.compile(r"^(?:https?://|mailto:|#)", re.IGNORECASE)


def _validate_link(url: str) -> bool:
    return bool(_SAFE_LINK.match(url.strip()))


def _link_open(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
    result: str = self.renderToken(tokens, idx, options, env)
    return result


def _safe_links(md: MarkdownIt) -> MarkdownIt:
    """``md`` without images, with only the links ``_validate_link`` allows, opened safely."""
    md.disable("image")
    md.validateLink = _validate_link  # type: ignore[method-assign]
    md.add_render_rule("link_open", _link_open)
    return md


@lru_cache(maxsize=1)
def _untrusted() -> MarkdownIt:
    return _safe_links(MarkdownIt("js-default", {"html": False, "linkify": False, "typographer": False}))


@lru_cache(maxsize=1)
def _trusted() -> MarkdownIt:
    # Our own comment: raw HTML allowed for <details>/<summary>/<sub> only; the untrusted
    # parts inside it were escaped when the comment was rendered.
    return _safe_links(MarkdownIt("gfm-like", {"html": True, "linkify": False}))


def untrusted_markdown_to_html(text: str) -> str:
    """Render Markdown written by a model, dataset or PR author: no raw HTML, safe links."""
    return str(_untrusted().render(text))


def comment_markdown_to_html(markdown: str) -> str:
    """Render this action's own comment Markdown (for previews and screenshots)."""
    return str(_trusted().render(markdown))
