"""grad_norm_trend: the gradient norm drifts by decades (vanishing with a stuck loss, or exploding)."""
from __future__ import annotations

import numpy as np

from .. import curves
from ..model import Finding, Series
from ..view import RunView
from .base import Rule, bullets
from ..numbers import fmt_num


class GradNormTrend(Rule):
    """The gradient norm trends by decades: vanishing while the loss is stuck, or exploding.

    Symptom:
        On a log scale, after the first part of the run (initial gradients are
        not representative), the gradient norm keeps moving in one direction
        with a significant Mann-Kendall trend. Vanishing: it ends two or more
        decades below its early level while the training loss has made little
        progress and no longer improves (healthy convergence also shrinks the
        gradient, but then the loss has fallen a long way). Exploding: it ends a
        decade or more above its early level and is still near its highest
        value at the end.
    Root causes:
        - Vanishing: saturating activations (sigmoid / tanh) or a deep stack without residual connections or normalisation
        - Vanishing: initialisation too small, or dying ReLUs switching off a growing part of the network
        - Vanishing: a weight decay so strong it shrinks the weights toward zero
        - Exploding: LR too high for the phase of training, so weights and activations grow every step
        - Exploding: no gradient clipping on a recurrent or very deep model
        - Exploding: a feedback loop such as logits growing without bound (no weight decay, no normalisation)
    Fix:
        - Vanishing: add residual connections and LayerNorm / BatchNorm, use ReLU-family or GELU activations, He / Xavier initialisation (nn.init.kaiming_normal_)
        - Vanishing: lower weight_decay; replace ReLU with LeakyReLU / GELU if units are dying
        - Exploding: lower the LR 3 to 10x or add warmup; torch.nn.utils.clip_grad_norm_(params, 1.0)
        - Exploding: normalise the blocks whose activations grow (LayerNorm, qk-norm), add weight decay
    Probe:
        grad_vanish / grad_explode (per-layer gradient flow); dead_relu (dead or saturated activations)
    Example:
        A 20-layer sigmoid MLP: gradient norm falls from 0.3 to 2e-4 (3.2 decades)
        while the loss sits at 2.29 of its initial 2.30.
    """

    code = "grad_norm_trend"
    severity = "warning"
    defaults = {
        "min_points": 20,
        "skip_start_fraction": 0.1,
        "early_window": 0.2,
        "late_window": 0.15,
        "min_decades_vanish": 2.0,
        "min_decades_explode": 1.0,
        "max_trend_p": 0.01,
        "max_loss_progress": 0.5,
        "max_late_loss_progress": 0.1,
        "max_below_peak_decades": 0.3,
    }

    def check(self, view: RunView) -> list[Finding]:
        grad = view.series("grad_norm")
        if grad is None:
            return []
        ok = np.isfinite(grad.values) & (grad.values > 0)
        if ok.sum() < self.params["min_points"]:
            return []
        steps, logs = (grad.steps, np.log10(grad.values)) if ok.all() else (grad.steps[ok], np.log10(grad.values[ok]))
        del ok
        first, last = float(steps[0]), float(steps[-1])
        span = last - first
        if span <= 0:
            return []
        start = first + self.params["skip_start_fraction"] * span
        body = steps >= start
        early_mask = body & (steps <= start + self.params["early_window"] * span)
        late_mask = steps >= last - self.params["late_window"] * span
        if early_mask.sum() < 3 or late_mask.sum() < 3:
            return []
        early, late = float(curves.median(logs[early_mask])), float(curves.median(logs[late_mask]))
        change = late - early
        if not (change >= self.params["min_decades_explode"] or -change >= self.params["min_decades_vanish"]):
            return []  # too small a change either way: no trend test needed (its pairs cost most of this rule)
        trend = curves.trend(steps[body], logs[body])
        if trend.p_value > self.params["max_trend_p"]:
            return []
        if change >= self.params["min_decades_explode"] and trend.tau > 0:
            # still at its highest at the end: the last block of the run is within reach of the highest block
            blocks = max(2, round((last - start) / (self.params["late_window"] * span)))
            edges = np.linspace(start, last, blocks + 1)
            masks = [(steps >= a) & (steps <= b) for a, b in zip(edges[:-1], edges[1:])]
            levels = [float(curves.median(logs[m])) for m in masks if m.any()]
            if max(levels) - levels[-1] <= self.params["max_below_peak_decades"]:
                return [self._found(grad, "Exploding", change, trend, early, late, (int(start), int(last)))]
        if -change >= self.params["min_decades_vanish"] and trend.tau < 0 and self._loss_stuck(view.series("train_loss")):
            return [self._found(grad, "Vanishing", change, trend, early, late, (int(start), int(last)))]
        return []

    def _loss_stuck(self, loss: Series | None) -> bool:
        """The training loss made little progress overall and none lately (convergence also shrinks gradients)."""
        c = curves.curve(loss)
        if c is None:
            return False
        scale = max(abs(c.start), 1e-12)
        late_start = float(curves.median(c.smooth[int(len(c.smooth) * 2 / 3):][:3]))
        overall = (c.start - c.end) / scale
        lately = (late_start - c.end) / scale
        return overall < self.params["max_loss_progress"] and lately < self.params["max_late_loss_progress"]

    def _found(self, grad: Series, kind: str, change: float, trend, early: float, late: float, steps) -> Finding:
        limit = self.params["min_decades_explode" if kind == "Exploding" else "min_decades_vanish"]
        confidence = 0.5 + 0.25 * min(1.0, (abs(change) - limit) / limit + 0.5) + 0.25 * min(1.0, abs(trend.tau))
        doc = self.doc()
        prefix = f"{kind}:"
        pick = lambda section: [b[len(prefix):].strip() for b in bullets(doc[section]) if b.startswith(prefix)]  # noqa: E731
        return self.finding(
            grad,
            title=f"{kind.lower()} gradient norm: {fmt_num(10.0 ** early)} → {fmt_num(10.0 ** late)} ({abs(change):.1f} decades)",
            steps=steps,
            confidence=confidence,
            evidence={
                "direction": kind.lower(),
                "early_norm": 10**early,
                "late_norm": 10**late,
                "decades": change,
                "trend_tau": trend.tau,
                "trend_p": trend.p_value,
            },
            causes=pick("Root causes"),
            fixes=pick("Fix"),
        )
