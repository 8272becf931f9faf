"""Order statistics in numpy: Kendall's tau-b with its p-value, the Theil–Sen slope, a rolling median.

The same numbers as `scipy.stats.kendalltau` (method 'auto': the exact null
distribution for small samples without ties, else the tie-corrected normal
approximation; the p-value agrees to the last few bits of libm's erfc),
`scipy.stats.theilslopes(...).slope` and `scipy.ndimage.median_filter(y,
size=w, mode="mirror")`. Why not scipy: importing `scipy.stats` and
`scipy.ndimage` costs most of a second, more than every rule together on a
2M-scalar run, and `logdoctor analyze` should answer in seconds. Kendall and
Theil–Sen are quadratic in their input (all pairs), which is why callers
bucket long series down first; the rolling median is O(n * window).
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

#: Beyond this many points the exact p-value recursion is not used (scipy's threshold).
_EXACT_MAX_N = 33
#: Window cells partitioned at once by the rolling median (bounds its scratch memory to ~8 MB).
_MEDIAN_CHUNK_CELLS = 1 << 20


@lru_cache(maxsize=8)
def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(i, j) of every pair i < j of n points, cached: trend tests run on the same few lengths."""
    i, j = np.triu_indices(n, 1)
    return i.astype(np.intp), j.astype(np.intp)


def _increasing(v: np.ndarray) -> bool:
    return bool(np.all(v[1:] > v[:-1]))


def _tie_sums(v: np.ndarray) -> tuple[int, int, int]:
    """Over groups of equal values of size t: sum t(t-1)/2, sum t(t-1)(t-2), sum t(t-1)(2t+5)."""
    _, counts = np.unique(v, return_counts=True)
    t = counts[counts > 1].astype(np.int64)
    return int((t * (t - 1) // 2).sum()), int((t * (t - 1.0) * (t - 2)).sum()), int((t * (t - 1.0) * (2 * t + 5)).sum())


def kendalltau(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(tau-b, two-sided p-value); (nan, nan) when x or y is constant or there are under 2 points."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    n = len(x)
    if n < 2:
        return math.nan, math.nan
    i, j = _pairs(n)
    increasing = _increasing(x)  # steps: every pair of x in order, no x ties
    agree = np.sign(y[j] - y[i]) if increasing else np.sign(x[j] - x[i]) * np.sign(y[j] - y[i])  # +1 concordant, -1 discordant, 0 tied
    s = int(agree.sum())  # concordant minus discordant pairs
    tot = n * (n - 1) // 2
    xtie, x0, x1 = (0, 0, 0) if increasing else _tie_sums(x)
    ytie, y0, y1 = _tie_sums(y)
    if xtie == tot or ytie == tot:
        return math.nan, math.nan
    tau = min(1.0, max(-1.0, float(s / np.sqrt(tot - xtie) / np.sqrt(tot - ytie))))
    discordant = int(np.count_nonzero(agree < 0))
    if xtie == 0 and ytie == 0 and (n <= _EXACT_MAX_N or min(discordant, tot - discordant) <= 1):
        return tau, _exact_p(n, tot - discordant)
    m = n * (n - 1.0)
    var = (m * (2 * n + 5) - x1 - y1) / 18 + (2 * xtie * ytie) / m + x0 * y0 / (9 * m * (n - 2))
    z = abs(s / math.sqrt(var)) * math.sqrt(0.5)
    # 2 P(N(0,1) > |z|), split as scipy's normal tail is (erf near 0, erfc in the tail)
    return tau, (1.0 - math.erf(z)) if z < math.sqrt(0.5) else math.erfc(z)


def _exact_p(n: int, concordant: int) -> float:
    """Two-sided p-value of `concordant` pairs among n untied points (Kendall 1970, as scipy computes it)."""
    c = min(concordant, n * (n - 1) // 2 - concordant)
    if n <= 2:
        return 1.0
    if c == 0:
        return 2.0 / math.factorial(n) if n < 171 else 0.0
    if c == 1:
        return 2.0 / math.factorial(n - 1) if n < 172 else 0.0
    if 4 * c == n * (n - 1):
        return 1.0
    counts = np.zeros(c + 1)
    counts[0:2] = 1.0
    for j in range(3, n + 1):
        counts = np.cumsum(counts) if n < 171 else np.cumsum(counts) / j
        if j <= c:
            counts[j:] -= counts[: c + 1 - j]
    prob = 2.0 * np.sum(counts) / math.factorial(n) if n < 171 else np.sum(counts)
    return float(np.clip(prob, 0, 1))


def median(values: np.ndarray) -> float:
    """`np.median` of a 1-D array, to the bit (NaN when any value is NaN or there is none), without
    its per-call overhead: rules take medians of a few points dozens of times per run, where
    np.median's checks cost ~35 us a call, 3.5 ms of a 20 ms audit of one run."""
    a = np.asarray(values, dtype=float)
    n = a.size
    if n == 0:
        return math.nan
    half = n // 2
    part = np.partition(a, [half - 1, half, -1] if n % 2 == 0 else [half, -1])
    if part[-1] != part[-1]:  # NaN sorts last
        return math.nan
    return float(part[half]) if n % 2 else float((part[half - 1] + part[half]) / 2)


def theil_sen_slope(x: np.ndarray, y: np.ndarray) -> float:
    """Median of the slopes between every pair of points with distinct x; nan when all x are equal."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    i, j = _pairs(len(x))
    dx, dy = x[j] - x[i], y[j] - y[i]  # each pair once: (-a) / (-b) is a / b to the bit
    if not _increasing(x):
        apart = (dx > 0) | (dx < 0)
        dx, dy = dx[apart], dy[apart]
    slopes = dy / dx
    if not slopes.size:
        return math.nan
    return median(slopes)  # a partition: sorting first cost 4x as much


def rolling_median(y: np.ndarray, window: int) -> np.ndarray:
    """Median of each point's window of `window` points, edges mirrored (d c b | a b c d | c b a).

    An even window takes the upper of its two middle values and reaches one
    point further back than forward, as scipy's rank filter does. Meant for
    finite input (NaN has no rank).
    """
    y = np.asarray(y, dtype=float)
    w = int(window)
    if w <= 1 or len(y) < 2:
        return y.copy()
    back, ahead = w // 2, w - 1 - w // 2
    windows = sliding_window_view(_mirrored(y, back, ahead), w)
    out = np.empty(len(y))
    rows = max(1, _MEDIAN_CHUNK_CELLS // w)
    for start in range(0, len(y), rows):
        out[start : start + rows] = np.partition(windows[start : start + rows], back, axis=1)[:, back]
    return out


def _mirrored(y: np.ndarray, back: int, ahead: int) -> np.ndarray:
    """`np.pad(y, (back, ahead), mode="reflect")`; where one reflection covers both ends (the usual
    window), by slicing (2 us against np.pad's 20: smoothing calls it several times a series)."""
    if back >= len(y) or ahead >= len(y):
        return np.pad(y, (back, ahead), mode="reflect")
    return np.concatenate([y[back:0:-1], y, y[::-1][1 : 1 + ahead]])
