"""The single-file HTML report: static summary, inline SVG charts, and the item explorer.

Everything is inline (stylesheet, script, data) and a Content-Security-Policy allows only
the one inline script, by its hash, and no network of any kind.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import axl_action.report.charts as charts
from axl_action.report.explorer import ExplorerPayload
from axl_action.report.models import ReportContext
from axl_action.report.render import environment, render_template
from axl_action.schema import EvalResult, read_accounting


def _asset(name: str) -> str:
    loader = environment().loader
    assert loader is not None
    source, _, _ = loader.get_source(environment(), name)
    return source


def script_hash(script: str) -> str:
    """CSP source expression for an inline script: ``'sha256-<base64 digest>'``."""
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def content_security_policy(script: str) -> str:
    """No network of any kind: only our one inline script, inline styles and data: images."""
    return (
        f"default-src 'none'; script-src {script_hash(script)}; style-src 'unsafe-inline'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


def _scores_of(result: EvalResult, name: str) -> list[float]:
    return [s for it in result.items if (s := it.scores.get(name)) is not None]


def build_charts(ctx: ReportContext, candidate: EvalResult, baseline: EvalResult | None) -> dict[str, Any]:
    """The report's inline SVG charts."""
    names = [s.name for s in ctx.scorers][:24]
    distributions = [
        charts.score_distribution(
            name,
            _scores_of(baseline, name) if baseline is not None else None,
            _scores_of(candidate, name),
        )
        for name in names
    ]
    sides: list[tuple[str, dict[str, float], int, int]] = []
    # Legacy files know a total but not its split; show the rest as "unattributed".
    for label, result in (("baseline", baseline), ("candidate", candidate)):
        if result is None:
            continue
        acc = read_accounting(result)
        sides.append(
            (
                label,
                {
                    "generation": acc.breakdown.generation,
                    "judging": acc.breakdown.judging,
                    "external": acc.breakdown.external,
                    "unattributed": max(
                        0.0,
                        acc.known_cost
                        - acc.breakdown.generation
                        - acc.breakdown.judging
                        - acc.breakdown.external,
                    ),
                },
                acc.operations.settled,
                acc.operations.unknown,
            )
        )
    out: dict[str, Any] = {
        "forest": charts.delta_forest(ctx.scorers) if ctx.has_baseline else "",
        "distributions": distributions,
        "cost": charts.cost_breakdown(sides),
        "history": [],
    }
    if ctx.history is not None:
        from axl_action.history.charts import history_charts

        out["history"] = history_charts(ctx.history)
    return out


def render_html(
    ctx: ReportContext,
    explorer: ExplorerPayload,
    *,
    candidate: EvalResult,
    baseline: EvalResult | None = None,
    static_items: int = 20,
) -> str:
    """The single-file HTML report: static summary plus the inline item explorer."""
    js = _asset("report.js")
    css = _asset("report.css")
    if ctx.history is not None:
        # The History panel's own script and styles, in the same one inline script and sheet.
        js += "\n" + _asset("history.js")
        css += "\n" + _asset("history.css")
    if "</script" in js.lower() or "<!--" in js:
        raise ValueError("report.js must not contain '</script' or '<!--'")
    return render_template(
        "report.html.j2",
        ctx=ctx,
        css=css,
        js=js,
        csp=content_security_policy(js),
        charts=build_charts(ctx, candidate, baseline),
        rows_json=explorer.rows_json,
        columns_text=explorer.columns_text,
        details_text=explorer.details_text,
        details_encoding=explorer.details_encoding,
        chunk_items=explorer.chunk_items,
        history_text=explorer.history_text,
        static_items=static_items,
    )
