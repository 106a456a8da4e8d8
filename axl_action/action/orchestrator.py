"""The action's flow: run → (find baseline → compare) → gate → publish everything → exit.

``run_action`` receives every client as an argument and touches neither the environment nor
``/github``; ``entrypoint.main`` builds the clients. It puts them in one frozen :class:`Job`
and calls the mode's own function (``run_mode``, ``baseline_mode``, ``compare_mode``,
``shard_mode``, ``relay_mode``); each builds its outputs and outcome from return values, so no
state is set in one step and read back in another.

This module is the flow's front door and its rules; the rooms are their own modules:

============================  ==================================================================
``action/job.py``             ``Job``, ``RunContext``, ``ActionOutcome``, ``Steps``, artifact names
``action/mode_choice.py``     which mode runs on this event (``resolve_mode``)
``action/modes.py``           ``run_action`` and the run, baseline, compare and shard modes
``action/relay_mode.py``      ``mode: comment``, the fork relay, and its stops
``action/produce.py``         the eval run, with the journal and the response cache around it
``action/resume.py``          the run journal between attempts
``action/baseline_step.py``   the baseline searches and their log lines
``action/publishing.py``      compare, gate, then the report, baseline, summary, annotations, outputs
``action/commenting.py``      the sticky PR comment, and the relay data when the token is read-only
============================  ==================================================================

Every line they write goes through the workflow-command writer (``Commands``). Rules they
keep, in order of importance:

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

from axl_action.action.commenting import relayed_comment
from axl_action.action.job import ActionOutcome, Job, RunContext, artifact_name, shard_artifact_name
from axl_action.action.modes import baseline_mode, compare_mode, run_action, run_mode, shard_mode
from axl_action.action.relay_mode import relay_mode

__all__ = [
    "ActionOutcome",
    "Job",
    "RunContext",
    "artifact_name",
    "baseline_mode",
    "compare_mode",
    "relay_mode",
    "relayed_comment",
    "run_action",
    "run_mode",
    "shard_artifact_name",
    "shard_mode",
]
