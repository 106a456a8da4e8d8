"""Number formatting shared by every report (Jinja filters and the context builder)."""

from __future__ import annotations

import math

from axl_action.schema import format_percent


def _finite(x: float | None) -> bool:
    return x is not None and isinstance(x, int | float) and math.isfinite(x)


def num(x: float | None, digits: int = 3) -> str:
    """Fixed decimals, or an em dash when missing."""
    return f"{x:.{digits}f}" if x is not None and _finite(x) else "—"


def signed(x: float | None, digits: int = 3) -> str:
    """Fixed decimals with an explicit ``+`` (``−`` rendered as a real minus sign)."""
    if x is None or not _finite(x):
        return "—"
    if round(x, digits) == 0:
        return f"{0:.{digits}f}"
    return f"+{x:.{digits}f}" if x > 0 else f"−{abs(x):.{digits}f}"


def usd(x: float | None, digits: int = 2) -> str:
    """``$1.23``; amounts below a cent keep 4 decimals so they do not read as free."""
    if x is None or not _finite(x):
        return "—"
    if 0 < abs(x) < 0.01 and digits == 2:
        digits = 4
    return f"-${abs(x):.{digits}f}" if x < 0 else f"${x:.{digits}f}"


def signed_usd(x: float | None) -> str:
    """``+$0.12`` / ``−$0.12``."""
    if x is None or not _finite(x):
        return "—"
    if x == 0:
        return "$0.00"
    return ("+" if x > 0 else "−") + usd(abs(x))


def pct(rate: float | None) -> str:
    """A rate in [0, 1] as ``formatPercent`` prints it (``5%``, ``73.7%``)."""
    return format_percent(rate) if rate is not None and _finite(rate) else "—"


def signed_pct(percent: float | None, digits: int = 1) -> str:
    """An already-multiplied percentage with sign: ``+13.3%``."""
    if percent is None or not _finite(percent):
        return "—"
    return signed(percent, digits) + "%"


def ms(x: float | None) -> str:
    """Milliseconds, switching to seconds from 10 s."""
    if x is None or not _finite(x):
        return "—"
    if abs(x) >= 10_000:
        return f"{x / 1000:.1f}s"
    return f"{math.floor(x + 0.5)}ms"


def count(n: int | float | None) -> str:
    """Thousands separators: ``12,345``."""
    if n is None or not _finite(n):
        return "—"
    return f"{int(n):,}" if float(n).is_integer() else f"{n:,.2f}"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 item`` / ``3 items``."""
    return f"{count(n)} {word if n == 1 else (many or word + 's')}"
