"""``mode: comment``: the trusted ``workflow_run`` job that compares, gates and comments on the
results a fork PR run handed over.

It fetches the fork run's relay artifact, checks it (``action/relay.py``: size, zip safety,
manifest and result schema, the manifest against the event and the PR's current head), derives
a ``Job`` for that PR and then publishes exactly as a PR run would, with its own baseline and
inputs. Every way of not relaying ends in :func:`relay_stop`: an annotation, a summary and the
outputs, with exit 1 unless there was simply nothing to relay.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

from axl_action.action.baseline import RESULTS_NAME
from axl_action.action.baseline_step import baseline_history, find_baseline
from axl_action.action.evalstep import EvalRun
from axl_action.action.job import ActionOutcome, Job, Produced, Steps
from axl_action.action.outputs import ActionOutputs
from axl_action.action.produce import keep_results
from axl_action.action.publishing import gate_and_publish
from axl_action.action.relay import (
    StaleRelayError,
    download_relay_artifact,
    find_relay_artifact,
    read_relay_artifact,
    relay_artifact_name,
    verify_target,
)
from axl_action.errors import AxlError
from axl_action.report.escape import md_text


def relay_mode(job: Job) -> ActionOutcome:
    """``mode: comment``: compare, gate and comment on the results a fork PR run handed over."""
    ctx = job.ctx
    steps = Steps(job.commands)
    if ctx.triggering_run_id is None:
        return relay_stop(
            job,
            steps,
            "mode: comment relays the results of a fork pull request run; it runs on a workflow_run "
            "event (see docs/workflows/axl-eval-comment.yml).",
            title="Invalid input mode",
        )
    if job.github is None or job.commenter is None:
        return relay_stop(
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
                return relay_stop(
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
            return relay_stop(
                job, steps, f"Not relayed: {err}", title="Fork PR comment not relayed", level="warning"
            )
        except AxlError as err:
            return relay_stop(job, steps, str(err), title="Fork PR comment not relayed")
        job.commands.echo(
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
    produced = Produced(
        candidate, EvalRun(0, Path(candidate.path)), keep_results(job, Path(candidate.path), steps)
    )
    lookup = find_baseline(job)
    outcome = gate_and_publish(job, produced, lookup, steps, history=baseline_history(job, lookup))
    if "PR comment" not in outcome.published:
        outcome.exit_code = 1  # the relay's one job is the comment
    return outcome


def relay_stop(
    job: Job,
    steps: Steps,
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
        job.commands.echo(message)
    outputs = ActionOutputs(mode=job.mode, verdict="error" if level == "error" else "pass")
    summary = f"## axl-eval ({md_text(job.settings.suite)}): fork PR relay\n\n{md_text(message)}\n"
    return steps.finish(job, outputs, summary, exit_code=1 if level == "error" else 0)
