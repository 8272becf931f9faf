"""clip_saturation: the gradient norm sits above the clipping threshold almost every step."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import curves
from ..model import Finding, Series
from ..roles import tokens
from ..view import RunView
from ._loss import is_reinforcement, primary_loss
from .base import Rule
from ..numbers import fmt_num, percent

#: Name tokens that mark a config key as the clipping threshold of the *gradient norm*.
_CLIP = {"clip", "clipping", "clipnorm"}
_NORM = {"grad", "grads", "gradient", "gradients", "norm", "clipnorm"}


class ClipSaturation(Rule):
    """The pre-clip gradient norm is above the clip threshold almost every step.

    Symptom:
        The logged gradient norm exceeds the clipping threshold on nearly all
        steps (after the first few percent of the run), by a clear factor. Every
        update is then rescaled to the threshold: clipping has stopped being a
        guard against rare spikes and has become a hidden normalised-gradient
        optimizer whose effective LR is lr x threshold / norm. It is an alarm
        when the loss is held back: updates of fixed length approach the floor
        slowly, so the loss takes a fifth of the run or more to make 90 % of its
        fall; a loss that gets there within the first tenth while clipped is
        only a remark.
        The threshold is read from the run's config under any key naming
        gradient clipping (max_grad_norm, grad_clip, clip_grad_norm,
        gradient_clip_val, clipnorm, ...; a value of 0 or none means off).
        When the config does not say, the rule fires on a clipped share the
        trainer logs (fairseq's `clip=100%` on nearly every update), or if the logged norm
        itself shows a hard ceiling (a post-clip norm pinned at one value for
        most steps); a pre-clip norm with an unknown threshold is left alone,
        because no threshold can be inferred from it.
    Root causes:
        - clip threshold far below the model's typical gradient norm (a value copied from another model, loss scale or batch size)
        - the loss is summed rather than averaged (over tokens, pixels or accumulation micro-steps), inflating every gradient
        - LR or initialisation too large, so gradients stay large throughout
        - under AMP, clipping the still-scaled gradients (clip_grad_norm_ called before scaler.unscale_)
    Fix:
        - raise max_grad_norm (or grad_clip / gradient_clip_val) to about the 90th percentile of the unclipped gradient norm, so it clips only spikes
        - average the loss (reduction='mean', divide by accumulation steps) instead of summing it
        - under AMP call scaler.unscale_(optimizer) before torch.nn.utils.clip_grad_norm_
    Probe:
        update_ratio_low / update_ratio_high (update-to-weight ratio under the clipped updates); grad_explode (per-layer gradient flow)
    Example:
        max_grad_norm=0.01 on a model whose gradient norm is 0.5 to 3: 100 % of
        logged steps are clipped, the median norm is 80x the threshold.
    """

    code = "clip_saturation"
    severity = "warning"
    defaults = {
        "min_points": 10,
        "skip_start_fraction": 0.05,
        "min_fraction_clipped": 0.9,
        "min_median_ratio": 3.0,
        "tolerance": 0.01,
        # a loss that makes 90 % of its fall within this share of the run is not held back: clipped
        # updates have a fixed length, so a loss they hold back approaches its floor slowly (a
        # fifth to a half of the run), while a free one gets there in the opening few percent
        "max_free_fall_fraction": 0.1,
        # a logged clipped share (fairseq's clip=100%) needs this many logged updates
        "min_shares": 5,
    }

    def check(self, view: RunView) -> list[Finding]:
        grad = view.series("grad_norm")
        if grad is None:
            return []
        steps, norms = _after_start(grad, self.params["skip_start_fraction"])
        threshold, key = clip_threshold(view.run.config)
        if threshold is None and len(norms):
            # a share the trainer logs says it outright, in a few lines (a paste) as well
            logged = self._logged_share(view, grad, steps, norms)
            if logged:
                return logged
        if len(norms) < self.params["min_points"] or np.max(norms) <= 0:
            return []
        if threshold is None:
            return self._ceiling(grad, steps, norms, None, None)
        tol = self.params["tolerance"]
        above = norms > threshold * (1 + tol)
        if not above.any():
            # everything at or below the threshold: maybe the logged norm is the post-clip one
            return self._ceiling(grad, steps, norms, threshold, key)
        fraction, ratio = float(above.mean()), float(curves.median(norms) / threshold)
        if fraction < self.params["min_fraction_clipped"] or ratio < self.params["min_median_ratio"]:
            return []
        min_frac = self.params["min_fraction_clipped"]
        confidence = 0.5 + 0.25 * min(1.0, (fraction - min_frac) / max(1 - min_frac, 1e-9)) + 0.25 * min(
            1.0, np.log10(ratio) / np.log10(10 * self.params["min_median_ratio"])
        )
        title = f"gradient norm above the clip threshold {fmt_num(threshold)} on {percent(fraction)} of steps (median {fmt_num(ratio)}×)"
        evidence = {"clip_threshold": threshold, "threshold_key": key, "fraction_clipped": fraction, "median_norm": float(curves.median(norms)), "median_ratio": ratio}
        return [self._clipped(view, grad, steps, title, confidence, evidence)]

    def _logged_share(self, view: RunView, grad: Series, steps, norms) -> list[Finding]:
        """The trainer logs the share of updates it clipped (fairseq's `clip=100%`): clipped on
        nearly every logged update, whatever the threshold, and the loss held back (not a fall
        made in the opening tenth)."""
        share = next((view.metric(n) for n in view.counts if tokens(n)[-1:] == ["clip"] and len(tokens(n)) <= 2), None)
        if share is None or is_reinforcement(view):
            return []
        y = share.values[np.isfinite(share.values)]
        if len(y) < self.params["min_shares"] or np.min(y) < 0 or np.max(y) > 100:
            return []
        y = y / 100 if np.max(y) > 1 else y
        fraction = float(curves.median(y))
        if fraction < self.params["min_fraction_clipped"]:
            return []
        title = f"gradient clipping is active on {percent(fraction)} of logged updates ({share.name}), the gradient norm at {fmt_num(float(curves.median(norms)))}"
        evidence = {"threshold_from": f"the logged clipped share ({share.name})", "fraction_clipped": fraction, "median_norm": float(curves.median(norms))}
        return [self._clipped(view, grad, steps, title, 0.55 + 0.3 * min(1.0, len(y) / 20), evidence)]

    def _clipped(self, view: RunView, grad: Series, steps, title: str, confidence: float, evidence: dict[str, Any]) -> Finding:
        """Clipping on nearly every step: a warning when it holds the loss back, a remark when the loss
        made 90 % of its fall within the opening tenth of the run anyway."""
        reached = _fall_reached_at(view)
        free = reached is not None and reached <= self.params["max_free_fall_fraction"]
        if free:
            title += f"; the loss made 90% of its fall by {percent(reached)} of the run, so clipping is not holding it back"
        return self.finding(
            grad,
            title=title,
            steps=(int(steps[0]), int(steps[-1])),
            confidence=confidence,
            severity="info" if free else None,
            evidence={**evidence, **({"fall_90_at_fraction": reached} if reached is not None else {})},
        )

    def _ceiling(self, grad: Series, steps, norms, threshold: float | None, key: str | None) -> list[Finding]:
        """A logged (post-clip) norm pinned at one value for most steps."""
        ceiling = float(np.max(norms)) if threshold is None else threshold
        if ceiling <= 0:
            return []
        at = np.abs(norms - ceiling) <= self.params["tolerance"] * ceiling
        fraction = float(at.mean())
        min_frac = self.params["min_fraction_clipped"]
        if fraction < min_frac or (threshold is None and np.all(at)):
            # a norm that is constant from end to end with no threshold known is not evidence of clipping
            return []
        confidence = 0.5 + 0.4 * (fraction - min_frac) / max(1 - min_frac, 1e-9)
        return [
            self.finding(
                grad,
                title=f"gradient norm pinned at the clip ceiling {fmt_num(ceiling)} on {percent(fraction)} of steps",
                steps=(int(steps[0]), int(steps[-1])),
                confidence=confidence,
                evidence={
                    "clip_threshold": ceiling,
                    "threshold_key": key,
                    "threshold_from": "config" if threshold is not None else "ceiling of the logged norm",
                    "fraction_at_ceiling": fraction,
                },
            )
        ]


def _fall_reached_at(view: RunView) -> float | None:
    """The share of the run by which the primary loss made 90 % of its fall (None: it did not fall)."""
    c = curves.curve(primary_loss(view))
    if c is None or len(c) < 10 or c.last_step <= c.first_step:
        return None
    fall = c.start - c.end
    if fall <= 0:
        return None
    i = int(np.argmax(c.y <= c.end + 0.1 * fall))
    return float((c.steps[i] - c.first_step) / (c.last_step - c.first_step))


def _after_start(series: Series, skip: float):
    """Finite points after the first `skip` fraction of the series' step range (init gradients are large)."""
    ok = np.isfinite(series.values)
    steps, values = series.steps[ok], series.values[ok]
    if len(steps) == 0:
        return steps, values
    keep = steps >= steps[0] + skip * (steps[-1] - steps[0])
    return steps[keep], values[keep]


def clip_threshold(config: dict[str, Any]) -> tuple[float | None, str | None]:
    """The gradient-norm clipping threshold named anywhere in a (nested) config, and its key.

    (None, None) when no key names it, clipping is off (0 / none / false), or
    the run clips by value (gradient_clip_algorithm = 'value'), which a norm
    cannot be compared with.
    """
    flat = dict(_flatten(config))
    for key, value in flat.items():
        if "algorithm" in tokens(key) and str(value).lower() == "value":
            return None, None
    for key, value in flat.items():
        toks = set(tokens(key.rsplit(".", 1)[-1]))
        named = (toks & _CLIP and toks & _NORM) or {"max", "grad", "norm"} <= toks
        if not named or "value" in toks or "clipvalue" in toks:
            continue
        number = _number(value)
        if number is not None:
            return (number, key) if number > 0 else (None, None)
    return None, None


def _flatten(config: Any, prefix: str = ""):
    """(dotted key, leaf) pairs of nested dicts; W&B's {'value': x} wrappers are unwrapped."""
    if isinstance(config, dict):
        if set(config) <= {"value", "desc"} and "value" in config:
            yield prefix, config["value"]
            return
        for k, v in config.items():
            yield from _flatten(v, f"{prefix}.{k}" if prefix else str(k))
    else:
        yield prefix, config


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return 0.0 if value is False else None
    if value is None:
        return 0.0
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if np.isfinite(number) else None
