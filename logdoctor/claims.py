"""Every headline is a claim its own numbers must prove: the one place that checks it.

A finding says something about a series ("ended no lower than it started",
"validation never got clearly below its first evaluation", "sits at chance")
and prints the numbers it read. A reader who sees "never moves below its
initial level (1.071 at the start, 1.061 at the end)" stops trusting the tool:
the end *is* lower, and the sentence only holds with the noise it left out.

So a finding whose headline is such a relation carries it in its evidence as
`claim` (one of `CLAIMS`), with the numbers the relation is between
(`loss_start` or the opening level `loss_initial_level`, `loss_end`,
`val_loss_best`, `chance_level`) and the noise it allows (`change_noise`). Two things follow from that one record:

* `measured_change` words the change as measured ("2.228 → 2.113 (-5.2%,
  within its noise ±0.12)"), so the sentence states its own proof;
* `refutation` checks the relation against those numbers and against the
  series the finding cites, re-read from the run, before anything is
  reported (`diagnose`): a finding its own numbers refute is withdrawn, with
  a line saying why, never printed.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import curves
from .model import Finding, Series
from .numbers import fmt_num

#: The relations a headline may claim between its start and end numbers (evidence `claim`).
CLAIMS = {
    "no_fall": "the end is not below the start by more than the noise",
    "rose": "the end is above the start by more than the noise",
    "fell": "the end is below the start",
    "never_below_first": "the best validation value is not below the first evaluation by more than the noise",
    "at_chance": "the end sits within the chance tolerance of the chance level",
}
#: Float rounding of the printed relation.
_SLACK = 1e-9
#: The level re-read from the series (the closing tenth's median) may lie this many noise
#: allowances below the start before it contradicts the evidence (a rule may read its end over a
#: slightly different window).
_REREAD = 2.0


def measured_change(start: float, end: float, noise: float | None = None, against: str = "its noise") -> str:
    """'2.228 → 2.113 (-5.2%, within its noise ±0.12)': the change as read, with what it is measured
    against (`against` names the allowance: its noise, or a rule's band)."""
    arrow = f"{fmt_num(start)} → {fmt_num(end)}"
    if start == 0 or not (math.isfinite(start) and math.isfinite(end)):
        share = ""
    else:
        share = f"{(end - start) / abs(start):+.1%}"
    if noise is None or not math.isfinite(noise):
        return f"{arrow} ({share})" if share else arrow
    within = "within" if abs(end - start) <= noise else "beyond"
    noise_words = f"{within} {against} ±{fmt_num(noise)}"
    return f"{arrow} ({share}, {noise_words})" if share else f"{arrow} ({noise_words})"


def refutation(finding: Finding, series: Series | None = None) -> str | None:
    """Why the finding's own numbers (or the series it cites) contradict its headline; None when they do not.

    Only findings that carry a `claim` are checked: the others state a measured
    quantity (a share, a count, a threshold), not a relation between two levels.
    """
    ev: dict[str, Any] = finding.evidence
    claim = ev.get("claim")
    if claim is None:
        return None
    if claim not in CLAIMS:
        return f"unknown claim {claim!r}"
    # a claim runs from the opening level where the rule reads one (flat), else from the start
    start, end = _num(ev.get("loss_initial_level", ev.get("loss_start"))), _num(ev.get("loss_end"))
    noise = _num(ev.get("change_noise")) or 0.0
    allow = noise * (1 + _SLACK)
    if claim == "no_fall" and start is not None and end is not None:
        if end < start - allow:
            return f"the end {fmt_num(end)} is below the start {fmt_num(start)} by more than the noise ±{fmt_num(noise)}"
        closing = _closing_level(series, finding.steps)
        if closing is not None and closing < start - _REREAD * allow:
            return f"{finding.metric} closes at {fmt_num(closing)}, below the start {fmt_num(start)} beyond the noise ±{fmt_num(noise)}"
    if claim == "rose" and start is not None and end is not None and not end > start + noise:
        return f"the end {fmt_num(end)} is not above the start {fmt_num(start)} beyond the noise ±{fmt_num(noise)}"
    if claim == "fell" and start is not None and end is not None and not end < start:
        return f"the end {fmt_num(end)} is not below the start {fmt_num(start)}"
    if claim == "never_below_first":
        best = _num(ev.get("val_loss_best"))
        if start is not None and best is not None and best < start - allow:
            return f"the best validation {fmt_num(best)} is below the first evaluation {fmt_num(start)} beyond the noise ±{fmt_num(noise)}"
    if claim == "at_chance":
        chance, tolerance = _num(ev.get("chance_level")), _num(ev.get("chance_tolerance"))
        if end is not None and chance is not None and tolerance is not None and abs(end - chance) > tolerance * (1 + _SLACK):
            return f"the end {fmt_num(end)} is not within ±{fmt_num(tolerance)} of chance {fmt_num(chance)}"
    return None


def _num(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _closing_level(series: Series | None, steps: tuple[int, int] | None) -> float | None:
    """The cited series' median over its closing tenth inside the finding's steps, re-read from the run."""
    if series is None:
        return None
    keep = series.finite
    if steps is not None:
        keep = keep & (series.steps >= steps[0]) & (series.steps <= steps[1])
    y = np.asarray(series.values[keep], dtype=float)
    if len(y) < 3:
        return None
    return curves.level(y, "end", min_points=1)
