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
from dataclasses import dataclass, replace
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


@dataclass(frozen=True)
class ChartStyle:
    """How one trend chart draws its value axis, its noise band and its x-axis labels."""

    band: tuple[float, float] | None = None
    """(centre, ±): the noise band shaded around the newest baseline."""
    fmt: Callable[[float | None], str] = num
    """Spells a value (the band's tooltip, and the axis labels without ``axis_labels``)."""
    axis_labels: Callable[[float, float], tuple[str, str]] | None = None
    """``axis_labels(high, low)`` spells the two axis labels together (money: the same digits
    on both)."""
    floor: float | None = None
    ceiling: float | None = None
    """The value axis and the band stay inside [``floor``, ``ceiling``]."""
    first_label: str = ""
    last_label: str = ""
    """The x axis's labels under the first and the last slot."""


_WIDTH, _HEIGHT, _PAD_R, _PAD_T, _PAD_B = 320, 132, 14, 20, 20


def _drawn(point: Point | None) -> float | None:
    """The value a point is drawn at; None when there is none to draw (absent, NaN or inf)."""
    if point is None or point.value is None or not math.isfinite(point.value):
        return None
    return point.value


@dataclass(frozen=True)
class _Frame:
    """The plot's geometry: where a slot and a value are drawn."""

    pad_l: int
    plot_w: int
    plot_h: int
    slots: int
    step: float
    low: float
    high: float
    high_label: str
    low_label: str

    def x_of(self, i: float) -> float:
        return self.pad_l + (i * self.step if self.slots > 1 else self.plot_w / 2)

    def y_of(self, v: float) -> float:
        return _PAD_T + (self.high - v) / (self.high - self.low) * self.plot_h


def _band_edges(style: ChartStyle) -> tuple[float, float] | None:
    """The band's (low, high), clipped to the style's floor and ceiling."""
    if style.band is None:
        return None
    centre, half = style.band
    return _clip(centre - half, style.floor, style.ceiling), _clip(centre + half, style.floor, style.ceiling)


def _frame(points: Sequence[Point], candidate: Point | None, style: ChartStyle) -> _Frame:
    """The value range (padded, then clipped to floor and ceiling), the labels and the margins."""
    values = [v for p in points if (v := _drawn(p)) is not None]
    if (c := _drawn(candidate)) is not None:
        values.append(c)
    edges = _band_edges(style)
    if edges is not None:
        values += [edges[0], edges[1]]
    if not values:
        values = [0.0]
    low, high = min(values), max(values)
    span = high - low
    pad = span * 0.12 if span > 1e-12 else max(abs(high) * 0.1, 0.01)
    low, high = low - pad, high + pad
    if style.floor is not None:
        low = max(low, style.floor)
    if style.ceiling is not None:
        high = min(high, style.ceiling)
    if style.axis_labels is not None:
        high_label, low_label = style.axis_labels(high, low)
    else:
        high_label, low_label = style.fmt(high), style.fmt(low)
    # About 6 px per character at 10 px: "$0.007488" needs 54 px, more than the 46 of old.
    pad_l = max(46, 8 + 6 * max(len(high_label), len(low_label)))
    plot_w = _WIDTH - pad_l - _PAD_R
    slots = len(points) + (1 if candidate is not None else 0)
    step = plot_w / max(slots - 1, 1) if slots > 1 else 0.0
    return _Frame(pad_l, plot_w, _HEIGHT - _PAD_T - _PAD_B, slots, step, low, high, high_label, low_label)


def _axes(title: str, f: _Frame, style: ChartStyle) -> list[str]:
    """The title, the x axis, the noise band and the two value labels."""
    parts = [f'<text x="{f.pad_l}" y="13" {_FONT} class="c-label h-title">{_e(title)}</text>']
    parts.append(
        f'<line x1="{f.pad_l}" y1="{_PAD_T + f.plot_h}" x2="{f.pad_l + f.plot_w}" y2="{_PAD_T + f.plot_h}" class="c-axis"/>'
    )
    edges = _band_edges(style)
    if style.band is not None and edges is not None:
        top, bottom = f.y_of(edges[1]), f.y_of(edges[0])
        parts.append(
            f'<rect x="{f.pad_l}" y="{top:.1f}" width="{f.plot_w}" height="{max(bottom - top, 0.5):.1f}" class="h-band">'
            f"<title>noise band: {_e(style.fmt(style.band[0]))} ± {_e(style.fmt(style.band[1]))}</title></rect>"
        )
    for label, anchor_y in ((f.high_label, _PAD_T + 4), (f.low_label, _PAD_T + f.plot_h)):
        parts.append(
            f'<text x="{f.pad_l - 4}" y="{anchor_y:.1f}" {_FONT} text-anchor="end" class="c-label">{_e(label)}</text>'
        )
    return parts


def _polylines(points: Sequence[Point], f: _Frame) -> list[str]:
    """The baseline line, broken where a run has no value."""
    segment: list[str] = []
    lines: list[list[str]] = []
    for i, p in enumerate(points):
        value = _drawn(p)
        if value is None:
            if segment:
                lines.append(segment)
            segment = []
            continue
        segment.append(f"{f.x_of(i):.1f},{f.y_of(value):.1f}")
    if segment:
        lines.append(segment)
    return [f'<polyline points="{" ".join(seg)}" class="h-line"/>' for seg in lines if len(seg) > 1]


def _candidate_link(points: Sequence[Point], candidate: Point | None, f: _Frame) -> list[str]:
    """The dashed link from the newest baseline point with a value to this run's point."""
    last = next(
        ((i, v) for i, p in reversed(list(enumerate(points))) if (v := _drawn(p)) is not None),
        None,
    )
    if candidate is None or candidate.value is None or last is None:
        return []
    return [
        f'<line x1="{f.x_of(last[0]):.1f}" y1="{f.y_of(last[1]):.1f}" '
        f'x2="{f.x_of(len(points)):.1f}" y2="{f.y_of(candidate.value):.1f}" class="h-link"/>'
    ]


def _baseline_marks(points: Sequence[Point], f: _Frame) -> list[str]:
    """One circle per baseline run with a value, its tip in data-tip and a <title>."""
    parts = []
    for i, p in enumerate(points):
        value = _drawn(p)
        if value is None:
            continue
        cls = "h-pt h-hollow" if p.hollow else "h-pt"
        tip = _e(p.tip, 300)
        href = f' data-href="{escape(p.href, quote=True)}"' if p.href else ""
        parts.append(
            f'<circle cx="{f.x_of(i):.1f}" cy="{f.y_of(value):.1f}" r="3.2" class="{cls}" tabindex="0" '
            f'data-tip="{tip}"{href}><title>{tip}</title></circle>'
        )
    return parts


def _x_labels(points: Sequence[Point], f: _Frame, style: ChartStyle) -> list[str]:
    parts = []
    if style.first_label and points:
        parts.append(
            f'<text x="{f.x_of(0):.1f}" y="{_HEIGHT - 5}" {_FONT} class="c-label">{_e(style.first_label, 24)}</text>'
        )
    if style.last_label and f.slots > 1:
        parts.append(
            f'<text x="{f.x_of(f.slots - 1):.1f}" y="{_HEIGHT - 5}" {_FONT} text-anchor="end" class="c-label">'
            f"{_e(style.last_label, 24)}</text>"
        )
    return parts


def _candidate_mark(points: Sequence[Point], candidate: Point | None, f: _Frame) -> list[str]:
    value = _drawn(candidate)
    if candidate is None or value is None:
        return []
    tip = _e(candidate.tip, 300)
    cls = "h-cand h-hollow" if candidate.hollow else "h-cand"
    return [
        f'<circle cx="{f.x_of(len(points)):.1f}" cy="{f.y_of(value):.1f}" r="4.6" class="{cls}" '
        f'tabindex="0" data-tip="{tip}"><title>{tip}</title></circle>'
    ]


def trend_chart(
    title: str, points: Sequence[Point], candidate: Point | None, style: ChartStyle = ChartStyle()
) -> str:
    """A line of ``points`` (oldest first), ``candidate`` last, drawn as ``style`` says.

    The value axis and the band stay inside [``style.floor``, ``style.ceiling``] (scores:
    [0, 1], so a band of ±0.3 around 0.9 does not draw a scale up to 1.2); the left margin
    grows to fit the longer axis label."""
    f = _frame(points, candidate, style)
    parts = [
        *_axes(title, f, style),
        *_polylines(points, f),
        *_candidate_link(points, candidate, f),
        *_baseline_marks(points, f),
        *_x_labels(points, f, style),
        *_candidate_mark(points, candidate, f),
    ]
    return (
        f'<svg class="chart h-chart" viewBox="0 0 {_WIDTH} {_HEIGHT}" width="{_WIDTH}" height="{_HEIGHT}" '
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
    axis = ChartStyle(first_label=first, last_label=last)
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
        style = replace(axis, band=band, floor=0.0, ceiling=1.0)
        out.append(trend_chart(f"{s.name} · {s.band_text}", points, cand, style))
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

    cost_style = replace(axis, fmt=cost_fmt, axis_labels=usd_pair, floor=0.0)
    out.append(trend_chart("Cost per run (known)", cost_points, cost_cand, cost_style))
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
    out.append(
        trend_chart("Mean item latency", latency_points, latency_cand, replace(axis, fmt=ms, floor=0.0))
    )
    return out
