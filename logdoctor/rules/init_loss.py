"""init_loss: the loss at initialisation is far from log K (K classes known from the run's config)."""
from __future__ import annotations

import math

from .. import curves
from ..learning import class_count
from ..model import Finding
from ..view import RunView
from ._loss import shape_loss
from .base import Rule
from ..numbers import fmt_num



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
        averaged over padding or a label leak.
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
        return [
            self.finding(
                series,
                title=f"{series.name} starts at {fmt_num(c.start)}, {fmt_num(ratio)}× ln K = {fmt_num(expected)} (K = {k}): far {side} a uniform prediction",
                steps=(c.first_step, c.first_step),
                confidence=confidence,
                severity="warning" if high else "info",
                evidence={"loss_start": c.start, "classes": k, "ln_k": expected, "ratio_to_ln_k": ratio},
            )
        ]
