"""Compare two eval results and apply the CI gates (pure functions; I/O lives in ``cli``).

Modules, one job each:

* ``engine``        ``compare_results(baseline, candidate, CompareOptions) -> Comparison``
* ``gates``         ``evaluate_gates(comparison, baseline_runs, candidate_runs, GateOptions) -> GateReport``
                    plus the reference gate functions (scorer / item error rate, regressions)
* ``models``        the ``Comparison`` and ``GateReport`` pydantic models (``to_wire()``)
* ``bootstrap``     ``paired_bootstrap_ci`` / ``bootstrap_many`` (reference-exact with a seed)
* ``prng``          the reference's xorshift32 stream, vectorised with jump-ahead
* ``significance``  TS significance, verdicts, minimum detectable effect, Holm
* ``thresholds``    ``--threshold`` parsing and the per-scorer defaults
* ``cost``          the cost block and ``certify_cost``
* ``alignment``     pairing items by key or position; ``compatibility`` fingerprint checks
* ``merge``         ``merge_results`` for ``--shard i/n`` results
* ``console``       the compare table; ``text`` JS number formatting

Every module reads runs as :class:`~axl_action.schema.RunView` (header + item columns), which
``schema.load_run_views`` builds straight from a file; models are turned into views on entry.
"""
