"""``axl-eval compare <baseline.json> <candidate.json> [flags]``: compare two results and gate.

stdout carries the comparison table (spec §10); warnings, notes and refusals go to stderr in
the reference order (spec §7.5). Exit codes: 0 the gates passed; 1 a gate failed or refused
to judge, the inputs cannot be compared, or a flag or file is bad.

Differences from the TS CLI, all on the side of saying more: unknown flags, a missing flag
value and a non-numeric ``--threshold`` are errors (TS ignores them or silently uses NaN), a
``--threshold`` override naming no scorer is a warning, and the flags ``--max-cost-increase``,
``--holm``, ``--seed`` and ``--json`` are ours.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from axl_action.cli.commands import compare_and_gate, help_requested
from axl_action.cli.flags import GATE_VALUE_FLAGS, GateFlags, gate_flags, scan
from axl_action.errors import InputFileError, UsageError

if TYPE_CHECKING:
    from axl_action.compare.models import Comparison, GateReport
    from axl_action.history.analysis import HistoryAnalysis
    from axl_action.schema import RunHeader

SUMMARY = "Compare a baseline and a candidate result and apply the gates"

USAGE_LINE = (
    "Usage: axl-eval compare <baseline.json> <candidate.json> [--threshold <value>] "
    "[--fail-on-regression] [--max-scorer-error-rate <0..1>] [--max-item-error-rate <0..1>]"
)

HELP = f"""\
{USAGE_LINE}
       [--max-cost-increase <pct>] [--min-pass-rate <r|name=r,...>] [--pass-score <s>]
       [--holm] [--seed <n>] [--json <file>] [--history <file>]

Compares a candidate results file against a baseline (each one run, or a list of runs) and
applies the gates. Exit 0 when every gate passes, 1 otherwise.

  --threshold <v>               minimum meaningful score change: one number for every scorer,
                                or name=v,name2=v2 per scorer (others keep their defaults:
                                0.05 LLM, 0 deterministic, 0.1 when the baseline has no types);
                                auto: each scorer's noise band measured from --history (needs 5
                                comparable baseline runs, else that scorer keeps its default)
  --fail-on-regression          exit 1 when a scorer dropped significantly and items regressed
  --max-scorer-error-rate <r>   refuse to gate when an LLM scorer failed on more than r of its
                                items (deterministic scorers tolerate none), or scored nothing
  --max-item-error-rate <r>     refuse to gate when a run lost more than r of its items in the
                                workflow (default 0.05; 1 disables)
  --max-cost-increase <pct>     exit 1 when the certified cost per run grew by more than pct%
                                (an uncertified cost change is reported, never judged)
  --min-pass-rate <r>           exit 1 when a scorer's pass rate on the candidate is below r:
                                one rate for every scorer, or name=r,name2=r2; every repeat of
                                an item counts (a failed workflow or scorer is a try that did not
                                pass; cancelled, budget-stopped and N/A are not counted)
  --pass-score <s>              the score at or above which a try passes (default 0.5)
  --holm                        Holm-correct significance across scorers
  --seed <n>                    bootstrap seed (default: random; the seed used is in --json)
  --json <file>                 write the comparison and the gate report as JSON
  --history <file>              a history.json of baseline runs (`axl-eval history`): prints each
                                scorer's delta next to how much baseline runs vary, and counts
                                regressions on flaky items
"""

_VALUE_FLAGS = (*GATE_VALUE_FLAGS, "--json")
_BOOL_FLAGS = ("--fail-on-regression", "--holm")


@dataclass
class CompareArgs:
    """Parsed command line of ``axl-eval compare``."""

    baseline: str
    candidate: str
    gates: GateFlags
    holm: bool = False
    json_path: str | None = None
    raw_values: dict[str, str] = field(default_factory=dict)


def parse_args(argv: Sequence[str]) -> CompareArgs:
    """Parse ``axl-eval compare`` flags; raises ``UsageError`` with one clear line."""
    scanned = scan(argv, _VALUE_FLAGS, _BOOL_FLAGS, "compare")
    gates = gate_flags(scanned)
    files = scanned.positionals
    if len(files) != 2:
        raise UsageError(
            f"compare takes two results files (baseline, then candidate), got {len(files)}",
            hint=USAGE_LINE,
        )
    json_path = scanned.values.get("--json")
    if json_path is not None and not json_path.strip():
        raise UsageError("--json requires a file path")
    return CompareArgs(
        baseline=files[0],
        candidate=files[1],
        gates=gates,
        holm="--holm" in scanned.flags,
        json_path=json_path,
        raw_values=scanned.values,
    )


def _warn(err: TextIO, text: str) -> None:
    print(f"[axl-eval] {text}", file=err)


def run(argv: list[str], *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Entry point of ``axl-eval compare``; returns the exit code."""
    stdout = out or sys.stdout
    stderr = err or sys.stderr
    if help_requested(argv, HELP, stdout):
        return 0
    args = parse_args(argv)

    # The readers' worker processes start before numpy and pydantic are imported (the item
    # pass needs neither): this process imports them, and the comparison code, while they parse.
    from axl_action.cli.parallel_read import ParallelReads

    with ParallelReads([args.baseline, args.candidate]) as reads:
        from axl_action.compare.console import format_compare
        from axl_action.compare.gates import (
            scorer_subset_refusal,
            scorer_subset_sides,
            scorer_subset_warning,
        )
        from axl_action.schema import read_accounting

        baseline_file, candidate_file = reads.wait()
    baseline, candidate = baseline_file.runs, candidate_file.runs

    subset = scorer_subset_sides(baseline[0].header, candidate[0].header)
    for side, ran in subset:
        _warn(stderr, "WARNING: " + scorer_subset_warning(side, ran))
    if subset and args.gates.fail_on_regression:
        _warn(stderr, "Refusing to gate: " + scorer_subset_refusal([side for side, _ in subset]))
        return 1

    from axl_action.cli.history import history_for

    history, auto = history_for(args.gates, baseline[0].header)
    for note in auto.notes if auto is not None else ():
        _warn(stderr, "NOTE: " + note)
    comparison, report = compare_and_gate(args.gates, baseline, candidate, auto, holm=args.holm)
    _argument_notes(args, baseline[0].header, candidate[0].header, comparison, stderr)

    print(
        format_compare(comparison, read_accounting(baseline[0].header), read_accounting(candidate[0].header)),
        file=stdout,
    )
    analysis = None
    if history is not None:
        from axl_action.history.analysis import analyse, console_lines

        header = baseline[0].header
        analysis = analyse(
            history, scorers=header.scorer_names, types=header.scorer_types, comparison=comparison, auto=auto
        )
        print("\n".join(["", *console_lines(comparison, analysis)]), file=stdout)

    # stderr in the reference order; a refusal ends the reference's output, so later lines
    # are only printed when nothing before them refused.
    from axl_action.compare.gates import divergent_skip_notes, thinned_sample_warnings

    thinned = thinned_sample_warnings(comparison)
    for line in thinned:
        _warn(stderr, "WARNING: " + line)
    for line in divergent_skip_notes(comparison):
        _warn(stderr, "NOTE: " + line)
    if thinned and args.gates.max_scorer_error_rate is None:
        _warn(stderr, "(advisory — pass --max-scorer-error-rate <0..1> to fail CI on a thinned sample)")

    code = _report_gates(report, stderr)
    if args.json_path:
        _write_json(args.json_path, comparison, report, analysis, stdout)
    return code


def _argument_notes(
    args: CompareArgs, baseline: RunHeader, candidate: RunHeader, comparison: Comparison, stderr: TextIO
) -> None:
    """Note files that look swapped or identical, and warn of ``--threshold`` names no scorer has."""
    from axl_action.compare.hints import argument_hints

    for hint in argument_hints(
        baseline,
        candidate,
        args.baseline,
        args.candidate,
        usage="axl-eval compare <baseline.json> <candidate.json>",
    ):
        _warn(stderr, "NOTE: " + hint)
    if isinstance(args.gates.thresholds, Mapping):
        unknown = [k for k in args.gates.thresholds if k not in comparison.scorers]
        if unknown:
            _warn(
                stderr,
                f"WARNING: --threshold names scorer(s) not in these results: {', '.join(unknown)} "
                f"(scorers: {', '.join(comparison.scorers)})",
            )


def _write_json(
    path: str, comparison: Comparison, report: GateReport, analysis: HistoryAnalysis | None, stdout: TextIO
) -> None:
    """Write the ``--json`` file (comparison, gate report, history analysis) and say where it went."""
    from pathlib import Path

    from axl_action.schema import dumps_js

    payload = {"comparison": comparison.to_wire(), "gates": report.to_wire()}
    if analysis is not None:
        from axl_action.history.analysis import analysis_wire

        payload["history"] = analysis_wire(analysis, comparison)
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(dumps_js(payload) + "\n", encoding="utf-8")
    except OSError as err:
        raise InputFileError(
            f"cannot write --json file {target}: {err.strerror or err}", hint="pass a writable file path"
        ) from None
    print(f"Comparison saved to {target}", file=stdout)


def _report_gates(report: GateReport, stderr: TextIO) -> int:
    """Print the gate outcomes to stderr in the reference order; return the exit code."""
    scorer_gate = report.gate("scorer-error-rate")
    if scorer_gate.status == "refused":
        _warn(stderr, "Refusing to gate: " + scorer_gate.message)
        return 1
    item_gate = report.gate("item-error-rate")
    if item_gate.status in ("warn", "refused"):
        warnings = (
            item_gate.details if item_gate.status == "refused" else [item_gate.message, *item_gate.details]
        )
        for line in warnings:
            _warn(stderr, "WARNING: " + line)
    if item_gate.status == "refused":
        _warn(stderr, "Refusing to gate: " + item_gate.message)
        return 1
    budget = report.gate("budget")
    if budget.status == "warn":
        for line in [budget.message, *budget.details]:
            _warn(stderr, "WARNING: " + line)
    compat = report.gate("compatibility")
    if compat.status == "warn":
        for line in [compat.message, *compat.details]:
            _warn(stderr, "WARNING: compatibility: " + line)
    code = 0
    cost = report.gate("cost")
    if cost.status == "fail":
        _warn(stderr, "COST INCREASE: " + cost.message)
        code = 1
    elif cost.status == "warn":
        _warn(stderr, "NOTE: " + cost.message)
    if report.gate("regressions").status == "fail":
        code = 1
    return max(code, _report_pass_rate(report, stderr))


def _report_pass_rate(report: GateReport, stderr: TextIO) -> int:
    """The ``--min-pass-rate`` gate's lines (only when it was enabled); its exit code."""
    gate = next((g for g in report.gates if g.name == "pass-rate"), None)
    if gate is None:
        return 0
    for line in gate.details:
        _warn(stderr, "WARNING: " + line)
    if gate.status == "refused":
        _warn(stderr, "Refusing to gate: " + gate.message)
    elif gate.status == "fail":
        _warn(stderr, "PASS RATE: " + gate.message)
    return 1 if gate.status in ("fail", "refused") else 0


def help_text() -> str:
    """The full help of this command (also shown by `axl-eval --help`)."""
    return HELP
