"""Inline SVG trend charts of the History panel, drawn in Python so they need no script.

One chart per scorer (baseline means, the noise band shaded around the newest baseline, this
run as the final point in its own colour), one for cost and one for latency. Every point has
a ``<title>`` (the browser's hover tooltip, also without JavaScript) and a ``data-tip`` with
the same text, which the report's script shows when a point is tapped or focused. Colours
come from CSS classes (``h-line``, ``h-pt``, ``h-cand``, ``h-band``) so dark mode follows.
Every label is XML-escaped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from html import escape

from axl_action.formatting import ms, num, pct, usd, usd_pair
from axl_action.history.panel import HistoryPanel, PanelRun

_FONT = 'font-size="10"'


@dataclass(frozen=True)
class Point:
    """One point of a trend."""

    value: float | None
    """None: no value for this run (drawn as a gap)."""
    tip: str
    """Hover/tap text."""
    hollow: bool = False
    """Drawn hollow: not comparable with the newest baseline, or an incomplete cost."""
    href: str | None = None
    """The commit's page (the readout links it when the point is tapped)."""


def _e(text: str, limit: int = 60) -> str:
    return escape(text if len(text) <= limit else text[: limit - 1] + "…", quote=True)


def trend_chart(
    title: str,
    points: Sequence[Point],
    candidate: Point | None,
    *,
    band: tuple[float, float] | None = None,
    fmt: Callable[[float | None], str] = num,
    axis_labels: Callable[[float, float], tuple[str, str]] | None = None,
    floor: float | None = None,
    ceiling: float | None = None,
    first_label: str = "",
    last_label: str = "",
) -> str:
    """A line of ``points`` (oldest first), ``candidate`` last, ``band`` = (centre, ±); the
    x axis is labelled with ``first_label`` and ``last_label``.

    The value axis and the band stay inside [``floor``, ``ceiling``] (scores: [0, 1], so a
    band of ±0.3 around 0.9 does not draw a scale up to 1.2). ``axis_labels(high, low)`` spells
    the two axis labels together (money: the same digits on both); the left margin grows to
    fit the longer one."""
    width, height, pad_r, pad_t, pad_b = 320, 132, 14, 20, 20
    values = [p.value for p in points if p.value is not None and math.isfinite(p.value)]
    if candidate is not None and candidate.value is not None and math.isfinite(candidate.value):
        values.append(candidate.value)
    if band is not None:
        band_low, band_high = (
            _clip(band[0] - band[1], floor, ceiling),
            _clip(band[0] + band[1], floor, ceiling),
        )
        values += [band_low, band_high]
    if not values:
        values = [0.0]
    low, high = min(values), max(values)
    span = high - low
    pad = span * 0.12 if span > 1e-12 else max(abs(high) * 0.1, 0.01)
    low, high = low - pad, high + pad
    if floor is not None:
        low = max(low, floor)
    if ceiling is not None:
        high = min(high, ceiling)
    high_label, low_label = axis_labels(high, low) if axis_labels is not None else (fmt(high), fmt(low))
    # About 6 px per character at 10 px: "$0.007488" needs 54 px, more than the 46 of old.
    pad_l = max(46, 8 + 6 * max(len(high_label), len(low_label)))
    plot_w, plot_h = width - pad_l - pad_r, height - pad_t - pad_b
    slots = len(points) + (1 if candidate is not None else 0)
    step = plot_w / max(slots - 1, 1) if slots > 1 else 0.0

    def x_of(i: float) -> float:
        return pad_l + (i * step if slots > 1 else plot_w / 2)

    def y_of(v: float) -> float:
        return pad_t + (high - v) / (high - low) * plot_h

    parts = [f'<text x="{pad_l}" y="13" {_FONT} class="c-label h-title">{_e(title)}</text>']
    parts.append(
        f'<line x1="{pad_l}" y1="{pad_t + plot_h}" x2="{pad_l + plot_w}" y2="{pad_t + plot_h}" class="c-axis"/>'
    )
    if band is not None:
        top, bottom = y_of(band_high), y_of(band_low)
        parts.append(
            f'<rect x="{pad_l}" y="{top:.1f}" width="{plot_w}" height="{max(bottom - top, 0.5):.1f}" class="h-band">'
            f"<title>noise band: {_e(fmt(band[0]))} ± {_e(fmt(band[1]))}</title></rect>"
        )
    for label, anchor_y in ((high_label, pad_t + 4), (low_label, pad_t + plot_h)):
        parts.append(
            f'<text x="{pad_l - 4}" y="{anchor_y:.1f}" {_FONT} text-anchor="end" class="c-label">{_e(label)}</text>'
        )
    # The line, broken where a run has no value.
    segment: list[str] = []
    lines: list[list[str]] = []
    for i, p in enumerate(points):
        if p.value is None or not math.isfinite(p.value):
            if segment:
                lines.append(segment)
            segment = []
            continue
        segment.append(f"{x_of(i):.1f},{y_of(p.value):.1f}")
    if segment:
        lines.append(segment)
    for seg in lines:
        if len(seg) > 1:
            parts.append(f'<polyline points="{" ".join(seg)}" class="h-line"/>')
    last = next(
        (
            (i, p)
            for i, p in reversed(list(enumerate(points)))
            if p.value is not None and math.isfinite(p.value)
        ),
        None,
    )
    if candidate is not None and candidate.value is not None and last is not None:
        parts.append(
            f'<line x1="{x_of(last[0]):.1f}" y1="{y_of(last[1].value or 0):.1f}" '
            f'x2="{x_of(len(points)):.1f}" y2="{y_of(candidate.value):.1f}" class="h-link"/>'
        )
    for i, p in enumerate(points):
        if p.value is None or not math.isfinite(p.value):
            continue
        cls = "h-pt h-hollow" if p.hollow else "h-pt"
        tip = _e(p.tip, 300)
        href = f' data-href="{escape(p.href, quote=True)}"' if p.href else ""
        parts.append(
            f'<circle cx="{x_of(i):.1f}" cy="{y_of(p.value):.1f}" r="3.2" class="{cls}" tabindex="0" '
            f'data-tip="{tip}"{href}><title>{tip}</title></circle>'
        )
    if first_label and points:
        parts.append(
            f'<text x="{x_of(0):.1f}" y="{height - 5}" {_FONT} class="c-label">{_e(first_label, 24)}</text>'
        )
    if last_label and slots > 1:
        parts.append(
            f'<text x="{x_of(slots - 1):.1f}" y="{height - 5}" {_FONT} text-anchor="end" class="c-label">'
            f"{_e(last_label, 24)}</text>"
        )
    if candidate is not None and candidate.value is not None and math.isfinite(candidate.value):
        tip = _e(candidate.tip, 300)
        cls = "h-cand h-hollow" if candidate.hollow else "h-cand"
        parts.append(
            f'<circle cx="{x_of(len(points)):.1f}" cy="{y_of(candidate.value):.1f}" r="4.6" class="{cls}" '
            f'tabindex="0" data-tip="{tip}"><title>{tip}</title></circle>'
        )
    return (
        f'<svg class="chart h-chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{_e(title, 200)}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{_e(title, 200)}</title>{''.join(parts)}</svg>"
    )


def _clip(value: float, floor: float | None, ceiling: float | None) -> float:
    if floor is not None:
        value = max(value, floor)
    return min(value, ceiling) if ceiling is not None else value


def _run_point(run: PanelRun, value: float | None, text: str, *, hollow: bool = False) -> Point:
    """A baseline run's point: its tip names the run and its date, tapping opens its commit."""
    return Point(value=value, tip=f"{run.label} · {run.date} · {text}", hollow=hollow, href=run.commit_url)


def _candidate_point(
    panel: HistoryPanel, value: float | None, text: str, *, hollow: bool = False
) -> Point | None:
    """This run's final point, or None when it has no value to show."""
    if value is None:
        return None
    return Point(value=value, tip=f"{panel.candidate_label} · {text}", hollow=hollow)


def history_charts(panel: HistoryPanel, *, max_scorers: int = 24) -> list[str]:
    """The panel's charts: one per scorer, then cost and latency."""
    runs = panel.runs
    out: list[str] = []
    first, last = (runs[0].date[:10] if runs else ""), panel.candidate_label

    # Every chart spans the same runs, so all share the x-axis labels.
    chart = partial(trend_chart, first_label=first, last_label=last)
    for s in panel.scorers[:max_scorers]:
        points = [
            _run_point(
                r,
                r.means.get(s.name),
                f"{s.name} {num(r.means.get(s.name))}"
                + ("" if r.comparable else " (different dataset or scorers)"),
                hollow=not r.comparable,
            )
            for r in runs
        ]
        cand = _candidate_point(panel, s.candidate_mean, f"{s.name} {num(s.candidate_mean)} · {s.sentence}")
        band = (s.baseline_mean, s.band) if s.band is not None and s.baseline_mean is not None else None
        out.append(chart(f"{s.name} · {s.band_text}", points, cand, band=band, floor=0.0, ceiling=1.0))
    cost_points = [
        _run_point(
            r,
            r.cost,
            f"cost {usd(r.cost)} per run"
            + ("" if r.cost_complete else " (incomplete: a lower bound)")
            + ("" if r.cost_certified is not False else " · change not certified"),
            hollow=not r.cost_complete,
        )
        for r in runs
    ]
    cost_cand = _candidate_point(
        panel,
        panel.candidate_cost,
        f"cost {usd(panel.candidate_cost)} per run"
        + ("" if panel.candidate_cost_complete else " (incomplete: a lower bound)"),
        hollow=not panel.candidate_cost_complete,
    )
    costs = [r.cost for r in runs] + ([panel.candidate_cost] if panel.candidate_cost is not None else [])
    fine = bool(costs) and max(costs) - min(costs) < 0.05

    def cost_fmt(x: float | None) -> str:
        return usd(x, 4) if fine and x is not None and x < 10 else usd(x)

    out.append(
        chart("Cost per run (known)", cost_points, cost_cand, fmt=cost_fmt, axis_labels=usd_pair, floor=0.0)
    )
    latency_points = [
        _run_point(
            r,
            r.latency_ms,
            f"mean latency {ms(r.latency_ms)} · item errors {pct(r.item_error_rate)}",
        )
        for r in runs
    ]
    latency_cand = _candidate_point(
        panel, panel.candidate_latency_ms, f"mean latency {ms(panel.candidate_latency_ms)}"
    )
    out.append(chart("Mean item latency", latency_points, latency_cand, fmt=ms, floor=0.0))
    return out
