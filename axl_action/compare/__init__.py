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
* ``arrays``        per-item numpy columns of a run; ``lean`` loads files straight into them
* ``merge``         ``merge_results`` for ``--shard i/n`` results
* ``console``       the compare table; ``text`` JS number formatting
"""
