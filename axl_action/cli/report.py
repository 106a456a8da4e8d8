"""``axl-eval report <candidate.json> [--baseline FILE] [--html FILE] ...``: render the reports.

Writes any of: the single-file HTML report (``--html``), the PR comment Markdown
(``--markdown``) and the job summary Markdown (``--summary``); with none of them, the HTML
report goes next to the candidate as ``<name>.report.html``. With ``--baseline`` the two
results are compared first (same engine and gate flags as ``axl-eval compare``). Prints the
verdict and the paths written. Exit 0 when the reports were written, whatever the verdict;
with ``--fail-on-gate``, 1 when a gate failed or refused (after writing the reports).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from axl_action.cli.commands import compare_and_gate, help_requested
from axl_action.cli.flags import GATE_VALUE_FLAGS, GateFlags, flag_value, gate_flags, scan
from axl_action.errors import InputFileError, UsageError
from axl_action.values import whole_number

SUMMARY = "Render the PR comment, job summary and HTML report for a result"

USAGE_LINE = (
    "Usage: axl-eval report <candidate.json> [--baseline <file>] [--html <file>] "
    "[--markdown <file>] [--summary <file>] [--suite <key>]"
)

HELP = f"""\
{USAGE_LINE}
       [--threshold <v>] [--fail-on-regression] [--max-item-error-rate <0..1>]
       [--max-scorer-error-rate <0..1>] [--max-cost-increase <pct>] [--seed <n>]
       [--min-pass-rate <r|name=r,...>] [--pass-score <s>]
       [--run-url <url>] [--report-url <url>] [--history <file>] [--repo-url <url>]
       [--report-text-limit <n>] [--fail-on-gate]

Renders reports for a results file, compared with --baseline when given, and prints the
verdict. Exit 0 once the reports are written, even when the verdict is "fail" (a report is
usually wanted most then); with --fail-on-gate, exit 1 when a gate failed or refused.

  --baseline <file>             results to compare against (runs the compare engine)
  --html <file>                 write the single-file HTML report (opens offline, no network)
  --markdown <file>             write the PR comment (Markdown, at most 65,536 characters)
  --summary <file>              write the job summary (Markdown, at most 1 MB)
  --suite <key>                 suite key shown in the reports and in the comment marker
                                (default: the dataset name)
  --threshold, --fail-on-regression, --max-item-error-rate, --max-scorer-error-rate,
  --max-cost-increase, --seed,
  --min-pass-rate, --pass-score as for `axl-eval compare`; they decide the gates shown
                                (--threshold auto measures each scorer's from --history)
  --history <file>              a history.json of the baseline's earlier runs (`axl-eval
                                history`): adds the History panel (score, cost and latency
                                trends), noise bands next to each delta, and flaky items
  --repo-url <url>              https://github.com/<owner>/<repo>: link the history's commits
                                and runs
  --run-url <url>               link to the CI run, shown in the reports
  --report-url <url>            link to the uploaded HTML report, shown in the comment
  --report-text-limit <n>       longest output or input stored in the HTML report, in
                                characters (default 20,000; 0: no limit); the rest is cut
                                with a visible mark. The results file keeps the whole text
  --fail-on-gate                exit 1 when the verdict is "fail" (the reports are still written)

With none of --html/--markdown/--summary, writes <candidate>.report.html next to the input.
"""

_VALUE_FLAGS = (
    "--baseline",
    "--html",
    "--markdown",
    "--summary",
    "--suite",
    "--run-url",
    "--report-url",
    "--repo-url",
    "--report-text-limit",
    *GATE_VALUE_FLAGS,
)
_BOOL_FLAGS = ("--fail-on-regression", "--fail-on-gate")


@dataclass
class ReportArgs:
    """Parsed command line of ``axl-eval report``."""

    candidate: str
    gates: GateFlags
    baseline: str | None = None
    html: str | None = None
    markdown: str | None = None
    summary: str | None = None
    suite: str | None = None
    run_url: str | None = None
    report_url: str | None = None
    fail_on_gate: bool = False
    text_limit: int | None = None
    """``--report-text-limit``; None: the report's default (``REPORT_TEXT_LIMIT``)."""
    values: dict[str, str] = field(default_factory=dict)


def parse_args(argv: Sequence[str]) -> ReportArgs:
    """Parse the flags; raises ``UsageError`` with one clear line."""
    scanned = scan(argv, _VALUE_FLAGS, _BOOL_FLAGS, "report")
    values = scanned.values
    for name, value in values.items():
        if not value.strip():
            raise UsageError(f"{name} requires a non-empty value", hint=USAGE_LINE)
    gates = gate_flags(scanned)
    files = scanned.positionals
    if len(files) != 1:
        raise UsageError(f"report takes one candidate results file, got {len(files)}", hint=USAGE_LINE)
    args = ReportArgs(
        candidate=files[0],
        baseline=values.get("--baseline"),
        html=values.get("--html"),
        markdown=values.get("--markdown"),
        summary=values.get("--summary"),
        suite=values.get("--suite"),
        gates=gates,
        run_url=values.get("--run-url"),
        report_url=values.get("--report-url"),
        fail_on_gate="--fail-on-gate" in scanned.flags,
        text_limit=_text_limit(values.get("--report-text-limit")),
        values=values,
    )
    if not (args.html or args.markdown or args.summary):
        stem = Path(args.candidate)
        args.html = str(stem.with_name(stem.stem + ".report.html"))
    return args


def _text_limit(raw: str | None) -> int | None:
    if raw is None:
        return None
    return flag_value(
        functools.partial(whole_number, low=0),
        raw,
        f"--report-text-limit must be a whole number of characters, got {raw!r}",
        hint="0 keeps every output whole",
    )


def _write(path: str, text: str) -> Path:
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputFileError(
            f"cannot write {path}: {exc.strerror or exc}",
            hint="check that the directory exists and is writable",
        ) from exc
    return target


def run(argv: list[str], *, out: TextIO | None = None) -> int:
    """Entry point of ``axl-eval report``; returns the exit code."""
    stdout = out or sys.stdout
    if help_requested(argv, HELP, stdout):
        return 0
    args = parse_args(argv)

    from axl_action.cli.history import history_for
    from axl_action.report import (
        REPORT_TEXT_LIMIT,
        RunInfo,
        build_report_context,
        render_comment,
        render_report_html,
        render_summary,
    )
    from axl_action.schema import load_result_file

    candidate = load_result_file(args.candidate).results
    baseline = load_result_file(args.baseline).results if args.baseline else None
    reference = baseline[0] if baseline is not None else candidate[0]
    history, auto = history_for(args.gates, reference)
    comparison = gates = None
    if baseline is not None:
        comparison, gates = compare_and_gate(args.gates, baseline, candidate, auto)
        from axl_action.compare.hints import argument_hints

        for hint in argument_hints(
            baseline[0],
            candidate[0],
            args.baseline or "",
            args.candidate,
            usage="axl-eval report <candidate.json> --baseline <baseline.json>",
        ):
            print(f"[axl-eval] NOTE: {hint}", file=sys.stderr)
    analysis = None
    if history is not None:
        from axl_action.history.analysis import analyse

        analysis = analyse(
            history,
            scorers=reference.scorer_names,
            types=reference.scorer_types,
            comparison=comparison,
            auto=auto,
            repository_url=args.values.get("--repo-url"),
        )
    info = RunInfo(
        suite=args.suite,
        run_url=args.run_url,
        report_url=args.report_url,
        generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        warnings=list(auto.notes) if auto is not None and baseline is not None else [],
    )
    ctx = build_report_context(candidate, baseline, comparison, gates, info, history=analysis)
    written: list[tuple[str, Path]] = []
    if args.markdown:
        written.append(("PR comment", _write(args.markdown, render_comment(ctx))))
    if args.summary:
        written.append(("Job summary", _write(args.summary, render_summary(ctx))))
    if args.html:
        html = render_report_html(
            ctx,
            candidate,
            baseline,
            comparison,
            history=analysis,
            text_limit=REPORT_TEXT_LIMIT if args.text_limit is None else args.text_limit,
        )
        written.append(("HTML report", _write(args.html, html)))
    failing = f" (failed: {', '.join(ctx.failing_gates)})" if ctx.failing_gates else ""
    print(f"Verdict: {ctx.verdict}{failing}", file=stdout)
    for label, path in written:
        print(f"{label}: {path}", file=stdout)
    if ctx.verdict == "fail" and args.fail_on_gate:
        return 1
    return 0


def help_text() -> str:
    """The full help of this command (also shown by `axl-eval --help`)."""
    return HELP
