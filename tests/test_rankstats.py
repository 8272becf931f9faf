"""rankstats gives scipy's Kendall tau-b / p-value, Theil–Sen slope and mirrored median filter without importing scipy."""
from __future__ import annotations

import math
import subprocess
import warnings
import sys

import numpy as np
import pytest

from logdoctor import rankstats

stats = pytest.importorskip("scipy.stats")


def _cases():
    rng = np.random.default_rng(7)
    for n in (3, 4, 5, 9, 20, 33, 34, 60, 200, 400):
        x = np.sort(rng.normal(size=n))
        xt = np.round(x * 3)  # tied steps
        yield x, rng.normal(size=n)  # no trend: asymptotic / exact p mid-range
        yield x, -x + 0.1 * rng.normal(size=n)  # strong trend: tiny p
        yield x, x.copy()  # perfect order: the c == 0 exact branch
        yield xt, np.round(rng.normal(size=n) * 2)  # ties on both sides
        yield x, np.where(np.arange(n) == n // 2, x[0], x)  # one discordant pair: min(dis, tot-dis) <= 1


@pytest.mark.parametrize("x, y", list(_cases()))
def test_kendalltau_matches_scipy(x, y):
    tau, p = rankstats.kendalltau(x, y)
    ref = stats.kendalltau(x, y)
    assert tau == ref.statistic  # same integer pair counts, same float formula
    assert p == pytest.approx(ref.pvalue, rel=1e-12, abs=1e-300)  # libm erfc vs scipy's: last bits only


def test_kendalltau_constant_input_is_nan():
    tau, p = rankstats.kendalltau(np.arange(5.0), np.ones(5))
    assert math.isnan(tau) and math.isnan(p)


@pytest.mark.parametrize("x, y", list(_cases()))
def test_theil_sen_slope_matches_scipy(x, y):
    if len(set(x.tolist())) > 1:
        assert rankstats.theil_sen_slope(x, y) == stats.theilslopes(y, x).slope


@pytest.mark.parametrize("n", [3, 4, 7, 50, 1000, 5000])
@pytest.mark.parametrize("window", [2, 3, 4, 5, 51, 101])
def test_rolling_median_matches_scipy_median_filter(n, window, monkeypatch):
    ndimage = pytest.importorskip("scipy.ndimage")
    monkeypatch.setattr(rankstats, "_MEDIAN_CHUNK_CELLS", 1000)  # several chunks, one window row at least
    rng = np.random.default_rng(n * window)
    for y in (rng.normal(size=n), np.round(rng.normal(size=n)), np.cumsum(rng.normal(size=n))):
        if window <= n:
            assert np.array_equal(rankstats.rolling_median(y, window), ndimage.median_filter(y, size=window, mode="mirror"))


def test_rolling_median_edges_are_mirrored():
    y = np.array([9.0, 1.0, 2.0, 3.0, 4.0])
    # first window is (1, 9, 1): an outlier at step 0 does not become the start level
    assert rankstats.rolling_median(y, 3).tolist() == [1.0, 2.0, 2.0, 3.0, 3.0]


def test_analyze_path_does_not_import_scipy():
    code = (
        "import sys, numpy as np\n"
        "from logdoctor import curves\n"
        "x = np.arange(5000.0); y = np.exp(-x / 900) + 0.01 * np.sin(x)\n"
        "curves.trend(x, y); curves.smooth(y); curves.hampel(y); curves.oscillation(y)\n"
        "print('scipy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"


def test_median_is_numpys_median_to_the_bit_nan_and_empty_included():
    rng = np.random.default_rng(11)
    for trial in range(3000):
        values = rng.normal(0, 1, int(rng.integers(0, 30)))
        if trial % 3 == 0:
            values = np.round(values, 1)  # ties
        if trial % 5 == 0 and len(values):
            values[rng.integers(0, len(values))] = (np.nan, np.inf, -np.inf)[trial % 3]
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numpy warns on an empty median
            want = float(np.median(values))
        got = rankstats.median(values)
        assert got == want or (math.isnan(got) and math.isnan(want))


def test_mirrored_edges_are_numpys_reflect_padding_for_every_width():
    """The rolling median's edges: sliced where one reflection covers them, np.pad beyond; the same
    array for every series length and pad width."""
    rng = np.random.default_rng(0)
    for n in range(2, 30):
        y = rng.normal(size=n)
        for back in range(0, 40, 3):
            for ahead in range(0, 40, 2):
                assert np.array_equal(rankstats._mirrored(y, back, ahead), np.pad(y, (back, ahead), mode="reflect"))
