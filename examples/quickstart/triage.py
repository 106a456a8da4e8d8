"""A deterministic support-ticket triage "model": category, priority and order id.

Two variants stand in for two versions of a prompt or model: ``baseline`` (what the main
branch shipped) and ``candidate`` (a pull request). The candidate fixes refund and order-number
handling but over-escalates anything that mentions "urgent" and files login problems under
account — so comparing the two shows real improvements *and* real regressions.
"""

from __future__ import annotations

import re
from typing import Any

CATEGORIES = ("billing", "shipping", "technical", "account", "other")
PRIORITIES = ("low", "normal", "high", "urgent")

_KEYWORDS: dict[str, tuple[str, ...]] = {
    "billing": ("charge", "charged", "invoice", "payment", "billed", "subscription fee"),
    "shipping": ("delivery", "package", "shipped", "tracking", "arrived", "courier"),
    "technical": ("error", "crash", "bug", "app", "login", "sync", "loading"),
    "account": ("password", "email address", "username", "delete my account", "two-factor"),
}


def _category(text: str, variant: str) -> str:
    if variant == "candidate":
        if "refund" in text:
            return "billing"
        if "login" in text or "log in" in text:
            return "account"
    for category, words in _KEYWORDS.items():
        if any(word in text for word in words):
            return category
    return "other"


def _priority(subject: str, body: str, tier: str, variant: str) -> str:
    haystack = f"{subject} {body}" if variant == "candidate" else subject
    if any(word in haystack for word in ("urgent", "asap", "immediately")):
        return "urgent"
    if tier == "enterprise":
        return "high"
    if any(word in subject for word in ("question", "wondering", "how do i")):
        return "low"
    return "normal"


_ORDER_BASELINE = re.compile(r"\bORD-(\d{5})\b")
_ORDER_CANDIDATE = re.compile(r"\b(?:ORD-|order\s*(?:#|number|no\.?)\s*)(\d{5})\b", re.IGNORECASE)


def _order_id(text: str, variant: str) -> str | None:
    pattern = _ORDER_CANDIDATE if variant == "candidate" else _ORDER_BASELINE
    match = pattern.search(text)
    return f"ORD-{match.group(1)}" if match else None


def triage(ticket: dict[str, Any], variant: str) -> dict[str, Any]:
    """Classify one ticket. The baseline crashes on a ticket without a subject."""
    subject = ticket.get("subject")
    if subject is None and variant == "baseline":
        raise TypeError("ticket subject is None")
    subject = (subject or "").lower()
    raw_body = ticket.get("body") or ""
    body = raw_body.lower()
    text = f"{subject} {body}"
    return {
        "category": _category(text, variant),
        "priority": _priority(subject, body, ticket.get("tier", "free"), variant),
        "order_id": _order_id(f"{ticket.get('subject') or ''} {raw_body}", variant),
    }
