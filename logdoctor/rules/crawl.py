"""crawl: the loss falls, but far too slowly to matter."""
from __future__ import annotations

from .. import curves
from ..model import Finding
from ..view import RunView
from ._loss import primary_loss
from .base import Rule
from ..numbers import fmt_num, percent


class Crawl(Rule):
    """The loss falls, but far too slowly to matter.

    Symptom:
        A steady, significant downward trend (Mann-Kendall over every point,
        and Kendall's tau at most -0.3 over the medians of 24 blocks, so heavy
        batch noise does not hide a steady decline) whose total drop (the
        largest of first-tenth-to-last-tenth, along the Theil-Sen line, and
        start-to-end less two noise sigmas) is a small fraction of the
        starting loss (from half a percent up to a fifth),
        and which is not levelling off: the last third still falls at least
        half as fast as the first third (Theil-Sen slopes), or the two slopes
        differ by less than twice their noise (a pace that cannot be told
        from steady). A healthy run, a fine-tune included, drops steeply
        first and decelerates; a crawling one inches down at an even pace.
        No NaN.
    Root causes:
        - learning rate one to three decades too low (copied from another batch size or optimizer, or a tiny "safe" default)
        - a scheduler stuck at its floor or stepped at the wrong cadence (see lr_schedule_mismatch)
        - double softmax before CrossEntropyLoss, or NLLLoss fed probabilities: the gradient is diluted
        - gradients mostly clipped away (see clip_saturation) or vanishing through saturating layers
    Fix:
        - run an LR range test (torch-lr-finder, Lightning Tuner.lr_find) and set the LR about a decade below where the loss diverges; raising it 10x is a good first try
        - check the logged LR (optimizer.param_groups[0]["lr"]) matches the intended schedule
        - pass raw logits to CrossEntropyLoss (no softmax in the head)
    Probe:
        update_ratio_low, LR range test
    Example:
        Train loss 2.30 at step 0, 2.21 at step 20 000, falling at a steady
        0.0045 per 1k steps: a 4 % drop over the whole run.
    """

    code = "crawl"
    severity = "warning"
    defaults = {
        "min_points": 8,
        # a steady decline: Mann-Kendall p below trend_p and Kendall's tau at most max_tau
        "trend_p": 0.001,
        "max_tau": -0.3,
        # ...tau taken over the medians of this many blocks of the run (see curves.signal_tau)
        "tau_blocks": 24,
        # below this relative drop the loss has not moved at all (flat's negligible_drop)
        "min_relative_drop": 0.005,
        # above it the loss has fallen too far to call the pace useless
        "max_relative_drop": 0.2,
        # the end levels of the drop: medians of this opening / closing share of the run
        "end_share": 0.1,
        # slope of the last third / slope of the first third: a converging run decelerates below this
        "min_late_to_early": 0.5,
    }

    def check(self, view: RunView) -> list[Finding]:
        series = primary_loss(view)
        c = curves.curve(series)
        if c is None or len(c) < self.params["min_points"]:
            return []
        scale = max(abs(c.start), c.y_noise, curves.TINY)
        span = max(c.last_step - c.first_step, 1)
        # how far it fell, three ways, the largest taken (a run that fell far by any measure is not
        # crawling): along the Theil-Sen line and between the medians of the first and last tenths
        # (for a steady pace both are about the start-to-end drop and neither moves much with the
        # batch noise; one that sat at chance for most of the run and then learned has a flat
        # Theil-Sen line), and from start to end level less two noise sigmas (a steep first step
        # the opening tenth already left behind, but not a noisy first few points)
        ends = curves.level(c.y, "start", self.params["end_share"]) - curves.level(c.y, "end", self.params["end_share"])
        if max(ends, c.start - c.end - 2 * c.y_noise) / scale > self.params["max_relative_drop"]:
            return []  # fell too far already without the Theil-Sen line (most runs: its pairs cost most of this rule)
        whole = curves.trend(c.steps, c.y)
        drop = max(-whole.slope * span, ends, c.start - c.end - 2 * c.y_noise) / scale
        if not self.params["min_relative_drop"] <= drop <= self.params["max_relative_drop"]:
            return []
        # significance from every point, steadiness from the block medians (batch noise averaged out)
        tau = curves.signal_tau(c.steps, c.y, self.params["tau_blocks"])
        if not (whole.p_value < self.params["trend_p"] and tau <= self.params["max_tau"] and whole.slope < 0):
            return []
        levelling, early, late, ratio = curves.levels_off(c.steps, c.y, c.y_noise, self.params["min_late_to_early"])
        if levelling:
            return []
        # smaller drops and steadier paces are surer crawls
        smallness = 1.0 - drop / self.params["max_relative_drop"]
        steadiness = min(1.0, max(ratio, 0.0))  # a pace too noisy to read adds no confidence
        confidence = 0.5 + 0.45 * smallness * steadiness * min(1.0, len(c) / 30)
        return [
            self.finding(
                series,
                title=f"{series.name} falls only {percent(drop)} over {fmt_num(span)} steps ({fmt_num(c.start)} to {fmt_num(c.end)}) and is not levelling off",
                steps=(c.first_step, c.last_step),
                confidence=confidence,
                evidence={
                    "loss_start": c.start,
                    "loss_end": c.end,
                    "claim": "fell",
                    "relative_drop": drop,
                    "relative_drop_end_to_end": (c.start - c.end) / scale,
                    "slope_per_1k_steps": whole.slope * 1000,
                    "early_slope_per_1k_steps": early.slope * 1000,
                    "late_slope_per_1k_steps": late.slope * 1000,
                    "late_to_early_slope": ratio,
                    "trend_tau": tau,
                    "p_value": whole.p_value,
                },
            )
        ]
