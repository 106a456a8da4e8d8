"""The action's flow: run → (find baseline → compare) → gate → publish everything → exit.

``run_action`` receives every client as an argument and touches neither the environment nor
``/github``; ``entrypoint.main`` builds the clients. It puts them in one frozen :class:`Job`
and calls the mode's own function (``run_mode``, ``baseline_mode``, ``compare_mode``,
``shard_mode``, ``relay_mode``); each builds its outputs and outcome from return values, so no
state is set in one step and read back in another. Rules they keep, in order of importance:

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
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar

from axl_action.action.baseline import (
    RESULTS_NAME,
    BaselineLookup,
    PullRequestRefs,
    age_text,
    locate_baseline,
)
from axl_action.action.cache_step import prefix_of, restore_response_cache, save_response_cache
from axl_action.action.commenting import StickyCommenter
from axl_action.action.evalstep import EvalRun, build_request
from axl_action.action.gating import Evaluation, evaluate
from axl_action.action.history_step import BaselineHistory, extend_history, read_baseline_history
from axl_action.action.modes import ResolvedMode, resolve_mode
from axl_action.action.outputs import ActionOutputs
from axl_action.action.ports import CacheService, Clock, Commands, Commenter, OutputFiles, RunEvals, Uploader
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
from axl_action.action.resume import JOURNAL_FILE, describe, fetch_journal, journal_artifact_name
from axl_action.action.scope_step import (
    SCOPE_NAME,
    ScopedRun,
    describe_scope,
    plan_scoped_run,
    scoped_runner,
    stamp_bytes,
)
from axl_action.action.sequential_step import sequential_flags
from axl_action.action.settings import ActionSettings
from axl_action.errors import ActionPublishError, AxlError
from axl_action.evals.journal.base import journal_path
from axl_action.github.api import GitHubApi
from axl_action.github.comments import GateVerdict
from axl_action.github.errors import GitHubPermissionError
from axl_action.github.event import GitHubContext
from axl_action.history import ARTIFACT_FILE_NAME, AutoThresholds, History, auto_thresholds
from axl_action.history.analysis import HistoryAnalysis, analyse
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
    ResultFile,
    as_views,
    load_result_file,
    pooled_item_error_rate,
    read_accounting,
)

T = TypeVar("T")


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
    pr_labels: tuple[str, ...] = ()
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
            pr_labels=pr.labels if pr else (),
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


@dataclass(frozen=True)
class Job:
    """What every mode reads: the inputs, this run's facts and its collaborators. Never changed;
    the relay derives a new one (``dataclasses.replace``) once it knows the PR."""

    settings: ActionSettings
    ctx: RunContext
    mode: ResolvedMode
    commands: Commands
    clock: Clock
    workdir: Path
    scratch: Path
    branch: str | None
    """The baseline branch (input, else the repository's default branch)."""
    github: GitHubApi | None = None
    uploader: Uploader | None = None
    commenter: Commenter | None = None
    files: OutputFiles | None = None
    relayed: RelayTarget | None = None
    """``mode: comment``: the PR whose fork run's results passed every check."""
    cache_service: CacheService | None = None
    """The GitHub Actions cache, where the response cache lives between runs (``cache`` input)."""


def run_action(
    settings: ActionSettings,
    ctx: GitHubContext | RunContext,
    *,
    github: GitHubApi | None,
    uploader: Uploader | None,
    commands: Commands,
    clock: Clock,
    run_evals: RunEvals,
    workdir: Path,
    scratch: Path,
    commenter: Commenter | None = None,
    env: dict[str, str] | None = None,
    files: OutputFiles | None = None,
    cache_service: CacheService | None = None,
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
    job = Job(
        settings=settings,
        ctx=ctx,
        mode=choice.mode,
        commands=commands,
        clock=clock,
        workdir=workdir,
        scratch=scratch,
        branch=branch,
        github=github,
        uploader=uploader,
        commenter=commenter,
        files=files,
        cache_service=cache_service,
    )
    if choice.mode == "comment":
        return relay_mode(job)
    mode_of = {"run": run_mode, "baseline": baseline_mode, "compare": compare_mode, "shard": shard_mode}
    return mode_of[choice.mode](job, run_evals, env or {})


# ---------------------------------------------------------------------------------- the modes


def run_mode(job: Job, run_evals: RunEvals, env: dict[str, str]) -> ActionOutcome:
    """``run``: run, self-gate, report and summarise; nothing is stored as a baseline."""
    steps = _Steps(job.commands)
    produced = _produce(job, run_evals, env, steps)
    if isinstance(produced, ActionOutcome):
        return produced
    return _gate_and_publish(job, produced, None, steps)


def baseline_mode(job: Job, run_evals: RunEvals, env: dict[str, str]) -> ActionOutcome:
    """``baseline``: like ``run``, then store the results as the baseline unless a gate failed."""
    steps = _Steps(job.commands)
    produced = _produce(job, run_evals, env, steps)
    if isinstance(produced, ActionOutcome):
        return produced
    previous = _previous_baseline(job)
    history = BaselineHistory()
    if previous is not None:
        history = read_baseline_history(previous, suite=job.settings.suite, seed=True)
        _warn_history(job, history)
    return _gate_and_publish(
        job, produced, None, steps, store_baseline=True, history=history, previous=previous
    )


def compare_mode(job: Job, run_evals: RunEvals, env: dict[str, str]) -> ActionOutcome:
    """``compare``: run, compare with the baseline, comment on the PR (if any), gate.

    Eval files find the baseline first (one search, used again for the comparison): an eval
    none of whose recorded files changed since is not re-run (``action/scope_step.py``), and
    under ``repeats: auto`` the runner's rounds decide against it (``action/sequential_step.py``)."""
    steps = _Steps(job.commands)
    found: tuple[BaselineLookup, BaselineHistory] | None = None
    extra: tuple[str, ...] = ()
    if job.settings.source == "evals":
        lookup = _find_baseline(job)
        found = (lookup, _baseline_history(job, lookup))
        if job.settings.repeats == "auto":
            extra = sequential_flags(job.settings, *found, job.scratch)
        scoped = _plan_scope(job, lookup, env)
        if scoped is not None:
            run_evals = scoped_runner(run_evals, scoped)
    produced = _produce(job, run_evals, env, steps, extra=extra)
    if isinstance(produced, ActionOutcome):
        return produced
    if found is None:
        lookup = _find_baseline(job)
        found = (lookup, _baseline_history(job, lookup))
    return _gate_and_publish(job, produced, found[0], steps, history=found[1])


def _plan_scope(job: Job, lookup: BaselineLookup, env: dict[str, str]) -> ScopedRun | None:
    """Which eval files this pull request re-runs (None: all of them, as configured)."""
    if job.ctx.pr_number is None:
        return None
    with job.commands.group("Plan the scoped run"):
        scoped = plan_scoped_run(job.settings, lookup, workdir=job.workdir, env=env, labels=job.ctx.pr_labels)
        if scoped is None:
            print("Every eval runs: there is no baseline with recorded sources to scope against.")
            return None
        for line in describe_scope(scoped):
            print(line)
        return scoped


def shard_mode(job: Job, run_evals: RunEvals, env: dict[str, str]) -> ActionOutcome:
    """``shard``: run one slice and upload it for the merge job, which gates the whole suite."""
    steps = _Steps(job.commands)
    produced = _produce(job, run_evals, env, steps)
    if isinstance(produced, ActionOutcome):
        return produced
    shard = job.settings.shard
    assert shard is not None  # resolve_mode picks shard only when the input is set
    candidate, evalrun = produced.candidate, produced.evalrun
    name = shard_artifact_name(job.settings.suite, shard.index, shard.total)

    def upload() -> None:
        if job.uploader is None:
            raise ActionPublishError(
                "the artifact service is not available, so the shard cannot reach the merge job"
            )
        file_name = f"shard-{shard.index}-of-{shard.total}.json"
        job.uploader.upload(name, {file_name: Path(candidate.path).read_bytes()}, overwrite=True)

    steps.guard("shard artifact", upload)
    lines = [
        f"## axl-eval shard {shard} ({md_text(job.settings.suite)})",
        "",
        f"{sum(len(r.items) for r in candidate.results)} items ran; the results were uploaded as `{name}` "
        "for the merge job, which compares and gates the whole suite.",
    ]
    steps.guard("job summary", lambda: job.commands.append_summary("\n".join(lines) + "\n"))
    outputs = ActionOutputs(
        mode=job.mode,
        verdict="pass" if evalrun.exit_code == 0 else "fail",
        results_path=produced.results_path,
    )
    steps.guard("step outputs", lambda: _publish_outputs(job, outputs))
    if evalrun.exit_code != 0:
        # One slice's item error rate says little about the suite; the merge job gates the whole.
        job.commands.notice(
            f"The eval run of shard {shard} exited {evalrun.exit_code}; its results were kept for the "
            "merge job, which applies the gates to the whole suite.",
            title="Shard gates deferred to the merge job",
        )
    # A leg fails only when its slice cannot reach the merge job.
    return steps.outcome(job, outputs, exit_code=0 if "shard artifact" in steps.published else 1)


def relay_mode(job: Job) -> ActionOutcome:
    """``mode: comment``: compare, gate and comment on the results a fork PR run handed over."""
    ctx = job.ctx
    steps = _Steps(job.commands)
    if ctx.triggering_run_id is None:
        return _relay_stop(
            job,
            steps,
            "mode: comment relays the results of a fork pull request run; it runs on a workflow_run "
            "event (see docs/workflows/axl-eval-comment.yml).",
            title="Invalid input mode",
        )
    if job.github is None or job.commenter is None:
        return _relay_stop(
            job,
            steps,
            "mode: comment needs a github-token with actions: read and pull-requests: write.",
            title="No token",
        )
    name = relay_artifact_name(job.settings.suite)
    run_id = ctx.triggering_run_id
    with job.commands.group(f"Fetch the results of fork run {run_id}"):
        try:
            artifact = find_relay_artifact(job.github, ctx.repository, run_id, name)
            if artifact is None:
                return _relay_stop(
                    job,
                    steps,
                    f"Run {run_id} stored no artifact {name!r}: its token could comment itself, it is "
                    "not a pull request run of this suite, or it stopped before the comment step. "
                    "Nothing to relay.",
                    level="notice",
                )
            files = download_relay_artifact(job.github, ctx.repository, artifact, name)
            relayed = read_relay_artifact(files, save_to=job.scratch / "results" / RESULTS_NAME)
            target = verify_target(
                job.github,
                relayed.manifest,
                repository=ctx.repository,
                suite=job.settings.suite,
                triggering_head_sha=ctx.triggering_head_sha,
            )
        except StaleRelayError as err:
            return _relay_stop(
                job, steps, f"Not relayed: {err}", title="Fork PR comment not relayed", level="warning"
            )
        except AxlError as err:
            return _relay_stop(job, steps, str(err), title="Fork PR comment not relayed")
        print(
            f"Relaying the results of PR #{target.pr_number} at {target.head_sha[:7]} "
            f"(run {run_id}, artifact {name!r})."
        )
    pr_ctx = dataclasses.replace(
        ctx,
        pr_number=target.pr_number,
        pr_head_sha=target.head_sha,
        pr_base_sha=target.base_sha,
        is_fork=True,
    )
    job = dataclasses.replace(job, ctx=pr_ctx, relayed=target)
    candidate = relayed.candidate
    produced = _Produced(
        candidate, EvalRun(0, Path(candidate.path)), _keep_results(job, Path(candidate.path), steps)
    )
    lookup = _find_baseline(job)
    outcome = _gate_and_publish(job, produced, lookup, steps, history=_baseline_history(job, lookup))
    if "PR comment" not in outcome.published:
        outcome.exit_code = 1  # the relay's one job is the comment
    return outcome


# ------------------------------------------------------------------------------ shared steps


class _Steps:
    """What one mode call published and what failed; created by each mode, never shared."""

    def __init__(self, commands: Commands) -> None:
        self._commands = commands
        self.published: list[str] = []
        self.problems: list[str] = []

    def guard(self, what: str, step: Callable[[], T]) -> T | None:
        """Run one publishing step and return its value; a failure is reported (None) and
        never hides the gate result."""
        try:
            value = step()
        except Exception as err:  # publishing must never mask the verdict
            message = str(err) if isinstance(err, AxlError) else f"{type(err).__name__}: {err}"
            self.problems.append(f"{what}: {message}")
            self._commands.warning(
                f"Could not publish the {what}: {message}", title="axl-eval: publishing failed"
            )
            return None
        self.published.append(what)
        return value

    def outcome(
        self, job: Job, outputs: ActionOutputs, *, exit_code: int, gate_failed: bool = False
    ) -> ActionOutcome:
        return ActionOutcome(
            exit_code=exit_code,
            mode=job.mode,
            outputs=outputs,
            gate_failed=gate_failed,
            published=list(self.published),
            problems=list(self.problems),
        )


@dataclass(frozen=True)
class _Produced:
    candidate: ResultFile
    evalrun: EvalRun
    results_path: str
    """The ``results-path`` output ("" when the copy could not be written)."""


def _produce(
    job: Job, run_evals: RunEvals, env: dict[str, str], steps: _Steps, *, extra: tuple[str, ...] = ()
) -> _Produced | ActionOutcome:
    """Run the evals (``extra``: more runner flags) and read the results; without results,
    publish the error and stop.

    A re-run attempt first fetches the journal an earlier attempt left and resumes from it;
    a run that leaves a journal uploads it before anything else (``action.resume``).
    """
    request = build_request(
        job.settings, workdir=job.workdir, output=job.scratch / "results" / RESULTS_NAME, env=env
    )
    request = dataclasses.replace(request, flags=(*request.flags, *extra))
    journal = journal_path(request.output)
    resumed = _fetch_journal(job, journal) if request.source == "evals" else None
    if resumed is not None:
        request = dataclasses.replace(request, flags=(*request.flags, "--resume"))
    caching = request.source == "evals" and job.settings.cache != "off"
    cache_dir = job.scratch / "response-cache"
    cache_key = f"{prefix_of(job.settings)}{job.ctx.run_id or 'local'}-{job.ctx.run_attempt or '1'}"
    if caching:
        request = dataclasses.replace(
            request, flags=(*request.flags, "--cache", job.settings.cache, "--cache-dir", str(cache_dir))
        )
        with job.commands.group("Restore the response cache"):
            restore_response_cache(job.cache_service, job.settings, cache_dir, cache_key, job.commands)
    try:
        with job.commands.group("Run the evals"), job.commands.stop_commands():
            evalrun = run_evals(request)
    finally:
        _keep_journal(job, journal, resumed, steps)
        if caching:
            # Saved even after a failed run: every reply it paid for is worth keeping.
            with job.commands.group("Save the response cache"):
                save_response_cache(job.cache_service, job.settings, cache_dir, cache_key, job.commands)
    if evalrun.results_path is None:
        return _no_results(job, evalrun, steps)
    try:
        candidate = load_result_file(evalrun.results_path)
    except AxlError as err:
        return _no_results(job, EvalRun(evalrun.exit_code or 1, None, str(err)), steps)
    return _Produced(candidate, evalrun, _keep_results(job, evalrun.results_path, steps))


def _journal_name(job: Job) -> str:
    shard = job.settings.shard
    return journal_artifact_name(job.settings.suite, str(shard) if shard is not None else None)


def _fetch_journal(job: Job, dest: Path) -> int | None:
    """On a re-run attempt, the journal of an earlier one (its artifact id), else None."""
    ctx = job.ctx
    attempt = int(ctx.run_attempt) if ctx.run_attempt and ctx.run_attempt.isdigit() else 1
    if attempt <= 1 or not ctx.run_id or not ctx.run_id.isdigit():
        return None
    name = _journal_name(job)
    with job.commands.group("Resume from the earlier attempt"):
        if job.github is None:
            job.commands.warning(
                f"This is attempt {attempt} of the run, but without a github-token the journal of an "
                "earlier attempt cannot be fetched: every item runs (and is paid for) again.",
                title="Not resumed",
            )
            return None
        try:
            artifact_id = fetch_journal(job.github, ctx.repository, int(ctx.run_id), name, dest)
        except Exception as err:
            job.commands.warning(
                f"Attempt {attempt}: the journal {name!r} of an earlier attempt could not be fetched "
                f"({describe(err)}); every item runs again.",
                title="Not resumed",
            )
            return None
        if artifact_id is None:
            print(
                f"Attempt {attempt}: no earlier attempt left a journal ({name}): it finished its evals, "
                "or was killed before it could upload one. Every item runs."
            )
            return None
        print(
            f"Attempt {attempt}: resuming from the journal of an earlier attempt (artifact {name!r}, id "
            f"{artifact_id}); the items it settled are neither run nor paid for again."
        )
        return artifact_id


def _keep_journal(job: Job, journal: Path, resumed: int | None, steps: _Steps) -> None:
    """Upload a journal the eval run left behind (it stopped before its results were complete),
    so a re-run of the job resumes from it; once a resumed run completed, delete the artifact."""
    name = _journal_name(job)
    if journal.is_file():
        if job.uploader is None:
            job.commands.warning(
                f"The eval run left a journal ({journal}) but the artifact service is not available, so a "
                "re-run of this job cannot resume from it.",
                title="Journal not stored",
            )
            return
        uploader = job.uploader

        def upload() -> None:
            uploaded = uploader.upload(name, {JOURNAL_FILE: journal.read_bytes()}, overwrite=True)
            print(
                f"The eval run stopped before its results were complete: stored its journal as artifact "
                f"{name!r} (id {uploaded.id}). Re-running this job resumes from it."
            )

        steps.guard("journal artifact", upload)
    elif resumed is not None and job.uploader is not None:
        deleter = getattr(job.uploader, "delete", None)
        if callable(deleter):
            steps.guard("journal cleanup", lambda: deleter(name))


def _keep_results(job: Job, path: Path, steps: _Steps) -> str:
    """The ``results-path`` output: a copy for later steps ("" when it could not be written)."""

    def keep() -> str:
        return job.files.keep(RESULTS_NAME, path.read_bytes()) if job.files else str(path)

    return steps.guard("results file", keep) or ""


def _no_results(job: Job, evalrun: EvalRun, steps: _Steps) -> ActionOutcome:
    message = evalrun.message or f"the eval run exited {evalrun.exit_code} without results"
    job.commands.error(message, title="axl-eval: no results")
    outputs = ActionOutputs(mode=job.mode, verdict="error")
    summary = (
        f"## ❌ axl-eval ({md_text(job.settings.suite)}): no results\n\n"
        f"{md_text(message)}\n\nNothing was compared or gated. See the **Run the evals** group of the log.\n"
    )
    steps.guard("job summary", lambda: job.commands.append_summary(summary))
    steps.guard("step outputs", lambda: _publish_outputs(job, outputs))
    return steps.outcome(job, outputs, exit_code=1)


def _relay_stop(
    job: Job,
    steps: _Steps,
    message: str,
    *,
    title: str = "",
    level: Literal["error", "warning", "notice"] = "error",
) -> ActionOutcome:
    """End the relay without a comment: annotate, summarise, write the outputs."""
    if level == "error":
        job.commands.error(message, title=title or None)
    elif level == "warning":
        job.commands.warning(message, title=title or None)
    else:
        print(message)
    outputs = ActionOutputs(mode=job.mode, verdict="error" if level == "error" else "pass")
    summary = f"## axl-eval ({md_text(job.settings.suite)}): fork PR relay\n\n{md_text(message)}\n"
    steps.guard("job summary", lambda: job.commands.append_summary(summary))
    steps.guard("step outputs", lambda: _publish_outputs(job, outputs))
    return steps.outcome(job, outputs, exit_code=1 if level == "error" else 0)


def _find_baseline(job: Job) -> BaselineLookup:
    name = artifact_name(job.settings.baseline_artifact, job.settings.suite)
    with job.commands.group("Find the baseline"):
        if job.github is None:
            return BaselineLookup(reason="no github-token was given, so no baseline could be looked up")
        if not job.branch:
            return BaselineLookup(reason="the baseline branch is unknown; set the baseline-branch input")
        ctx = job.ctx
        pull = PullRequestRefs(ctx.pr_head_sha, ctx.pr_base_sha) if ctx.pr_number else None
        try:
            lookup = _locate(job, job.github, name, job.branch, pull)
        except AxlError as err:
            lookup = BaselineLookup(reason=f"the baseline search failed: {err}", problem=str(err))
        if lookup.results is not None and lookup.choice is not None:
            print(f"Baseline: run {lookup.choice.run_id} at {lookup.choice.head_sha[:7]} ({lookup.reason}).")
        else:
            print(f"No baseline: {lookup.reason}.")
        if lookup.problem:
            job.commands.warning(lookup.reason, title="Baseline not usable")
        for warning in lookup.warnings:
            job.commands.warning(warning, title="Baseline")
        return lookup


def _baseline_history(job: Job, lookup: BaselineLookup) -> BaselineHistory:
    """The history the PR's baseline download brought (a warning when missing or bad)."""
    history = read_baseline_history(lookup, suite=job.settings.suite)
    _warn_history(job, history)
    return history


def _warn_history(job: Job, history: BaselineHistory) -> None:
    for warning in history.warnings:
        job.commands.warning(warning[:1].upper() + warning[1:] + ".", title="Baseline history")


def _previous_baseline(job: Job) -> BaselineLookup | None:
    """The baseline job's predecessor, whose history it extends (None: start a new one).

    The same search and pure policy as a pull request's, without a PR: the newest baseline.
    Every way of not finding one is at most a warning; the baseline is stored either way.
    """
    if job.settings.history_limit == 0 or job.github is None or not job.branch:
        return None
    name = artifact_name(job.settings.baseline_artifact, job.settings.suite)
    restart = "this baseline starts a new history"
    with job.commands.group("Fetch the previous baseline's history"):
        try:
            lookup = locate_baseline(
                job.github,
                job.ctx.repository,
                artifact_name=name,
                branch=job.branch,
                pull=None,
                now=job.clock(),
            )
        except GitHubPermissionError as err:
            job.commands.warning(
                f"Could not read the previous baseline to carry its history forward ({err.message}); {restart}. "
                "Add `actions: read` to the baseline workflow's permissions.",
                title="Baseline history",
            )
            return None
        except AxlError as err:
            job.commands.warning(
                f"Could not read the previous baseline ({err}); {restart}.", title="Baseline history"
            )
            return None
        if lookup.results is None or lookup.choice is None:
            if lookup.problem:
                job.commands.warning(
                    f"The previous baseline could not be used ({lookup.reason}); {restart}.",
                    title="Baseline history",
                )
            else:
                print(f"No previous baseline ({lookup.reason}); the history starts with this run.")
            return None
        print(f"Previous baseline: run {lookup.choice.run_id} at {lookup.choice.head_sha[:7]}.")
        return lookup


def _locate(
    job: Job, github: GitHubApi, name: str, branch: str, pull: PullRequestRefs | None
) -> BaselineLookup:
    repo = job.ctx.repository
    try:
        return locate_baseline(github, repo, artifact_name=name, branch=branch, pull=pull, now=job.clock())
    except GitHubPermissionError as err:
        if pull is None or job.relayed is None:
            raise
        # The relay job's documented permissions leave out contents: read; on a private
        # repository the merge-base lookup then answers 403, and the newest baseline will do.
        lookup = locate_baseline(github, repo, artifact_name=name, branch=branch, pull=None, now=job.clock())
        lookup.warnings.insert(
            0,
            f"could not compute the PR's merge base ({err.message}); using the newest baseline. "
            "Add `contents: read` to the relay job's permissions to compare against the merge base",
        )
        return lookup


def _gate_and_publish(
    job: Job,
    produced: _Produced,
    lookup: BaselineLookup | None,
    steps: _Steps,
    *,
    store_baseline: bool = False,
    history: BaselineHistory | None = None,
    previous: BaselineLookup | None = None,
) -> ActionOutcome:
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
    comment: _Commented | None = None
    if job.mode in ("compare", "comment") and job.ctx.pr_number is not None:
        comment = steps.guard(
            "PR comment", lambda: _publish_comment(job, report_ctx, evaluation, candidate, failed)
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
    steps.guard("step outputs", lambda: _publish_outputs(job, outputs))
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


# ------------------------------------------------------------------------- publishing steps


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
    steps: _Steps,
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
    print(f"Stored the baseline as artifact {name!r} (id {uploaded.id}){with_history}.")


@dataclass(frozen=True)
class _Commented:
    url: str | None
    note: str | None
    """A sentence for the job summary."""


def _publish_comment(
    job: Job, report_ctx: ReportContext, evaluation: Evaluation, candidate: ResultFile, failed: bool
) -> _Commented:
    pr, head = job.ctx.pr_number, job.ctx.pr_head_sha
    assert pr is not None  # only called for a PR
    if job.commenter is None:
        job.commands.warning(
            "No github-token was given, so no PR comment was written.", title="No PR comment"
        )
        return _Commented(None, None)
    if not head:
        raise ActionPublishError("the event payload has no pull_request.head.sha to mark the comment with")
    if job.relayed is not None:
        body = relayed_comment(report_ctx)
    else:
        body = render_comment(report_ctx, limit=COMMENT_LIMIT - _MARKER_ROOM)
    verdict: GateVerdict = "fail" if failed else ("warn" if report_ctx.verdict == "warn" else "pass")
    try:
        result = job.commenter.upsert(
            pr_number=pr,
            body=body,
            head_sha=head,
            comment_mode=job.settings.comment,
            verdict=verdict,
            changed=_changed(evaluation, verdict),
        )
    except GitHubPermissionError as err:
        if job.relayed is not None:
            raise ActionPublishError(
                f"the relay job's token may not comment on PR #{pr} ({err.message})",
                hint="give the workflow_run job `permissions: pull-requests: write`",
            ) from None
        return _Commented(None, _store_relay_data(job, candidate, pr, head, err))
    note = f"PR comment {result.action}: {result.reason}."
    print(f"{note}{f' ({result.url})' if result.url else ''}")
    return _Commented(result.url, note)


def _store_relay_data(job: Job, candidate: ResultFile, pr: int, head: str, err: GitHubPermissionError) -> str:
    """A read-only token (fork PR): hand the results, never rendered text, to the relay."""
    name = relay_artifact_name(job.settings.suite)
    if job.uploader is None:
        raise ActionPublishError(f"the PR comment was refused ({err}) and no artifact service is available")
    manifest = RelayManifest(
        suite=job.settings.suite, repository=job.ctx.repository, pr_number=pr, head_sha=head.lower()
    )
    files = relay_artifact_files(Path(candidate.path).read_bytes(), manifest)
    job.uploader.upload(name, files, overwrite=True)
    job.commands.warning(
        f"The token cannot comment on this PR ({err.status or 403}: read-only, as on fork PRs). The results "
        f"were stored as artifact {name!r}; a workflow_run workflow with `mode: comment` compares them "
        "against its own baseline and posts the comment (see docs/workflows/axl-eval-comment.yml).",
        title="PR results stored for the relay",
    )
    return (
        f"The token cannot comment (fork PR), so the results were stored as artifact {name} for the "
        "workflow_run relay, which compares, gates and comments with the base repository's own settings."
    )


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


def _publish_outputs(job: Job, outputs: ActionOutputs) -> None:
    for name, value in outputs.as_outputs().items():
        job.commands.set_output(name, value)


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
