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

import math
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from axl_action.errors import InputFileError, UsageError

if TYPE_CHECKING:
    from axl_action.compare.models import GateReport

SUMMARY = "Compare a baseline and a candidate result and apply the gates"

USAGE_LINE = (
    "Usage: axl-eval compare <baseline.json> <candidate.json> [--threshold <value>] "
    "[--fail-on-regression] [--max-scorer-error-rate <0..1>] [--max-item-error-rate <0..1>]"
)

HELP = f"""\
{USAGE_LINE}
       [--max-cost-increase <pct>] [--holm] [--seed <n>] [--json <file>]

Compares a candidate results file against a baseline (each one run, or a list of runs) and
applies the gates. Exit 0 when every gate passes, 1 otherwise.

  --threshold <v>               minimum meaningful score change: one number for every scorer,
                                or name=v,name2=v2 per scorer (others keep their defaults:
                                0.05 LLM, 0 deterministic, 0.1 when the baseline has no types)
  --fail-on-regression          exit 1 when a scorer dropped significantly and items regressed
  --max-scorer-error-rate <r>   refuse to gate when an LLM scorer failed on more than r of its
                                items (deterministic scorers tolerate none), or scored nothing
  --max-item-error-rate <r>     refuse to gate when a run lost more than r of its items in the
                                workflow (default 0.05; 1 disables)
  --max-cost-increase <pct>     exit 1 when the certified cost per run grew by more than pct%
                                (an uncertified cost change is reported, never judged)
  --holm                        Holm-correct significance across scorers
  --seed <n>                    bootstrap seed (default: random; the seed used is in --json)
  --json <file>                 write the comparison and the gate report as JSON
"""

_VALUE_FLAGS = (
    "--threshold",
    "--max-scorer-error-rate",
    "--max-item-error-rate",
    "--max-cost-increase",
    "--seed",
    "--json",
)
_BOOL_FLAGS = ("--fail-on-regression", "--holm")
_RATE_RE = re.compile(r"^\d*\.?\d+$")
_PCT_RE = re.compile(r"^\d*\.?\d+%?$")
_INT_RE = re.compile(r"^-?\d+$")


@dataclass
class CompareArgs:
    """Parsed command line of ``axl-eval compare``."""

    baseline: str
    candidate: str
    thresholds: float | Mapping[str, float] | None = None
    fail_on_regression: bool = False
    max_scorer_error_rate: float | None = None
    max_item_error_rate: float | None = None
    max_cost_increase: float | None = None
    holm: bool = False
    seed: int | None = None
    json_path: str | None = None
    raw_values: dict[str, str] = field(default_factory=dict)


def parse_error_rate(flag: str, raw: str) -> float:
    """``parseErrorRateFlag``: digits with an optional decimal point, within [0, 1]."""
    text = raw.strip()
    if not _RATE_RE.match(text) or not 0 <= float(text) <= 1:
        raise UsageError(f'{flag} must be a number in [0, 1], got "{raw}"')
    return float(text)


def _parse_threshold(raw: str) -> float | Mapping[str, float]:
    from axl_action.compare.thresholds import parse_threshold

    parsed = parse_threshold(raw)
    if parsed is None:
        raise UsageError(
            f'--threshold must be a number or name=value pairs, got "{raw}"',
            hint="e.g. --threshold 0.05 or --threshold accuracy=0.02,tone=0.1",
        )
    if isinstance(parsed, Mapping):
        pieces = {piece.partition("=")[0].strip(): piece.strip() for piece in raw.split(",")}
        bad = [pieces.get(k, k) for k, v in parsed.items() if math.isnan(v)]
    else:
        bad = [raw] if math.isnan(parsed) else []
    if bad:
        raise UsageError(
            f'--threshold has a value that is not a number: "{bad[0]}"',
            hint="thresholds are non-negative numbers like 0.05",
        )
    return parsed


def parse_args(argv: Sequence[str]) -> CompareArgs:
    """Parse ``axl-eval compare`` flags; raises ``UsageError`` with one clear line."""
    values: dict[str, str] = {}
    flags: set[str] = set()
    files: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, inline = arg.partition("=")
        if arg.startswith("--") and name in _VALUE_FLAGS:
            if eq:
                value = inline
            elif i + 1 < len(argv):
                i += 1
                value = argv[i]
            else:
                what = "a value in [0, 1]" if "error-rate" in name else "a value"
                raise UsageError(f"{name} requires {what}")
            values.setdefault(name, value)  # first occurrence wins, as in TS
        elif arg in _BOOL_FLAGS:
            flags.add(arg)
        elif arg.startswith("--"):
            raise UsageError(f"Unknown flag: {arg}", hint="run `axl-eval compare --help` for the flags")
        else:
            files.append(arg)
        i += 1
    max_scorer = values.get("--max-scorer-error-rate")
    max_item = values.get("--max-item-error-rate")
    parsed_scorer = (
        parse_error_rate("--max-scorer-error-rate", max_scorer) if max_scorer is not None else None
    )
    parsed_item = parse_error_rate("--max-item-error-rate", max_item) if max_item is not None else None
    if len(files) != 2:
        raise UsageError(
            f"compare takes two results files (baseline, then candidate), got {len(files)}",
            hint=USAGE_LINE,
        )
    args = CompareArgs(
        baseline=files[0],
        candidate=files[1],
        fail_on_regression="--fail-on-regression" in flags,
        holm="--holm" in flags,
        max_scorer_error_rate=parsed_scorer,
        max_item_error_rate=parsed_item,
        raw_values=values,
    )
    if "--threshold" in values:
        args.thresholds = _parse_threshold(values["--threshold"])
    if "--max-cost-increase" in values:
        raw = values["--max-cost-increase"].strip()
        if not _PCT_RE.match(raw):
            raise UsageError(
                f'--max-cost-increase must be a non-negative percentage, got "{values["--max-cost-increase"]}"',
                hint="e.g. --max-cost-increase 10 allows up to +10% cost per run",
            )
        args.max_cost_increase = float(raw.rstrip("%"))
    if "--seed" in values:
        raw = values["--seed"].strip()
        if not _INT_RE.match(raw):
            raise UsageError(f'--seed must be an integer, got "{values["--seed"]}"')
        args.seed = int(raw)
    if "--json" in values:
        if not values["--json"].strip():
            raise UsageError("--json requires a file path")
        args.json_path = values["--json"]
    return args


def _warn(err: TextIO, text: str) -> None:
    print(f"[axl-eval] {text}", file=err)


def run(argv: list[str], *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Entry point of ``axl-eval compare``; returns the exit code."""
    stdout = out or sys.stdout
    stderr = err or sys.stderr
    if argv and argv[0] in ("-h", "--help"):
        print(HELP, file=stdout)
        return 0
    args = parse_args(argv)

    from axl_action.compare.console import format_compare
    from axl_action.compare.engine import CompareOptions, compare_results
    from axl_action.compare.gates import (
        GateOptions,
        evaluate_gates,
        scorer_subset_refusal,
        scorer_subset_sides,
        scorer_subset_warning,
    )
    from axl_action.compare.lean import load_for_compare
    from axl_action.schema import dumps_js

    baseline = load_for_compare(args.baseline).results
    candidate = load_for_compare(args.candidate).results

    subset = scorer_subset_sides(baseline[0], candidate[0])
    for side, ran in subset:
        _warn(stderr, "WARNING: " + scorer_subset_warning(side, ran))
    if subset and args.fail_on_regression:
        _warn(stderr, "Refusing to gate: " + scorer_subset_refusal([side for side, _ in subset]))
        return 1

    comparison = compare_results(
        baseline,
        candidate,
        CompareOptions(thresholds=args.thresholds, seed=args.seed, holm=args.holm),
    )
    report = evaluate_gates(
        comparison,
        baseline,
        candidate,
        GateOptions(
            fail_on_regression=args.fail_on_regression,
            max_scorer_error_rate=args.max_scorer_error_rate,
            max_item_error_rate=args.max_item_error_rate,
            max_cost_increase=args.max_cost_increase,
        ),
    )
    if isinstance(args.thresholds, Mapping):
        unknown = [k for k in args.thresholds if k not in comparison.scorers]
        if unknown:
            _warn(
                stderr,
                f"WARNING: --threshold names scorer(s) not in these results: {', '.join(unknown)} "
                f"(scorers: {', '.join(comparison.scorers)})",
            )

    print(format_compare(comparison), file=stdout)

    # stderr in the reference order; a refusal ends the reference's output, so later lines
    # are only printed when nothing before them refused.
    from axl_action.compare.gates import divergent_skip_notes, thinned_sample_warnings

    thinned = thinned_sample_warnings(comparison)
    for line in thinned:
        _warn(stderr, "WARNING: " + line)
    for line in divergent_skip_notes(comparison):
        _warn(stderr, "NOTE: " + line)
    if thinned and args.max_scorer_error_rate is None:
        _warn(stderr, "(advisory — pass --max-scorer-error-rate <0..1> to fail CI on a thinned sample)")

    code = _report_gates(report, stderr)
    if args.json_path:
        from pathlib import Path

        payload = {"comparison": comparison.to_wire(), "gates": report.to_wire()}
        target = Path(args.json_path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(dumps_js(payload) + "\n", encoding="utf-8")
        except OSError as err:
            raise InputFileError(
                f"cannot write --json file {target}: {err.strerror or err}", hint="pass a writable file path"
            ) from None
        print(f"Comparison saved to {target}", file=stdout)
    return code


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
    return code
