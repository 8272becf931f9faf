"""oscillate: the loss bounces without settling, or settles and then bounces back up."""
from __future__ import annotations

import numpy as np

from .. import curves
from ..model import Finding, Series
from ..view import RunView
from ._loss import shape_loss
from .base import Rule
from ..numbers import fmt_num


class Oscillate(Rule):
    """The loss bounces without settling, or settles and then bounces back up.

    Symptom:
        After the initial descent the loss keeps leaping far above its own
        running level: in the second half of the run a real share of the
        logged points sit more than a tenth of the run's total progress
        (and several sigmas of its own batch-to-batch noise) above the
        rolling median, in bursts (a leap is followed by another more often
        than chance; isolated leaps are heavy-tailed small-batch noise unless
        they are frequent and far outside that noise, or reach back above
        where the run started),
        while the second half gains less than a tenth of the progress (a run
        still descending is noisy, not oscillating) or the leaps go back above
        where the run started (batch noise never does). Or the second half
        zigzags step to step (full-batch updates overshooting across a
        valley), or is very noisy and drifts upward. Or the loss settles and then climbs back a large part
        of the way toward where it started without blowing up (that is
        `diverge`). Only runs that did learn qualify; a loss that never
        falls is `flat` or `crawl`. Or, with a steady training loss, the
        validation loss turns up and down by factors of ten or more three
        times or more (an evaluation that is unstable, not a model that
        overfits).
    Root causes:
        - learning rate too high for this phase of training: fine early, overshooting near the minimum
        - no decay: a constant LR where the recipe expects cosine / step decay
        - batch too small for the LR (gradient noise), or momentum / Adam beta2 too high for the LR
        - gradient accumulation not divided by the number of micro-steps (an N-times LR)
        - (validation swings only) BatchNorm running statistics that do not match the evaluation data: small or unshuffled batches, a different preprocessing at evaluation, or the model not switched to eval()
    Fix:
        - lower the LR 3-10x, or add decay (cosine to ~10 % of peak, or step decay) for the late phase
        - add warmup and gradient clipping (clip_grad_norm_ at 1.0)
        - divide the loss by accum_steps when accumulating gradients; raise the batch size
    Probe:
        update_ratio_high, LR range test
    Example:
        Adam at lr 0.03 on an MLP: the loss falls to 0.01 by step 200, then
        leaps to 0.3-1.0 every few dozen steps for the rest of the run.
    """

    code = "oscillate"
    severity = "warning"
    defaults = {
        # the statistical branches (bursts, zigzag, noisy drift) need this many points...
        "min_points": 30,
        # ...a climb back after settling can be read from this many (a 10-epoch history)
        "min_points_rebound": 10,
        # the run must have learned: progress / |start level|, and progress / noise of the
        # smoothed levels (a loss hovering around zero has no meaningful start level)
        "min_progress": 0.3,
        "min_progress_noise": 1.0,
        # an excursion: a point this share of the progress above the rolling median...
        "excursion": 0.1,
        # ...and this many robust sigmas of the point-to-point noise above it...
        "k_noise": 4.0,
        # ...and this share of the second half's points are excursions
        "min_excursion_rate": 0.03,
        # leaps must come in bursts (P(leap | leap before) / P(leap) at least this)...
        "min_burst_lift": 1.5,
        # ...unless they are this frequent and their median height is this many robust sigmas of
        # the point noise (the spike rule's bar): frequent isolated leaps of 4-8 sigmas are the
        # heavy tail of small-batch noise (logistic regression at batch 16, a Gaussian NLL with
        # a learned variance), never twice in a row and never far out
        "burst_free_rate": 0.08,
        "burst_free_sigmas": 10.0,
        # a second half still gaining this share of the progress is descending, not bouncing...
        "max_late_gain": 0.1,
        # ...unless min_excursion_rate of its points leap this many progresses above the running
        # level (back above where the run started): the leaps themselves drag the running level
        # of the middle up, so the 'gain' is theirs, and batch noise never climbs that far
        "relapse": 1.0,
        # zigzag: the second half's residual alternates (lag-1 autocorrelation at most this,
        # sign changes of successive steps at least this share) with this amplitude / progress
        "max_zigzag_lag1": -0.5,
        "min_zigzag_sign_changes": 0.8,
        "min_zigzag_amplitude": 0.05,
        # worsening: the second half drifts up by this share of the progress while its
        # scatter around the running level is at least min_late_noise of the progress
        "min_late_rise": 0.1,
        "min_late_noise": 0.05,
        # settles then bounces: the end sits this share of the progress above the best level
        "min_rebound": 0.3,
        # validation swings: at least min_swings reversals of swing_decades (log10) or more
        "swing_decades": 0.6,
        "min_swings": 3,
    }
    suppresses = ("spike",)
    #: a training loss thrown around by the optimizer explains a validation loss that climbs with it
    outranks = ("overfit",)

    def check(self, view: RunView) -> list[Finding]:
        # the training loss; a validation loss that turns back up is `overfit`, one that swings by
        # decades beside a steady training loss is an unstable evaluation
        series = shape_loss(view, "train_loss")
        c = curves.curve(series)
        if c is None or len(c) < self.params["min_points_rebound"]:
            return []
        swings = self._validation_swings(shape_loss(view, "val_loss"), series)
        if swings:
            return [swings]
        progress = c.start - c.best
        # progress <= 0 too: a loss that never went below its start (0.0 included) has nothing to bounce about
        if progress <= 0 or progress < self.params["min_progress"] * abs(c.start) or progress < self.params["min_progress_noise"] * c.y_noise:
            return []
        half = len(c) // 2
        late_gain = (c.smooth[half] - c.end) / progress
        ok = np.isfinite(series.values)
        steps, raw = series.steps[ok], series.values[ok]
        tail = steps >= c.steps[half]
        base = np.interp(steps[tail], c.steps, c.smooth)
        excursions = (raw[tail] - base) / progress
        # a leap must be large against the progress and an outlier against the run's own batch noise
        cut = max(self.params["excursion"], self.params["k_noise"] * c.noise / progress)
        leaps = excursions > cut
        rate = float(np.mean(leaps))
        relapse_rate = float(np.mean(excursions > self.params["relapse"])) if len(excursions) else 0.0
        relapsing = relapse_rate >= self.params["min_excursion_rate"]
        # leaps that come in bursts (one leap followed by another more often than chance)
        # are instability; isolated ones at a low rate are heavy-tailed batch noise
        follow = float(np.sum(leaps[1:] & leaps[:-1]) / max(np.sum(leaps[:-1]), 1))
        lift = follow / rate if rate > 0 else 0.0
        # the typical leap in robust sigmas of the point noise
        height = float(curves.median(excursions[leaps])) * progress / max(c.noise, curves.TINY) if rate > 0 else 0.0
        noise = curves.robust_sigma(raw[tail] - base) / progress
        rebound = (c.end - c.best) / progress
        p = self.params
        many = len(c) >= p["min_points"]
        bouncing = many and (
            rate >= p["min_excursion_rate"]
            and (lift >= p["min_burst_lift"] or relapsing or (rate >= p["burst_free_rate"] and height >= p["burst_free_sigmas"]))
            and (late_gain < p["max_late_gain"] or relapsing)
        )
        worsening = many and late_gain <= -p["min_late_rise"] and noise >= p["min_late_noise"]
        # period-2 zigzag (full-batch steps overshooting back and forth across a valley)
        wave = curves.oscillation(c.y[half:])
        zigzag = many and (
            wave.lag1 <= p["max_zigzag_lag1"]
            and wave.sign_change_rate >= p["min_zigzag_sign_changes"]
            and wave.amplitude >= p["min_zigzag_amplitude"] * progress
            and late_gain < p["max_late_gain"]
        )
        rebounding = rebound >= p["min_rebound"] and c.best_index < len(c) - 1
        if not (bouncing or worsening or rebounding or zigzag):
            return []
        margin = max(
            rate / p["min_excursion_rate"] if bouncing else 0.0,
            wave.lag1 / p["max_zigzag_lag1"] if zigzag else 0.0,
            -late_gain / p["min_late_rise"] if worsening else 0.0,
            rebound / p["min_rebound"] if rebounding else 0.0,
        )
        confidence = 0.5 + 0.45 * min(1.0, (margin - 1.0) / 2 + 0.3) * min(1.0, len(c) / 100)
        if bouncing:
            what = f"{rate:.0%} of the second half's points leap more than {cut:.0%} of the progress above the running level"
        elif zigzag:
            what = f"it zigzags step to step (lag-1 autocorrelation {wave.lag1:.2f}, amplitude {wave.amplitude / progress:.0%} of the progress)"
        elif rebounding:
            what = f"after reaching {fmt_num(c.best)} it climbs back to {fmt_num(c.end)}"
        else:
            what = f"the second half is noisy (sigma {noise:.0%} of the progress) and drifts up by {-late_gain:.0%} of it"
        return [
            self.finding(
                series,
                title=f"{series.name} bounces without settling: {what}",
                steps=(c.step_at(c.best_index) if rebounding and not bouncing else c.step_at(half), c.last_step),
                confidence=confidence,
                evidence={
                    "loss_start": c.start,
                    "loss_best": c.best,
                    "best_step": c.step_at(c.best_index),
                    "loss_end": c.end,
                    "excursion_rate": rate,
                    "excursion_burst_lift": lift,
                    "excursion_median_sigmas": height,
                    "relapse_rate": relapse_rate,
                    "late_noise_over_progress": noise,
                    "late_sign_change_rate": wave.sign_change_rate,
                    "late_lag1_autocorrelation": wave.lag1,
                    "late_high_freq_power": wave.high_freq_power,
                    "excursion_threshold_over_progress": cut,
                    "max_excursion_over_progress": float(np.max(excursions)) if len(excursions) else 0.0,
                    "late_gain_over_progress": late_gain,
                    "rebound_over_progress": rebound,
                },
            )
        ]

    def _validation_swings(self, val: Series | None, train: Series) -> Finding | None:
        """The validation loss jumps up and comes back down by a decade or more, again and again (a
        descent, then one climb back, is no swing), while the training loss stays within a decade
        over the second half."""
        if val is None:
            return None
        ok = np.isfinite(val.values) & (val.values > 0)
        if ok.sum() < self.params["min_points_rebound"]:
            return None
        steps, logs = val.steps[ok], np.log10(val.values[ok])
        late = logs[len(logs) // 2 :]
        swings = _decade_reversals(logs, self.params["swing_decades"])
        train_ok = np.isfinite(train.values) & (train.values > 0) & (train.steps >= steps[len(logs) // 2])
        train_span = float(np.ptp(np.log10(train.values[train_ok]))) if train_ok.sum() >= 2 else np.inf
        if swings < self.params["min_swings"] or train_span >= 1.0:
            return None
        span = float(np.ptp(late))
        return self.finding(
            val,
            title=(
                f"{val.name} swings up and down by {fmt_num(10 ** self.params['swing_decades'])}× or more {swings} times "
                f"(over {fmt_num(span)} decades in the second half) while training loss stays steady"
            ),
            steps=(int(steps[len(logs) // 2]), int(steps[-1])),
            confidence=0.55 + 0.4 * min(1.0, (swings - 1) / 4) * min(1.0, span / 3),
            evidence={"val_log10_span": span, "val_swings": swings, "train_log10_span": train_span},
        )


#: Points first searched for the next move of `_decade_reversals` (doubled while none is found).
_BLOCK = 64


def _decade_reversals(logs: np.ndarray, decades: float) -> int:
    """Moves of at least `decades` (in log10) that reverse the previous such move's direction.

    Between two moves the anchor follows the current move to its extreme, so the next move is the
    first point `decades` beyond the running extreme the other way: found a block at a time with
    a running max or min, in blocks that double while no move is found (point by point, 80,000
    validation points took 0.11 s)."""
    count, anchor, direction, at, size = 0, float(logs[0]), 0, 1, _BLOCK
    while at < len(logs):
        block = logs[at : at + size]
        if direction == 0:  # no move yet: the anchor stays at the first point
            hit = np.flatnonzero(np.abs(block - anchor) >= decades)
        else:  # the extreme before each point, then the first point that far back from it
            extreme = (np.maximum if direction > 0 else np.minimum).accumulate(np.r_[anchor, block])[:-1]
            hit = np.flatnonzero((block - extreme) * direction <= -decades)
        if not len(hit):
            if direction:
                anchor = float(extreme[-1] if (block[-1] - extreme[-1]) * direction <= 0 else block[-1])
            at, size = at + len(block), 2 * size
            continue
        x = float(block[hit[0]])
        count += direction != 0
        direction = -direction if direction else (1 if x > anchor else -1)
        anchor, at, size = x, at + int(hit[0]) + 1, _BLOCK
    return count
