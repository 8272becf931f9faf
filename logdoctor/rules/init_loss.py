"""init_loss: the loss at initialisation is far from log K (K classes known from the run's config)."""
from __future__ import annotations

import math

import numpy as np

from .. import curves
from ..learning import class_count
from ..model import Finding
from ..view import RunView
from ._loss import shape_loss
from .base import Rule
from ..numbers import fmt_num



#: Margin-scaled softmax losses (names as written, lower case, without - and _).
_MARGIN_LOSSES = ("arcface", "cosface", "sphereface", "amsoftmax", "additivemargin", "adacos", "magface", "curricularface", "elasticface", "subcenterarc")


class InitLoss(Rule):
    """The loss at initialisation is far from log K for a K-way classifier.

    Symptom:
        The run's configuration names the number of classes K (num_classes,
        num_labels, vocab_size, ...) and the first logged training loss is
        several times log K: a freshly initialised K-way softmax
        classifier predicts roughly uniformly and starts near ln K (2.30 for
        10 classes, 10.4 for a 32k vocabulary). Starting far above it means
        the initial logits are large and confidently wrong. Starting far
        below it is reported only as a remark: a pretrained model (or a
        pretrained head) legitimately starts lower, but so does a loss
        averaged over padding or a label leak. A start far above is also only
        a remark for a margin-scaled loss (ArcFace, CosFace: logits scaled by
        s and shifted by a margin start near s x m by design), and when the
        loss then falls within 2x ln K and never climbs back: the start cost
        nothing lasting.
    Root causes:
        - output layer initialised with too large a scale (default init on a wide final layer, no 1/sqrt(fan_in) scaling), so initial logits are large
        - inputs not normalised (raw 0-255 pixels, unscaled features) blowing up the first activations
        - the loss is not the mean cross-entropy: summed instead of averaged, or multiplied by a weight
        - (far below) loss averaged over padded positions, labels leaking into inputs, or K in the config does not match the head
    Fix:
        - initialise the final layer small (e.g. zero or std 0.01 weights, bias set to the log class prior)
        - normalise inputs (x / 255, then per-channel mean/std)
        - use reduction="mean" (and ignore_index for padding); check the head's out_features equals K
    Probe:
        init_loss_off
    Example:
        A 10-class CNN (num_classes = 10) logs 41.7 at step 0 where ln 10 = 2.30:
        18 times too high.
    """

    code = "init_loss"
    severity = "warning"
    defaults = {
        # first loss / ln K above this: warning
        "max_ratio": 3.0,
        # first loss / ln K outside [1/remark_ratio, remark_ratio]: an info remark
        "remark_ratio": 2.0,
    }

    def check(self, view: RunView) -> list[Finding]:
        k = class_count(view.run.config)
        series = shape_loss(view, "train_loss")
        c = curves.curve(series)
        if k is None or c is None or c.start <= 0:
            return []
        expected = math.log(k)
        ratio = c.start / expected
        high = ratio >= self.params["max_ratio"]
        remark = ratio >= self.params["remark_ratio"] or ratio <= 1 / self.params["remark_ratio"]
        if not (high or remark):
            return []
        far = abs(math.log(ratio))
        confidence = 0.5 + 0.45 * min(1.0, far / math.log(10))
        side = "above" if ratio > 1 else "below"
        title = f"{series.name} starts at {fmt_num(c.start)}, {fmt_num(ratio)}× ln K = {fmt_num(expected)} (K = {k}): far {side} a uniform prediction"
        margin = margin_loss(view)
        recovered = high and _then_learns_normally(c.y, expected, self.params["max_ratio"])
        if high and margin is not None:
            title += f"; a margin-scaled loss ({margin}) starts high by design"
        elif recovered:
            title += f"; it then fell below {fmt_num(self.params['remark_ratio'])}× ln K and stayed there, so the start cost nothing lasting"
        alarm = high and margin is None and not recovered
        return [
            self.finding(
                series,
                title=title,
                steps=(c.first_step, c.first_step),
                confidence=confidence,
                severity="warning" if alarm else "info",
                evidence={
                    "loss_start": c.start,
                    "classes": k,
                    "ln_k": expected,
                    "ratio_to_ln_k": ratio,
                    **({"margin_loss": margin} if margin else {}),
                },
            )
        ]


def margin_loss(view: RunView) -> str | None:
    """The margin-scaled softmax (ArcFace, CosFace...) the run's config or loss names, if any: its
    logits are scaled by s (30-64) and shifted by a margin, so it starts near s x margin, not ln K."""
    names = [str(k) for k in view.run.config] + [str(v) for v in view.run.config.values() if isinstance(v, str)] + list(view.run.metrics)
    for name in names:
        low = name.lower().replace("-", "").replace("_", "")
        hit = next((m for m in _MARGIN_LOSSES if m in low), None)
        if hit:
            return hit
    return None


def _then_learns_normally(y, ln_k: float, max_ratio: float) -> bool:
    """Once the loss first gets within 2x ln K it never climbs back to max_ratio x ln K: the high
    start was a transient the optimiser absorbed (a run whose loss then wanders up and down by
    decades was not helped by it, and keeps the warning)."""
    below = np.flatnonzero(y <= 2 * ln_k)
    return bool(len(below) and np.all(y[below[0] :] < max_ratio * ln_k))
