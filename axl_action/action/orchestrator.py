"""The action's flow: run → (find baseline → compare) → gate → publish everything → exit.

``run_action`` receives every client as an argument and touches neither the environment nor
``/github``; ``entrypoint.main`` builds the clients. Rules it keeps, in order of importance:

1. **Publish before failing.** The job summary, step outputs, report artifact, baseline
   artifact and PR comment are all written before the exit code is decided; a gate failure
   only turns into ``exit 1`` at the very end.
2. **A failure to publish never hides the gate result.** Each publishing step is guarded; a
   failing one becomes a warning annotation and a line in ``ActionOutcome.problems``, and the
   exit code still follows the gates.
3. **No baseline is not a failure.** The run is still reported and self-gated (budget, item
   errors, scorer errors), and the comment says why there was no baseline.
4. **A fork PR's read-only token is expected.** A 403 on the comment stores the results and
   a manifest (data, never rendered text) as an artifact for the ``workflow_run`` relay and warns.
5. **The relay trusts only itself.** ``mode: comment`` reads the fork run's results through
   ``action.relay`` (schema, size, manifest checked against the event and the PR), then fetches
   the baseline, compares, gates and renders exactly as a PR run would, with its own inputs.

Exit codes: 0 every gate passed (or nothing to gate or relay); 1 a gate failed, the evals
produced no results, an input was invalid, or the relay rejected the fork run's artifact or
could not post the comment.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from axl_action.action.baseline import (
    RESULTS_NAME,
    BaselineLookup,
    PullRequestRefs,
    age_text,
    locate_baseline,
)
from axl_action.action.commenting import StickyCommenter
from axl_action.action.evalstep import EvalRun, build_request
from axl_action.action.gating import Evaluation, evaluate
from axl_action.action.modes import ModeChoice, ResolvedMode, resolve_mode
from axl_action.action.outputs import ActionOutputs
from axl_action.action.ports import Clock, Commands, Commenter, OutputFiles, RunEvals, Uploader
from axl_action.action.relay import (
    RelayManifest,
    RelayTarget,
    StaleRelayError,
    download_relay_artifact,
    find_relay_artifact,
    read_relay_artifact,
    relay_artifact_files,
    relay_artifact_name,
    verify_target,
)
from axl_action.action.settings import ActionSettings
from axl_action.errors import ActionPublishError, AxlError
from axl_action.github.client import GitHubClient
from axl_action.github.comments import GateVerdict
from axl_action.github.errors import GitHubPermissionError
from axl_action.github.event import GitHubContext
from axl_action.report import (
    COMMENT_LIMIT,
    ReportContext,
    RunInfo,
    build_report_context,
    render_comment,
    render_report_html,
    render_summary,
)
from axl_action.report.escape import md_text
from axl_action.schema import (
    EvalResult,
    ResultFile,
    as_view,
    item_error_rate,
    load_result_file,
    read_accounting,
)


@dataclass
class ActionOutcome:
    """What the action did, for the entrypoint (exit code) and for tests."""

    exit_code: int
    mode: ResolvedMode
    outputs: ActionOutputs
    gate_failed: bool = False
    published: list[str] = field(default_factory=list)
    """What was published: ``summary``, ``outputs``, ``report-artifact``, ``comment``, ..."""
    problems: list[str] = field(default_factory=list)
    """Publishing steps that failed (each also shown as a warning annotation)."""


def artifact_name(base: str, suite: str) -> str:
    """Per-suite artifact names, so several suites in one repository never collide."""
    return base if suite == "default" else f"{base}-{suite}"


def shard_artifact_name(suite: str, index: int, total: int) -> str:
    """Where a shard leg stores its results for the merge job."""
    return f"axl-eval-shard-{suite}-{index}-of-{total}"


@dataclass(frozen=True)
class RunContext:
    """The facts about this workflow run the orchestrator reads (built from ``GitHubContext``)."""

    event_name: str
    ref: str
    repository: str
    default_branch: str | None
    sha: str | None = None
    pr_number: int | None = None
    pr_head_sha: str | None = None
    pr_base_sha: str | None = None
    is_fork: bool = False
    run_id: str | None = None
    run_attempt: str | None = None
    server_url: str = "https://github.com"
    triggering_run_id: int | None = None
    """``workflow_run`` events: the id of the run whose results are relayed."""
    triggering_head_sha: str | None = None
    """``workflow_run`` events: the head commit of that run."""

    @classmethod
    def from_github(cls, ctx: GitHubContext) -> RunContext:
        """The orchestrator's view of ``github.event.GitHubContext``."""
        pr = ctx.pull_request
        trigger = ctx.workflow_run
        return cls(
            event_name=ctx.event_name,
            ref=ctx.ref,
            repository=ctx.repository,
            default_branch=ctx.default_branch,
            sha=ctx.sha,
            pr_number=pr.number if pr else None,
            pr_head_sha=pr.head_sha if pr else None,
            pr_base_sha=pr.base_sha if pr else None,
            is_fork=pr.is_fork if pr else False,
            run_id=str(ctx.run_id),
            run_attempt=str(ctx.run_attempt),
            server_url=ctx.server_url,
            triggering_run_id=trigger.id if trigger else None,
            triggering_head_sha=trigger.head_sha if trigger else None,
        )

    @property
    def run_url(self) -> str | None:
        if not self.run_id or not self.repository:
            return None
        return f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"


def run_action(
    settings: ActionSettings,
    ctx: GitHubContext | RunContext,
    *,
    github: GitHubClient | None,
    uploader: Uploader | None,
    commands: Commands,
    clock: Clock,
    run_evals: RunEvals,
    workdir: Path,
    scratch: Path,
    commenter: Commenter | None = None,
    env: dict[str, str] | None = None,
    files: OutputFiles | None = None,
) -> ActionOutcome:
    """Do this run's job; see the module docstring. ``scratch`` receives reports and copies;
    ``files`` keeps the results and the report for a later step (the ``*-path`` outputs are
    then its paths; without it, the scratch paths)."""
    if isinstance(ctx, GitHubContext):
        ctx = RunContext.from_github(ctx)
    branch = settings.baseline_branch or ctx.default_branch
    choice = resolve_mode(
        settings.mode,
        event_name=ctx.event_name,
        ref=ctx.ref,
        baseline_branch=branch,
        sharded=settings.shard is not None,
    )
    print(f"axl-eval-action: mode {choice.mode}: {choice.reason}.", flush=True)
    if commenter is None and github is not None:
        commenter = StickyCommenter(github, ctx.repository, settings.suite)
    flow = _Flow(
        settings, ctx, choice, github, uploader, commenter, commands, clock, workdir, scratch, branch, files
    )
    if choice.mode == "comment":
        return flow.relay()
    return flow.run(run_evals, env or {})


class _Flow:
    """One run of any mode; holds what publishing needs."""

    def __init__(
        self,
        settings: ActionSettings,
        ctx: RunContext,
        choice: ModeChoice,
        github: GitHubClient | None,
        uploader: Uploader | None,
        commenter: Commenter | None,
        commands: Commands,
        clock: Clock,
        workdir: Path,
        scratch: Path,
        branch: str | None,
        files: OutputFiles | None,
    ) -> None:
        self.s = settings
        self.ctx = ctx
        self.mode = choice.mode
        self.github = github
        self.uploader = uploader
        self.commenter = commenter
        self.cmd = commands
        self.clock = clock
        self.workdir = workdir
        self.scratch = scratch
        self.branch = branch
        self.files = files
        self.outputs = ActionOutputs(mode=self.mode)
        self.baseline_results: ResultFile | None = None
        self.comment_note: str | None = None
        self.relayed: RelayTarget | None = None
        """Set in ``mode: comment`` once the fork run's artifact passed every check."""
        self.candidate: ResultFile | None = None
        self.outcome = ActionOutcome(exit_code=1, mode=self.mode, outputs=self.outputs)

    # ------------------------------------------------------------------ flow

    def run(self, run_evals: RunEvals, env: dict[str, str]) -> ActionOutcome:
        request = build_request(
            self.s, workdir=self.workdir, output=self.scratch / "results" / RESULTS_NAME, env=env
        )
        with self.cmd.group("Run the evals"), self.cmd.stop_commands():
            evalrun = run_evals(request)
        if evalrun.results_path is None:
            return self._no_results(evalrun)
        try:
            candidate = load_result_file(evalrun.results_path)
        except AxlError as err:
            return self._no_results(EvalRun(evalrun.exit_code or 1, None, str(err)))
        results_file = evalrun.results_path
        self._guard("results file", lambda: self._keep_results(results_file))

        if self.mode == "shard":
            return self._publish_shard(candidate, evalrun)

        lookup: BaselineLookup | None = None
        if self.mode == "compare":
            lookup = self._find_baseline()
        return self._gate_and_publish(candidate, lookup, evalrun)

    def relay(self) -> ActionOutcome:
        """``mode: comment``: compare, gate and comment on the results a fork PR run handed over."""
        ctx = self.ctx
        if ctx.triggering_run_id is None:
            return self._relay_stop(
                "mode: comment relays the results of a fork pull request run; it runs on a workflow_run "
                "event (see docs/workflows/axl-eval-comment.yml).",
                title="Invalid input mode",
            )
        if self.github is None or self.commenter is None:
            return self._relay_stop(
                "mode: comment needs a github-token with actions: read and pull-requests: write.",
                title="No token",
            )
        name = relay_artifact_name(self.s.suite)
        run_id = ctx.triggering_run_id
        with self.cmd.group(f"Fetch the results of fork run {run_id}"):
            try:
                artifact = find_relay_artifact(self.github, ctx.repository, run_id, name)
                if artifact is None:
                    return self._relay_stop(
                        f"Run {run_id} stored no artifact {name!r}: its token could comment itself, it is "
                        "not a pull request run of this suite, or it stopped before the comment step. "
                        "Nothing to relay.",
                        level="notice",
                    )
                files = download_relay_artifact(self.github, ctx.repository, artifact, name)
                relayed = read_relay_artifact(files, save_to=self.scratch / "results" / RESULTS_NAME)
                target = verify_target(
                    self.github,
                    relayed.manifest,
                    repository=ctx.repository,
                    suite=self.s.suite,
                    triggering_head_sha=ctx.triggering_head_sha,
                )
            except StaleRelayError as err:
                return self._relay_stop(
                    f"Not relayed: {err}", title="Fork PR comment not relayed", level="warning"
                )
            except AxlError as err:
                return self._relay_stop(str(err), title="Fork PR comment not relayed")
            print(
                f"Relaying the results of PR #{target.pr_number} at {target.head_sha[:7]} "
                f"(run {run_id}, artifact {name!r})."
            )
        self.relayed = target
        self.ctx = dataclasses.replace(
            ctx,
            pr_number=target.pr_number,
            pr_head_sha=target.head_sha,
            pr_base_sha=target.base_sha,
            is_fork=True,
        )
        candidate = relayed.candidate
        self._guard("results file", lambda: self._keep_results(Path(candidate.path)))
        lookup = self._find_baseline()
        outcome = self._gate_and_publish(candidate, lookup, EvalRun(0, Path(candidate.path)))
        if "PR comment" not in outcome.published:
            outcome.exit_code = 1  # the relay's one job is the comment
        return outcome

    def _relay_stop(
        self, message: str, *, title: str = "", level: Literal["error", "warning", "notice"] = "error"
    ) -> ActionOutcome:
        """End the relay without a comment: annotate, summarise, write the outputs."""
        if level == "error":
            self.cmd.error(message, title=title or None)
            self.outputs.verdict = "error"
        elif level == "warning":
            self.cmd.warning(message, title=title or None)
            self.outputs.verdict = "pass"
        else:
            print(message)
            self.outputs.verdict = "pass"
        summary = f"## axl-eval ({md_text(self.s.suite)}): fork PR relay\n\n{md_text(message)}\n"
        self._guard("job summary", lambda: self.cmd.append_summary(summary))
        self._guard("step outputs", self._publish_outputs)
        self.outcome.exit_code = 1 if level == "error" else 0
        return self.outcome

    def _find_baseline(self) -> BaselineLookup:
        name = artifact_name(self.s.baseline_artifact, self.s.suite)
        with self.cmd.group("Find the baseline"):
            if self.github is None:
                return BaselineLookup(reason="no github-token was given, so no baseline could be looked up")
            if not self.branch:
                return BaselineLookup(reason="the baseline branch is unknown; set the baseline-branch input")
            pull = PullRequestRefs(self.ctx.pr_head_sha, self.ctx.pr_base_sha) if self.ctx.pr_number else None
            try:
                lookup = self._locate(name, self.branch, pull)
            except AxlError as err:
                lookup = BaselineLookup(reason=f"the baseline search failed: {err}", problem=str(err))
            if lookup.results is not None and lookup.choice is not None:
                print(
                    f"Baseline: run {lookup.choice.run_id} at {lookup.choice.head_sha[:7]} ({lookup.reason})."
                )
            else:
                print(f"No baseline: {lookup.reason}.")
            if lookup.problem:
                self.cmd.warning(lookup.reason, title="Baseline not usable")
            for warning in lookup.warnings:
                self.cmd.warning(warning, title="Baseline")
            return lookup

    def _locate(self, name: str, branch: str, pull: PullRequestRefs | None) -> BaselineLookup:
        assert self.github is not None
        try:
            return locate_baseline(
                self.github,
                self.ctx.repository,
                artifact_name=name,
                branch=branch,
                pull=pull,
                now=self.clock(),
            )
        except GitHubPermissionError as err:
            if pull is None or self.relayed is None:
                raise
            # The relay job's documented permissions leave out contents: read; on a private
            # repository the merge-base lookup then answers 403, and the newest baseline will do.
            lookup = locate_baseline(
                self.github,
                self.ctx.repository,
                artifact_name=name,
                branch=branch,
                pull=None,
                now=self.clock(),
            )
            lookup.warnings.insert(
                0,
                f"could not compute the PR's merge base ({err.message}); using the newest baseline. "
                "Add `contents: read` to the relay job's permissions to compare against the merge base",
            )
            return lookup

    # ------------------------------------------------------------------ gate + publish

    def _gate_and_publish(
        self, candidate: ResultFile, lookup: BaselineLookup | None, evalrun: EvalRun
    ) -> ActionOutcome:
        baseline = lookup.results if lookup is not None else None
        with self.cmd.group("Compare and gate"):
            evaluation = evaluate(candidate, baseline, self.s)
            for note in evaluation.notes:
                self.cmd.warning(note, title="Baseline not comparable")
        if evaluation.comparison is None:
            baseline = None
        report_ctx = self._report_context(candidate, baseline, evaluation, lookup)
        gate_failed = report_ctx.verdict == "fail"
        failed = gate_failed or evalrun.exit_code != 0
        self._fill_outputs(candidate, evaluation, lookup if baseline is not None else None, failed=failed)

        self.baseline_results = baseline
        self.candidate = candidate
        self._guard("report artifact", lambda: self._publish_report(report_ctx, candidate, evaluation))
        if self.mode == "baseline":
            self._guard("baseline artifact", lambda: self._publish_baseline(candidate, failed))
        if self.mode in ("compare", "comment") and self.ctx.pr_number is not None:
            self._guard("PR comment", lambda: self._publish_comment(report_ctx, evaluation, failed))
        self._guard("job summary", lambda: self._publish_summary(report_ctx, evalrun))
        self._annotate(report_ctx, evalrun)
        self._guard("step outputs", self._publish_outputs)

        self.outcome.gate_failed = gate_failed
        self.outcome.exit_code = 1 if failed else 0
        return self.outcome

    def _report_context(
        self,
        candidate: ResultFile,
        baseline: ResultFile | None,
        evaluation: Evaluation,
        lookup: BaselineLookup | None,
    ) -> ReportContext:
        choice = lookup.choice if lookup is not None and baseline is not None else None
        warnings: list[str] = []
        if self.relayed is not None:
            warnings.append(
                f"Relayed for a fork PR: these results were produced and uploaded by the PR's own workflow run "
                f"{self.ctx.triggering_run_id}; this repository's workflow compared them with its own baseline "
                "and gated them with its own settings, but cannot verify how they were produced."
            )
        if self.mode in ("compare", "comment") and lookup is not None and lookup.results is None:
            warnings.append(f"No baseline: {lookup.reason}.")
        if lookup is not None:
            warnings += lookup.warnings
        warnings += evaluation.notes
        info = RunInfo(
            suite=self.s.suite,
            run_url=self._evaluated_run_url(),
            baseline_commit_sha=choice.head_sha if choice else None,
            baseline_branch=self.branch if choice else None,
            baseline_run_id=str(choice.run_id) if choice else None,
            baseline_run_url=choice.run_url if choice else None,
            baseline_age=age_text(choice.age_seconds) if choice else None,
            baseline_reason=lookup.reason if choice and lookup else None,
            warnings=warnings,
            generated_at=self.clock().strftime("%Y-%m-%d %H:%M UTC"),
        )
        return build_report_context(
            candidate.results,
            baseline.results if baseline is not None else None,
            evaluation.comparison,
            evaluation.gates,
            info,
        )

    def _evaluated_run_url(self) -> str | None:
        """The run whose log shows the evals: the fork's PR run when relaying, else this one."""
        if self.relayed is None or self.ctx.triggering_run_id is None or not self.ctx.repository:
            return self.ctx.run_url
        return f"{self.ctx.server_url}/{self.ctx.repository}/actions/runs/{self.ctx.triggering_run_id}"

    def _fill_outputs(
        self, candidate: ResultFile, evaluation: Evaluation, lookup: BaselineLookup | None, *, failed: bool
    ) -> None:
        out = self.outputs
        out.verdict = "fail" if failed else "pass"
        runs = candidate.results
        out.cost = sum(read_accounting(r).known_cost for r in runs) / len(runs)
        out.item_error_rate = pooled_item_error_rate(runs)
        comparison = evaluation.comparison
        if comparison is not None:
            out.regressions = len(comparison.regressions)
            out.improvements = len(comparison.improvements)
            if comparison.cost is not None:
                out.cost_delta = comparison.cost.delta
                out.cost_certified = comparison.cost.certified
        if lookup is not None and lookup.choice is not None:
            out.baseline_run_id = str(lookup.choice.run_id)
            out.baseline_sha = lookup.choice.head_sha

    # ------------------------------------------------------------------ publishing steps

    def _guard(self, what: str, step: Callable[[], object]) -> None:
        """Run one publishing step; a failure is reported and never hides the gate result."""
        try:
            step()
        except Exception as err:  # publishing must never mask the verdict
            message = str(err) if isinstance(err, AxlError) else f"{type(err).__name__}: {err}"
            self.outcome.problems.append(f"{what}: {message}")
            self.cmd.warning(f"Could not publish the {what}: {message}", title="axl-eval: publishing failed")
        else:
            self.outcome.published.append(what)

    def _publish_report(
        self, report_ctx: ReportContext, candidate: ResultFile, evaluation: Evaluation
    ) -> None:
        baseline = self.baseline_results
        html = render_report_html(
            report_ctx, candidate.results, baseline.results if baseline else None, evaluation.comparison
        )
        path = self.scratch / "report" / "report.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html, encoding="utf-8")
        data = html.encode("utf-8")
        self.outputs.report_path = self.files.keep("report.html", data) if self.files else str(path)
        if self.uploader is not None:
            uploaded = self.uploader.upload(
                artifact_name(self.s.report_artifact, self.s.suite),
                {"report.html": data},
                overwrite=True,
            )
            if self.ctx.run_url:
                # The comment and summary, rendered after this, link straight to the artifact.
                report_ctx.links.report_url = f"{self.ctx.run_url}/artifacts/{uploaded.id}"

    def _publish_baseline(self, candidate: ResultFile, failed: bool) -> None:
        name = artifact_name(self.s.baseline_artifact, self.s.suite)
        if failed:
            self.cmd.warning(
                f"A gate failed on this {self.branch or 'baseline'} run, so it was not stored as the baseline "
                f"{name!r}; pull requests keep comparing against the previous one.",
                title="Baseline not stored",
            )
            return
        if self.uploader is None:
            raise ActionPublishError(
                "the artifact service is not available (ACTIONS_RUNTIME_TOKEN / ACTIONS_RESULTS_URL are unset)",
                hint="run the action as a container step (uses:), not from a run: step; self-hosted runners need v2.308+",
            )
        data = Path(candidate.path).read_bytes()
        uploaded = self.uploader.upload(name, {RESULTS_NAME: data}, overwrite=True)
        print(f"Stored the baseline as artifact {name!r} (id {uploaded.id}).")

    def _publish_comment(self, report_ctx: ReportContext, evaluation: Evaluation, failed: bool) -> None:
        pr = self.ctx.pr_number
        head = self.ctx.pr_head_sha
        assert pr is not None
        if self.commenter is None:
            self.cmd.warning(
                "No github-token was given, so no PR comment was written.", title="No PR comment"
            )
            return
        if not head:
            raise ActionPublishError(
                "the event payload has no pull_request.head.sha to mark the comment with"
            )
        if self.relayed is not None:
            body = relayed_comment(report_ctx)
        else:
            body = render_comment(report_ctx, limit=COMMENT_LIMIT - _MARKER_ROOM)
        verdict: GateVerdict = "fail" if failed else ("warn" if report_ctx.verdict == "warn" else "pass")
        try:
            result = self.commenter.upsert(
                pr_number=pr,
                body=body,
                head_sha=head,
                comment_mode=self.s.comment,
                verdict=verdict,
                changed=_changed(evaluation, verdict),
            )
        except GitHubPermissionError as err:
            if self.relayed is not None:
                raise ActionPublishError(
                    f"the relay job's token may not comment on PR #{pr} ({err.message})",
                    hint="give the workflow_run job `permissions: pull-requests: write`",
                ) from None
            self._store_relay_data(pr, head, err)
            return
        if result.url:
            self.outputs.comment_url = result.url
        self.comment_note = f"PR comment {result.action}: {result.reason}."
        print(f"{self.comment_note}{f' ({result.url})' if result.url else ''}")

    def _store_relay_data(self, pr: int, head: str, err: GitHubPermissionError) -> None:
        """A read-only token (fork PR): hand the results, never rendered text, to the relay."""
        name = relay_artifact_name(self.s.suite)
        if self.uploader is None:
            raise ActionPublishError(
                f"the PR comment was refused ({err}) and no artifact service is available"
            )
        assert self.candidate is not None
        manifest = RelayManifest(
            suite=self.s.suite, repository=self.ctx.repository, pr_number=pr, head_sha=head.lower()
        )
        files = relay_artifact_files(Path(self.candidate.path).read_bytes(), manifest)
        self.uploader.upload(name, files, overwrite=True)
        self.comment_note = (
            f"The token cannot comment (fork PR), so the results were stored as artifact {name} for the "
            "workflow_run relay, which compares, gates and comments with the base repository's own settings."
        )
        self.cmd.warning(
            f"The token cannot comment on this PR ({err.status or 403}: read-only, as on fork PRs). The results "
            f"were stored as artifact {name!r}; a workflow_run workflow with `mode: comment` compares them "
            "against its own baseline and posts the comment (see docs/workflows/axl-eval-comment.yml).",
            title="PR results stored for the relay",
        )

    def _publish_summary(self, report_ctx: ReportContext, evalrun: EvalRun) -> None:
        notes = [f"axl-eval-action ran in {self.mode} mode."]
        if self.relayed is not None:
            notes.append(
                f"It relayed the results of fork PR #{self.relayed.pr_number} at {self.relayed.head_sha[:7]} "
                f"(run {self.ctx.triggering_run_id}), compared them with a baseline it fetched itself and "
                "gated them with this workflow's inputs."
            )
        if self.comment_note:
            notes.append(self.comment_note)
        if evalrun.exit_code != 0:
            notes.append(f"The eval run exited {evalrun.exit_code}; see the log.")
        footer = "\n> " + md_text(" ".join(notes)) + "\n"
        # render_summary stays under 1,000,000 bytes, so the footer always fits GitHub's 1 MiB.
        self.cmd.append_summary(render_summary(report_ctx) + footer)

    def _annotate(self, report_ctx: ReportContext, evalrun: EvalRun) -> None:
        for gate in report_ctx.gates:
            text = f"{gate.label}: {gate.message} (observed {gate.observed}, limit {gate.limit})"
            if gate.status in ("fail", "refused"):
                self.cmd.error(text, title=f"Gate failed: {gate.label}")
            elif gate.status == "warn":
                self.cmd.warning(text, title=f"Gate warning: {gate.label}")
        if evalrun.exit_code != 0:
            self.cmd.error(
                f"The eval run exited {evalrun.exit_code}; see the 'Run the evals' group of the log for why.",
                title="Eval run failed",
            )

    def _keep_results(self, path: Path) -> None:
        self.outputs.results_path = self.files.keep(RESULTS_NAME, path.read_bytes()) if self.files else str(path)

    def _publish_outputs(self) -> None:
        for name, value in self.outputs.as_outputs().items():
            self.cmd.set_output(name, value)

    # ------------------------------------------------------------------ shard / no results

    def _publish_shard(self, candidate: ResultFile, evalrun: EvalRun) -> ActionOutcome:
        shard = self.s.shard
        assert shard is not None
        name = shard_artifact_name(self.s.suite, shard.index, shard.total)
        self.outputs.verdict = "pass" if evalrun.exit_code == 0 else "fail"

        def upload() -> None:
            if self.uploader is None:
                raise ActionPublishError(
                    "the artifact service is not available, so the shard cannot reach the merge job"
                )
            file_name = f"shard-{shard.index}-of-{shard.total}.json"
            self.uploader.upload(name, {file_name: Path(candidate.path).read_bytes()}, overwrite=True)

        self._guard("shard artifact", upload)
        lines = [
            f"## axl-eval shard {shard} ({md_text(self.s.suite)})",
            "",
            f"{sum(len(r.items) for r in candidate.results)} items ran; the results were uploaded as `{name}` "
            "for the merge job, which compares and gates the whole suite.",
        ]
        self._guard("job summary", lambda: self.cmd.append_summary("\n".join(lines) + "\n"))
        self._guard("step outputs", self._publish_outputs)
        if evalrun.exit_code != 0:
            # One slice's item error rate says little about the suite; the merge job gates the whole.
            self.cmd.notice(
                f"The eval run of shard {shard} exited {evalrun.exit_code}; its results were kept for the "
                "merge job, which applies the gates to the whole suite.",
                title="Shard gates deferred to the merge job",
            )
        # A leg fails only when its slice cannot reach the merge job.
        self.outcome.exit_code = 0 if "shard artifact" in self.outcome.published else 1
        return self.outcome

    def _no_results(self, evalrun: EvalRun) -> ActionOutcome:
        message = evalrun.message or f"the eval run exited {evalrun.exit_code} without results"
        self.cmd.error(message, title="axl-eval: no results")
        self.outputs.verdict = "error"
        summary = (
            f"## ❌ axl-eval ({md_text(self.s.suite)}): no results\n\n"
            f"{md_text(message)}\n\nNothing was compared or gated. See the **Run the evals** group of the log.\n"
        )
        self._guard("job summary", lambda: self.cmd.append_summary(summary))
        self._guard("step outputs", self._publish_outputs)
        self.outcome.exit_code = 1
        return self.outcome


_MARKER_ROOM = 256
"""Room for the two hidden lines the sticky-comment upsert puts in front of the body."""
_RELAYED = " · relayed for a fork PR"


def relayed_comment(report_ctx: ReportContext) -> str:
    """The comment for a relayed fork PR: our own rendering, the verdict line saying it was relayed."""
    body = render_comment(report_ctx, limit=COMMENT_LIMIT - _MARKER_ROOM - len(_RELAYED))
    first, sep, rest = body.partition("\n")
    if first.startswith("### "):
        return first + _RELAYED + sep + rest
    return f"### Relayed for a fork PR\n\n{body}"


def pooled_item_error_rate(runs: Sequence[EvalResult]) -> float:
    """Failed over attempted items across every run, by the schema's one definition of both."""
    rates = [item_error_rate(as_view(r), 1.0) for r in runs]  # the limit is irrelevant here
    attempted = sum(r.attempted for r in rates)
    return sum(r.failed for r in rates) / attempted if attempted else 0.0


def _changed(evaluation: Evaluation, verdict: GateVerdict) -> bool:
    """Worth a comment under ``comment: on-change``: a gate not passing, or any measured change."""
    if verdict != "pass":
        return True
    comparison = evaluation.comparison
    if comparison is None:
        return False
    if comparison.regressions or comparison.improvements:
        return True
    if any(s.verdict in ("regressed", "improved") for s in comparison.scorers.values()):
        return True
    return comparison.cost is not None and comparison.cost.certified and comparison.cost.delta != 0
