"""val_metric_constant: a validation metric that never changes while training does."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import curves
from ..model import Finding
from ..numbers import fmt_num, percent
from ..view import RunView
from .base import Rule

#: Values a score can legitimately hold constant at (a perfect score).
_PERFECT = (1.0, 100.0)


class ValMetricConstant(Rule):
    """A validation metric has exactly the same value at every evaluation while the training loss moves.

    Symptom:
        A validation loss or validation score is identical (to floating-point
        precision) at every one of at least three evaluations, while the
        training loss changes by a real fraction of its level over the same
        steps (its widest swing between the evaluations: a loss that goes
        1.36 -> 0.73 -> 1.39 moved). A model that learns always moves its validation numbers a
        little; an unchanging one means the evaluation is not looking at the
        model being trained. A score pinned at a perfect 1.0 / 100 % is left
        alone.
    Root causes:
        - evaluation runs on a stale or fixed checkpoint (weights loaded once, a copy of the model made before training, EMA weights never updated)
        - the metric is computed from the wrong tensor: targets instead of predictions, a cached first batch, an accumulator never reset or never updated
        - the model collapsed to a constant prediction in eval mode (BatchNorm running statistics broken, e.g. a frozen backbone left in train mode, or all-constant inputs from the validation pipeline)
        - the validation set holds a single class or a single repeated batch
    Fix:
        - evaluate the live model: call model.eval() on the same object the optimizer updates, under torch.no_grad(), then model.train() again
        - recompute the metric by hand on one validation batch and compare; reset metric accumulators (torchmetrics .reset()) every evaluation
        - check the validation loader: label histogram, a few decoded samples, shuffle off but batches distinct
    Probe:
        none from logs alone; evaluate the last checkpoint on a handful of validation batches by hand
    Example:
        Validation accuracy is 0.1135 at all 20 epochs while the training loss
        falls from 2.30 to 0.35.
    """

    code = "val_metric_constant"
    severity = "warning"
    defaults = {
        "min_evaluations": 3,
        "max_relative_spread": 1e-6,
        "min_train_change": 0.1,
    }

    def check(self, view: RunView) -> list[Finding]:
        train = view.series("train_loss")
        if train is None:
            return []
        found = []
        validation = [*view.all_series("val_loss"), *view.all_series("val_acc")]
        # judged once, not once per frozen metric (1,000 per-class scores frozen: 10^6 judgements, 41 s)
        movers = [o for o in validation if not curves.frozen(o.values, 2, self.params["max_relative_spread"])]
        levels: dict[bytes, np.ndarray] = {}  # training's level at each evaluation, by the evaluation steps
        for role in ("val_loss", "val_acc"):
            for val in view.all_series(role):
                finding = self._check_one(val, train, role, levels)
                if finding:
                    moving = next((o for o in movers if o.name != val.name), None)
                    found.append(finding if moving is None else self._one_of_several(finding, moving))
        return sorted(found, key=lambda f: f.severity == "info")[:1]

    @staticmethod
    def _one_of_several(finding: Finding, moving) -> Finding:
        """A score frozen beside validation numbers that move (a per-class F1 at 0 beside the
        overall F1) is a class the model never predicts, not an evaluation that looks at the
        wrong model: a remark."""
        return replace(
            finding,
            severity="info",
            confidence=min(finding.confidence, 0.5),
            title=f"{finding.title}; {moving.name} moves, so the evaluation sees the model: this one class or score is never hit",
            evidence={**finding.evidence, "moving_validation_metric": moving.name},
        )

    def _check_one(self, val, train, role: str, levels_at: dict[bytes, np.ndarray]) -> Finding | None:
        if not curves.frozen(val.values, self.params["min_evaluations"], self.params["max_relative_spread"]):
            return None
        ok = np.isfinite(val.values)
        steps, values = val.steps[ok], val.values[ok]
        centre = float(curves.median(values))
        spread = float(np.ptp(values))
        if role == "val_acc" and centre in _PERFECT:
            return None
        # training must move over the same steps
        if steps.tobytes() not in levels_at:  # per-class scores logged together share their evaluations
            width = max(float(curves.median(np.diff(steps))) / 2, 1.0)
            levels_at[steps.tobytes()] = curves.window_levels(train, steps - width, steps + width)
        levels = levels_at[steps.tobytes()]
        train_first, train_last = float(levels[0]), float(levels[-1])
        if not (np.isfinite(train_first) and np.isfinite(train_last)):
            return None
        # moved: its widest swing between the evaluations, not only first to last (a loss that swings
        # 1.36 -> 0.73 -> 1.39 while the accuracy reads 0.5000 at every evaluation moved)
        levels = levels[np.isfinite(levels)]
        change = float(np.ptp(levels)) / max(float(np.max(np.abs(levels))), 1e-12)
        if change < self.params["min_train_change"]:
            return None
        confidence = 0.6 + 0.2 * min(1.0, (len(values) - 2) / 8) + 0.2 * min(1.0, change / 0.5)
        return self.finding(
            val,
            title=(
                f"{val.name} is {centre:.6g} at all {len(values)} evaluations while training loss ranged "
                f"{fmt_num(float(np.min(levels)))} to {fmt_num(float(np.max(levels)))} over them ({percent(change)} of its level)"
            ),
            steps=(int(steps[0]), int(steps[-1])),
            confidence=confidence,
            evidence={
                "value": centre,
                "evaluations": len(values),
                "spread": spread,
                "train_loss_first": train_first,
                "train_loss_last": train_last,
                "train_loss_low": float(np.min(levels)),
                "train_loss_high": float(np.max(levels)),
                "train_relative_change": change,
            },
        )
