"""diverge: the loss blows up and/or becomes inf / NaN."""
from __future__ import annotations

import math

import numpy as np

from .. import curves
from ..model import Finding, Series
from ..numbers import fmt_num
from ..view import RunView
from ._loss import loss_series, primary_loss
from .base import Rule


class Diverge(Rule):
    """The loss blows up and/or becomes inf / NaN.

    Symptom:
        The loss turns into NaN or inf and stays there (a NaN tail), or it
        climbs and stays far above its best level: it ends above where it
        started, or many times its best value, well beyond its own noise and
        by at least 5 % of that level (a loss drifting up a fraction of a
        percent while it sits still is `flat`). A loss still climbing when
        the run stops counts too: it is read at its closing points, and a
        last tenth that keeps rising stands for one that stays up.
        A loss that spikes and comes back is `spike`, not this. The blow-up
        is read on the training loss; a run that logs only a validation loss
        is read on that one.
    Root causes:
        - learning rate too high, or no warmup: updates overshoot and grow each step
        - exploding gradients with no clipping (deep nets, RNNs, attention logits)
        - fp16 overflow in the forward or loss (values past 65504) or a log(0) in the loss (sigmoid + BCELoss)
        - Adam eps too small for half-precision optimizer state (eps rounds to 0)
        - a bad batch: an input with NaN/inf or an extreme outlier
    Fix:
        - lower the learning rate 3-10x and add a linear warmup over the first ~5 % of steps
        - clip gradients: torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        - train in bf16 instead of fp16, or keep the loss / final logits in fp32; use BCEWithLogitsLoss instead of sigmoid + BCELoss
        - for half-precision optimizer state raise Adam eps to 1e-7 or 1e-6
        - assert torch.isfinite(batch).all() in the data pipeline
    Probe:
        nan_weights, nan_source, grad_explode, adam_eps_underflow
    Example:
        Train loss falls from 2.3 to 1.1 by step 800, then climbs to 9.7 and is
        NaN from step 1 240 to the end of the run.
    """

    code = "diverge"
    severity = "critical"
    defaults = {
        "min_points": 5,
        # finite blow-up: where the loss ends, relative to the progress it had made
        "min_rise_over_progress": 1.0,
        # ...or as a multiple of its best value (positive losses)
        "min_growth_factor": 10.0,
        # and the rise is at least this share of the lowest level (a loss at ln 10 drifting from
        # 2.296 to 2.311 rose beyond its noise, but it sat still: `flat`, not a blow-up)
        "min_rise_relative": 0.05,
        # the rise must stand this many noise sigmas clear
        "min_rise_noise": 6.0,
        # share of the last tenth of the run that must stay in the upper half of the rise
        "min_tail_share": 0.8,
        # ...or the last tenth is still climbing: a rising Mann-Kendall trend at this p
        "climb_p": 0.01,
        # ...or it turned at its best and climbs at nearly every point since (Kendall tau at least
        # min_turn_tau over min_turn_points or more), min_turn_rise above its best and still at its top
        "min_turn_points": 5,
        "min_turn_tau": 0.8,
        "min_turn_rise": 0.1,
        # isolated NaN/inf points (not a tail) count from this share of the points: an
        # occasional overflowed fp16 loss in a run that carries on learning is not a divergence
        "min_intermittent_share": 0.01,
        # a loss printed as 0 beside a NaN / inf gradient norm, on this many points to the end
        "min_zero_nan_grad_points": 2,
    }
    suppresses = ("oscillate", "spike", "flat", "crawl", "epoch_jumps")

    def check(self, view: RunView) -> list[Finding]:
        for series in loss_series(view):
            found = self._nonfinite(series)
            if found:
                return [found]
        # a rising validation loss beside a training loss is `overfit`: only the training loss
        # blows up; a run that logs nothing but its validation loss is judged on that
        series = primary_loss(view)
        if series is None:
            return []
        found = self._zero_beside_nonfinite_grad(series, view.series("grad_norm")) or self._blow_up(series, training=series.name == view.roles.get("train_loss"))
        return [found] if found else []

    def _zero_beside_nonfinite_grad(self, series: Series, grad: Series | None) -> Finding | None:
        """A loss printed as exactly 0 at every step from some step on, while the gradient norm
        logged at those steps is NaN / inf: the loss is NaN too, and the trainer prints it as 0
        (HF Trainer's `'loss': 0.0, 'grad_norm': nan` under a NaN-skipping optimizer or an fp16
        overflow). Needs `min_zero_nan_grad_points` such steps, through to the end."""
        if grad is None:
            return None
        _, at_loss, at_grad = np.intersect1d(series.steps, grad.steps, return_indices=True)
        hit = (series.values[at_loss] == 0) & ~np.isfinite(grad.values[at_grad])
        if hit.sum() < self.params["min_zero_nan_grad_points"]:
            return None
        first = int(np.argmax(hit))
        if not hit[first:].all():
            return None
        step = int(series.steps[at_loss[first]])
        return self.finding(
            series,
            title=f"{series.name} reads 0 while the gradient norm is NaN / inf from step {step} on: the loss is no number either",
            steps=(step, int(series.steps[-1])),
            confidence=0.95,
            evidence={"first_nonfinite_step": step, "kind": "NaN / inf gradient norm beside a loss of 0",
                      "nonfinite_points": int(hit.sum()), "total_points": len(series), "nan_tail": True},
        )

    def _nonfinite(self, series: Series) -> Finding | None:
        bad = curves.nonfinite(series)
        if bad is None:
            return None
        share = bad.count / len(series)
        if not bad.tail and share < self.params["min_intermittent_share"]:
            return None
        finite = series.values[: bad.index]
        finite = finite[np.isfinite(finite)]
        evidence = {
            "first_nonfinite_step": bad.step,
            "kind": bad.kind,
            "nonfinite_points": bad.count,
            "total_points": len(series),
            "nan_tail": bad.tail,
        }
        if len(finite):
            evidence["loss_start"] = float(finite[0])
            evidence["loss_last_finite"] = float(finite[-1])
            evidence["loss_best_before"] = float(np.min(finite))
        if bad.tail:
            # a tail is unambiguous; a longer tail only makes it more so
            confidence = 0.95 + 0.04 * min(1.0, bad.count / 10)
            title = f"{series.name} becomes {bad.kind} at step {bad.step} and never recovers"
            severity = "critical"
        else:
            confidence = 0.55 + 0.4 * min(1.0, share / 0.05)
            title = f"{series.name} is {bad.kind} at {bad.count} of {len(series)} logged points (first at step {bad.step})"
            severity = "warning"
        return self.finding(
            series,
            title=title,
            steps=(bad.step, int(series.steps[-1])),
            confidence=confidence,
            evidence=evidence,
            severity=severity,
        )

    def _still_climbing(self, c: curves.Curve, upper_half: float) -> bool:
        """The last tenth rises significantly and its closing points are in the upper half of the rise."""
        k = max(1, len(c) // 10)
        if k < self.params["min_points"]:
            return False
        climb = curves.trend(c.steps[-k:], c.y[-k:])
        return climb.tau > 0 and climb.p_value < self.params["climb_p"] and curves.end_level(c.y) >= upper_half

    def _turned(self, c: curves.Curve, low_i: int, low: float, end: float) -> bool:
        """The loss turned at its best and has climbed at (nearly) every point since, to a tenth or
        more above it, and is still at its highest when the run stops: training is getting worse
        step after step (an LR too high for this phase), however small a share of the earlier
        progress it has lost so far (9 epochs: 1.587 -> 1.093 by epoch 4, then 1.104, 1.140, 1.186,
        1.214, 1.237)."""
        after = c.y[low_i:]
        if len(after) < self.params["min_turn_points"] or low <= 0:
            return False
        climb = curves.trend(c.steps[low_i:], after)
        return bool(
            climb.tau >= self.params["min_turn_tau"]
            and climb.p_value < self.params["climb_p"]
            and end >= (1 + self.params["min_turn_rise"]) * low
            and after[-1] >= np.max(after) - 0.05 * (np.max(after) - low)
        )

    def _blow_up(self, series: Series, training: bool) -> Finding | None:
        c = curves.curve(series)
        if c is None or len(c) < self.params["min_points"]:
            return None
        # the lowest level the run held: its smoothed best, or its start when it blew up from
        # the first steps on (the smoothed curve then never comes back down to the start); a
        # blow-up within the first few logged points already lifts the start level, so the
        # first logged value stands for the start when it sits lower still
        opening = min(c.start, float(c.y[0]))
        low, low_i = (opening, 0) if opening < c.best else (c.best, c.best_index)
        # a loss still climbing when the run stops is read at its closing points, like its start
        # at its opening ones: the rolling median at the edge lags a climb by half a window
        end = max(c.end, curves.end_level(c.y))
        rise = end - low
        if rise <= 0 or low_i >= len(c) - 1:
            return None
        # the noise of the healthy stretch before the blow-up: a blown-up loss is noisy itself
        before = c.y[: low_i + 1]
        noise = max(curves.noise_sigma(before) if len(before) >= 5 else c.y_noise, c.quantum)
        sigmas = rise / noise if noise > 0 else math.inf
        after = c.y[low_i:]
        if sigmas < self.params["min_rise_noise"] and low > 0 and np.all(after > 0):
            # no healthy stretch to measure (or a short one): a blown-up positive loss is noisy in
            # proportion to its level, so judge the rise in log space against the log noise
            log_noise = max(curves.noise_sigma(np.log(after)), curves.TINY)
            sigmas = max(sigmas, math.log(end / low) / log_noise)
        if sigmas < self.params["min_rise_noise"]:
            return None
        progress = max(c.start - low, 0.0)
        over_progress = rise / progress if progress > 0 else math.inf
        growth = end / low if low > 0 else math.inf
        by_progress = over_progress >= self.params["min_rise_over_progress"]
        by_growth = growth >= self.params["min_growth_factor"]
        # (a training loss only: a validation loss that turns up is overfit's business)
        by_turn = training and self._turned(c, low_i, low, end)
        if not (by_progress or by_growth or by_turn) or rise < self.params["min_rise_relative"] * abs(low):
            return None
        # it must stay up: most of the last tenth sits in the upper half of the rise, or the last
        # tenth is still climbing into it (a spike that came back down does neither)
        tail = c.y[-max(1, len(c) // 10):]
        if np.mean(tail >= low + 0.5 * rise) < self.params["min_tail_share"] and not self._still_climbing(c, low + 0.5 * rise):
            return None
        # onset: the level shift (change point) between the best stretch and the blown-up one
        shift, _ = curves.best_split(c.y[low_i:], min_size=1)
        onset_i = low_i + max(shift, 1)
        margin = max(
            math.log(min(over_progress, 1e6) / self.params["min_rise_over_progress"]) if by_progress else -9,
            math.log(min(growth, 1e6) / self.params["min_growth_factor"]) if by_growth else -9,
        )
        confidence = 0.6 + 0.39 * curves.sigmoid(3.0 * margin) * min(1.0, sigmas / 20)
        measured_growth = f"{fmt_num(growth)}×" if low > 0 else f"+{fmt_num(rise)}"
        return self.finding(
            series,
            title=(
                f"{series.name} {'blows up' if by_growth else 'climbs back'} from its best {fmt_num(low)} at step "
                f"{fmt_num(c.step_at(low_i))} to {fmt_num(end)} ({measured_growth}), rising from step "
                f"{fmt_num(c.step_at(onset_i))} and staying up"
            ),
            steps=(c.step_at(low_i), c.last_step),
            confidence=confidence,
            evidence={
                "loss_start": c.start,
                "loss_best": low,
                "best_step": c.step_at(low_i),
                "loss_end": end,
                "onset_step": c.step_at(onset_i),
                "rise_over_progress": over_progress,
                "growth_factor": growth,
                "noise_sigma": noise,
                "rise_over_noise": sigmas,
            },
        )
