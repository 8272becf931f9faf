"""Unit tests of the shared curve mathematics (synthetic curves with known answers)."""
from __future__ import annotations


import numpy as np
import pytest

from logdoctor import curves
from logdoctor.model import Series

RNG = np.random.default_rng(7)


def series(values, steps=None, name="loss") -> Series:
    values = np.asarray(values, dtype=float)
    steps = np.arange(len(values), dtype=np.int64) if steps is None else np.asarray(steps, dtype=np.int64)
    return Series(name, steps, values)


# ---------------------------------------------------------------- non-finite values


def test_nonfinite_tail_and_intermittent():
    v = np.r_[np.linspace(2, 1, 50), np.full(10, np.nan)]
    bad = curves.nonfinite(series(v))
    assert bad.tail and bad.index == 50 and bad.count == 10 and bad.kind == "nan"
    v = np.linspace(2, 1, 50)
    v[[10, 30]] = [np.inf, np.nan]
    bad = curves.nonfinite(series(v))
    assert not bad.tail and bad.index == 10 and bad.kind == "inf" and bad.count == 2
    assert curves.nonfinite(series(np.ones(5))) is None


# ---------------------------------------------------------------- robust scalars


def test_noise_sigma_recovers_gaussian_noise_under_a_trend_and_outliers():
    x = np.arange(20000)
    y = 3 * np.exp(-x / 4000) + 0.05 * RNG.standard_normal(len(x))
    y[::500] += 5.0  # spikes must not inflate the estimate
    assert curves.noise_sigma(y) == pytest.approx(0.05, rel=0.1)


def test_quantum_detects_hf_rounding_only():
    v = np.round(2.3 + 0.01 * RNG.standard_normal(500), 4)
    assert curves.quantum(v) == pytest.approx(1e-4)
    assert curves.quantum(2.3 + 0.01 * RNG.standard_normal(500)) == 0.0
    assert curves.quantum(np.full(10, 2.302585)) == 0.0  # constant: no evidence of a grid


def test_quantum_is_the_coarsest_grid_every_sampled_value_is_on():
    """Against its definition (every grid tried on every sampled value), on values rounded to a
    grid, off it, on it but for late values, constant, NaN-laced and long."""
    def by_definition(values, sample=4096):
        v = np.asarray(values, dtype=float)
        v = v[np.isfinite(v)]
        if len(v) == 0:
            return 0.0
        if len(v) > sample:
            v = v[np.linspace(0, len(v) - 1, sample).astype(int)]
        if np.all(v == v[0]):
            return 0.0
        for exp in range(2, -7, -1):
            q = 10.0**exp
            r = v / q
            k = np.round(r)
            if np.all(np.abs(r - k) < 1e-3) and len(np.unique(k)) > 1:
                return q
        return 0.0

    rng = np.random.default_rng(4)
    for _ in range(400):
        n = int(rng.integers(1, 60)) if rng.random() < 0.8 else 5000
        v = rng.normal(2, 10.0 ** rng.integers(-4, 3), n)
        if rng.random() < 0.7:
            v = np.round(v, int(rng.integers(-2, 7)))
        if rng.random() < 0.2:
            v[int(rng.integers(0, n)):] += 1.234567e-5  # on the grid at first, off it later
        if rng.random() < 0.1:
            v[:] = v[0]
        if rng.random() < 0.1:
            v[rng.integers(0, n, 3)] = np.nan
        assert curves.quantum(v) == by_definition(v)


def test_robust_sigma_ignores_outliers():
    x = RNG.standard_normal(5000)
    x[:100] = 1e6
    assert curves.robust_sigma(x) == pytest.approx(1.0, rel=0.1)


# ---------------------------------------------------------------- bucketed view


def test_buckets_identity_when_short_and_exact_when_long():
    v = np.arange(10.0)
    b = curves.buckets(np.arange(10), v, max_points=100)
    assert b.size == 1 and np.array_equal(b.med, v)
    n = 10_001
    v = RNG.standard_normal(n)
    v[5] = 100.0
    b = curves.buckets(np.arange(n), v, max_points=100)
    assert b.size == 101 and len(b.med) == 100  # 99 full buckets + the remainder
    assert b.hi[0] == 100.0  # a one-point spike survives in the bucket maximum
    assert b.med[0] == pytest.approx(np.median(v[:101]))
    assert b.first[1] == 101 and b.last[-1] == n - 1


def test_buckets_skip_nonfinite_points():
    v = np.r_[np.ones(5), np.nan, np.ones(5) * 2]
    b = curves.buckets(np.arange(11), v)
    assert len(b.med) == 10 and np.all(np.isfinite(b.med))


def test_window_levels_are_the_median_of_each_window_by_its_definition():
    steps = np.cumsum(RNG.integers(1, 5, 3000))
    values = RNG.standard_normal(3000)
    values[RNG.integers(0, 3000, 300)] = np.nan
    s = series(values, steps)
    lo = RNG.uniform(-50, steps[-1] + 50, 200)
    hi = lo + RNG.choice([0.0, 0.5, 3.0, 40.0, 900.0], 200)  # empty, single-step and wide windows
    want = []
    for a, b in zip(lo, hi):
        inside = values[(steps >= a) & (steps <= b) & np.isfinite(values)]
        want.append(np.median(inside) if len(inside) else np.nan)
    np.testing.assert_array_equal(curves.window_levels(s, lo, hi), want)
    np.testing.assert_array_equal([curves.window_level(s, a, b) for a, b in zip(lo[:20], hi[:20])], want[:20])


# ---------------------------------------------------------------- smoothing / outliers


def test_smooth_removes_isolated_outliers_and_keeps_the_level():
    y = np.ones(200)
    y[[50, 120]] = 50.0
    s = curves.smooth(y)
    assert np.allclose(s, 1.0)


def test_hampel_flags_the_injected_outlier_only():
    y = 0.1 * RNG.standard_normal(400) + np.linspace(3, 1, 400)
    y[200] += 3.0
    h = curves.hampel(y, k=6.0)
    assert list(np.flatnonzero(h.outliers)) == [200]
    assert h.score[200] > 6


# ---------------------------------------------------------------- trend


def test_trend_significant_decline_with_theil_sen_slope():
    x = np.arange(1000)
    y = 2.0 - 0.001 * x + 0.05 * RNG.standard_normal(len(x))
    t = curves.trend(x, y)
    assert t.p_value < 1e-10 and t.tau < -0.5
    assert t.slope == pytest.approx(-0.001, rel=0.1)


def test_trend_on_noise_is_not_significant():
    t = curves.trend(np.arange(300), RNG.standard_normal(300))
    assert t.p_value > 0.01 and abs(t.tau) < 0.1


def test_trend_long_input_is_bucket_reduced():
    """Two million points are reduced to buckets first (speed is measured in benchmarks/, not here)."""
    x = np.arange(2_000_000)
    y = 1.0 - 1e-7 * x + 0.01 * RNG.standard_normal(len(x))
    t = curves.trend(x, y)
    assert t.slope == pytest.approx(-1e-7, rel=0.1) and t.n == len(x)


def test_constant_input_has_no_trend():
    t = curves.trend(np.arange(50), np.full(50, 2.3))
    assert t.p_value == 1.0 and t.slope == 0.0


# ---------------------------------------------------------------- change points


def test_best_split_finds_a_noisy_level_shift():
    y = np.r_[np.zeros(300), np.ones(300)] + 0.1 * RNG.standard_normal(600)
    k, gain = curves.best_split(y)
    assert abs(k - 300) <= 3 and gain > 100


def test_best_split_is_exact_on_a_clean_step():
    k, gain = curves.best_split(np.r_[np.zeros(10), np.full(20, 5.0)])
    assert k == 10 and gain > 0


# ---------------------------------------------------------------- oscillation / periodicity


def test_oscillation_distinguishes_zigzag_noise_and_smooth():
    n = 400
    zigzag = np.linspace(2, 1, n) + 0.2 * (-1) ** np.arange(n)
    noise = np.linspace(2, 1, n) + 0.2 * RNG.standard_normal(n)
    smooth = np.linspace(2, 1, n)
    oz, on, os_ = curves.oscillation(zigzag), curves.oscillation(noise), curves.oscillation(smooth)
    assert oz.sign_change_rate > 0.95 and oz.lag1 < -0.9 and oz.high_freq_power > 0.9
    assert 0.5 < on.sign_change_rate < 0.8 and abs(on.lag1) < 0.2
    assert os_.sign_change_rate < 0.05


def test_dominant_period_finds_a_sawtooth_epoch():
    x = np.arange(3000)
    y = np.exp(-x / 1000) + 0.3 * np.exp(-(x % 150) / 30) + 0.02 * RNG.standard_normal(len(x))
    period, strength = curves.dominant_period(y, min_period=6)
    assert period == 150 and strength > 0.5
    assert curves.dominant_period(RNG.standard_normal(3000), min_period=6)[1] < 0.3


# ---------------------------------------------------------------- the Curve summary


def test_curve_levels_of_a_decaying_loss():
    x = np.arange(5000)
    y = 2.3 * np.exp(-x / 500) + 0.1 + 0.01 * RNG.standard_normal(len(x))
    c = curves.curve(series(y, x))
    assert c.start == pytest.approx(2.3, rel=0.05)  # near the top of the steep start
    assert c.end == pytest.approx(0.1, abs=0.01)
    assert c.best == pytest.approx(0.1, abs=0.01)
    assert c.noise == pytest.approx(0.01, rel=0.2)
    assert len(c) <= curves.MAX_POINTS and c.n == len(x)


def test_curve_is_scale_free():
    x = np.arange(3000)
    y = 2.0 * np.exp(-x / 700) + 0.5 + 0.02 * RNG.standard_normal(len(x))
    a, b = curves.curve(series(y, x)), curves.curve(series(y * 1e-3, x))
    for field in ("start", "end", "best", "noise", "y_noise"):
        assert getattr(b, field) == pytest.approx(getattr(a, field) * 1e-3, rel=1e-6)
    assert a.best_index == b.best_index


def test_curve_ignores_an_outlier_first_point():
    y = np.r_[9.0, np.full(99, 2.3) + 0.001 * RNG.standard_normal(99)]
    assert curves.curve(series(y)).start == pytest.approx(2.3, abs=0.01)


def test_curve_of_nan_tail_uses_the_finite_part_and_records_the_tail():
    y = np.r_[np.linspace(2, 1, 100), np.full(50, np.nan)]
    s = series(y)
    c, bad = curves.curve(s), curves.nonfinite(s)
    assert c.n == 100 and c.last_step == 99 and bad.tail and bad.step == 100


def test_curve_needs_three_finite_points_and_is_cached():
    assert curves.curve(series([1.0, np.nan, 2.0])) is None
    s = series(np.linspace(2, 1, 50))
    assert curves.curve(s) is curves.curve(s)


def test_curve_of_two_million_points_is_bucketed():
    n = 2_000_000
    y = 3 * np.exp(-np.arange(n) / 3e5) + 0.05 * RNG.standard_normal(n)
    c = curves._build(series(y), curves.MAX_POINTS)
    assert len(c) <= curves.MAX_POINTS


def test_pace_tells_a_steady_crawl_from_convergence():
    x = np.arange(3000)
    steady = 2.3 - 0.05 * x / 3000 + 0.002 * RNG.standard_normal(3000)
    power_law = 1.7 + 0.3 * (1 + x / 50) ** -0.5 + 0.002 * RNG.standard_normal(3000)
    assert curves.pace(x, steady)[2] > 0.7
    assert curves.pace(x, power_law)[2] < 0.3


def test_moving_average_over_one_period_cancels_the_pattern_and_keeps_the_trend():
    x = np.arange(600)
    pattern = np.tile(RNG.standard_normal(20), 30)
    y = 0.01 * x + pattern
    ma = curves.moving_average(y, 20)
    ok = np.isfinite(ma)
    assert ok.sum() == 581 and np.allclose((y - ma)[ok] - pattern[ok], (y - ma)[ok][0] - pattern[ok][0], atol=1e-9)


def test_relative_spread_is_scale_free_and_frozen_uses_it():
    assert curves.relative_spread(np.array([600.0, 603.0, np.nan, 597.0])) == pytest.approx(0.01)
    assert curves.relative_spread(np.array([0.006, 0.00603, 0.00597])) == pytest.approx(0.01)
    assert np.isnan(curves.relative_spread(np.array([np.nan, np.inf])))
    assert curves.frozen(np.array([681.58, 681.07, 681.3, 681.2, 681.4]), min_points=5, max_relative_spread=0.005)
    assert not curves.frozen(np.array([681.58, 681.07, 681.3, 681.2]), min_points=5, max_relative_spread=0.005)
    assert curves.frozen(np.full(3, 0.25)) and not curves.frozen(np.array([0.25, 0.25, 0.2501]))
