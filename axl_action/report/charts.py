"""Inline SVG charts for the HTML report, drawn in Python so they need no script.

Colours come from CSS classes (``c-base``, ``c-cand``, ...) defined by the report's
stylesheet, so the charts follow dark mode and print styles. Every label is XML-escaped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

import numpy as np

from axl_action.formatting import signed, usd
from axl_action.report.models import ScorerRow

_FONT = 'font-size="11"'
#: Widest average character of an 11px sans-serif label, in px (measured in Chromium: ~6.3).
_CHAR_W = 7.0


def _e(text: str, limit: int = 40) -> str:
    return escape(text if len(text) <= limit else text[: limit - 1] + "…", quote=True)


def _svg(width: int, height: int, label: str, body: str) -> str:
    return (
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{_e(label, 200)}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{_e(label, 200)}</title>{body}</svg>"
    )


def histogram(values: Sequence[float], bins: int = 10) -> list[int]:
    """Counts of scores in ``bins`` equal bins over [0, 1] (1.0 falls in the last bin)."""
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[np.isfinite(arr)]
    idx = np.clip((arr * bins).astype(np.int64), 0, bins - 1)
    return [int(n) for n in np.bincount(idx, minlength=bins)]


def score_distribution(
    name: str, baseline: Sequence[float] | None, candidate: Sequence[float], *, bins: int = 10
) -> str:
    """Side-by-side histogram of one scorer's item scores, baseline vs candidate."""
    width, height, pad_l, pad_b, pad_t = 280, 132, 30, 20, 18
    plot_w, plot_h = width - pad_l - 8, height - pad_b - pad_t
    c_counts = histogram(candidate, bins)
    b_counts = histogram(baseline, bins) if baseline is not None else None
    top = max([*c_counts, *(b_counts or []), 1])
    slot = plot_w / bins
    bar_w = slot / (2.4 if b_counts is not None else 1.4)
    parts = [f'<text x="{pad_l}" y="12" {_FONT} class="c-label">{_e(name)}</text>']
    parts.append(
        f'<line x1="{pad_l}" y1="{pad_t + plot_h}" x2="{pad_l + plot_w}" y2="{pad_t + plot_h}" class="c-axis"/>'
    )
    for i in range(bins):
        x0 = pad_l + i * slot + (slot - bar_w * (2 if b_counts is not None else 1)) / 2
        series: list[tuple[str, int]] = []
        if b_counts is not None:
            series.append(("c-base", b_counts[i]))
        series.append(("c-cand", c_counts[i]))
        for j, (cls, n) in enumerate(series):
            h = plot_h * n / top
            x = x0 + j * bar_w
            lo, hi = i / bins, (i + 1) / bins
            who = "baseline" if cls == "c-base" else "candidate"
            parts.append(
                f'<rect x="{x:.1f}" y="{pad_t + plot_h - h:.1f}" width="{bar_w:.1f}" height="{h:.1f}" '
                f'class="{cls}"><title>{who}: {n} items in [{lo:.1f}, {hi:.1f}{"]" if i == bins - 1 else ")"}'
                "</title></rect>"
            )
    for tick in (0.0, 0.5, 1.0):
        x = pad_l + tick * plot_w
        parts.append(
            f'<text x="{x:.1f}" y="{height - 5}" {_FONT} text-anchor="middle" class="c-label">{tick:g}</text>'
        )
    parts.append(
        f'<text x="{pad_l - 4}" y="{pad_t + 8}" {_FONT} text-anchor="end" class="c-label">{top}</text>'
    )
    label = f"Score distribution of {name}" + (" (baseline vs candidate)" if b_counts is not None else "")
    return _svg(width, height, label, "".join(parts))


def delta_forest(rows: Sequence[ScorerRow]) -> str:
    """One row per scorer: the mean delta as a dot with its 95% CI as a bar, zero marked."""
    with_delta = [r for r in rows if r.delta is not None]
    if not with_delta:
        return ""
    extent = 0.05
    for r in with_delta:
        for v in (r.delta, r.ci_lower, r.ci_upper):
            if v is not None and math.isfinite(v):
                extent = max(extent, abs(v))
    extent *= 1.15
    labels = [f"{signed(r.delta)} {r.verdict}" for r in with_delta]
    row_h, pad_l, pad_t, plot_w = 26, 170, 22, 360
    # Room for the longest right-hand label ("−0.150 inconclusive") at 11px in any sans font.
    pad_r = 8 + math.ceil(_CHAR_W * max(len(label) for label in labels)) + 8
    width = pad_l + plot_w + pad_r
    height = pad_t + row_h * len(with_delta) + 22

    def x_of(v: float) -> float:
        return pad_l + (v + extent) / (2 * extent) * plot_w

    zero = x_of(0)
    parts = [
        f'<line x1="{zero:.1f}" y1="{pad_t - 6}" x2="{zero:.1f}" y2="{height - 18}" class="c-zero"/>',
        f'<text x="{pad_l}" y="14" {_FONT} class="c-label">−{extent:.3f}</text>',
        f'<text x="{zero:.1f}" y="14" {_FONT} text-anchor="middle" class="c-label">0</text>',
        f'<text x="{pad_l + plot_w}" y="14" {_FONT} text-anchor="end" class="c-label">+{extent:.3f}</text>',
    ]
    for k, r in enumerate(with_delta):
        y = pad_t + k * row_h + row_h / 2
        cls = {"regressed": "c-bad", "improved": "c-good"}.get(r.verdict, "c-neutral")
        parts.append(
            f'<text x="{pad_l - 8}" y="{y + 4:.1f}" {_FONT} text-anchor="end" class="c-label">{_e(r.name, 26)}</text>'
        )
        if r.ci_lower is not None and r.ci_upper is not None:
            parts.append(
                f'<line x1="{x_of(r.ci_lower):.1f}" y1="{y:.1f}" x2="{x_of(r.ci_upper):.1f}" y2="{y:.1f}" '
                f'class="c-ci {cls}"/>'
            )
        assert r.delta is not None
        ci = f" [{signed(r.ci_lower, 4)}, {signed(r.ci_upper, 4)}]" if r.ci_lower is not None else ""
        parts.append(
            f'<circle cx="{x_of(r.delta):.1f}" cy="{y:.1f}" r="5" class="{cls}">'
            f"<title>{_e(r.name, 80)}: Δ {signed(r.delta)}{ci} — {r.verdict}</title></circle>"
        )
        parts.append(
            f'<text x="{pad_l + plot_w + 8}" y="{y + 4:.1f}" {_FONT} class="c-label">{labels[k]}</text>'
        )
    return _svg(width, height, "Mean score change per scorer with 95% confidence intervals", "".join(parts))


def cost_breakdown(
    sides: Sequence[tuple[str, dict[str, float], int, int]],
) -> str:
    """Stacked known spend (generation / judging / external) per side, plus unknown operations.

    ``sides`` holds ``(label, breakdown, settled_ops, unknown_ops)``.
    """
    if not sides:
        return ""
    top = max([sum(b.values()) for _, b, _, _ in sides] + [1e-12])
    row_h, pad_l, width = 34, 90, 640
    plot_w = 360
    height = 26 + row_h * len(sides) + 20
    parts = [
        '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="6" class="c-hatch"/></pattern></defs>'
    ]
    legend = [
        ("c-gen", "generation"),
        ("c-judge", "judging"),
        ("c-ext", "external"),
        ("c-unknown", "unknown ops"),
    ]
    for k, (cls, name) in enumerate(legend):
        lx = pad_l + k * 100
        fill = ' fill="url(#hatch)"' if cls == "c-unknown" else ""
        parts.append(f'<rect x="{lx}" y="4" width="10" height="10" class="{cls}"{fill}/>')
        parts.append(f'<text x="{lx + 14}" y="13" {_FONT} class="c-label">{name}</text>')
    for k, (label, breakdown, settled, unknown) in enumerate(sides):
        y = 26 + k * row_h
        parts.append(
            f'<text x="{pad_l - 8}" y="{y + 15}" {_FONT} text-anchor="end" class="c-label">{_e(label)}</text>'
        )
        x = float(pad_l)
        for key, cls in (
            ("generation", "c-gen"),
            ("judging", "c-judge"),
            ("external", "c-ext"),
            ("unattributed", "c-other"),
        ):
            v = breakdown.get(key, 0.0)
            if v <= 0:
                continue
            w = plot_w * v / top
            parts.append(
                f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="20" class="{cls}"><title>{key}: {usd(v)}</title></rect>'
            )
            x += w
        total = sum(breakdown.values())
        text = f"{usd(total)} known"
        if unknown:
            parts.append(
                f'<rect x="{x + 2:.1f}" y="{y}" width="16" height="20" class="c-unknown" fill="url(#hatch)">'
                f"<title>{unknown} operations with unknown cost</title></rect>"
            )
            x += 18
            text += f" + {unknown} unknown op{'s' if unknown != 1 else ''}"
        text += f" ({settled} settled)"
        label = _e(text, 80)
        parts.append(f'<text x="{x + 6:.1f}" y="{y + 15}" {_FONT} class="c-label">{label}</text>')
        # Wide enough for the label after the bar, whatever its length.
        width = max(width, math.ceil(x + 6 + _CHAR_W * len(text[:80])) + 8)
    return _svg(width, height, "Known cost by purpose, and operations with unknown cost", "".join(parts))
