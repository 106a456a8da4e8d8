"""What every report shows, computed once: the PR comment, job summary and HTML all read this.

Numbers stay numbers (templates format them); text that came from a model, a dataset, a
scorer or a PR is kept raw here and escaped by the template filter for wherever it lands.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from axl_action.history.panel import HistoryPanel

Verdict = Literal["pass", "fail", "warn"]
GateStatus = Literal["pass", "fail", "warn", "refused", "skipped"]
ScorerVerdict = Literal["regressed", "improved", "unchanged", "inconclusive", "new"]


class _Model(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, frozen=False)


class ReportLimits(_Model):
    """How much detail a rendering may include (the comment trims these step by step)."""

    top_items: int = 10
    """Regressed items shown with excerpts."""
    excerpt_chars: int = 280
    """Characters kept of each output/input excerpt."""
    max_scorers: int = 50
    """Scorer rows shown in the scorer table."""
    max_models: int = 20
    """Model-timing rows shown."""
    show_timing: bool = True
    """Whether the model timing section is shown."""
    show_accounting: bool = True
    """Whether the accounting details are shown."""
    show_items: bool = True
    """Whether the regressed-items section is shown at all."""
    show_history: bool = True
    """Whether the history rows (sparklines of past baseline means) are shown."""


class GateRow(_Model):
    """One gate's outcome as a table row."""

    name: str
    """Stable gate id: budget, item-error-rate, scorer-error-rate, regressions, cost, compatibility."""
    label: str
    """Human name, e.g. ``Item error rate``."""
    limit: str
    """The configured limit, formatted (``5%``, ``$1.00``, ``none``)."""
    observed: str
    """What this run measured, formatted."""
    status: GateStatus
    """pass / fail / warn / refused / skipped."""
    message: str = ""
    """One-sentence explanation (may contain scorer names: untrusted)."""


class ScorerRow(_Model):
    """One scorer, baseline vs candidate."""

    name: str
    """Scorer name (untrusted)."""
    kind: str | None = None
    """``llm`` or ``deterministic`` when the result says."""
    baseline_mean: float | None = None
    """Baseline mean score (3 dp); None without a baseline or when it scored nothing there."""
    candidate_mean: float | None = None
    """Candidate mean score (3 dp); None when the scorer scored nothing."""
    delta: float | None = None
    """candidate - baseline (3 dp); None unless both sides scored something."""
    delta_percent: float | None = None
    """Relative change in percent (3 dp)."""
    unscored: str | None = None
    """``nothing scored on the candidate (30 failed)`` when a side has no score to average."""
    ci_lower: float | None = None
    """Lower bound of the paired-bootstrap 95% CI of the delta."""
    ci_upper: float | None = None
    """Upper bound of that CI."""
    significant: bool | None = None
    """Whether the CI excludes zero and the mean change reaches the threshold."""
    verdict: ScorerVerdict = "new"
    """regressed / improved / unchanged / inconclusive, or ``new`` without a baseline."""
    threshold: float | None = None
    """Per-item change a regression must exceed."""
    mde: float | None = None
    """Minimum detectable effect at this sample size, when computed."""
    regressed_items: int = 0
    """Items whose score on this scorer fell by more than the threshold."""
    improved_items: int = 0
    """Items whose score rose by more than the threshold."""
    scored: int = 0
    """Candidate items with a score."""
    failed: int = 0
    """Candidate items where the scorer failed."""
    skipped: int = 0
    """Candidate items where the scorer did not apply."""
    n: int = 0
    """Paired samples behind the CI."""
    noise_band: float | None = None
    """How much this scorer's mean moves between baseline runs (± half-width), from history."""
    noise_moves: int = 0
    """Run-to-run moves the band was measured from."""


class CostBlock(_Model):
    """Spend, baseline vs candidate. Amounts are unrounded (the JSON's 3 decimals say $0.00
    for most eval runs); the ``*_shown`` texts are what the reports print."""

    candidate_total: float
    """Candidate known cost in USD (per run), unrounded."""
    candidate_text: str
    """``$0.42`` or ``$0.42 (incomplete: 2 usage_missing)``."""
    candidate_shown: str = ""
    """The candidate's side of ``before → after``: ``$0.00175``, ``unpriced``, ``≥ $0.12``."""
    baseline_total: float | None = None
    """Baseline known cost in USD (per run), unrounded."""
    baseline_text: str | None = None
    """Baseline known spend, formatted like ``candidate_text``."""
    baseline_shown: str | None = None
    """The baseline's side of ``before → after``, with as many digits as the candidate's."""
    delta: float | None = None
    """candidate - baseline in USD, unrounded (its sign is the direction)."""
    unpriced_models: list[str] = Field(default_factory=list)
    """Models the candidate (or baseline) called without a price (untrusted names)."""
    delta_percent: float | None = None
    """Relative change; None from a $0 baseline."""
    certified: bool | None = None
    """True when both sides measured the same work completely; None without a baseline."""
    reason: str | None = None
    """Why the comparison is not certified."""


class ModelTimingRow(_Model):
    """Per-call latency of one model."""

    model: str
    """Model id, e.g. ``openai:gpt-4o-mini``."""
    calls: int
    """Timed successful calls."""
    wire_mean_ms: float | None = None
    """Mean wire time per call."""
    wire_p95_ms: float | None = None
    """95th percentile wire time per call."""
    first_token_mean_ms: float | None = None
    """Mean time to first token (streaming calls)."""
    queued_mean_ms: float | None = None
    """Mean time waiting for a concurrency slot."""
    retry_mean_ms: float | None = None
    """Mean time in retry backoff."""
    rate_limited: int = 0
    """Rate-limit retries summed over calls."""


class TimingBlock(_Model):
    """Mean item latency, baseline vs candidate (milliseconds)."""

    candidate_mean_ms: float
    """Candidate mean item duration."""
    baseline_mean_ms: float | None = None
    """Baseline mean item duration."""
    delta_percent: float | None = None
    """Relative change."""


class Provenance(_Model):
    """Where the baseline came from and how far to trust it."""

    baseline_id: str | None = None
    """Result id of the baseline."""
    commit_sha: str | None = None
    """Commit the baseline was produced from."""
    branch: str | None = None
    """Branch of that commit."""
    run_id: str | None = None
    """Workflow run id that produced it."""
    run_url: str | None = None
    """Link to that workflow run."""
    age: str | None = None
    """How old it is, e.g. ``3 days``."""
    reason: str | None = None
    """Why this baseline was chosen."""
    warnings: list[str] = Field(default_factory=list)
    """Compatibility and freshness warnings."""


class ScoreChange(_Model):
    """One scorer's change on one item."""

    scorer: str
    """Scorer name."""
    baseline: float | None
    """Baseline score."""
    candidate: float | None
    """Candidate score."""
    delta: float | None
    """candidate - baseline."""
    regressed: bool = False
    """Whether the compare engine counted this as a regression."""
    flaky: bool = False
    """The item is flaky for this scorer (its score moved across unchanged baselines)."""


class ItemExcerpt(_Model):
    """A regressed item, shortened for the comment."""

    index: int
    """Position in the dataset."""
    key: str
    """Stable item key (``id:...`` or a hash)."""
    input: str
    """Input excerpt (untrusted)."""
    baseline_output: str
    """Baseline output excerpt (untrusted)."""
    candidate_output: str
    """Candidate output excerpt (untrusted)."""
    changes: list[ScoreChange]
    """Per-scorer changes, regressions first."""
    worst_delta: float
    """Most negative delta across scorers."""
    reasoning: str | None = None
    """Judge reasoning of the candidate's worst scorer, shortened (untrusted)."""
    outcome: str = "completed"
    """Candidate outcome."""
    flaky: bool = False
    """Every regression of this item is on a scorer it is flaky for (listed last, marked 🔁)."""


class AccountingPanel(_Model):
    """The candidate's accounting record, for the details section."""

    completeness: str
    """complete / incomplete / unverified."""
    reasons: dict[str, int] = Field(default_factory=dict)
    """Why spend is unknown, with counts."""
    usage: dict[str, float] = Field(default_factory=dict)
    """Token usage totals (non-zero keys)."""
    operations: dict[str, int] = Field(default_factory=dict)
    """total / settled / unknown / denied."""
    by_kind: dict[str, int] = Field(default_factory=dict)
    """Operations per kind."""
    breakdown: dict[str, float] = Field(default_factory=dict)
    """Known cost: generation / judging / external."""
    provenance: dict[str, float] = Field(default_factory=dict)
    """Known cost by source of the figure."""
    budget: str | None = None
    """Budget snapshot line."""
    pricing_version: str | None = None
    """Version of the pricing table used."""
    scope: str | None = None
    """run or rescore."""


class RunSide(_Model):
    """Identity and headline figures of one side of the comparison."""

    id: str
    """Result id."""
    dataset: str
    """Dataset name."""
    timestamp: str
    """When the result was built."""
    items: int
    """Items in the result."""
    failures: int
    """Items with an error."""
    duration_ms: float
    """Whole-run duration."""
    run_count: int = 1
    """Runs in a multi-run file."""


class Links(_Model):
    """Where to read more."""

    run_url: str | None = None
    """This workflow run."""
    report_url: str | None = None
    """The HTML report artifact."""
    baseline_run_url: str | None = None
    """The run that produced the baseline."""


class RunInfo(_Model):
    """Facts about the CI context that only the caller knows (all optional)."""

    suite: str | None = None
    """Suite key (defaults to the dataset name)."""
    run_url: str | None = None
    """URL of this workflow run."""
    report_url: str | None = None
    """URL of the uploaded HTML report."""
    baseline_commit_sha: str | None = None
    """Commit the baseline came from."""
    baseline_branch: str | None = None
    """Branch the baseline came from."""
    baseline_run_id: str | None = None
    """Workflow run id of the baseline."""
    baseline_run_url: str | None = None
    """URL of the baseline's workflow run."""
    baseline_age: str | None = None
    """Human age of the baseline, e.g. ``2 days``."""
    baseline_reason: str | None = None
    """Why this baseline was chosen."""
    warnings: list[str] = Field(default_factory=list)
    """Extra warnings (baseline search, compatibility)."""
    generated_at: str | None = None
    """Timestamp printed in the footer (the caller's clock)."""


class ReportContext(_Model):
    """Everything the comment, summary and HTML report show."""

    suite: str
    """Suite key (the sticky comment's identity)."""
    marker: str
    """Hidden HTML comment identifying this suite's sticky comment."""
    verdict: Verdict
    """pass / fail / warn."""
    failing_gates: list[str] = Field(default_factory=list)
    """Labels of gates that failed or refused."""
    warning_gates: list[str] = Field(default_factory=list)
    """Labels of gates that warned."""
    has_baseline: bool = False
    """False on a first run ("no baseline yet")."""
    summary_sentence: str | None = None
    """The compare engine's one-line summary."""
    candidate: RunSide
    """The run under test."""
    baseline: RunSide | None = None
    """The baseline, when there is one."""
    gates: list[GateRow] = Field(default_factory=list)
    """Gate table rows."""
    scorers: list[ScorerRow] = Field(default_factory=list)
    """Scorer table rows."""
    cost: CostBlock | None = None
    """Spend block."""
    budget_line: str | None = None
    """``Budget: $0.12 of $1.00 (open)`` or the STOPPED line."""
    repeats_line: str | None = None
    """``5 per item; tries passed (score >= 0.5): accuracy 90.0% (18/20)`` when the candidate
    ran its items ``repeats: N`` times."""
    not_rerun_line: str | None = None
    """``triage_eval.py: unchanged since the baseline, ...`` when a scoped pull-request run
    carried some evals' baseline results instead of re-running them (``metadata.carriedOver``)."""
    ci_label: str = "95% CI"
    """The interval column's name: ``99% CI`` when a ``repeats: auto`` candidate was compared at
    the level of one look (``evals/sequential.py``)."""
    coverage_line: str | None = None
    """``Items: 94 completed, 6 failed — item error rate 6% (limit 10%)``."""
    failure_causes: str | None = None
    """``250 × 429 (openai), 3 × other``."""
    timing: TimingBlock | None = None
    """Mean item latency."""
    model_timing: list[ModelTimingRow] = Field(default_factory=list)
    """Per-model call latency of the candidate."""
    provenance: Provenance | None = None
    """Baseline provenance."""
    warnings: list[str] = Field(default_factory=list)
    """Warnings shown under the verdict (compatibility, partial batches, scorer errors)."""
    regressions_total: int = 0
    """(item, scorer) regressions."""
    improvements_total: int = 0
    """(item, scorer) improvements."""
    regressed_items_total: int = 0
    """Distinct items with at least one regression."""
    top_regressions: list[ItemExcerpt] = Field(default_factory=list)
    """Worst regressed items, worst first."""
    scorer_errors: list[str] = Field(default_factory=list)
    """First distinct scorer error messages (untrusted)."""
    scorer_error_items: int = 0
    """Items with at least one scorer error."""
    accounting: AccountingPanel | None = None
    """Candidate accounting details."""
    run_metadata: str = ""
    """The candidate's ``metadata`` as pretty JSON, shortened (untrusted)."""
    links: Links = Field(default_factory=Links)
    """Run and report links."""
    generated_at: str | None = None
    """Footer timestamp."""
    history: HistoryPanel | None = None
    """Trends over the baseline history, noise bands and flaky items (when a history is known)."""
    limits: ReportLimits = Field(default_factory=ReportLimits)
    """Detail limits this context was rendered with."""
    trim_note: str | None = None
    """What was left out to fit a size limit."""
