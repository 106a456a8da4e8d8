"""Flag scanning and value parsing shared by the ``compare`` and ``report`` commands.

Both commands take the same gate flags with the same validation, and mirror the TS CLI's
hand-rolled scanner (``--flag value`` or ``--flag=value``, first occurrence wins) rather than
argparse, whose usage dumps and prefix matching the reference does not have.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar

from axl_action import values
from axl_action.errors import UsageError
from axl_action.values import AUTO

if TYPE_CHECKING:
    from axl_action.compare.engine import CompareOptions
    from axl_action.compare.gates import GateOptions
    from axl_action.compare.thresholds import Thresholds

T = TypeVar("T")

#: The value flags that decide the gates, shared by ``compare`` and ``report``.
GATE_VALUE_FLAGS = (
    "--threshold",
    "--max-scorer-error-rate",
    "--max-item-error-rate",
    "--max-cost-increase",
    "--min-pass-rate",
    "--pass-score",
    "--seed",
    "--history",
)


@dataclass(frozen=True)
class Scanned:
    """A command line split into flag values, boolean flags and positional arguments."""

    values: dict[str, str]
    """``--flag value`` pairs (the first occurrence of a flag wins, as in the TS CLI)."""
    flags: frozenset[str]
    """Boolean flags that were given."""
    positionals: list[str]
    """Everything that is not a flag, in order."""


def scan(argv: Sequence[str], value_flags: Sequence[str], bool_flags: Sequence[str], command: str) -> Scanned:
    """Split ``argv``; an unknown flag or a flag without its value is a ``UsageError``."""
    values: dict[str, str] = {}
    flags: set[str] = set()
    positionals: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, inline = arg.partition("=")
        if arg.startswith("--") and name in value_flags:
            if eq:
                value = inline
            elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                i += 1
                value = argv[i]
            else:
                # A following flag is not taken as the value: `--json --holm` would write a file
                # named --holm and lose the flag.
                what = "a value in [0, 1]" if "error-rate" in name else "a value"
                after = f", got the flag {argv[i + 1]}" if i + 1 < len(argv) else ""
                raise UsageError(
                    f"{name} requires {what}{after}",
                    hint=f"write {name}=VALUE if the value itself starts with --" if after else None,
                )
            if name in values and values[name] != value:
                raise UsageError(f"{name} was given twice ({values[name]} and {value})", hint="give it once")
            values[name] = value
        elif arg in bool_flags:
            flags.add(arg)
        elif arg.startswith("--"):
            raise UsageError(f"Unknown flag: {arg}", hint=f"run `axl-eval {command} --help` for the flags")
        else:
            positionals.append(arg)
        i += 1
    return Scanned(values=values, flags=frozenset(flags), positionals=positionals)


def flag_value(parse: Callable[[str], T], raw: str, message: str, *, hint: str | None = None) -> T:
    """The one rule of a flag's value: ``parse`` (a :mod:`axl_action.values` parser) reads
    ``raw``, and the ``ValueError`` it refuses a text with becomes one ``UsageError`` worded for
    the flag (``message``), with no traceback chained to it."""
    try:
        return parse(raw)
    except ValueError:
        raise UsageError(message, hint=hint) from None


def error_rate(flag: str, raw: str) -> float:
    """``parseErrorRateFlag``: digits with an optional decimal point, within [0, 1]."""
    return flag_value(values.rate, raw, f'{flag} must be a number in [0, 1], got "{raw}"')


def thresholds(raw: str) -> float | Mapping[str, float] | Literal["auto"]:
    """``--threshold 0.05``, ``--threshold name=0.02,other=0.1`` or ``--threshold auto``."""
    try:
        return values.threshold(raw)
    except values.NotANumber as err:
        raise UsageError(
            f'--threshold has a value that is not a number: "{err.piece}"',
            hint="thresholds are non-negative numbers like 0.05",
        ) from None
    except ValueError:
        raise UsageError(
            f'--threshold must be a number, name=value pairs or auto, got "{raw}"',
            hint="e.g. --threshold 0.05, --threshold accuracy=0.02,tone=0.1 or --threshold auto --history history.json",
        ) from None


def percentage(flag: str, raw: str) -> float:
    """A non-negative percentage, with or without a trailing ``%``."""
    return flag_value(
        values.percentage,
        raw,
        f'{flag} must be a non-negative percentage, got "{raw}"',
        hint=f"e.g. {flag} 10 allows up to +10% cost per run",
    )


def integer(flag: str, raw: str) -> int:
    """A whole number (negative allowed)."""
    return flag_value(values.integer, raw, f'{flag} must be an integer, got "{raw}"')


@dataclass(frozen=True)
class GateFlags:
    """The gate-related flags of ``compare`` and ``report``, parsed and validated."""

    thresholds: float | Mapping[str, float] | Literal["auto"] | None
    """``--threshold``: one value for every scorer, per-scorer overrides, or ``auto``."""
    fail_on_regression: bool
    """``--fail-on-regression``."""
    max_scorer_error_rate: float | None
    """``--max-scorer-error-rate``."""
    max_item_error_rate: float | None
    """``--max-item-error-rate``."""
    max_cost_increase: float | None
    """``--max-cost-increase`` in percent."""
    seed: int | None
    """``--seed`` of the bootstrap."""
    history: str | None = None
    min_pass_rate: float | Mapping[str, float] | None = None
    """``--min-pass-rate``: one rate for every scorer, or per-scorer rates."""
    pass_score: float | None = None
    """``--pass-score`` (None: the default 0.5)."""
    """``--history``: a history.json of baseline runs (noise bands, flaky items, ``auto``)."""

    def compare_options(
        self, *, holm: bool = False, measured: Mapping[str, float] | None = None
    ) -> CompareOptions:
        """The compare engine's options these flags ask for; ``measured``: the thresholds
        ``--threshold auto`` measured from the history."""
        from axl_action.compare.engine import CompareOptions

        return CompareOptions(thresholds=thresholds_of(self.thresholds, measured), seed=self.seed, holm=holm)

    def gate_options(self) -> GateOptions:
        """The gates' options these flags ask for."""
        return gate_options_of(self)


class GateLimits(Protocol):
    """The gate limits a command line or the action's inputs give (``GateFlags``, ``ActionSettings``)."""

    @property
    def fail_on_regression(self) -> bool: ...
    @property
    def max_scorer_error_rate(self) -> float | None: ...
    @property
    def max_item_error_rate(self) -> float | None: ...
    @property
    def max_cost_increase(self) -> float | None: ...
    @property
    def min_pass_rate(self) -> float | Mapping[str, float] | None: ...
    @property
    def pass_score(self) -> float | None: ...


def gate_options_of(limits: GateLimits) -> GateOptions:
    """The gates' options ``limits`` ask for (no ``pass_score``: the gates' default)."""
    from axl_action.compare.gates import GateOptions

    return GateOptions(
        fail_on_regression=limits.fail_on_regression,
        max_scorer_error_rate=limits.max_scorer_error_rate,
        max_item_error_rate=limits.max_item_error_rate,
        max_cost_increase=limits.max_cost_increase,
        min_pass_rate=limits.min_pass_rate,
        **({"pass_score": limits.pass_score} if limits.pass_score is not None else {}),
    )


def thresholds_of(
    chosen: float | Mapping[str, float] | Literal["auto"] | None, measured: Mapping[str, float] | None
) -> Thresholds:
    """The compare engine's thresholds: under ``auto`` the ones ``measured`` from the history (a
    scorer it leaves out keeps its default), else ``chosen`` as given."""
    from axl_action.compare.thresholds import MeasuredThresholds

    return MeasuredThresholds(measured or {}) if chosen == AUTO else chosen


def gate_flags(scanned: Scanned) -> GateFlags:
    """Validate the shared gate flags of a scanned command line."""
    v = scanned.values

    def opt(flag: str) -> str | None:
        return v.get(flag)

    rate_s, rate_i, pct, seed, thr, history = (
        opt("--max-scorer-error-rate"),
        opt("--max-item-error-rate"),
        opt("--max-cost-increase"),
        opt("--seed"),
        opt("--threshold"),
        opt("--history"),
    )
    floor, score = opt("--min-pass-rate"), opt("--pass-score")
    if history is not None and not history.strip():
        raise UsageError("--history requires a file path", hint="e.g. --history history.json")
    if thr is not None and thr.strip() == AUTO and history is None:
        raise UsageError(
            "--threshold auto needs --history <history.json>: the thresholds are measured from past baseline runs",
            hint="build one with `axl-eval history <results.json ...> --output history.json`",
        )
    return GateFlags(
        thresholds=thresholds(thr) if thr is not None else None,
        fail_on_regression="--fail-on-regression" in scanned.flags,
        max_scorer_error_rate=error_rate("--max-scorer-error-rate", rate_s) if rate_s is not None else None,
        max_item_error_rate=error_rate("--max-item-error-rate", rate_i) if rate_i is not None else None,
        max_cost_increase=percentage("--max-cost-increase", pct) if pct is not None else None,
        seed=integer("--seed", seed) if seed is not None else None,
        history=history,
        min_pass_rate=pass_rates(floor) if floor is not None else None,
        pass_score=error_rate("--pass-score", score) if score is not None else None,
    )


def pass_rates(raw: str) -> float | Mapping[str, float]:
    """``--min-pass-rate 0.9`` or ``--min-pass-rate accuracy=0.95,tone=0.8``."""
    try:
        return values.pass_rates(raw)
    except ValueError as err:
        raise UsageError(
            f'--min-pass-rate {err}, got "{raw}"',
            hint="e.g. --min-pass-rate 0.9 or --min-pass-rate accuracy=0.95,tone=0.8",
        ) from None
