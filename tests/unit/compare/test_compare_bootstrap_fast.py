"""The integer-sum bootstrap path gives exactly the reference path's answers, or steps aside."""

from __future__ import annotations

import numpy as np
import pytest

from axl_action.compare import bootstrap, prng
from axl_action.compare.bootstrap import BootstrapResult, bootstrap_many, core, resample_means_many
from axl_action.compare.bootstrap import exact as reference
from axl_action.compare.bootstrap import integer as bootstrap_fast


def exact(d: np.ndarray, r: int, alpha: float, seed: int) -> BootstrapResult:
    means = resample_means_many([d], r, seed, workers=1)[0]
    return reference._summarise(core._sequential_mean(d), means, r, alpha)


def key(r: BootstrapResult) -> tuple[object, ...]:
    return (r.lower, r.upper, r.mean, r.p_regression, r.p_improvement)


def samples(rng: np.random.Generator, n: int, kind: int) -> np.ndarray:
    if kind == 0:
        return np.round(rng.normal(0, 0.2, n), 3)
    if kind == 1:  # symmetric: many resample sums are exactly zero
        half = np.round(rng.uniform(0, 0.3, n // 2 + 1), 3)
        return np.concatenate([half, -half])[:n]
    if kind == 2:  # real differences of 3-decimal scores
        return np.round(rng.uniform(0, 1, n), 3) - np.round(rng.uniform(0, 1, n), 3)
    return rng.choice(np.array([0.1, -0.1, 0.05, -0.05, 0.0, 0.2]), n)


def test_fast_path_matches_the_exact_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bootstrap_fast, "MIN_N", 2)
    rng = np.random.default_rng(0)
    answered = 0
    for trial in range(160):
        n = int(rng.choice([2, 3, 5, 10, 40, 100, 1000]))
        r = int(rng.choice([10, 100, 1000]))
        alpha = float(rng.choice([0.05, 0.01, 0.1]))
        seed = int(rng.integers(0, 2**31))
        d = samples(rng, n, trial % 4)
        results: dict[str, BootstrapResult] = {}
        rest = bootstrap._fast_path({"x": d}, ["x"], r, alpha, seed, 1, results)
        if rest:
            continue  # too many resamples needed the exact sum: the caller uses the exact path
        answered += 1
        assert key(results["x"]) == key(exact(d, r, alpha, seed)), (n, r, alpha, seed, trial % 4)
    assert answered > 140


def test_reference_vectors_through_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bootstrap_fast, "MIN_N", 2)
    sym = [0.1, -0.1, 0.05, -0.05, 0.02, -0.02, 0.08, -0.08, 0.03, -0.03]
    got = bootstrap_many({"s": sym}, seed=42)["s"]
    assert key(got) == (-0.039, 0.038, 0, 0.485, 0.506)


def test_large_samples_take_the_fast_path_and_agree() -> None:
    rng = np.random.default_rng(4)
    d = np.round(rng.normal(0.01, 0.2, 5000), 3)
    results: dict[str, BootstrapResult] = {}
    assert bootstrap._fast_path({"x": d}, ["x"], 300, 0.05, 8, 2, results) == []
    assert key(results["x"]) == key(exact(d, 300, 0.05, 8))


def test_data_not_in_thousandths_uses_the_exact_path() -> None:
    d = np.random.default_rng(1).normal(0, 0.2, 2000)
    assert bootstrap_fast.as_thousandths(d) is None
    assert bootstrap._fast_path({"x": d}, ["x"], 100, 0.05, 1, 1, {}) == ["x"]


def test_all_zero_differences() -> None:
    d = np.zeros(3000)
    result = bootstrap_many({"z": d}, seed=1)["z"]
    assert key(result) == (0, 0, 0, 0, 0)


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5])
def test_packed_sums_equal_plain_sums_at_the_extremes(count: int) -> None:
    """Two samples share an int64 column; the sums stay exact at ±1 differences and at MAX_N."""
    rng = np.random.default_rng(count)
    for n, resamples in ((1000, 50), (bootstrap_fast.MAX_N, 3)):
        pool = [np.full(n, 1000), np.full(n, -1000), rng.integers(-1000, 1001, n), np.zeros(n)]
        codes = [pool[i % len(pool)].astype(np.int32) for i in range(count)]
        sums = bootstrap_fast.integer_sums(codes, resamples, seed=11, workers=1)
        assert len(sums) == count
        means = resample_means_many([c / 1000 for c in codes], resamples, 11, workers=1)
        for got, want in zip(sums, means, strict=True):
            assert np.array_equal(got, np.rint(want * n * 1000).astype(np.int64))


def test_samples_of_different_lengths_share_one_pass_and_agree_with_separate_calls() -> None:
    """Scorers that failed on different items have paired samples of different lengths; one
    pass over the stream serves them all, with each answer what a call of its own gives."""
    rng = np.random.default_rng(9)
    lengths = {"a": 3000, "b": 2999, "c": 3000, "d": 1500, "e": 2999}
    data = {k: np.round(rng.normal(0.01, 0.2, n), 3) for k, n in lengths.items()}
    data["f"] = rng.normal(0, 0.2, 2500)  # not in thousandths: the exact path
    together = bootstrap_many(data, n_resamples=400, seed=21, workers=2)
    for name, d in data.items():
        alone = bootstrap_many({name: d}, n_resamples=400, seed=21, workers=1)[name]
        assert key(together[name]) == key(alone), name
        assert key(alone) == key(exact(d, 400, 0.05, 21)), name


@pytest.mark.parametrize("chunk", [64, 96, 1 << 12])
def test_integer_sums_equal_sums_of_the_scalar_stream(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    """The sums are taken per lane of the stream's block, four samples to a gather, and
    joined by prefix differences; they equal sums of the reference generator's draws in
    order, for resamples that straddle chunks and thread ranges, a last chunk only partly
    used, and samples of several lengths."""
    monkeypatch.setattr(core, "_CHUNK", chunk)
    rng = np.random.default_rng(chunk)
    resamples, seed = 37, 5
    # Five samples of 50 (a column of four 16-bit fields and one of one), two of 31, ...;
    # the top field all +1000 (a lane's sum 64,000 sets the int64's sign bit) and another
    # all -1000 (a lane's field sum 0).
    lengths = [50, 50, 50, 31, 7, 31, 101, 50, 50]
    codes = [rng.integers(-1000, 1001, n).astype(np.int32) for n in lengths]
    codes[7][:] = 1000
    codes[1][:] = -1000
    draws = np.array(prng.stream(seed, resamples * max(lengths)))
    for workers in (1, 2, 3):
        sums = bootstrap_fast.integer_sums(codes, resamples, seed=seed, workers=workers)
        for c, got in zip(codes, sums, strict=True):
            n = len(c)
            idx = np.floor(draws[: resamples * n] * n).astype(np.intp).reshape(resamples, n)
            assert np.array_equal(got, c[idx].astype(np.int64).sum(axis=1)), (chunk, workers, n)
