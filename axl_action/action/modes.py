"""The modes: ``run_action`` resolves the mode (``action/mode_choice.py``) and calls its function.

``run_mode``, ``baseline_mode``, ``compare_mode`` and ``shard_mode`` are here; ``relay_mode``
(``mode: comment``) is in ``action/relay_mode.py``. Each produces the results
(``action/produce.py``), finds what it compares against (``action/baseline_step.py``) and hands
over to ``action/publishing.py``; the rules they keep are the module ``orchestrator``'s.
"""

from __future__ import annotations

from pathlib import Path

from axl_action.action.baseline import BaselineLookup
from axl_action.action.baseline_step import baseline_history, find_baseline, previous_baseline, warn_history
from axl_action.action.commenting import StickyCommenter
from axl_action.action.history_step import BaselineHistory, read_baseline_history
from axl_action.action.job import ActionOutcome, Job, RunContext, Steps, shard_artifact_name
from axl_action.action.mode_choice import PR_EVENTS, ModeChoice, ResolvedMode, resolve_mode
from axl_action.action.outputs import ActionOutputs
from axl_action.action.ports import CacheService, Clock, Commands, Commenter, OutputFiles, RunEvals, Uploader
from axl_action.action.produce import produce
from axl_action.action.publishing import gate_and_publish
from axl_action.action.relay_mode import relay_mode
from axl_action.action.scope_step import ScopedRun, describe_scope, plan_scoped_run, scoped_runner
from axl_action.action.sequential_step import sequential_flags
from axl_action.action.settings import ActionSettings
from axl_action.errors import ActionPublishError
from axl_action.github.api import GitHubApi
from axl_action.github.event import GitHubContext
from axl_action.report.escape import md_text

__all__ = [
    "PR_EVENTS",
    "ModeChoice",
    "ResolvedMode",
    "baseline_mode",
    "compare_mode",
    "relay_mode",
    "resolve_mode",
    "run_action",
    "run_mode",
    "shard_mode",
]


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
    commands.echo(f"axl-eval-action: mode {choice.mode}: {choice.reason}.")
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


def run_mode(job: Job, run_evals: RunEvals, env: dict[str, str]) -> ActionOutcome:
    """``run``: run, self-gate, report and summarise; nothing is stored as a baseline."""
    steps = Steps(job.commands)
    produced = produce(job, run_evals, env, steps)
    if isinstance(produced, ActionOutcome):
        return produced
    return gate_and_publish(job, produced, None, steps)


def baseline_mode(job: Job, run_evals: RunEvals, env: dict[str, str]) -> ActionOutcome:
    """``baseline``: like ``run``, then store the results as the baseline unless a gate failed."""
    steps = Steps(job.commands)
    produced = produce(job, run_evals, env, steps)
    if isinstance(produced, ActionOutcome):
        return produced
    previous = previous_baseline(job)
    history = BaselineHistory()
    if previous is not None:
        history = read_baseline_history(previous, suite=job.settings.suite, seed=True)
        warn_history(job, history)
    return gate_and_publish(
        job, produced, None, steps, store_baseline=True, history=history, previous=previous
    )


def compare_mode(job: Job, run_evals: RunEvals, env: dict[str, str]) -> ActionOutcome:
    """``compare``: run, compare with the baseline, comment on the PR (if any), gate.

    Eval files find the baseline first (one search, used again for the comparison): an eval
    none of whose recorded files changed since is not re-run (``action/scope_step.py``), and
    under ``repeats: auto`` the runner's rounds decide against it (``action/sequential_step.py``)."""
    steps = Steps(job.commands)
    found: tuple[BaselineLookup, BaselineHistory] | None = None
    extra: tuple[str, ...] = ()
    if job.settings.source == "evals":
        lookup = find_baseline(job)
        found = (lookup, baseline_history(job, lookup))
        if job.settings.repeats == "auto":
            extra = sequential_flags(job.settings, *found, job.scratch)
        scoped = _plan_scope(job, lookup, env)
        if scoped is not None:
            run_evals = scoped_runner(run_evals, scoped)
    produced = produce(job, run_evals, env, steps, extra=extra)
    if isinstance(produced, ActionOutcome):
        return produced
    if found is None:
        lookup = find_baseline(job)
        found = (lookup, baseline_history(job, lookup))
    return gate_and_publish(job, produced, found[0], steps, history=found[1])


def _plan_scope(job: Job, lookup: BaselineLookup, env: dict[str, str]) -> ScopedRun | None:
    """Which eval files this pull request re-runs (None: all of them, as configured)."""
    if job.ctx.pr_number is None:
        return None
    with job.commands.group("Plan the scoped run"):
        scoped = plan_scoped_run(job.settings, lookup, workdir=job.workdir, env=env, labels=job.ctx.pr_labels)
        if scoped is None:
            job.commands.echo("Every eval runs: there is no baseline with recorded sources to scope against.")
            return None
        for line in describe_scope(scoped):
            job.commands.echo(line)
        return scoped


def shard_mode(job: Job, run_evals: RunEvals, env: dict[str, str]) -> ActionOutcome:
    """``shard``: run one slice and upload it for the merge job, which gates the whole suite."""
    steps = Steps(job.commands)
    produced = produce(job, run_evals, env, steps)
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
    steps.guard("step outputs", lambda: outputs.publish(job.commands))
    if evalrun.exit_code != 0:
        # One slice's item error rate says little about the suite; the merge job gates the whole.
        job.commands.notice(
            f"The eval run of shard {shard} exited {evalrun.exit_code}; its results were kept for the "
            "merge job, which applies the gates to the whole suite.",
            title="Shard gates deferred to the merge job",
        )
    # A leg fails only when its slice cannot reach the merge job.
    return steps.outcome(job, outputs, exit_code=0 if "shard artifact" in steps.published else 1)
