"""flat: the loss stays at its initial level — no learning at all."""
from __future__ import annotations

import numpy as np

from .. import curves
from ..claims import measured_change
from ..model import Finding, Series
from ..numbers import fmt_num
from ..view import RunView
from ._loss import primary_loss
from .base import Rule


class Flat(Rule):
    """The loss stays at its initial level: no learning at all.

    Symptom:
        Over the whole run the smoothed loss never gets more than a few
        percent below its initial level (the median of the opening tenth,
        after at most a small early transient such as a quick fall to the
        class prior), nor ends far from it, and it
        shows no steady decline (a small drop with a strong Mann-Kendall
        trend is `crawl`). An exactly constant loss is the strongest form;
        next to it, a validation loss that stays within half a percent at
        every evaluation (the weights never moved) while the training loss
        only wanders with its batch noise. A run that logs several training
        losses (components: box, class, pose) is not flat while any of them
        falls by a tenth: that component is learning. A
        run that sits at chance for a while and then learns is not flat, nor
        is a learning curve on top of a large constant (a loss of 50 + 2e^-t
        falls only 4 % of its level): when the loss keeps falling after the
        opening stretch by many times its point noise, and that later fall is
        most of its whole fall, it learned. A quick fall in the first steps
        followed by nothing (the class prior learned, then a stall) stays flat.
    Root causes:
        - parameters not in the optimizer (optimizer built before model.to(device), head never passed in, requires_grad=False)
        - loss detached from the graph (.item()/.detach() on the loss path, forward under torch.no_grad())
        - zero_grad / backward / step in the wrong order, or optimizer.step() missing
        - model left in eval() mode, or every weight frozen
        - labels detached from inputs (shuffled separately, all one class): nothing to learn
        - learning rate several decades too low: the loss moves, but by far less than its noise
        - the output collapsed after an early fall (dead ReLUs, a saturated sigmoid or tanh output, a constant prediction): the loss freezes at the error of predicting the mean
    Fix:
        - build the optimizer after model.to(device) and assert every trainable parameter is in a param group
        - assert loss.requires_grad and loss.grad_fn is not None before backward(); log loss.item() but back-propagate the tensor
        - order each step: optimizer.zero_grad(set_to_none=True); loss.backward(); optimizer.step()
        - call model.train() at the top of every training epoch
        - overfit one fixed batch of 2-32 examples: a correct loop drives its loss toward 0
    Probe:
        not_in_optimizer, no_grad, overfit_batch_failed
    Example:
        A 10-class classifier logs train loss 2.303 at step 0 and 2.301 at step
        5 000 (log 10 = 2.303): weights never change.
    """

    code = "flat"
    severity = "critical"
    defaults = {
        "min_points": 4,
        # the initial level is the median of this opening share of the run...
        "opening": 0.1,
        # ...and the loss may fall at most this share of its very first level to get there
        "max_opening_drop": 0.25,
        # the smoothed loss never gets further below its start than this fraction of it
        "max_relative_drop": 0.03,
        # a drop this small is still `crawl` when the decline is steady (Kendall's tau at most
        # trend_tau, p below trend_p), not negligible and still going in the last third:
        # keep equal to crawl's max_tau, tau_blocks, trend_p, min_relative_drop, min_late_to_early
        "trend_tau": -0.3,
        "tau_blocks": 24,
        "trend_p": 0.001,
        "negligible_drop": 0.005,
        "late_to_early": 0.5,
        # learned on top of a large constant: after the opening the loss falls at least this
        # many point-noise sigmas (and negligible_drop of its level)...
        "min_learning_sigmas": 20.0,
        # ...and that fall is at least this share of its whole fall from the first logged value
        "min_learning_share": 0.5,
        # a validation loss or score that stays within this share of its level over at least
        # min_frozen_evaluations evaluations: the weights (next to) never moved
        "min_frozen_evaluations": 5,
        "max_frozen_spread": 0.005,
        # another training loss of the run (a component) that falls this share: it is learning
        "min_other_loss_drop": 0.1,
        # fell, then froze: the last stretch (at least this share of the run, this many points)
        # repeats one value within this share of its level, at least min_frozen_level of the start
        "min_frozen_tail_share": 0.5,
        "min_frozen_tail_points": 10,
        "max_frozen_tail_spread": 1e-4,
        "min_frozen_level": 0.05,
    }

    def check(self, view: RunView) -> list[Finding]:
        series = primary_loss(view)
        c = curves.curve(series)
        if c is None or len(c) < self.params["min_points"]:
            return []
        train = view.series("train_loss")
        frozen = self._froze_after_falling(series) if train is not None and series.name == train.name else []
        return self._never_moved(view, series, c) or frozen

    def _never_moved(self, view: RunView, series: Series, c) -> list[Finding]:
        """The loss stays at its opening level (the classic flat run)."""
        # the level it settles at over the opening stretch; an early transient (a bump, or a
        # quick fall to the class prior) may precede it, but only a small one
        initial = curves.level(c.y, "start", self.params["opening"], min_points=1)
        if (c.start - initial) / max(abs(c.start), curves.TINY) > self.params["max_opening_drop"]:
            return []
        scale = max(abs(initial), c.y_noise, curves.TINY)
        drop_best = (initial - c.best) / scale
        drop_end = (initial - c.end) / scale
        max_drop = self.params["max_relative_drop"]
        # a validation loss that does not move at any evaluation says the weights never moved:
        # then a dip of the noisy training loss's running median below its start is noise
        frozen_val = self._frozen_validation(view, series)
        if (drop_best >= max_drop and frozen_val is None) or abs(drop_end) >= max_drop:
            return []
        if self._other_loss_learning(view, series) is not None:
            return []
        # a learning curve riding on a large constant: small against the level, large against
        # the noise, and spread beyond the opening (a stall after a first-step fall is not)
        later_fall = initial - c.end
        whole_fall = max(c.y[0], c.start) - c.end
        sigma = max(c.noise, 1e-9 * abs(c.start), curves.TINY)
        learned_sigmas = later_fall / sigma
        learned_share = later_fall / whole_fall if whole_fall > 0 else 0.0
        if (
            learned_sigmas >= self.params["min_learning_sigmas"]
            and learned_share >= self.params["min_learning_share"]
            and drop_end >= self.params["negligible_drop"]
        ):
            return []
        t = curves.trend(c.steps, c.y)
        tau = curves.signal_tau(c.steps, c.y, self.params["tau_blocks"])
        # the drop along the Theil-Sen line, as crawl measures it
        steady_drop = max(-t.slope * max(c.last_step - c.first_step, 1) / max(abs(c.start), c.y_noise, curves.TINY), drop_end)
        if t.p_value < self.params["trend_p"] and tau <= self.params["trend_tau"] and steady_drop >= self.params["negligible_drop"]:
            if not curves.levels_off(c.steps, c.y, c.y_noise, self.params["late_to_early"])[0]:
                return []  # small but steady, unmistakable and still going: `crawl`
        spread = float(np.max(c.hi) - np.min(c.lo))
        constant = spread <= max(c.quantum, 1e-9 * abs(c.start))
        # how far inside the threshold it sits, and how much data backs it
        inside = 1.0 - max(drop_best, drop_end, 0.0) / max_drop
        support = min(1.0, len(c) / 20)
        confidence = 0.99 if constant else 0.55 + 0.4 * inside * support
        if frozen_val is not None:
            confidence = max(confidence, 0.9)
        band = max_drop * scale
        what = "is exactly constant" if constant else "ends at its opening level"
        if frozen_val is not None and not constant:
            what += f" and {frozen_val.name} stays within {curves.relative_spread(frozen_val.values):.2%} at every evaluation"
        change = measured_change(initial, c.end) if constant else measured_change(initial, c.end, band, f"{max_drop:.0%} of its level")
        return [
            self.finding(
                series,
                title=f"{series.name} {what}: {change}, from the median of its first {self.params['opening']:.0%}",
                steps=(c.first_step, c.last_step),
                confidence=confidence,
                evidence={
                    "loss_start": c.start,
                    "loss_initial_level": initial,
                    "loss_end": c.end,
                    "change_noise": band,
                    "claim": "no_fall",
                    "loss_best": c.best,
                    "relative_drop": drop_end,
                    "relative_best_drop": drop_best,
                    "fall_after_opening_sigmas": learned_sigmas,
                    "fall_after_opening_share": learned_share,
                    "trend_tau": tau,
                    "p_value": t.p_value,
                    "constant": constant,
                    "validation_frozen": frozen_val is not None,
                    "points": c.n,
                },
            )
        ]

    def _froze_after_falling(self, series: Series) -> list[Finding]:
        """The training loss fell, then repeats one value for the rest of the run (training loss
        only: a validation loss repeats itself whenever the weights stop, as at an LR of 0)."""
        steps, y = np.asarray(series.steps), np.asarray(series.values, dtype=float)
        keep = np.isfinite(y)
        steps, y = steps[keep], y[keep]
        start = curves.frozen_tail_start(y, self.params["max_frozen_tail_spread"])
        tail = len(y) - start
        if tail < self.params["min_frozen_tail_points"] or tail / len(y) < self.params["min_frozen_tail_share"]:
            return []
        level, first = float(curves.median(y[start:])), float(y[0])
        if abs(level) < self.params["min_frozen_level"] * max(abs(first), curves.TINY):
            return []  # frozen at (next to) zero: fitted, not stuck
        share = tail / len(y)
        return [
            self.finding(
                series,
                title=f"{series.name} settles at {fmt_num(level)} and repeats it for the last {share:.0%} of the run ({fmt_num(first)} at its first point)",
                steps=(int(steps[start]), int(steps[-1])),
                confidence=0.9,
                evidence={
                    "loss_start": first,
                    "frozen_level": level,
                    "frozen_from_step": int(steps[start]),
                    "frozen_share": share,
                    "frozen_spread": curves.relative_spread(y[start:]),
                    "kind": "froze after falling",
                    "points": int(len(y)),
                },
            )
        ]

    def _frozen_validation(self, view: RunView, judged: Series) -> Series | None:
        """The validation loss that (next to) never moves, if any (not the judged series).

        Losses only: a score pinned at its ceiling (mAP50 0.995 on a solved detection task)
        stops moving because there is nothing left to gain, not because the weights froze.
        """
        for val in view.all_series("val_loss"):
            if val is not judged and curves.frozen(val.values, self.params["min_frozen_evaluations"], self.params["max_frozen_spread"]):
                return val
        return None

    def _other_loss_learning(self, view: RunView, judged: Series) -> Series | None:
        """Another training loss of the same run (a component: YOLO's pose_loss beside its
        box_loss) that falls a real share of its level: then the weights move, and a flat
        component is one that has nothing left to learn."""
        for other in view.all_series("train_loss"):
            c = curves.curve(other) if other is not judged else None
            if c is None or len(c) < self.params["min_points"]:
                continue
            initial = curves.level(c.y, "start", self.params["opening"], min_points=1)
            if (initial - c.end) / max(abs(initial), c.y_noise, curves.TINY) >= self.params["min_other_loss_drop"]:
                return other
        return None

