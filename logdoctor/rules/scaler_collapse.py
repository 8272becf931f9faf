"""scaler_collapse: the AMP loss scale keeps halving, so optimizer steps are being skipped."""
from __future__ import annotations

import numpy as np

from .. import curves
from ..model import Finding, Series
from ..roles import tokens
from ..view import RunView
from .base import Rule
from ..numbers import fmt_num


#: The smallest initial loss scale of the common dynamic scalers (fairseq's --fp16-init-scale 128).
SMALLEST_INITIAL_SCALE = 2.0**7


class ScalerCollapse(Rule):
    """The AMP loss scale keeps halving toward 1: optimizer steps are being skipped.

    Symptom:
        The logged GradScaler scale (`loss_scale`, `scaler/scale`, `amp/scale`)
        falls by many factors of two from its peak, ends near the lowest value
        it ever had, and in the late part of the run it still halves more
        often than it grows while the training loss no longer improves (a
        low scale under which the loss keeps falling is still stepping).
        Every halving is a step whose gradients held
        inf/NaN and was skipped, so the weights barely move while the loss
        still prints plausible numbers. A healthy scaler calibrates down a few
        times early, then sits high and saw-tooths (grows every
        growth_interval steps, halves now and then): that does not fire.
        A log with only a few scale values (a paste of apex's or DeepSpeed's
        `reducing loss scale to 1.52587890625e-05` lines), or one whose every
        value is below 1/2 and still falling, fires when the scale is below
        1/2: many halvings under any scaler's initial value. A scale seen
        halving is counted down from at least the smallest initial scale
        (128), whether or not the log shows it there: `64, reducing to 32`
        ... `4, reducing to 2` is six halvings. A skipped-step counter
        (DeepSpeed's `step=2000, skipped=1995`) that counts half the steps or
        more as skipped (over the window it rises in, or since the start)
        fires too, whatever the scale reads, and so does a console log that
        ends on the scaler giving up (`Current loss scale already at
        minimum`, `Minimum loss scale reached`).
    Root causes:
        - persistent fp16 overflow in the forward pass: activations or logits above 65504 (large logits, attention scores, an unnormalised block), so gradients overflow every step
        - an LR high enough that weights and activations keep growing until fp16 overflows
        - a loss or custom op producing inf/NaN gradients regardless of scale (log(0), division by zero), which the scaler can only answer by halving
    Fix:
        - switch fp16 to bf16 autocast (torch.autocast(dtype=torch.bfloat16)) and drop the GradScaler: bf16 has fp32's exponent range
        - keep the overflow-prone block (final logits, attention softmax, the loss) in fp32 with a nested torch.autocast(enabled=False)
        - lower the LR and add gradient clipping (unscale_ before clip_grad_norm_); do not "fix" it by lowering init_scale
        - log scaler.get_scale() and a skipped-step counter every step
    Probe:
        scaler_collapse (the checkpoint's saved GradScaler scale); nan_source (first module emitting inf/NaN)
    Example:
        An fp16 transformer: the scale drops from 65536 to 2 within 3000
        steps (15 halvings, 1 growth in the last quarter) while the loss hovers
        at 6.9.
    """

    code = "scaler_collapse"
    severity = "critical"
    outranks = ("flat", "crawl")
    defaults = {
        "min_points": 5,
        # a skipped-step counter: the share of steps it counts as skipped that fires
        "min_skipped_share": 0.5,
        "min_halvings_from_peak": 6.0,
        "max_final_log2": 8.0,
        "max_above_minimum": 1.0,
        "late_fraction": 0.25,
        "min_late_loss_drop": 0.05,
        # with fewer than min_points values, a scale at or below 2**this has collapsed anyway
        "max_lone_final_log2": -1.0,
    }

    def check(self, view: RunView):
        return self._from_scale(view) or self._skipped_steps(view) or self._stopped_at_minimum(view)

    def _stopped_at_minimum(self, view: RunView) -> list[Finding]:
        """A console log that ends on the scaler giving up (DeepSpeed's `Current loss scale already at
        minimum`, fairseq's `Minimum loss scale reached`): it halved down to its floor, whatever
        scale values the log shows."""
        if view.run.ending is None or view.run.ending[0] != "loss scale at its minimum":
            return []
        kind, line = view.run.ending
        scale = view.series("loss_scale")
        return [
            self.finding(
                scale,
                title=f"the AMP loss scale hit its minimum and the run stopped: every step overflowed ({line[:80]})",
                steps=(int(scale.steps[0]), int(scale.steps[-1])) if scale is not None and len(scale) else None,
                confidence=0.9,
                evidence={"ending": kind, "error_line": line},
            )
        ]

    def _skipped_steps(self, view: RunView) -> list[Finding]:
        """A skipped-step counter (DeepSpeed's `step=2000, skipped=1995`) that counts most steps as
        skipped: the scaler skipped them for overflow, whatever the scale reads (or with none logged).
        Over the window when it rises in it (a paste), else since the run's start."""
        name = next((m for m in view.counts if "skipped" in tokens(m)), None)
        counter = view.metric(name) if name else None
        if counter is None:
            return []
        ok = np.isfinite(counter.values)
        steps, skipped = counter.steps[ok], counter.values[ok]
        if len(steps) < 3 or steps[-1] <= 0 or np.any(np.diff(skipped) < 0):
            return []  # a counter only grows; anything else is no skipped-step count
        rose, span = float(skipped[-1] - skipped[0]), float(steps[-1] - steps[0])
        window = rose / span if span > 0 and rose >= 3 else 0.0
        share = min(1.0, max(window, float(skipped[-1] / steps[-1])))
        if share < self.params["min_skipped_share"]:
            return []
        return [
            self.finding(
                counter,
                title=f"{skipped[-1]:.0f} of {steps[-1]:,} optimizer steps skipped ({share:.0%}{' in this window' if share == window else ''}): the loss scaler keeps finding overflow",
                steps=(int(steps[0]), int(steps[-1])),
                confidence=0.6 + 0.39 * min(1.0, (share - self.params["min_skipped_share"]) / (1 - self.params["min_skipped_share"])),
                evidence={"skipped_steps": float(skipped[-1]), "skipped_share": share},
            )
        ]

    def _from_scale(self, view: RunView) -> list[Finding]:
        scale = view.series("loss_scale")
        if scale is None:
            return []
        ok = np.isfinite(scale.values) & (scale.values > 0)
        if ok.sum() < self.params["min_points"]:
            return self._below_any_start(scale, ok)
        steps, log2 = scale.steps[ok], np.log2(scale.values[ok])
        if np.max(log2) <= self.params["max_lone_final_log2"] and log2[-1] < log2[0]:
            # the whole history is below 1/2 and still falling: it collapsed before the log began
            # (a paste of overflow lines at 2e-320), whatever its shape in this window
            return self._below_any_start(scale, ok)
        peak_i = int(np.argmax(log2))
        # the problem starts where the scale leaves its peak for good, not where the peak was first reached
        leaves_peak_i = int(np.flatnonzero(log2 >= log2[peak_i])[-1])
        halved = bool((np.diff(log2) < 0).any())
        # a scale seen halving has come down from at least the smallest initial scale, whether or not
        # the log shows it there (a paste of DeepSpeed's overflow lines `64, reducing to 32` ... `to 2`);
        # one that never halves (Megatron's bf16 `loss scale: 1.0`) is no fall
        start = max(log2[peak_i], np.log2(SMALLEST_INITIAL_SCALE)) if halved else log2[peak_i]
        drop = float(start - log2[-1])
        above_min = float(log2[-1] - np.min(log2))
        if (
            drop < self.params["min_halvings_from_peak"]
            or log2[-1] > self.params["max_final_log2"]
            or above_min > self.params["max_above_minimum"]
        ):
            return []
        # the late part of the run: halvings must outnumber growths (a scale still trying to recover is not collapsing)
        late = steps >= steps[0] + (1 - self.params["late_fraction"]) * (steps[-1] - steps[0])
        moves = np.diff(log2[late]) if late.sum() > 1 else np.diff(log2[-2:])
        halvings, growths = float(-moves[moves < 0].sum()), float(moves[moves > 0].sum())
        if halvings < growths:
            return []
        late_start = float(steps[late][0]) if late.any() else float(steps[-1])
        if self._still_learning(view.series("train_loss"), late_start):
            return []
        total_halvings = float(-np.diff(log2)[np.diff(log2) < 0].sum())
        margin = (drop - self.params["min_halvings_from_peak"]) + (self.params["max_final_log2"] - log2[-1])
        confidence = 0.5 + 0.5 * curves.sigmoid(margin / 2)
        return [
            self.finding(
                scale,
                title=(
                    f"AMP loss scale fell {drop:.0f} halvings from "
                    f"{'its peak' if start == log2[peak_i] else 'at least'} {fmt_num(2.0 ** start)} "
                    f"to {fmt_num(2.0 ** log2[-1])}: optimizer steps are being skipped"
                ),
                steps=(int(steps[leaves_peak_i]), int(steps[-1])),
                confidence=confidence,
                evidence={
                    "scale_peak": float(2 ** start),
                    "scale_final": float(2 ** log2[-1]),
                    "scale_min": float(2 ** np.min(log2)),
                    "halvings_from_peak": drop,
                    "halvings_logged": total_halvings,
                    "late_halvings": halvings,
                    "late_growths": growths,
                },
            )
        ]

    def _below_any_start(self, scale: Series, ok: np.ndarray) -> list[Finding]:
        """Too few values for a history (a pasted log's `reducing loss scale to 1.5e-05` lines), but a
        scale below 1 is many halvings under every dynamic scaler's initial value (2**16 for torch,
        apex and DeepSpeed, 2**7 for fairseq): collapsed, whatever came before."""
        if not ok.any():
            return []
        final = float(scale.values[ok][-1])
        if np.log2(final) > self.params["max_lone_final_log2"]:
            return []
        halvings = np.log2(SMALLEST_INITIAL_SCALE) - np.log2(final)  # a denormal scale: the ratio overflows
        return [
            self.finding(
                scale,
                title=(
                    f"AMP loss scale is down to {final:.3g}: at least {halvings:.0f} halvings below any "
                    f"scaler's initial value, so optimizer steps are being skipped"
                ),
                steps=(int(scale.steps[ok][0]), int(scale.steps[ok][-1])),
                confidence=0.6 + 0.3 * curves.sigmoid(-np.log2(final) / 4),
                evidence={"scale_final": final, "scale_min": float(np.min(scale.values[ok])), "halvings_from_peak": float(halvings)},
            )
        ]

    def _still_learning(self, loss: Series | None, since: float) -> bool:
        """The training loss still falls significantly late in the run: steps are not being skipped wholesale."""
        if loss is None:
            return False
        late = (loss.steps >= since) & np.isfinite(loss.values)
        if late.sum() < 5:
            return False
        values = loss.values[late]
        falling = curves.trend(loss.steps[late], values)
        first, last = curves.level(values, "start"), curves.level(values, "end")
        drop = (first - last) / max(abs(first), 1e-12)
        return falling.tau < 0 and falling.p_value < 0.01 and drop >= self.params["min_late_loss_drop"]
