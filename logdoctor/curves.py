"""Shared curve mathematics: every rule calls these, none re-implements them.

Scale-free by design: statistics are expressed relative to a series' own
level, range and noise so one threshold works for a loss of 11.0 and one of
0.002. Never quadratic: a long series is first reduced to a bucketed view
(median / min / max per bucket of consecutive points, O(n)), and every
statistic after that runs on at most `MAX_POINTS` buckets. Full resolution is
used only where it matters (the first non-finite step, the point noise).

No scipy: rank statistics and the rolling median come from `rankstats`
(numpy), so importing the rules and analysing a run stay cheap.
"""
from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from .model import Series
from .rankstats import kendalltau, median, rolling_median, theil_sen_slope  # numpy: importing scipy.stats/ndimage costs ~1 s

#: Size of the bucketed view every statistic runs on.
MAX_POINTS = 1024
#: MAD -> standard deviation for Gaussian noise.
MAD_SIGMA = 1.4826
#: Smallest positive float: a floor for divisors that keeps every ratio scale-free.
TINY = float(np.finfo(float).tiny)


def first_nonfinite(values: np.ndarray) -> int | None:
    """Index of the first NaN/inf value, or None."""
    bad = np.flatnonzero(~np.isfinite(values))
    return int(bad[0]) if len(bad) else None


# --------------------------------------------------------------------------- non-finite values


@dataclass(frozen=True)
class NonFinite:
    """Where a series stops being a number, at full resolution."""

    index: int  # first non-finite point
    step: int
    count: int  # non-finite points in the whole series
    #: Every point from the first non-finite one to the end is non-finite: it never recovered.
    tail: bool
    kind: str  # 'nan', 'inf' or '-inf' (of the first bad point)


def nonfinite(series: Series) -> NonFinite | None:
    """Describe the series' NaN/inf points, or None when all are finite."""
    ok = np.isfinite(series.values)
    bad = np.flatnonzero(~ok)
    if not len(bad):
        return None
    i = int(bad[0])
    v = series.values[i]
    kind = "nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")
    return NonFinite(
        index=i,
        step=int(series.steps[i]),
        count=int(len(bad)),
        tail=bool(len(bad) == len(ok) - i),
        kind=kind,
    )


# --------------------------------------------------------------------------- robust scalars


def robust_sigma(x: np.ndarray) -> float:
    """Standard deviation estimated from the median absolute deviation (outlier-proof)."""
    x = np.asarray(x, dtype=float)
    if len(x) == 0:
        return 0.0
    return float(MAD_SIGMA * median(np.abs(x - median(x))))


def noise_sigma(values: np.ndarray) -> float:
    """Point-to-point noise of a series: robust sigma of first differences / sqrt(2).

    Differencing removes the trend (a smooth descent barely changes between
    neighbours), the MAD ignores spikes; subtracting the median difference
    removes a constant slope.
    """
    v = np.asarray(values, dtype=float)
    if len(v) < 3:
        return 0.0
    return robust_sigma(np.diff(v)) / math.sqrt(2.0)


def relative_spread(values: np.ndarray) -> float:
    """Range of the finite values as a share of their median level (nan when none is finite).

    Scale-free, so one threshold serves a loss of 0.01 and one of 600.
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if not len(v):
        return math.nan
    return float(np.ptp(v)) / max(abs(float(median(v))), 1e-12)


def frozen(values: np.ndarray, min_points: int = 3, max_relative_spread: float = 1e-6) -> bool:
    """True when at least `min_points` finite values stay within `max_relative_spread` of their level
    (by default: identical to floating-point precision).

    A quantity computed from weights that change never repeats itself bit for bit; one that
    does (a validation loss at every evaluation) was computed from weights that did not move.
    """
    v = np.asarray(values, dtype=float)
    if np.isfinite(v).sum() < min_points:
        return False
    return relative_spread(v) <= max_relative_spread


def frozen_tail_start(values: np.ndarray, max_relative_spread: float) -> int:
    """Index where the longest suffix of finite values staying within `max_relative_spread` of its
    level begins (len(values) when not even the last two values agree).

    A training loss computed on fresh batches always moves; one whose last stretch repeats
    itself to a few parts per hundred thousand is computed by a model whose output no longer
    depends on its input or its weights.
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) < 2:
        return len(v)
    hi = np.maximum.accumulate(v[::-1])[::-1]
    lo = np.minimum.accumulate(v[::-1])[::-1]
    inside = (hi - lo) <= max_relative_spread * np.maximum(np.abs(v[-1]), TINY)
    # inside is True on a suffix (the spread only grows going back): its first True
    first = int(np.argmax(inside))
    return first if first < len(v) - 1 else len(v)


#: Values `quantum` tries each grid on before all of them, and the grids, coarsest first.
_QUANTUM_HEAD = 16
_GRIDS = np.array([10.0**exp for exp in range(2, -7, -1)])


def quantum(values: np.ndarray, sample: int = 4096) -> float:
    """The rounding step of logged values (1e-4 for HF Trainer's 4 decimals), or 0.0.

    The coarsest power of ten that every sampled value is a multiple of. A
    noise estimate never goes below what the rounding itself can resolve.
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return 0.0
    if len(v) > sample:
        v = v[np.linspace(0, len(v) - 1, sample).astype(int)]
    if np.all(v == v[0]):
        return 0.0
    head = v[:_QUANTUM_HEAD] / _GRIDS[:, None]  # every grid at once on the first few values
    near = np.all(np.abs(head - np.round(head)) < 1e-3, axis=1)
    for i, q in enumerate(_GRIDS.tolist()):
        if not near[i]:
            continue  # a value off this grid already among the first few (most logged floats, at every grid)
        r = v / q
        k = np.round(r)
        # every value on the grid, and the grid fine enough to tell the values apart
        if np.all(np.abs(r - k) < 1e-3) and len(np.unique(k)) > 1:
            return q
    return 0.0


def level(y: np.ndarray, where: str = "start", frac: float = 0.1, min_points: int = 3) -> float:
    """Median of the first (or last) fraction of a series: a robust 'where it was' level."""
    y = np.asarray(y, dtype=float)
    if len(y) == 0:
        return float("nan")
    k = int(min(len(y), max(min_points, round(frac * len(y)))))
    part = y[:k] if where == "start" else y[-k:]
    return float(median(part))


# --------------------------------------------------------------------------- bucketed view


@dataclass(frozen=True)
class Buckets:
    """A long series reduced to consecutive equal-count buckets (linear time)."""

    steps: np.ndarray  # median step of each bucket (float)
    first: np.ndarray  # first step in each bucket (int)
    last: np.ndarray  # last step in each bucket (int)
    med: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    size: int  # points per bucket (the last one may hold fewer)


def buckets(steps: np.ndarray, values: np.ndarray, max_points: int = MAX_POINTS) -> Buckets:
    """Median / min / max of consecutive buckets of finite points; identity when short."""
    ok = np.isfinite(values)
    s, v = np.asarray(steps), np.asarray(values, dtype=float)
    if not ok.all():  # masked copies only when something is left out (a long series: 28 MB each)
        s, v = s[ok], v[ok]
    n = len(v)
    size = max(1, math.ceil(n / max_points))
    if size == 1:
        return Buckets(s.astype(float), s.astype(np.int64), s.astype(np.int64), v, v, v, 1)
    full = (n // size) * size
    parts_v = [v[:full].reshape(-1, size)]
    parts_s = [s[:full].reshape(-1, size)]
    med = [np.median(parts_v[0], axis=1)]
    lo, hi = [parts_v[0].min(axis=1)], [parts_v[0].max(axis=1)]
    st = [np.median(parts_s[0], axis=1)]
    first, last = [parts_s[0][:, 0]], [parts_s[0][:, -1]]
    if full < n:
        rv, rs = v[full:], s[full:]
        med.append([median(rv)])
        lo.append([rv.min()])
        hi.append([rv.max()])
        st.append([median(rs)])
        first.append([rs[0]])
        last.append([rs[-1]])
    return Buckets(
        steps=np.concatenate(st).astype(float),
        first=np.concatenate(first).astype(np.int64),
        last=np.concatenate(last).astype(np.int64),
        med=np.concatenate(med).astype(float),
        lo=np.concatenate(lo).astype(float),
        hi=np.concatenate(hi).astype(float),
        size=size,
    )


# --------------------------------------------------------------------------- smoothing and outliers


def odd_window(n: int, frac: float = 0.05, minimum: int = 3, maximum: int = 101) -> int:
    """An odd rolling-window length of about `frac` of a series of n points."""
    w = int(round(frac * n))
    w = max(minimum, min(maximum, w))
    if n and w > n:
        w = n
    return w if w % 2 else max(1, w - 1)


def smooth(y: np.ndarray, window: int | None = None) -> np.ndarray:
    """Rolling median: survives noise and isolated outliers.

    Edges are mirrored, so the first value is the median of the first few
    points (an outlier at step 0 does not become the start level) while a
    steep initial descent still starts near its top.
    """
    y = np.asarray(y, dtype=float)
    if len(y) < 3:
        return y.copy()
    w = window or odd_window(len(y))
    if w < 2:
        return y.copy()
    return rolling_median(y, w)


@dataclass(frozen=True)
class Hampel:
    outliers: np.ndarray  # bool mask
    center: np.ndarray  # rolling median
    sigma: np.ndarray  # rolling robust sigma (MAD-based)
    score: np.ndarray  # (y - center) / sigma


def hampel(y: np.ndarray, window: int | None = None, k: float = 6.0, floor: float = 0.0) -> Hampel:
    """Hampel filter: points more than k robust sigmas from their rolling median.

    `floor` bounds the local sigma from below (e.g. the quantisation step or
    the global noise) so a locally constant stretch does not make every tiny
    wiggle an outlier.
    """
    y = np.asarray(y, dtype=float)
    w = window or odd_window(len(y), frac=0.05, minimum=5, maximum=51)
    # mirrored edges: padding by repeating the edge value would collapse the MAD there
    center = rolling_median(y, w)
    mad = rolling_median(np.abs(y - center), w)
    sigma = np.maximum(MAD_SIGMA * mad, floor)
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(sigma > 0, (y - center) / np.where(sigma > 0, sigma, 1.0), 0.0)
    return Hampel(outliers=np.abs(score) > k, center=center, sigma=sigma, score=score)


# --------------------------------------------------------------------------- trend


@dataclass(frozen=True)
class Trend:
    """Mann–Kendall trend test with the Theil–Sen slope."""

    slope: float  # per step (Theil–Sen median of pairwise slopes)
    tau: float  # Kendall's tau between step and value, in [-1, 1]
    p_value: float  # two-sided
    n: int


def trend(x: np.ndarray, y: np.ndarray, max_points: int = 400) -> Trend:
    """Significance and size of a monotone trend; long inputs are bucket-reduced first.

    Kendall's tau of (step, value) is the Mann–Kendall statistic; Theil–Sen is
    quadratic in its input, so it never sees more than `max_points` points.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    if not ok.all():
        x, y = x[ok], y[ok]
    n = len(y)
    if n < 3 or np.all(y == y[0]):
        return Trend(0.0, 0.0, 1.0, n)
    if n > max_points:
        b = buckets(x, y, max_points)
        x, y = b.steps, b.med
    tau, p = kendalltau(x, y)
    slope = theil_sen_slope(x, y) if len(set(x.tolist())) > 1 else 0.0
    return Trend(float(slope), float(tau if np.isfinite(tau) else 0.0), float(p if np.isfinite(p) else 1.0), n)


def signal_tau(x: np.ndarray, y: np.ndarray, blocks: int = 24) -> float:
    """Kendall's tau of the medians of about `blocks` equal-count blocks: how monotone the *signal* is.

    Tau over the raw points measures signal and noise together: a loss
    falling steadily by 10 % under per-batch noise of 20 % has a raw tau near
    -0.2 although every stretch of the run sits below the one before. Block
    medians average the noise away (a block of m points cuts it ~sqrt(m)
    times) while keeping the shape, so a steady decline scores near -1 and a
    fall-then-rise near 0 whatever the batch noise. Significance still comes
    from `trend` over all points.
    """
    return trend(x, y, max_points=blocks).tau


def pace(x: np.ndarray, y: np.ndarray) -> tuple[Trend, Trend, float]:
    """Theil–Sen trends of the first and last third of a falling series, and their ratio.

    The ratio (last slope / first slope) tells a steady pace (~1: a loss
    inching down at a constant rate, as with an LR far too low) from
    convergence (near 0: fast at first, then levelling off, as healthy runs
    and power-law fine-tuning curves do). A first third that does not fall
    while the last one does counts as steady (1.0).
    """
    third = max(1, len(y) // 3)
    early, late = trend(x[:third], y[:third]), trend(x[-third:], y[-third:])
    if early.slope < 0:
        ratio = late.slope / early.slope
    else:
        ratio = 1.0 if late.slope < 0 else 0.0
    return early, late, ratio


def levels_off(x: np.ndarray, y: np.ndarray, noise: float, min_ratio: float, z: float = 2.0) -> tuple[bool, Trend, Trend, float]:
    """Whether a falling series levels off: its last third's pace below `min_ratio` of its first
    third's, by more than the noise lets two slopes differ by chance.

    Under heavy batch noise the slope of a third of the run is uncertain
    (standard error sigma / sqrt(sum (x - mean x)^2)), and the ratio of two
    uncertain slopes swings from negative to several times one; a pace that
    cannot be told from steady counts as steady. Returns (levels off, early
    trend, late trend, ratio) with the trends and ratio of `pace`.
    """
    early, late, ratio = pace(x, y)
    if ratio >= min_ratio:
        return False, early, late, ratio
    third = max(1, len(y) // 3)
    se = math.hypot(_slope_se(x[:third], noise), _slope_se(x[-third:], noise))
    return bool(late.slope - early.slope > z * se), early, late, ratio


def _slope_se(x: np.ndarray, sigma: float) -> float:
    """Standard error of a least-squares slope over steps x with point noise sigma."""
    x = np.asarray(x, dtype=float)
    sxx = float(np.sum((x - x.mean()) ** 2)) if len(x) else 0.0
    return sigma / math.sqrt(sxx) if sxx > 0 else math.inf


# --------------------------------------------------------------------------- change points


def best_split(y: np.ndarray, min_size: int = 3) -> tuple[int, float]:
    """The single mean-shift split of y maximising the cost reduction (linear time).

    Returns (index where the second segment starts, reduction of the sum of
    squared errors); (-1, 0.0) when y is too short.
    """
    y = np.asarray(y, dtype=float)
    n = len(y)
    if n < 2 * min_size:
        return -1, 0.0
    c1 = np.cumsum(y)
    c2 = np.cumsum(y * y)
    total = c2[-1] - c1[-1] ** 2 / n
    k = np.arange(min_size, n - min_size + 1)
    left = c2[k - 1] - c1[k - 1] ** 2 / k
    right = (c2[-1] - c2[k - 1]) - (c1[-1] - c1[k - 1]) ** 2 / (n - k)
    gain = total - (left + right)
    i = int(np.argmax(gain))
    return int(k[i]), float(gain[i])


# --------------------------------------------------------------------------- oscillation and periodicity


@dataclass(frozen=True)
class Oscillation:
    """How a series moves around its own smooth trend."""

    #: Fraction of consecutive differences that flip sign (smooth: ~0, white noise: ~2/3, zigzag: ~1).
    sign_change_rate: float
    #: Lag-1 autocorrelation of the residual around the trend (zigzag: strongly negative).
    lag1: float
    #: Share of the residual's spectral power in the upper half of frequencies.
    high_freq_power: float
    #: Robust spread (sigma) of the residual.
    amplitude: float


def oscillation(y: np.ndarray, window: int | None = None) -> Oscillation:
    """Sign-change, autocorrelation and spectral measures of the residual around a rolling median."""
    y = np.asarray(y, dtype=float)
    if len(y) < 5:
        return Oscillation(0.0, 0.0, 0.0, 0.0)
    resid = y - smooth(y, window)
    d = np.diff(y)
    nz = d[d != 0]
    scr = float(np.mean(np.sign(nz[1:]) != np.sign(nz[:-1]))) if len(nz) > 2 else 0.0
    r = resid - resid.mean()
    denom = float(np.dot(r, r))
    lag1 = float(np.dot(r[1:], r[:-1]) / denom) if denom > 0 else 0.0
    power = np.abs(np.fft.rfft(r)) ** 2
    power = power[1:]
    hf = float(power[len(power) // 2 :].sum() / power.sum()) if power.sum() > 0 else 0.0
    return Oscillation(scr, lag1, hf, robust_sigma(resid))


def autocorrelation(y: np.ndarray) -> np.ndarray:
    """Autocorrelation at every lag via FFT (n log n), normalised to 1 at lag 0.

    Zero-padded to a power of two of at least 2n: any length from 2n on gives the linear (not
    circular) autocorrelation, and a length with a large prime factor costs an FFT many times
    longer (60,001 points padded to 120,002 took 168 ms, to 131,072 a few)."""
    r = np.asarray(y, dtype=float) - np.mean(y)
    n = len(r)
    if n < 2 or not np.any(r):
        return np.zeros(max(n, 1))
    size = 1 << (2 * n - 1).bit_length()
    f = np.fft.rfft(r, size)
    ac = np.fft.irfft(f * np.conj(f), size)[:n]
    return ac / ac[0]


def moving_average(y: np.ndarray, window: int) -> np.ndarray:
    """Centred mean over exactly `window` points (NaN where it does not fit), in linear time.

    Averaging over exactly one period cancels any pattern with that period
    and keeps a linear trend, so `y - moving_average(y, period)` is the
    periodic part plus noise.
    """
    y = np.asarray(y, dtype=float)
    n = len(y)
    window = max(1, int(window))
    cs = np.r_[0.0, np.cumsum(y)]
    # point i averages y[i - window // 2 : i - window // 2 + window]: it fits for i in [first, stop)
    # (slices, not index arrays: a 3.5 M-point loss held eight arrays of it)
    first, stop = window // 2, n - window + window // 2 + 1
    out = np.full(n, np.nan)
    if stop > first:
        np.subtract(cs[first - window // 2 + window : stop - window // 2 + window], cs[: stop - first], out=out[first:stop])
        out[first:stop] /= window
    return out


def dominant_period(y: np.ndarray, min_period: int = 2, max_period: int | None = None) -> tuple[int, float]:
    """The lag of the highest autocorrelation peak of the detrended series, and its height.

    (0, 0.0) when there is no peak. A strong periodic pattern (epoch-level
    sawtooth) gives a height near 1; noise gives heights near 0. Linear-log
    time: a moving-average detrend, an FFT autocorrelation, vectorised peaks.
    """
    y = np.asarray(y, dtype=float)
    n = len(y)
    if n < 3 * min_period:
        return 0, 0.0
    resid = y - moving_average(y, max(5, n // 4))
    ac = autocorrelation(resid[np.isfinite(resid)])
    n = len(ac)
    hi = min(max_period or n // 3, n // 3, n - 2)
    if hi < min_period:
        return 0, 0.0
    lags = np.arange(max(min_period, 1), hi + 1)
    peak = (ac[lags] > ac[lags - 1]) & (ac[lags] >= ac[lags + 1])
    if not peak.any():
        return 0, 0.0
    best = lags[peak][int(np.argmax(ac[lags][peak]))]
    return int(best), float(ac[best])


# --------------------------------------------------------------------------- the per-series summary rules share


@dataclass(frozen=True)
class Curve:
    """A loss-like series as rules see it: bucketed, smoothed, with its levels and noise.

    Built once per series (cached), from finite points only (`nonfinite`
    says where a series stops being a number).
    """

    name: str
    steps: np.ndarray  # bucket step centres
    first: np.ndarray  # first step of each bucket
    last: np.ndarray  # last step of each bucket
    y: np.ndarray  # bucket medians
    lo: np.ndarray
    hi: np.ndarray
    bucket: int  # raw points per bucket
    n: int  # finite raw points
    first_step: int
    last_step: int
    noise: float  # per-point noise sigma at full resolution (floored by the rounding step)
    y_noise: float  # noise sigma of the bucket medians
    quantum: float
    smooth: np.ndarray  # rolling median of y
    start: float  # level at the start (median of the first few points)
    end: float  # level at the end (last smoothed value)
    best: float  # lowest smoothed level
    best_index: int

    def __len__(self) -> int:
        return len(self.y)

    def step_at(self, i: int) -> int:
        """The (bucket-centre) step of bucket i, clamped to the series."""
        return int(round(self.steps[min(max(i, 0), len(self.steps) - 1)]))


_CACHE: OrderedDict[tuple[int, int], tuple[Series, Curve | None]] = OrderedDict()
_CACHE_SIZE = 64
#: Runs may be diagnosed on threads (a threaded dask worker): the cache is shared.
_CACHE_LOCK = threading.Lock()


def curve(series: Series | None, max_points: int = MAX_POINTS) -> Curve | None:
    """The shared summary of a series, or None when it has fewer than 3 finite points.

    Cached per series object (rules on one run share one computation); the
    cache keeps a reference to the series, so an id is never reused while cached.
    """
    if series is None:
        return None
    key = (id(series), max_points)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit[0] is series:
            _CACHE.move_to_end(key)
            return hit[1]
    result = _build(series, max_points)
    with _CACHE_LOCK:
        _CACHE[key] = (series, result)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return result


def _build(series: Series, max_points: int) -> Curve | None:
    values = series.values
    ok = np.isfinite(values)
    n = int(ok.sum())
    if n < 3:
        return None
    finite = values[ok]
    b = buckets(series.steps, values, max_points)
    q = quantum(finite)
    point_noise = max(noise_sigma(finite), q / math.sqrt(12.0))
    y_noise = max(noise_sigma(b.med), q / math.sqrt(12.0))
    sm = smooth(b.med)
    start, end = _start_level(b.med), float(sm[-1])
    best_index = int(np.argmin(sm))
    return Curve(
        name=series.name,
        steps=b.steps,
        first=b.first,
        last=b.last,
        y=b.med,
        lo=b.lo,
        hi=b.hi,
        bucket=b.size,
        n=n,
        first_step=int(b.first[0]),
        last_step=int(b.last[-1]),
        noise=point_noise,
        y_noise=y_noise,
        quantum=q,
        smooth=sm,
        start=start,
        end=end,
        best=float(sm[best_index]),
        best_index=best_index,
    )


def _edge_points(n: int) -> int:
    """How many of a curve's first (or last) points read its level at that edge.

    Few enough to sit near the top of a steep initial descent (a rolling
    median there would already be well down it), enough (3 from 30 points,
    1 % of long series) that one odd value is not taken for the level.
    """
    return 1 if n < 30 else max(3, round(0.01 * n))


def _start_level(y: np.ndarray) -> float:
    """Where a curve starts: the median of its first few points (`_edge_points`)."""
    return float(median(y[: _edge_points(len(y))]))


def end_level(y: np.ndarray) -> float:
    """Where a curve ends: the median of its last few points (`_edge_points`).

    A curve still moving when the run stops is read at its edge; the rolling
    median there (`Curve.end`) stands about a quarter window back.
    """
    return float(median(y[-_edge_points(len(y)) :]))


def sigmoid(x: float) -> float:
    """Logistic squashing used to turn a margin past a threshold into a confidence."""
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, x))))



# --- relational helpers ---
# Relating one series to another (LR to loss, per-epoch validation to per-step
# training): values of one series at another's steps, windowed levels, and the
# step from which a series has settled at its final value.


def values_at(series: Series, steps: np.ndarray) -> np.ndarray:
    """`series` linearly interpolated at `steps` (finite points only; NaN outside its step range)."""
    steps = np.asarray(steps, dtype=np.float64)
    ok = np.isfinite(series.values)
    if ok.sum() == 0:
        return np.full(len(steps), np.nan)
    xs, ys = series.steps[ok].astype(np.float64), series.values[ok]
    out = np.interp(steps, xs, ys)
    out[(steps < xs[0]) | (steps > xs[-1])] = np.nan
    return out


def window_level(series: Series, lo: float, hi: float) -> float:
    """Median of the finite values logged at steps in [lo, hi] (NaN when there are none)."""
    return float(window_levels(series, np.array([lo]), np.array([hi]))[0])


def window_levels(series: Series, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """`window_level` for each window [lo[i], hi[i]], found by bisecting the sorted steps: a
    thousand evaluation metrics each asking for their hundred windows of a 100,000-step training
    loss cost one pass over the windows each, not one pass over the whole loss per window (38 s)."""
    ok = np.isfinite(series.values)
    steps, values = series.steps[ok], series.values[ok]
    starts = np.searchsorted(steps, lo, side="left")
    stops = np.searchsorted(steps, hi, side="right")
    return np.array([float(median(values[a:b])) if b > a else math.nan for a, b in zip(starts, stops)], dtype=float)


def settle_index(values: np.ndarray, tol: float, negligible: float | None = None) -> int | None:
    """First index from which `values` stay within `tol` x (peak - final) of the final value.

    "When did the LR reach its floor": for a schedule that decays and then sits
    at its last value this is where the sitting starts. None when the series
    never moved (peak == final), has no finite values, or is still moving at
    its last point. With `negligible` (a share of the peak), a positive series
    must also be within `tol` of its final value on a log scale, or below that
    share: a multiplicative decay (ReduceLROnPlateau, StepLR) that still divides
    the LR by 5 every few epochs is not sitting at 4 % of its peak, while one at
    1-2 % of its peak (StepLR's second x0.1 cut) trains as good as stopped, however
    it keeps shrinking.
    """
    finite = values[np.isfinite(values)]
    if len(finite) == 0:
        return None
    final, peak = finite[-1], np.max(finite)
    span = peak - final
    if span <= 0:
        return None
    far = ~(np.abs(values - final) <= tol * span)
    if negligible is not None and np.all(finite > 0):
        with np.errstate(invalid="ignore", divide="ignore"):
            off = np.abs(np.log(values) - np.log(final))
        far |= ~(off <= tol * np.log(peak / final)) & ~(values <= negligible * peak)
    far = np.flatnonzero(far)
    if len(far) == 0:
        return 0
    return int(far[-1]) + 1 if far[-1] + 1 < len(values) else None


def on_axis_of(steps: np.ndarray, reference: Series) -> np.ndarray:
    """`steps` of one series placed on `reference`'s step axis.

    Loggers sometimes count one series in epochs and another in batches
    (Keras epoch vs batch summaries, an LR logged per epoch): when `steps`
    end before a quarter of the reference's axis, they are placed by their
    fraction of the run instead. Otherwise returned unchanged (as floats).
    """
    steps = np.asarray(steps, dtype=np.float64)
    ref = reference.steps[np.isfinite(reference.values)]
    if len(ref) < 2 or len(steps) < 2 or steps[-1] >= 0.25 * ref[-1]:
        return steps
    return ref[0] + (steps - steps[0]) / max(steps[-1] - steps[0], 1.0) * float(ref[-1] - ref[0])
