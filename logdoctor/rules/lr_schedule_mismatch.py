"""lr_schedule_mismatch: the logged LR curve explains a stalled or crawling loss."""
from __future__ import annotations

import numpy as np

from .. import curves
from ..model import Finding, Series
from ..numbers import fmt_num
from ..view import RunView
from .base import Rule


class LrScheduleMismatch(Rule):
    """The LR schedule does not fit the run's length: it hits its floor early, or never leaves warmup.

    Symptom:
        Read from the logged learning rate against the training loss. An LR
        of exactly 0 at every logged point trains nothing, in any window of
        the run. Otherwise either
        the LR decays to a small fraction of its peak and sits at that floor
        from early in the run (a cosine or step schedule sized for far fewer
        steps, milestones hit in the first epoch, a per-step schedule stepped
        per batch under accumulation) and the loss stops improving from then
        on; or the LR is still climbing at the end of the run (warmup sized
        longer than the run, a per-step warmup stepped once per epoch), so
        most of the run trains at a fraction of the intended LR (seen over
        ten logged values or more: a log that stops during a normal warmup,
        a paste of a run's first updates, looks the same); or the LR
        falls to its floor and climbs back to its peak five times or more (a
        cosine with T_max in epochs stepped per batch runs through its period
        again and again; warm restarts on purpose restart a few times). Every
        LR param group is checked.
    Root causes:
        - scheduler length (T_max, total_steps, num_training_steps, milestones) computed in epochs or for another run length, but stepped per batch, or vice versa
        - scheduler.step() called per micro-batch under gradient accumulation, so the schedule runs accum times too fast
        - warmup length set in steps for a run that is much shorter, or a per-step warmup stepped once per epoch
        - a decay factor (gamma) far too strong for the number of decay steps
    Fix:
        - size the schedule from the real number of optimizer steps: total = epochs * ceil(len(loader) / accum_steps); pass that to T_max / num_training_steps / total_steps
        - call optimizer.step() then scheduler.step(), once per optimizer step for per-step schedules (inside the accumulation boundary), once per epoch for epoch schedules
        - keep warmup to about 1 to 10 % of the total steps
        - log scheduler.get_last_lr() for every param group, every step, to see the schedule you really run
    Probe:
        scheduler_exhausted (the checkpoint's scheduler sits at its floor or past its planned total)
    Example:
        CosineAnnealingLR(T_max=epochs) stepped every batch: the LR reaches
        zero at 20 % of the run and the loss has not moved since.
    """

    code = "lr_schedule_mismatch"
    severity = "warning"
    outranks = ("flat", "crawl")
    defaults = {
        "min_points": 5,
        "floor_tolerance": 0.05,
        # an LR this share of its peak counts as at its floor even while it keeps shrinking
        "negligible_lr_ratio": 0.02,
        "max_floor_ratio": 0.2,
        "max_floor_fraction": 0.4,
        # a later step down of a staircase to this share of the peak or less, made while the loss
        # still fell, counts as a floor up to this share of the run (StepLR's third x0.1 cut:
        # training has as good as stopped, however it keeps dividing)
        "stopped_lr_ratio": 0.002,
        "max_stopped_fraction": 0.6,
        "max_gain_after_floor": 0.15,
        "noise_multiple": 5.0,
        "min_warmup_fraction": 0.5,
        # an endless warmup is told from a log that stops during a normal warmup by a long record
        "min_warmup_points": 10,
        "max_mid_ratio": 0.75,
        # cycling: the LR comes back above cycle_high x peak after falling below cycle_low x peak
        # at least min_cycles times (a cosine's period run through again and again)
        "cycle_low": 0.2,
        "cycle_high": 0.8,
        "min_cycles": 5,
    }

    def check(self, view: RunView) -> list[Finding]:
        loss = view.series("train_loss")
        found = []
        for lr in view.all_series("lr"):
            ok = np.isfinite(lr.values)
            zero = self._zero_throughout(lr, ok)
            if zero:
                found.append(zero)
                continue
            if ok.sum() < self.params["min_points"] or np.max(lr.values[ok]) <= 0:
                continue
            steps = lr.steps[ok] if loss is None else np.round(curves.on_axis_of(lr.steps[ok], loss)).astype(np.int64)
            lr = Series(lr.name, steps, lr.values[ok])
            first, last = _span(lr, loss)
            if last <= first:
                continue
            finding = self._early_floor(lr, loss, first, last) or self._endless_warmup(lr, loss, first, last) or self._cycling(lr)
            if finding:
                found.append(finding)
        return sorted(found, key=lambda f: -f.confidence)[:1]

    def _zero_throughout(self, lr: Series, ok: np.ndarray) -> Finding | None:
        """An LR of exactly 0 at every logged point (three or more): nothing is trained, in any
        window of the run (a scheduler at 0 from its first step, warmup from 0 stepped per epoch,
        a DeepSpeed `lr=[0.0]`)."""
        if ok.sum() < 3 or np.any(lr.values[ok] != 0):
            return None
        steps = lr.steps[ok]
        return self.finding(
            lr,
            title=f"{lr.name} is exactly 0 at all {int(ok.sum())} logged points: no update changes the weights",
            steps=(int(steps[0]), int(steps[-1])),
            confidence=0.95,
            evidence={"lr_peak": 0.0, "lr_final": 0.0, "points": int(ok.sum())},
        )

    def _early_floor(self, lr: Series, loss: Series | None, first: int, last: int) -> Finding | None:
        """The LR sits at a floor from early in the run and the loss gains (next to) nothing after it.

        The floor is where the LR settles, or, for a staircase that keeps dividing a negligible LR
        (StepLR's third and fourth x0.1 cuts), each later step down to 0.2 % of its peak or less
        that came while the loss was still falling (a cut on a plateau reacts to the
        stall): the earliest of these after which the loss gained nothing counts. The loss at
        the floor is read just after it, so the step down a cut itself brings is not counted as
        progress made at the floor."""
        p = self.params
        peak, final = float(np.max(lr.values)), float(lr.values[-1])
        at = curves.settle_index(lr.values, p["floor_tolerance"], p["negligible_lr_ratio"])
        if at is None or final > p["max_floor_ratio"] * peak or loss is None:
            return None
        cuts = np.flatnonzero((lr.values[1:] < (1 - p["floor_tolerance"]) * lr.values[:-1]) & (lr.values[1:] <= p["stopped_lr_ratio"] * peak)) + 1
        noise = curves.noise_sigma(loss.values[np.isfinite(loss.values)])
        if _decay_followed_stall(lr, loss, first, last, p["floor_tolerance"], noise):
            return None
        width = max(0.05 * (last - first), 1.0)
        start = curves.window_level(loss, first, first + width)
        end = curves.window_level(loss, last - width, last)
        for index in sorted({at, *(int(i) for i in cuts if i > at)}):
            floor_step = int(lr.steps[index])
            frac = (floor_step - first) / (last - first)
            limit = p["max_floor_fraction" if index == at else "max_stopped_fraction"]
            if frac > limit:
                return None
            if index != at and not _improving_before(loss, floor_step, width, noise):
                continue  # a cut made on a plateau (ReduceLROnPlateau) reacts to the stall; it did not cause it
            at_floor = curves.window_level(loss, floor_step, floor_step + width)
            if not np.all(np.isfinite([start, at_floor, end])):
                return None
            before, after = start - at_floor, at_floor - end
            # a loss that never moved counts as stalled: gains are measured against at least its noise
            total = max(max(before, 0.0) + max(after, 0.0), p["noise_multiple"] * noise)
            gain_after = after / total if total > 0 else 0.0
            if gain_after <= p["max_gain_after_floor"]:
                break
        else:
            return None
        floor_lr = float(lr.values[index])
        confidence = 0.5 + 0.5 * np.mean(
            [
                1.0 - frac / limit,
                1.0 - (final / peak) / p["max_floor_ratio"],
                1.0 - max(gain_after, 0.0) / p["max_gain_after_floor"],
            ]
        )
        return self.finding(
            lr,
            title=(
                f"LR reached its floor ({fmt_num(floor_lr)}, {fmt_num(floor_lr / peak * 100)}% of peak; {fmt_num(final)} at the end) "
                f"at {frac:.0%} of the run and the loss gained {max(gain_after, 0.0):.0%} of its progress after it"
            ),
            steps=(floor_step, last),
            confidence=confidence,
            evidence={
                "kind": "early_floor",
                "lr_peak": peak,
                "lr_final": final,
                "lr_floor": floor_lr,
                "floor_step": floor_step,
                "floor_at_fraction": frac,
                "loss_at_floor": at_floor,
                "loss_end": end,
                "gain_after_floor_fraction": gain_after,
            },
        )

    def _cycling(self, lr: Series) -> Finding | None:
        """The LR falls to its floor and climbs back again and again: a cosine whose T_max was given
        in epochs but that is stepped per batch runs through its period tens of times (a per-epoch
        log samples it at random phases). Warm restarts on purpose restart a few times, not this often."""
        p = self.params
        peak = float(np.max(lr.values))
        trips = _round_trips(lr.values, p["cycle_low"] * peak, p["cycle_high"] * peak)
        if trips < p["min_cycles"]:
            return None
        return self.finding(
            lr,
            title=f"LR cycles {trips} times between its peak and its floor instead of annealing once",
            steps=(int(lr.steps[0]), int(lr.steps[-1])),
            confidence=0.5 + 0.45 * min(1.0, (trips - p["min_cycles"] + 1) / (2 * p["min_cycles"])),
            evidence={"kind": "cycling", "lr_peak": peak, "lr_cycles": trips},
        )

    def _endless_warmup(self, lr: Series, loss: Series | None, first: int, last: int) -> Finding | None:
        p = self.params
        values, steps = lr.values, lr.steps
        if len(values) < p["min_warmup_points"]:
            return None  # a few values on a ramp: the opening of a run cut short (a paste) looks the same
        peak = float(np.max(values))
        # peak at the very end (within 1 %), and still well below it half way through the run
        if values[-1] < 0.99 * peak or values[0] > 0.5 * peak:
            return None
        mid = float(curves.values_at(lr, np.array([first + 0.5 * (last - first)]))[0])
        rising = np.flatnonzero(values < 0.99 * peak)
        ramp_end = int(steps[rising[-1] + 1]) if len(rising) and rising[-1] + 1 < len(values) else last
        frac = (ramp_end - first) / (last - first)
        if not np.isfinite(mid) or mid > p["max_mid_ratio"] * peak or frac < p["min_warmup_fraction"]:
            return None
        if _worsening(loss, first + 0.5 * (last - first)):
            return None  # the ramp reached an LR too high for the model: that is divergence, not a long warmup
        confidence = 0.5 + 0.5 * np.mean([min(1.0, frac), 1.0 - mid / peak])
        return self.finding(
            lr,
            title=f"LR still warming up until {frac:.0%} of the run (at mid-run it was {mid / peak:.0%} of its peak)",
            steps=(first, ramp_end),
            confidence=confidence,
            evidence={
                "kind": "endless_warmup",
                "lr_start": float(values[0]),
                "lr_mid": mid,
                "lr_peak": peak,
                "warmup_end_fraction": frac,
            },
        )


def _round_trips(values: np.ndarray, low: float, high: float) -> int:
    """How often the series comes back above `high` after having been below `low`: of the points
    at either extreme (at or below `low` counting as low), the high ones right after a low one."""
    low_at, high_at = values <= low, values >= high
    kind = low_at[low_at | high_at]  # True: low, False: high
    return int(np.count_nonzero(kind[:-1] & ~kind[1:]))


def _improving_before(loss: Series, step: float, width: float, noise: float) -> bool:
    """The loss fell beyond its noise over the stretch just before `step`."""
    earlier = curves.window_level(loss, step - 2 * width, step - width)
    later = curves.window_level(loss, step - width, step)
    return bool(np.isfinite(earlier) and np.isfinite(later) and earlier - later > noise)


def _decay_followed_stall(lr: Series, loss: Series, first: int, last: int, tol: float, noise: float) -> bool:
    """The loss had already stopped improving before the LR first dropped (ReduceLROnPlateau reacting).

    Then the early floor is a consequence of the stall, not its cause. Only
    judged when the first drop comes late enough (past 20 % of the run) for a
    plateau to have formed before it.
    """
    peak_i = int(np.argmax(lr.values))
    below = np.flatnonzero(lr.values[peak_i:] < (1 - tol) * lr.values[peak_i])
    if not len(below):
        return False
    drop_step = float(lr.steps[peak_i + below[0]])
    window = 0.1 * (last - first)
    if drop_step - first < 2 * window:
        return False
    earlier = curves.window_level(loss, drop_step - window, drop_step - window / 2)
    later = curves.window_level(loss, drop_step - window / 2, drop_step)
    return bool(np.isfinite(earlier) and np.isfinite(later) and earlier - later <= noise)


def _worsening(loss: Series | None, since: float) -> bool:
    """The loss ends above where it started, or rises significantly from `since` on."""
    c = curves.curve(loss)
    if c is None:
        return False
    if c.end > c.start:
        return True
    late = loss.steps >= since
    rising = curves.trend(loss.steps[late], loss.values[late])
    return rising.tau > 0 and rising.p_value < 0.01


def _span(lr: Series, loss: Series | None) -> tuple[int, int]:
    """The run's step range: the LR's and the training loss's together."""
    lo, hi = int(lr.steps[0]), int(lr.steps[-1])
    if loss is not None and len(loss):
        lo, hi = min(lo, int(loss.steps[0])), max(hi, int(loss.steps[-1]))
    return lo, hi
