"""rankstats gives scipy.stats' Kendall tau-b / p-value and Theil–Sen slope without importing scipy.stats."""
from __future__ import annotations

import math
import subprocess
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


def test_analyze_path_does_not_import_scipy_stats():
    code = (
        "import sys, numpy as np\n"
        "from logdoctor import curves\n"
        "curves.trend(np.arange(5000.0), np.exp(-np.arange(5000.0) / 900))\n"
        "print('scipy.stats' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"
