"""not_checked: the loss could not be judged, so "no problem found" would claim too much."""
from __future__ import annotations

from ..model import Finding
from ..view import RunView
from ._loss import is_adversarial, is_reinforcement, loss_series
from .base import Rule


class NotChecked(Rule):
    """The run's loss was not (fully) judged: say so instead of calling it healthy.

    Symptom:
        No loss series is logged under a name the roles recognise (a
        reward-only RL run, a run that logs only accuracy), or the loss has
        fewer points than the shape rules need (a single end-of-run
        value), or the run logs a reward or is a GAN, so its losses are checked for
        NaN / inf only (an RL loss is not minimised toward a floor), or a
        console log is a window too short to show a shape (it starts
        mid-run, or holds fewer than 8 points: `window.py` names the codes
        left unjudged, "too short to judge: flat, crawl"). An
        info finding: it never makes a run a warning, but the reports label
        a run that no rule could judge `NOT CHECKED` rather than `HEALTHY`.
    Root causes:
        - the loss is logged under a custom name the roles do not map (see `logdoctor inspect`)
        - the loss is logged once per run or per epoch of a very short run, not per step
        - the run is reinforcement learning: its losses follow the data the policy collects
    Fix:
        - map the loss name in [tool.logdoctor.roles] (e.g. train_loss = ["my_objective"])
        - log the training loss every N steps (tens of points at least)
    Probe:
        overfit_batch_failed, init_loss_off (a checkpoint can be probed even without a loss curve)
    Example:
        An MLflow run logs `loss` once, at its last step: 1 point, so no
        rule can say whether it learned. Evidence `checked` says what was
        judged: `nothing`, or `NaN / inf only` for an RL or GAN run.
    """

    code = "not_checked"
    severity = "info"
    defaults = {
        # fewer loss points than this: no shape rule can judge the loss (flat needs 4)
        "min_points": 4,
    }

    def check(self, view: RunView) -> list[Finding]:
        losses = loss_series(view)
        if not losses:
            return [self._finding(None, "not checked: no loss series logged", checked="nothing", metrics_logged=len(view.run.metrics))]
        main = losses[0]
        points = len(main)  # NaN points count: a loss that turned NaN was judged (diverge)
        if points < self.params["min_points"]:
            return [self._finding(main, f"not checked: too few points ({points}) to judge the loss", checked="nothing", points=points)]
        if is_reinforcement(view):
            return [self._finding(main, "loss shape not judged: the run logs a reward (RL), and its losses are not minimised toward a floor", checked="NaN / inf only")]
        if is_adversarial(view):
            return [self._finding(main, "loss shape not judged: a GAN's generator and discriminator losses hover by design, each the other's opponent", checked="NaN / inf only")]
        return []

    def _finding(self, series, title: str, **evidence) -> Finding:
        """An info finding over the whole series (if any), with the counts that made the call."""
        steps = (int(series.steps[0]), int(series.steps[-1])) if series is not None else None
        return self.finding(series, title=title, steps=steps, confidence=1.0, evidence=evidence)
