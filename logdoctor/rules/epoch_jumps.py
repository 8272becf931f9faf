"""epoch_jumps: the loss jumps at epoch boundaries / repeats a pattern every epoch (data order)."""
from __future__ import annotations

import numpy as np

from .. import curves
from ..model import Finding
from ..numbers import fmt_num
from ..view import RunView
from ._loss import shape_loss
from .base import Rule, bullets


class EpochJumps(Rule):
    """The training loss jumps at epoch boundaries: it repeats one pattern every epoch.

    Symptom:
        Once the smooth trend is removed (a moving average exactly one epoch
        long, which cancels any pattern of that period), the loss at a given
        position inside the epoch is the same epoch after epoch: even and odd
        epochs show the same profile. Typically a step at each boundary: up
        (ordered data, per-epoch resets), or down followed by a drift back up
        inside the epoch (the model memorises the examples it sees again).
        Boundaries come from a logged epoch counter or, when there is none,
        from the loss's own dominant period (then it must repeat over at
        least six cycles, with an autocorrelation peak beyond chance). A running mean restarted every
        epoch (Keras progress logs) is recognised by its step-to-step changes
        shrinking along the epoch and is not reported.
    Root causes:
        - the training data is not shuffled: it is ordered (by class, source, length or time), so every epoch replays the same sequence
        - a small training set repeated for many epochs: the model memorises seen examples, so the loss drops each time the data comes round again (an overfitting signal)
        - DistributedSampler.set_epoch(epoch) never called: every epoch sees the same order
        - per-epoch state reset: the optimizer or scheduler rebuilt inside the epoch loop, or a warm restart at each boundary
    Fix:
        - DataLoader(..., shuffle=True) for training (or a shuffling sampler); shuffle the shard list of streamed data
        - more (or deduplicated) training data, fewer epochs, or stronger regularisation (dropout, weight decay, augmentation); watch the validation loss
        - call sampler.set_epoch(epoch) at the start of every epoch with DistributedSampler
        - build the optimizer and scheduler once, outside the epoch loop
    Probe:
        none from a checkpoint; print the labels / sources of the first and last batches of an epoch
    Example:
        A char-LM trained 10 epochs on 6 400 windows: every 100 steps the loss
        drops by 0.3 at the boundary and drifts back up within the epoch.
    """

    code = "epoch_jumps"
    severity = "warning"
    defaults = {
        "min_epochs": 4,
        # with no epoch counter the period is the best of many lags tried, so a pattern that
        # repeats by chance over a few cycles must be outvoted by more of them
        "min_epochs_from_period": 6,
        "min_points_per_epoch": 6,
        # correlation between the even-epoch and odd-epoch profiles
        "min_split_half_r": 0.6,
        # profile range / the run's progress (its start level minus its best)
        "min_amplitude": 0.05,
        # without a logged epoch counter, the autocorrelation peak must be at least this high
        "min_period_strength": 0.3,
        # ...and at least this many standard errors (1/sqrt(points)) of a noise autocorrelation
        "period_z": 3.0,
        # phase bins per epoch (at most)
        "bins": 24,
        # step-to-step changes late in the epoch / early in it below this: a running mean, not data
        "running_mean_ratio": 0.35,
        # a staircase in too few epochs for a profile (3 epochs of a fine-tune): every boundary
        # drops the level by this many noise standard errors, at least this share of the
        # within-epoch change either side, and the drops make this share of the fall after epoch 1
        "staircase_z": 5.0,
        "staircase_step_over_drift": 2.0,
        "staircase_share": 0.6,
        "staircase_edge": 0.2,
    }
    suppresses = ("spike", "oscillate")

    def check(self, view: RunView) -> list[Finding]:
        series = shape_loss(view, "train_loss")
        c = curves.curve(series)
        if c is None:
            return []
        ok = np.isfinite(series.values)
        # the series' own arrays when all is finite; on a long log every point-length array counts
        # (3.5 M points: 28 MB each), so those done with are let go as the rule goes
        steps, y = (series.steps, series.values) if ok.all() else (series.steps[ok], series.values[ok])
        del ok
        starts, source = self._epoch_starts(view, steps, y)
        if len(starts) and len(y) - starts[-1] < self.params["min_points_per_epoch"]:
            starts = starts[:-1]  # the closing point of a run logged at `epoch 3.0`: no epoch of its own
        if source == "epoch counter" and 2 <= len(starts) < self.params["min_epochs"] - 1:
            return self._staircase(series, steps, y, starts)
        if len(starts) < self.params["min_epochs"] - 1:
            return []
        period = int(curves.median(np.diff(starts))) if len(starts) > 1 else int(starts[0])
        if period < self.params["min_points_per_epoch"]:
            return []
        # epoch index and phase in [0, 1) of every point inside a complete epoch
        edges = np.r_[starts, len(y)]
        epoch_of = np.searchsorted(edges, np.arange(len(y)), side="right") - 1
        inside = (epoch_of >= 0) & (epoch_of < len(edges) - 1)
        # only whole epochs of typical length (the partial first / last one is dropped)
        length = np.diff(edges)
        whole = np.abs(length - period) <= 0.2 * period
        inside &= whole[np.clip(epoch_of, 0, len(whole) - 1)]
        detrended = curves.moving_average(y, period)
        np.subtract(y, detrended, out=detrended)
        inside &= np.isfinite(detrended)
        idx = np.flatnonzero(inside)
        del inside
        e = epoch_of[idx].astype(np.min_scalar_type(max(len(edges), 1)))
        del epoch_of
        r = detrended[idx]
        del detrended
        needed = self.params["min_epochs"] if source == "epoch counter" else self.params["min_epochs_from_period"]
        if len(np.unique(e)) < needed:
            return []
        phase = (idx - edges[e]) / length[e]
        bins = int(min(self.params["bins"], period))
        b = np.minimum((phase * bins).astype(int), bins - 1).astype(np.min_scalar_type(bins))
        profile = _profile(b, r, bins)
        even = _profile(b[e % 2 == 0], r[e % 2 == 0], bins)
        odd = _profile(b[e % 2 == 1], r[e % 2 == 1], bins)
        agree = _corr(even, odd)
        amplitude = float(np.max(profile) - np.min(profile))
        ref = max(c.start - c.best, 0.05 * abs(c.start), curves.TINY)
        boundary_jump = float(profile[0] - profile[-1])
        if agree < self.params["min_split_half_r"] or amplitude < self.params["min_amplitude"] * ref:
            return []
        if _running_mean(y, idx, e, phase, self.params["running_mean_ratio"]):
            return []  # a per-epoch running mean (Keras progress logs) resets at every boundary
        confidence = 0.5 + 0.45 * min(1.0, (agree - self.params["min_split_half_r"]) / (1 - self.params["min_split_half_r"]) + 0.2) * min(1.0, len(np.unique(e)) / 8)
        bsteps = steps[starts[(starts > 0) & (starts < len(steps))]]
        what = f"jumps {'up' if boundary_jump > 0 else 'down'} {abs(boundary_jump):.4g} at each boundary" if abs(boundary_jump) >= 0.5 * amplitude else "follows the same within-epoch pattern"
        causes, fixes = self._causes_and_fixes(memorising=boundary_jump < 0)
        return [
            self.finding(
                series,
                causes=causes,
                fixes=fixes,
                title=f"{series.name} repeats one pattern every epoch ({what}; {len(np.unique(e))} epochs of ~{period} points)",
                steps=(int(bsteps[0]) if len(bsteps) else c.first_step, c.last_step),
                confidence=confidence,
                evidence={
                    "epochs": int(len(np.unique(e))),
                    "epochs_from": source,
                    "points_per_epoch": period,
                    "split_half_r": agree,
                    "pattern_amplitude": amplitude,
                    "amplitude_over_progress": amplitude / ref,
                    "boundary_jump": boundary_jump,
                    "boundary_steps": [int(s) for s in bsteps[:10]],
                },
            )
        ]

    def _causes_and_fixes(self, memorising: bool) -> tuple[list[str], list[str]]:
        """The documented causes and fixes; a drop each time the data comes round again puts
        memorisation (the second of each) first."""
        causes, fixes = bullets(self.doc()["Root causes"]), bullets(self.doc()["Fix"])
        if memorising:
            causes.insert(0, causes.pop(1))
            fixes.insert(0, fixes.pop(1))
        return causes, fixes

    def _staircase(self, series, steps: np.ndarray, y: np.ndarray, starts: np.ndarray) -> list[Finding]:
        """The level drops at every epoch boundary and sits still inside each epoch, in 3-4 epochs:
        the memorisation staircase of a multi-epoch fine-tune (an LLM's SFT: 1.1 through epoch 1,
        0.65 through epoch 2, 0.3 through epoch 3), too few epochs for a split-half profile."""
        p = self.params
        edges = np.r_[0, starts, len(y)]
        if len(starts) < 2 or np.min(np.diff(edges)) < p["min_points_per_epoch"]:
            return []
        k = [max(2, int(p["staircase_edge"] * (b - a))) for a, b in zip(edges[:-1], edges[1:])]
        head = [float(curves.median(y[a : a + n])) for a, n in zip(edges[:-1], k)]
        tail = [float(curves.median(y[b - n : b])) for b, n in zip(edges[1:], k)]
        noise = max(curves.noise_sigma(y), curves.quantum(y))
        drops = [tail[i] - head[i + 1] for i in range(len(starts))]
        drifts = [abs(head[i] - tail[i]) for i in range(1, len(head))]
        error = noise * np.sqrt(2.0 / min(k))
        for i, drop in enumerate(drops):
            beside = max(drifts[i] if i < len(drifts) else 0.0, drifts[i - 1] if i >= 1 else 0.0)
            if drop < p["staircase_z"] * error or drop < p["staircase_step_over_drift"] * beside:
                return []
        fall = tail[0] - tail[-1]
        if fall <= 0 or sum(drops) < p["staircase_share"] * fall:
            return []
        bsteps = [int(steps[i]) for i in starts]
        levels = " → ".join(fmt_num(h) for h in tail)
        causes, fixes = self._causes_and_fixes(memorising=True)
        return [
            self.finding(
                series,
                causes=causes,
                fixes=fixes,
                title=(
                    f"{series.name} drops at every epoch boundary and stays level inside each epoch "
                    f"(epoch levels {levels}: the drops at the boundaries add up to {fmt_num(sum(drops))} of a "
                    f"{fmt_num(fall)} fall after epoch 1)"
                ),
                steps=(bsteps[0], int(steps[-1])),
                confidence=0.6 + 0.3 * min(1.0, min(drops) / (4 * p["staircase_z"] * error)),
                evidence={
                    "epochs": len(edges) - 1,
                    "epochs_from": "epoch counter",
                    "kind": "staircase",
                    "boundary_drops": drops,
                    "boundary_steps": bsteps,
                    "noise_sigma": noise,
                },
            )
        ]

    def _epoch_starts(self, view: RunView, steps: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, str]:
        """Indices (into the finite loss) where a new epoch starts, and where they came from."""
        epoch = view.series("epoch")
        if epoch is not None and np.isfinite(epoch.values).sum() >= 2:
            ep = curves.values_at(epoch, steps.astype(float))
            known = np.isfinite(ep)
            whole = np.floor(np.where(known, ep, -1) + 1e-9)
            starts = np.flatnonzero(known[1:] & known[:-1] & (whole[1:] > whole[:-1])) + 1
            if len(starts):
                return starts, "epoch counter"
        # search from lag 2, so a step-to-step zigzag is not mistaken for its own harmonics
        period, strength = curves.dominant_period(y)
        # an autocorrelation peak of noise has a standard error of about 1/sqrt(n): on a short
        # history (a per-epoch log of 40 points) 0.3 is within chance, so the peak must also stand
        # period_z standard errors clear
        needed = max(self.params["min_period_strength"], self.params["period_z"] / np.sqrt(max(len(y), 1)))
        if period < self.params["min_points_per_epoch"] or strength < needed:
            return np.array([], dtype=int), "none"
        return np.arange(period, len(y), period), "loss period"


def _profile(bins: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Median value per phase bin (NaN-free: empty bins get 0).

    A median, not a mean: a pattern of the data order is there in every
    epoch, so it survives; what a few epochs or a few points carry does not.
    The residual of the fast first epochs (a steep convex descent minus its
    one-epoch moving average) or one bad batch every N steps (spikes with a
    period: `spike`) would otherwise dominate a mean profile and repeat
    across even and odd epochs.
    """
    # grouped by bin with a stable sort on small integers (a radix sort, linear in the points);
    # within a bin the median does not need the values ordered
    v = values[np.argsort(bins.astype(np.min_scalar_type(n)), kind="stable")]
    counts = np.bincount(bins, minlength=n)[:n]
    stops = np.cumsum(counts)
    starts = stops - counts
    out = np.zeros(n)
    for i in np.flatnonzero(stops > starts):
        out[i] = curves.median(v[starts[i] : stops[i]])
    return out


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    if np.std(a) == 0 or np.std(b) == 0:
        return 0.0
    return float(np.corrcoef(a, b)[0, 1])


def _running_mean(y: np.ndarray, idx: np.ndarray, epoch: np.ndarray, phase: np.ndarray, ratio: float) -> bool:
    """True when the series is a running mean restarted each epoch.

    A cumulative mean over k batches moves by about sigma / k per step: its
    step-to-step changes shrink roughly tenfold from the start of an epoch to
    its end, while a raw per-batch loss is as jittery late in the epoch as
    early.
    """
    same = np.r_[False, epoch[1:] == epoch[:-1]] & np.r_[False, np.diff(idx) == 1]
    moves = np.abs(np.diff(y[idx], prepend=np.nan))[same]
    at = phase[same]
    early, late = moves[at < 0.15], moves[at >= 0.5]
    if len(early) < 3 or len(late) < 3:
        return False
    first = curves.median(early)
    return bool(first > 0 and curves.median(late) / first < ratio)
