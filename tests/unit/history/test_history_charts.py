"""History trend charts: score axes and the noise band stay in [0, 1]; the cost axis labels fit
the margin and use the same digits."""

from __future__ import annotations

import re

from axl_action.formatting import usd_pair
from axl_action.history.charts import ChartStyle, Point, trend_chart


def _axis_labels(svg: str) -> list[str]:
    return re.findall(r'text-anchor="end" class="c-label">([^<]*)</text>', svg)[:2]


def _band(svg: str) -> tuple[float, float]:
    match = re.search(r'<rect x="\d+" y="([\d.]+)" width="\d+" height="([\d.]+)" class="h-band">', svg)
    assert match is not None
    return float(match.group(1)), float(match.group(2))


def test_score_axis_and_noise_band_are_clipped_to_zero_and_one() -> None:
    # Means near 0 and 1 with a wide band: once drawn from -0.128 to 1.672.
    points = [Point(v, "") for v in (0.0, 1.0, 0.9, 0.95)]
    svg = trend_chart("exact", points, Point(1.0, ""), ChartStyle(band=(0.9, 0.6), floor=0.0, ceiling=1.0))
    assert _axis_labels(svg) == ["1.000", "0.000"]
    top, height = _band(svg)
    # pad_t 20, plot height 92: the band may not leave the plot area.
    assert top >= 20 and top + height <= 20 + 92 + 0.05


def test_cost_axis_labels_fit_and_share_their_digits() -> None:
    points = [Point(v, "") for v in (0.007488, 0.0071, 0.00735)]
    svg = trend_chart("Cost", points, None, ChartStyle(axis_labels=usd_pair, floor=0.0))
    high, low = _axis_labels(svg)
    assert high.startswith("$") and low.startswith("$")
    assert len(high.split(".")[1]) == len(low.split(".")[1])
    x = int(re.findall(r'<text x="(\d+)" y="[\d.]+" font-size="10" text-anchor="end"', svg)[0])
    # The right-aligned label ends at x; about 6 px per character must fit left of it.
    assert x - 6 * len(high) >= 0
