"""epoch_jumps: the loss jumps up at epoch boundaries (data order / shuffling)."""
from __future__ import annotations

import numpy as np

from .. import curves
from ..model import Finding
from ..view import RunView
from .base import Rule


class EpochJumps(Rule):
    """The training loss jumps up at epoch boundaries.

    Symptom:
        At most epoch boundaries the per-step training loss steps up, far
        beyond the change seen over the same number of steps inside an
        epoch, then falls again during the epoch: a sawtooth with the epoch
        as its period. Boundaries come from a logged epoch counter or, when
        there is none, from the loss's own dominant period. Downward steps
        (the running mean a Keras progress bar resets, a model memorising
        data it sees again) are not this pathology.
    Root causes:
        - the training data is not shuffled: it is ordered (by class, source, length or time), so every epoch replays the same easy-to-hard sequence
        - DistributedSampler.set_epoch(epoch) never called: every epoch sees the same order
        - per-epoch state reset: a scheduler or optimizer rebuilt each epoch, or a warm restart at each boundary
        - a data stream that concatenates sources, so each epoch ends on a different distribution than it starts
    Fix:
        - DataLoader(..., shuffle=True) for training (or a sampler that shuffles); shuffle the file list for streamed shards
        - call sampler.set_epoch(epoch) at the start of every epoch with DistributedSampler
        - build the optimizer and scheduler once, outside the epoch loop
    Probe:
        none from a checkpoint; inspect the label / source sequence of the first and last batches of an epoch
    Example:
        Every 390 steps (one CIFAR epoch) the loss jumps from about 0.9 to 1.6
        and decays back over the epoch.
    """

    code = "epoch_jumps"
    severity = "warning"
    defaults = {
        "min_epochs": 3,
        "min_points_per_epoch": 6,
        # jump / robust sigma of same-lag changes inside epochs
        "k_sigma": 3.0,
        # share of boundaries that must show a significant upward jump
        "min_share": 0.6,
        # without a logged epoch counter, the autocorrelation peak must be at least this high
        "min_period_strength": 0.3,
        # the median jump must be at least this share of the run's progress
        "min_jump_over_progress": 0.05,
    }

    def check(self, view: RunView) -> list[Finding]:
        series = view.series("train_loss")
        c = curves.curve(series)
        if c is None:
            return []
        ok = np.isfinite(series.values)
        steps, y = series.steps[ok], series.values[ok]
        bounds, source = self._boundaries(view, steps, y)
        if len(bounds) < self.params["min_epochs"] - 1:
            return []
        per_epoch = len(y) / (len(bounds) + 1)
        if per_epoch < self.params["min_points_per_epoch"]:
            return []
        m = max(1, min(5, int(per_epoch // 5)))
        bounds = bounds[(bounds >= m) & (bounds <= len(y) - m)]
        if len(bounds) < self.params["min_epochs"] - 1:
            return []
        jumps = np.array([np.median(y[b : b + m]) - np.median(y[b - m : b]) for b in bounds])
        # the same-lag change anywhere inside an epoch (away from boundaries) is the yardstick
        inside = np.ones(len(y) - 2 * m + 1, dtype=bool)
        for b in bounds:
            inside[max(0, b - 2 * m + 1) : b + 1] = False
        idx = np.flatnonzero(inside)
        if len(idx) < 10:
            return []
        if len(idx) > 20000:
            idx = idx[np.linspace(0, len(idx) - 1, 20000).astype(int)]
        cs = np.r_[0.0, np.cumsum(y)]
        inner = (cs[idx + 2 * m] - 2 * cs[idx + m] + cs[idx]) / m  # mean(next m) - mean(previous m)
        sigma = max(curves.robust_sigma(inner), c.quantum, 1e-12)
        z = jumps / sigma
        up = z > self.params["k_sigma"]
        share = float(np.mean(up))
        median_jump = float(np.median(jumps))
        progress = max(c.start - c.best, 0.05 * abs(c.start), 1e-12)
        if share < self.params["min_share"] or median_jump <= 0:
            return []
        if median_jump < self.params["min_jump_over_progress"] * progress:
            return []
        confidence = 0.5 + 0.45 * min(1.0, (share - self.params["min_share"]) / (1 - self.params["min_share"] + 1e-9) * 0.5 + min(1.0, len(bounds) / 10) * 0.5) * curves.sigmoid(float(np.median(z)) - self.params["k_sigma"])
        bsteps = steps[bounds]
        return [
            self.finding(
                series,
                title=f"{series.name} jumps up at {int(up.sum())} of {len(bounds)} epoch boundaries (median +{median_jump:.4g})",
                steps=(int(bsteps[0]), int(bsteps[-1])),
                confidence=confidence,
                evidence={
                    "boundaries": len(bounds),
                    "boundaries_from": source,
                    "points_per_epoch": per_epoch,
                    "jumping_share": share,
                    "median_jump": median_jump,
                    "median_jump_sigma": float(np.median(z)),
                    "median_jump_over_progress": median_jump / progress,
                    "boundary_steps": [int(s) for s in bsteps[:10]],
                },
            )
        ]

    def _boundaries(self, view: RunView, steps: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, str]:
        """Indices (into the finite loss) where a new epoch starts, and where they came from."""
        epoch = view.series("epoch")
        if epoch is not None and np.isfinite(epoch.values).sum() >= 2:
            ep = curves.values_at(epoch, steps.astype(float))
            known = np.isfinite(ep)
            whole = np.floor(np.where(known, ep, -1) + 1e-9)
            starts = np.flatnonzero(known[1:] & known[:-1] & (whole[1:] > whole[:-1])) + 1
            if len(starts):
                return starts, "epoch counter"
        period, strength = curves.dominant_period(y, min_period=self.params["min_points_per_epoch"])
        if period == 0 or strength < self.params["min_period_strength"]:
            return np.array([], dtype=int), "none"
        # phase: the offset within the period where the loss rises the most
        n_periods = len(y) // period
        folded = y[: n_periods * period].reshape(n_periods, period)
        folded = folded - np.median(folded, axis=1, keepdims=True)
        profile = np.median(folded, axis=0)
        rise = np.roll(profile, -1) - profile
        phase = (int(np.argmax(rise)) + 1) % period
        return np.arange(phase if phase else period, len(y), period), "loss period"
