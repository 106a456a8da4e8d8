"""Which job the action does on this run: store a baseline, compare a PR, relay a comment, ...

``mode: auto`` decides from the event, the same way every time (each mode's function is in
``action/modes.py``):

============================================  ==========  ========================================
event                                         mode        what happens
============================================  ==========  ========================================
any event, ``shard`` set                      shard       run one slice, upload it for a merge job
push to the baseline branch                   baseline    run, self-gate, upload the baseline
pull_request / pull_request_target            compare     run, compare, comment, gate
merge_group                                   compare     same, without a comment (no PR yet)
workflow_run                                  comment     post the comment a fork PR run stored
anything else (other branches, tags, cron)    run         run, self-gate, summarise
============================================  ==========  ========================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ResolvedMode = Literal["baseline", "compare", "comment", "run", "shard"]

PR_EVENTS = frozenset({"pull_request", "pull_request_target"})


@dataclass(frozen=True)
class ModeChoice:
    """The mode that runs, and a sentence saying why (printed in the log)."""

    mode: ResolvedMode
    reason: str


def resolve_mode(
    requested: str,
    *,
    event_name: str,
    ref: str,
    baseline_branch: str | None,
    sharded: bool = False,
) -> ModeChoice:
    """Pick the mode for ``requested`` (an input value) on this event.

    ``baseline_branch`` is the branch whose pushes produce baselines (the input, or the
    repository's default branch); None when neither is known.
    """
    if requested == "comment":
        return ModeChoice("comment", "mode: comment was requested")
    if sharded:
        return ModeChoice("shard", "shard is set: this job runs one slice and uploads it for the merge job")
    if requested == "baseline":
        return ModeChoice("baseline", "mode: baseline was requested")
    if requested == "compare":
        return ModeChoice("compare", "mode: compare was requested")
    if event_name == "workflow_run":
        return ModeChoice(
            "comment", "a workflow_run event: compare the results a fork PR run stored and post the comment"
        )
    if event_name in PR_EVENTS:
        return ModeChoice("compare", f"a {event_name} event is compared against the baseline")
    if event_name == "merge_group":
        return ModeChoice("compare", "a merge_group event is compared against the baseline (no PR comment)")
    if event_name == "push" and baseline_branch and ref == f"refs/heads/{baseline_branch}":
        return ModeChoice("baseline", f"a push to {baseline_branch} stores a new baseline")
    where = ref or "this ref"
    return ModeChoice("run", f"a {event_name or 'local'} event on {where} is run and summarised only")
