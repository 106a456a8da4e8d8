"""Compare and gate, then publish everything, in the order the module ``orchestrator`` states:
the report artifact, the baseline artifact, the PR comment, the job summary, the annotations and
the step outputs, each guarded (``Steps.guard``) so that a failure to publish never hides the
gate result. The exit code follows the gates and the eval run only.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path

from axl_action.action.baseline import RESULTS_NAME, BaselineLookup, age_text
from axl_action.action.commenting import Commented, publish_comment
from axl_action.action.evalstep import EvalRun
from axl_action.action.gating import Evaluation, evaluate
from axl_action.action.history_step import BaselineHistory, extend_history
from axl_action.action.job import ActionOutcome, Job, Produced, Steps, artifact_name
from axl_action.action.outputs import ActionOutputs
from axl_action.action.scope_step import SCOPE_NAME, stamp_bytes
from axl_action.errors import ActionPublishError
from axl_action.history import ARTIFACT_FILE_NAME, AutoThresholds, History, auto_thresholds
from axl_action.history.analysis import HistoryAnalysis, analyse
from axl_action.report import ReportContext, RunInfo, build_report_context, render_report_html, render_summary
from axl_action.report.escape import md_text
from axl_action.schema import ResultFile, as_views, pooled_item_error_rate, read_accounting


def gate_and_publish(
    job: Job,
    produced: Produced,
    lookup: BaselineLookup | None,
    steps: Steps,
    *,
    store_baseline: bool = False,
    history: BaselineHistory | None = None,
    previous: BaselineLookup | None = None,
) -> ActionOutcome:
    """Compare with the baseline ``lookup`` found (None: no baseline step), gate, publish
    everything, then decide the exit code. ``store_baseline``: also store the results as the
    baseline unless a gate failed, extending the history of ``previous``."""
    candidate, evalrun = produced.candidate, produced.evalrun
    baseline = lookup.results if lookup is not None else None
    rows = history.history if history is not None else None
    with job.commands.group("Compare and gate"):
        auto = None
        if job.settings.threshold == "auto" and baseline is not None:
            ref = baseline.results[0]
            auto = auto_thresholds(rows, ref.scorer_names, ref.scorer_types)
            for note in auto.notes:
                job.commands.notice(note, title="threshold: auto")
        evaluation = evaluate(candidate, baseline, job.settings, measured=auto.values if auto else None)
        for note in evaluation.notes:
            job.commands.warning(note, title="Baseline not comparable")
    if evaluation.comparison is None:
        baseline = None
    analysis = None
    if rows is not None and len(rows):
        analysis = steps.guard(
            "history analysis", lambda: _analyse(job, rows, candidate, baseline, evaluation, auto)
        )
    extra = [*(history.warnings if history is not None else []), *(auto.notes if auto is not None else [])]
    report_ctx = _report_context(job, candidate, baseline, evaluation, lookup, history=analysis, extra=extra)
    gate_failed = report_ctx.verdict == "fail"
    failed = gate_failed or evalrun.exit_code != 0

    report_path = steps.guard(
        "report artifact", lambda: _publish_report(job, report_ctx, candidate, baseline, evaluation, analysis)
    )
    if store_baseline:
        previous_results = previous.results if previous is not None else None
        steps.guard(
            "baseline artifact",
            lambda: _publish_baseline(job, candidate, failed, steps, rows, previous_results),
        )
    comment: Commented | None = None
    if job.mode in ("compare", "comment") and job.ctx.pr_number is not None:
        comment = steps.guard(
            "PR comment", lambda: publish_comment(job, report_ctx, evaluation, candidate, failed)
        )
    comment_note = comment.note if comment else None
    steps.guard("job summary", lambda: _publish_summary(job, report_ctx, evalrun, comment_note))
    _annotate(job, report_ctx, evalrun)
    outputs = _outputs(
        job,
        candidate,
        evaluation,
        lookup if baseline is not None else None,
        failed=failed,
        results_path=produced.results_path,
        report_path=report_path or "",
        comment_url=comment.url if comment else None,
    )
    steps.guard("step outputs", lambda: outputs.publish(job.commands))
    return steps.outcome(job, outputs, exit_code=1 if failed else 0, gate_failed=gate_failed)


def _analyse(
    job: Job,
    rows: History | None,
    candidate: ResultFile,
    baseline: ResultFile | None,
    evaluation: Evaluation,
    auto: AutoThresholds | None,
) -> HistoryAnalysis | None:
    """What the history says about this run (None without one)."""
    if rows is None or not len(rows):
        return None
    ref = (baseline or candidate).results[0]
    repo = f"{job.ctx.server_url}/{job.ctx.repository}" if job.ctx.repository else None
    return analyse(
        rows,
        scorers=ref.scorer_names,
        types=ref.scorer_types,
        comparison=evaluation.comparison,
        auto=auto,
        repository_url=repo,
    )


def _report_context(
    job: Job,
    candidate: ResultFile,
    baseline: ResultFile | None,
    evaluation: Evaluation,
    lookup: BaselineLookup | None,
    *,
    history: HistoryAnalysis | None = None,
    extra: Sequence[str] = (),
) -> ReportContext:
    choice = lookup.choice if lookup is not None and baseline is not None else None
    warnings: list[str] = []
    if job.relayed is not None:
        warnings.append(
            f"Relayed for a fork PR: these results were produced and uploaded by the PR's own workflow run "
            f"{job.ctx.triggering_run_id}; this repository's workflow compared them with its own baseline "
            "and gated them with its own settings, but cannot verify how they were produced."
        )
    if job.mode in ("compare", "comment") and lookup is not None and lookup.results is None:
        warnings.append(f"No baseline: {lookup.reason}.")
    if lookup is not None:
        warnings += lookup.warnings
    warnings += evaluation.notes
    warnings += [w[:1].upper() + w[1:] + ("" if w.endswith(".") else ".") for w in extra]
    info = RunInfo(
        suite=job.settings.suite,
        run_url=_evaluated_run_url(job),
        baseline_commit_sha=choice.head_sha if choice else None,
        baseline_branch=job.branch if choice else None,
        baseline_run_id=str(choice.run_id) if choice else None,
        baseline_run_url=choice.run_url if choice else None,
        baseline_age=age_text(choice.age_seconds) if choice else None,
        baseline_reason=lookup.reason if choice and lookup else None,
        warnings=warnings,
        generated_at=job.clock().strftime("%Y-%m-%d %H:%M UTC"),
    )
    return build_report_context(
        candidate.results,
        baseline.results if baseline is not None else None,
        evaluation.comparison,
        evaluation.gates,
        info,
        history=history,
    )


def _evaluated_run_url(job: Job) -> str | None:
    """The run whose log shows the evals: the fork's PR run when relaying, else this one."""
    ctx = job.ctx
    if job.relayed is None or ctx.triggering_run_id is None or not ctx.repository:
        return ctx.run_url
    return f"{ctx.server_url}/{ctx.repository}/actions/runs/{ctx.triggering_run_id}"


def _outputs(
    job: Job,
    candidate: ResultFile,
    evaluation: Evaluation,
    lookup: BaselineLookup | None,
    *,
    failed: bool,
    results_path: str,
    report_path: str,
    comment_url: str | None,
) -> ActionOutputs:
    runs = candidate.results
    comparison = evaluation.comparison
    cost = comparison.cost if comparison is not None else None
    choice = lookup.choice if lookup is not None else None
    return ActionOutputs(
        mode=job.mode,
        verdict="fail" if failed else "pass",
        cost=sum(read_accounting(r).known_cost for r in runs) / len(runs),
        item_error_rate=pooled_item_error_rate(as_views(runs)),
        regressions=len(comparison.regressions) if comparison is not None else 0,
        improvements=len(comparison.improvements) if comparison is not None else 0,
        cost_delta=cost.delta_exact if cost is not None else None,  # unrounded, like `cost`
        cost_certified=cost.certified if cost is not None else False,
        baseline_run_id=str(choice.run_id) if choice else "",
        baseline_sha=choice.head_sha if choice else "",
        results_path=results_path,
        report_path=report_path,
        comment_url=comment_url or "",
    )


def _publish_report(
    job: Job,
    report_ctx: ReportContext,
    candidate: ResultFile,
    baseline: ResultFile | None,
    evaluation: Evaluation,
    history: HistoryAnalysis | None = None,
) -> str:
    """Write and upload the HTML report; return the ``report-path`` output.

    Sets the report link on ``report_ctx``: the comment and summary, rendered after this,
    link straight to the artifact.
    """
    html = render_report_html(
        report_ctx,
        candidate.results,
        baseline.results if baseline else None,
        evaluation.comparison,
        history=history,
        text_limit=job.settings.report_text_limit,
    )
    path = job.scratch / "report" / "report.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = html.encode("utf-8")
    path.write_bytes(data)
    if job.uploader is not None:
        # The report's item data is deflated already: the zip only entropy-codes its text
        # (Huffman-only: 20 % smaller than stored, a third of level 6's time; docs/benchmarks.md).
        uploaded = job.uploader.upload(
            artifact_name(job.settings.report_artifact, job.settings.suite),
            {"report.html": data},
            overwrite=True,
            strategy=zlib.Z_HUFFMAN_ONLY,
        )
        if job.ctx.run_url:
            report_ctx.links.report_url = f"{job.ctx.run_url}/artifacts/{uploaded.id}"
    return job.files.keep("report.html", data) if job.files else str(path)


def _publish_baseline(
    job: Job,
    candidate: ResultFile,
    failed: bool,
    steps: Steps,
    history: History | None = None,
    previous_results: ResultFile | None = None,
) -> None:
    name = artifact_name(job.settings.baseline_artifact, job.settings.suite)
    if failed:
        job.commands.warning(
            f"A gate failed on this {job.branch or 'baseline'} run, so it was not stored as the baseline "
            f"{name!r}; pull requests keep comparing against the previous one.",
            title="Baseline not stored",
        )
        return
    if job.uploader is None:
        raise ActionPublishError(
            "the artifact service is not available (ACTIONS_RUNTIME_TOKEN / ACTIONS_RESULTS_URL are unset)",
            hint="run the action as a container step (uses:), not from a run: step; self-hosted runners need v2.308+",
        )
    files = {RESULTS_NAME: Path(candidate.path).read_bytes()}
    if job.settings.source == "evals":
        # What a pull request checks, besides files, before it carries this baseline's results.
        files[SCOPE_NAME] = stamp_bytes(job.settings, job.workdir)
    stored = None
    if job.settings.history_limit > 0:
        # A history that cannot be built never costs the baseline itself.
        stored = steps.guard(
            "baseline history",
            lambda: extend_history(
                history,
                candidate,
                limit=job.settings.history_limit,
                suite=job.settings.suite,
                run_id=job.ctx.run_id,
                commit=job.ctx.sha,
                previous_results=previous_results,
            ),
        )
        if stored is not None:
            files[ARTIFACT_FILE_NAME] = stored.data
            if stored.dropped:
                job.commands.notice(
                    f"The item scores of the oldest {stored.dropped} baseline runs were left out of the history "
                    "to keep it small; their summaries are kept.",
                    title="Baseline history",
                )
    uploaded = job.uploader.upload(name, files, overwrite=True)
    with_history = f" with a history of {stored.rows} baseline runs" if stored is not None else ""
    job.commands.echo(f"Stored the baseline as artifact {name!r} (id {uploaded.id}){with_history}.")


def _publish_summary(job: Job, report_ctx: ReportContext, evalrun: EvalRun, comment_note: str | None) -> None:
    notes = [f"axl-eval-action ran in {job.mode} mode."]
    if job.relayed is not None:
        notes.append(
            f"It relayed the results of fork PR #{job.relayed.pr_number} at {job.relayed.head_sha[:7]} "
            f"(run {job.ctx.triggering_run_id}), compared them with a baseline it fetched itself and "
            "gated them with this workflow's inputs."
        )
    if comment_note:
        notes.append(comment_note)
    if evalrun.exit_code != 0:
        notes.append(f"The eval run exited {evalrun.exit_code}; see the log.")
    footer = "\n> " + md_text(" ".join(notes)) + "\n"
    # render_summary stays under 1,000,000 bytes, so the footer always fits GitHub's 1 MiB.
    job.commands.append_summary(render_summary(report_ctx) + footer)


def _annotate(job: Job, report_ctx: ReportContext, evalrun: EvalRun) -> None:
    for gate in report_ctx.gates:
        text = f"{gate.label}: {gate.message} (observed {gate.observed}, limit {gate.limit})"
        if gate.status in ("fail", "refused"):
            job.commands.error(text, title=f"Gate failed: {gate.label}")
        elif gate.status == "warn":
            job.commands.warning(text, title=f"Gate warning: {gate.label}")
    if evalrun.exit_code != 0:
        job.commands.error(
            f"The eval run exited {evalrun.exit_code}; see the 'Run the evals' group of the log for why.",
            title="Eval run failed",
        )
