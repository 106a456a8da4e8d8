"""The xorshift32 stream and the paired bootstrap reproduce the reference values (spec §3)."""

from __future__ import annotations

import numpy as np
import pytest

from axl_action.compare import prng
from axl_action.compare.bootstrap import bootstrap_many, core, paired_bootstrap_ci, resample_means_many

POSITIVE = [0.1, 0.2, 0.15, 0.12, 0.18, 0.22, 0.08, 0.14, 0.19, 0.16]


def test_xorshift_reference_stream_seed_42() -> None:
    assert prng.stream(42, 5) == [
        0.002643892541527748,
        0.6602433128282428,
        0.9280905658379197,
        0.9143275285605341,
        0.9773453096859157,
    ]


def test_seed_zero_and_one_share_a_stream() -> None:
    expected = [0.00006295018829405308, 0.015739798778668046]
    assert prng.stream(0, 2) == expected
    assert prng.stream(1, 2) == expected


@pytest.mark.parametrize("seed", [42, 7, -123456, 2**31 + 5, 2**40 + 3])
def test_vectorised_stream_equals_the_scalar_generator(seed: int) -> None:
    expected = prng.stream(seed, 5000)
    s = prng.Xorshift32Stream(seed)
    parts = [s.take(n) for n in (1, 63, 65, 300, 256, 4315)]
    got = np.concatenate(parts) / 2**32
    assert got.tolist() == expected


def test_jump_ahead_matches_stepping() -> None:
    state = prng.seed_state(99)
    stepped = state
    for _ in range(777):
        stepped = prng.step(stepped)
    assert prng.jump(state, 777) == stepped


@pytest.mark.parametrize(
    ("diffs", "seed", "alpha", "expected"),
    [
        ([0.1, 0.2, 0.15, -0.05, 0.3], 123, 0.05, (0.03, 0.24, 0.14, 0.007, 0.993)),
        (POSITIVE, 42, 0.05, (0.128, 0.178, 0.154, 0, 1)),
        (POSITIVE, 42, 0.01, (0.118, 0.19, 0.154, 0, 1)),
        (
            [0.1, -0.1, 0.05, -0.05, 0.02, -0.02, 0.08, -0.08, 0.03, -0.03],
            42,
            0.05,
            (-0.039, 0.038, 0, 0.485, 0.506),
        ),
        ([-x for x in POSITIVE], 42, 0.05, (-0.178, -0.128, -0.154, 1, 0)),
        ([0.1, 0.2], 0, 0.05, (0.1, 0.2, 0.15, 0, 1)),
    ],
)
def test_reference_bootstrap_values(
    diffs: list[float], seed: int, alpha: float, expected: tuple[float, ...]
) -> None:
    r = paired_bootstrap_ci(diffs, seed=seed, alpha=alpha)
    assert (r.lower, r.upper, r.mean, r.p_regression, r.p_improvement) == expected


def test_degenerate_sizes() -> None:
    empty = paired_bootstrap_ci([], seed=1)
    assert (empty.lower, empty.upper, empty.mean, empty.p_regression, empty.p_improvement) == (0, 0, 0, 0, 0)
    one = paired_bootstrap_ci([-0.25], seed=1)
    assert (one.lower, one.upper, one.mean, one.p_regression, one.p_improvement) == (
        -0.25,
        -0.25,
        -0.25,
        1,
        0,
    )
    none = paired_bootstrap_ci([0.11111, 0.2], n_resamples=0, seed=1)
    assert (none.lower, none.upper, none.mean) == (0.1556, 0.1556, 0.1556)


def test_single_resample_has_no_upper_bound() -> None:
    r = paired_bootstrap_ci([0.1, 0.2], n_resamples=1, seed=0)
    assert r.upper is None
    assert r.lower in (0.1, 0.15, 0.2)


def test_many_equals_separate_calls_and_threads_do_not_change_values() -> None:
    rng = np.random.default_rng(5)
    samples = {f"s{i}": np.round(rng.normal(0, 0.3, 3000), 3) for i in range(3)}
    samples["short"] = np.round(rng.normal(0.1, 0.3, 40), 3)
    together = bootstrap_many(samples, seed=11, workers=2)
    for name, d in samples.items():
        alone = paired_bootstrap_ci(d, seed=11)
        assert (together[name].lower, together[name].upper, together[name].p_regression) == (
            alone.lower,
            alone.upper,
            alone.p_regression,
        )


def test_blocks_and_threads_give_the_same_resample_means(monkeypatch: pytest.MonkeyPatch) -> None:
    d = np.round(np.random.default_rng(3).normal(0, 1, 1000), 3)
    whole = resample_means_many([d], 200, 17, workers=1)[0]
    monkeypatch.setattr(core, "_CHUNK", 3200)  # resamples of 1,000 draws straddle chunks
    one = resample_means_many([d], 200, 17, workers=1)[0]
    two = resample_means_many([d], 200, 17, workers=2)[0]
    assert np.array_equal(whole, one)
    assert np.array_equal(one, two)
    # Each resample mean is the left-to-right sum of the draws the scalar stream dictates.
    values = prng.stream(17, 1000 * 3)
    for r in range(3):
        total = 0.0
        for u in values[r * 1000 : (r + 1) * 1000]:
            total += d[int(u * 1000)]
        assert one[r] == total / 1000


@pytest.mark.parametrize("chunk", [32, 96, 64 * 32])
def test_chunked_stream_equals_the_scalar_generator(chunk: int) -> None:
    stream = prng.ChunkedStream(prng.seed_state(42), chunk=chunk, lane_steps=32)
    out = np.empty(chunk, dtype=np.uint32)
    got: list[float] = []
    for _ in range(3):
        stream.next_chunk(out)
        got.extend((out / 2**32).tolist())
    assert got == prng.stream(42, 3 * chunk)


@pytest.mark.parametrize("n", [2, 7, 3200, 5000])
def test_small_chunks_keep_every_resample_sum_sequential(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    d = np.round(np.random.default_rng(n).normal(0, 1, n), 3)
    reference = resample_means_many([d], 12, 9, workers=1)[0]
    monkeypatch.setattr(core, "_CHUNK", 64)
    assert np.array_equal(resample_means_many([d], 12, 9, workers=1)[0], reference)
    assert np.array_equal(resample_means_many([d], 12, 9, workers=3)[0], reference)
