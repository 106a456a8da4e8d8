"""Scoped pull-request runs: re-run only the eval files a change touched, carry the rest.

The edge around the pure rule in ``action/scoping.py``. Before a pull request's run it reads
the baseline's recorded sources (``metadata.sources`` of each result) and its ``scope.json``
stamp, hashes the same files in the PR's checkout, and asks :func:`plan_scope` which eval files
must run. The runner is given only those; the others' baseline results are copied into the
candidate, each marked ``metadata.carriedOver``, so the comparison, the gates and the report
see every eval of the suite. Anything not known for certain re-runs (see ``scoping.py``).

The baseline job stores the stamp (:func:`stamp_bytes`) beside its results.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from axl_action.action.baseline import RESULTS_NAME, BaselineLookup
from axl_action.action.evalstep import EvalRequest, EvalRun, runner_flags
from axl_action.action.ports import RunEvals
from axl_action.action.scoping import ScopePlan, ScopeStamp, plan_scope
from axl_action.action.settings import ActionSettings
from axl_action.errors import AxlError
from axl_action.schema import write_result_file
from axl_action.schema.reading import decode_json
from axl_action.schema.sources import CarriedOver, EvalSources, sha256_file, sha256_text

SCOPE_NAME = "scope.json"
"""The stamp's file name inside the baseline artifact."""


@dataclass(frozen=True)
class ScopedRun:
    """What a pull request runs, and what it carries from its baseline."""

    plan: ScopePlan
    """One decision per eval file (by path relative to the working directory)."""
    carried: dict[str, list[dict[str, Any]]]
    """The baseline's wire results of each carried eval file, marked ``carriedOver``."""

    @property
    def run_files(self) -> tuple[str, ...]:
        return tuple(self.plan.to_run)


def current_stamp(settings: ActionSettings, workdir: Path) -> ScopeStamp:
    """What, besides files, the results depend on: the inputs that reach the runner (and the
    tool's version), and the pricing file's content."""
    from axl_action.evals.journal.base import tool_version

    inputs = {
        "evals": "\n".join(settings.evals),
        "setup": settings.setup or "",
        "working-directory": settings.working_directory,
        "runner-flags": " ".join(runner_flags(settings)),
        "tool-version": tool_version(),
    }
    pricing = sha256_file(workdir / settings.pricing) if settings.pricing else None
    return ScopeStamp.of(inputs, pricing)


def stamp_bytes(settings: ActionSettings, workdir: Path) -> bytes:
    """``scope.json`` for the baseline artifact."""
    return current_stamp(settings, workdir).model_dump_json(indent=2).encode("utf-8") + b"\n"


def eval_files(patterns: Sequence[str], workdir: Path) -> list[str] | None:
    """The eval files ``patterns`` name, relative to ``workdir``, as the runner expands them
    (None when they cannot be expanded here: the runner then runs them and says why)."""
    from axl_action.evals.loader import expand_paths

    rooted = [p if Path(p).is_absolute() else str(workdir / p) for p in patterns]
    try:
        found = expand_paths(rooted)
    except AxlError:
        return None
    out: list[str] = []
    root = workdir.resolve()
    for path in found:
        try:
            out.append(path.resolve().relative_to(root).as_posix())
        except ValueError:
            return None  # outside the working directory: its record could not match
    return out


def _baseline_entries(lookup: BaselineLookup) -> list[dict[str, Any]]:
    raw = lookup.files.get(RESULTS_NAME)
    if raw is None:
        return []
    data = decode_json(raw, RESULTS_NAME)
    entries = data if isinstance(data, list) else [data]
    return [e for e in entries if isinstance(e, dict)]


def _read_stamp(lookup: BaselineLookup) -> ScopeStamp | None:
    raw = lookup.files.get(SCOPE_NAME)
    if raw is None:
        return None
    try:
        return ScopeStamp.model_validate_json(raw)
    except ValidationError:
        return None  # unreadable: nothing is carried (safe)


def _record_of(entry: Mapping[str, Any]) -> EvalSources | None:
    metadata = entry.get("metadata")
    raw = metadata.get("sources") if isinstance(metadata, dict) else None
    if raw is None:
        return None
    try:
        return EvalSources.model_validate(raw)
    except ValidationError:
        return EvalSources(unknown=True, reason="the baseline's metadata.sources is not readable")


def _merged(records: Sequence[EvalSources]) -> EvalSources:
    """One record for a file whose several evals (or runs) were each recorded."""
    if len(records) == 1:
        return records[0]
    reasons = [r.reason for r in records if r.reason]
    return EvalSources(
        eval_file=records[0].eval_file,
        modules={k: v for r in records for k, v in r.modules.items()},
        data={k: v for r in records for k, v in r.data.items()},
        env={k: v for r in records for k, v in r.env.items()},
        unknown=any(r.unknown for r in records),
        reason="; ".join(reasons) or None,
    )


def plan_scoped_run(
    settings: ActionSettings,
    lookup: BaselineLookup,
    *,
    workdir: Path,
    env: Mapping[str, str],
    labels: Sequence[str],
) -> ScopedRun | None:
    """The scoped run of a pull request against ``lookup``'s baseline (None: nothing to scope
    against, so everything runs as configured)."""
    if lookup.results is None or lookup.choice is None:
        return None
    files = eval_files(settings.evals, workdir)
    if not files:
        return None
    try:
        entries = _baseline_entries(lookup)
    except AxlError:
        return None
    by_file: dict[str, list[dict[str, Any]]] = {}
    records: dict[str, list[EvalSources]] = {}
    for entry in entries:
        record = _record_of(entry)
        if record is None or record.eval_file is None:
            continue  # not recorded: the file it came from has no record, so it re-runs
        by_file.setdefault(record.eval_file, []).append(entry)
        records.setdefault(record.eval_file, []).append(record)
    merged = {name: _merged(rs) for name, rs in records.items()}
    paths = {p for r in merged.values() for p in r.files()}
    current_files = {p: sha256_file(workdir / p) for p in sorted(paths)}
    names = {v for r in merged.values() for v in r.env}
    current_env = {v: sha256_text(env[v]) if v in env else None for v in sorted(names)}
    plan = plan_scope(
        files,
        merged,
        current_files,
        current_env,
        baseline_stamp=_read_stamp(lookup),
        current_stamp=current_stamp(settings, workdir),
        force=settings.force_run,
        labels=tuple(labels),
    )
    mark = CarriedOver(
        reason="unchanged", baseline_run_id=str(lookup.choice.run_id), baseline_commit=lookup.choice.head_sha
    ).to_wire()
    carried = {name: [_marked(e, mark) for e in by_file[name]] for name in plan.carried}
    return ScopedRun(plan=plan, carried=carried)


def _marked(entry: dict[str, Any], mark: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(entry)
    out.setdefault("metadata", {})["carriedOver"] = dict(mark)
    return out


def combined_results(scoped: ScopedRun, ran: Sequence[dict[str, Any]], output: Path) -> Path:
    """Write the candidate: each eval file's results in the order the files were given, the
    ones that ran from ``ran`` (the runner's wire results) and the carried ones copied."""
    fresh: dict[str | None, list[dict[str, Any]]] = {}
    for entry in ran:
        record = _record_of(entry)
        fresh.setdefault(record.eval_file if record is not None else None, []).append(entry)
    results: list[dict[str, Any]] = []
    for decision in scoped.plan.decisions:
        results += fresh.pop(decision.eval, []) if decision.run else scoped.carried[decision.eval]
    for rest in fresh.values():  # results the runner wrote under no recorded file
        results += rest
    return write_result_file(output, results if len(results) != 1 else results[0])


def read_results(path: Path) -> list[dict[str, Any]]:
    """The wire results of a results file the runner just wrote (one object or a list)."""
    data = decode_json(path.read_bytes(), str(path))
    return [e for e in (data if isinstance(data, list) else [data]) if isinstance(e, dict)]


def scoped_runner(run_evals: RunEvals, scoped: ScopedRun) -> RunEvals:
    """``run_evals`` for the files the plan runs; the carried results joined to what it wrote.

    When every file is carried, nothing runs and the candidate is the carried results alone.
    """

    def run(request: EvalRequest) -> EvalRun:
        if not scoped.carried:
            return run_evals(request)
        ran: list[dict[str, Any]] = []
        evalrun = EvalRun(0, request.output)
        if scoped.run_files:
            evalrun = run_evals(dataclasses.replace(request, evals=scoped.run_files))
            if evalrun.results_path is None:
                return evalrun
            try:
                ran = read_results(evalrun.results_path)
            except AxlError as err:
                return EvalRun(evalrun.exit_code or 1, None, str(err))
        request.output.parent.mkdir(parents=True, exist_ok=True)
        return dataclasses.replace(evalrun, results_path=combined_results(scoped, ran, request.output))

    return run


def describe_scope(scoped: ScopedRun) -> list[str]:
    """One log line per eval file: whether it runs, and why."""
    lines = []
    for d in scoped.plan.decisions:
        why = d.reason + (f" ({d.detail})" if d.detail else "")
        lines.append(f"{d.eval}: {'runs' if d.run else 'not re-run'}: {why}")
    return lines
