"""Produce the candidate's results: fetch an earlier attempt's journal, restore the response
cache, run the evals, then keep what they left (the journal, the cache, a copy of the results).

Every mode that runs evals starts here (``action/modes.py``); a run without results ends here,
with its error published (:func:`no_results`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from axl_action.action.baseline import RESULTS_NAME
from axl_action.action.cache_step import prefix_of, restore_response_cache, save_response_cache
from axl_action.action.evalstep import EvalRun, build_request
from axl_action.action.job import ActionOutcome, Job, Produced, Steps
from axl_action.action.outputs import ActionOutputs
from axl_action.action.ports import RunEvals
from axl_action.action.resume import fetch_earlier_journal, keep_journal
from axl_action.errors import AxlError
from axl_action.evals.journal.base import journal_path
from axl_action.report.escape import md_text
from axl_action.schema import load_result_file


def produce(
    job: Job, run_evals: RunEvals, env: dict[str, str], steps: Steps, *, extra: tuple[str, ...] = ()
) -> Produced | ActionOutcome:
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
    resumed = fetch_earlier_journal(job, journal) if request.source == "evals" else None
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
        keep_journal(job, journal, resumed, steps)
        if caching:
            # Saved even after a failed run: every reply it paid for is worth keeping.
            with job.commands.group("Save the response cache"):
                save_response_cache(job.cache_service, job.settings, cache_dir, cache_key, job.commands)
    if evalrun.results_path is None:
        return no_results(job, evalrun, steps)
    try:
        candidate = load_result_file(evalrun.results_path)
    except AxlError as err:
        return no_results(job, EvalRun(evalrun.exit_code or 1, None, str(err)), steps)
    return Produced(candidate, evalrun, keep_results(job, evalrun.results_path, steps))


def keep_results(job: Job, path: Path, steps: Steps) -> str:
    """The ``results-path`` output: a copy for later steps ("" when it could not be written)."""

    def keep() -> str:
        return job.files.keep(RESULTS_NAME, path.read_bytes()) if job.files else str(path)

    return steps.guard("results file", keep) or ""


def no_results(job: Job, evalrun: EvalRun, steps: Steps) -> ActionOutcome:
    """The eval run left no results: an error, a summary saying so, the outputs; exit 1."""
    message = evalrun.message or f"the eval run exited {evalrun.exit_code} without results"
    job.commands.error(message, title="axl-eval: no results")
    summary = (
        f"## ❌ axl-eval ({md_text(job.settings.suite)}): no results\n\n"
        f"{md_text(message)}\n\nNothing was compared or gated. See the **Run the evals** group of the log.\n"
    )
    return steps.finish(job, ActionOutputs(mode=job.mode, verdict="error"), summary, exit_code=1)
