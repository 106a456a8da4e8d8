"""Verdict helpers: normal quantile, MDE formula, bootstrap p-value, Holm step-down."""

from __future__ import annotations

import math

import numpy as np
import pytest

from axl_action.compare.bootstrap import paired_bootstrap_ci
from axl_action.compare.significance import (
    bootstrap_p_value,
    holm,
    is_significant,
    minimum_detectable_effect,
    normal_quantile,
    verdict,
)


@pytest.mark.parametrize(("p", "z"), [(0.5, 0.0), (0.975, 1.959964), (0.8, 0.841621), (0.01, -2.326348)])
def test_normal_quantile(p: float, z: float) -> None:
    assert normal_quantile(p) == pytest.approx(z, abs=1e-6)


def test_mde_formula() -> None:
    d = np.array([0.1, -0.2, 0.3, 0.0, 0.05, -0.1])
    expected = (1.959964 + 0.841621) * float(np.std(d, ddof=1)) / math.sqrt(len(d))
    assert minimum_detectable_effect(d, 0.05) == pytest.approx(expected, abs=1e-4)
    assert minimum_detectable_effect(d[:1], 0.05) is None


def test_p_value_is_never_zero_and_two_sided() -> None:
    clear = paired_bootstrap_ci([0.2] * 10, seed=1)
    assert bootstrap_p_value(clear) == pytest.approx(2 / 1001)
    symmetric = paired_bootstrap_ci([0.1, -0.1, 0.05, -0.05, 0.02, -0.02, 0.08, -0.08, 0.03, -0.03], seed=42)
    p = bootstrap_p_value(symmetric)
    assert p is not None and p > 0.9


def test_holm_step_down() -> None:
    out = holm({"a": 0.01, "b": 0.04, "c": 0.03}, 0.05)
    assert out["a"] == (pytest.approx(0.03), True)  # 0.01 <= 0.05/3
    assert out["c"] == (pytest.approx(0.06), False)  # 0.03 > 0.05/2 stops the procedure
    assert out["b"] == (pytest.approx(0.06), False)  # adjusted p is monotone


def test_verdict_cases() -> None:
    ci = paired_bootstrap_ci([0.01, 0.02, 0.015, 0.012], seed=3)
    assert is_significant(ci, 0.0) and verdict(ci, 4, 0.0, True) == "improved"
    assert not is_significant(ci, 0.05) and verdict(ci, 4, 0.05, False) == "unchanged"
    wide = paired_bootstrap_ci([0.3, -0.3, 0.2, -0.1], seed=3)
    assert verdict(wide, 4, 0.05, is_significant(wide, 0.05)) == "inconclusive"
    assert verdict(None, 1, 0.05, False) == "inconclusive"
