"""overfit: validation turns and rises while training keeps improving."""
from __future__ import annotations

import numpy as np

from .. import curves
from ..model import Finding, Series
from ..roles import higher_is_better, split_of, tokens
from ..numbers import fmt_num, percent
from ..view import RunView
from .base import Rule, bullets


class Overfit(Rule):
    """Training loss keeps falling while validation loss turns and rises.

    Symptom:
        The validation loss reaches a minimum and then climbs significantly
        (well beyond its own evaluation-to-evaluation noise, the whole curve's
        or, when smaller, that of the stretch after the minimum, and by a real
        fraction of its best value) over several evaluations and at least a
        tenth of them (a turn in the closing few percent of a long run is
        not one to act on), while the
        training loss over the same steps keeps falling (or already sits near
        zero, far below the validation loss: a memorised training set has
        nowhere left to fall): the train/val gap widens. The climb is either a rising trend, or a step up that then
        holds (nearly every later evaluation sits at the final level: a model
        that memorised a tiny training set early and stopped moving). A validation curve that only flattens out is *not*
        overfitting, nor is one evaluation that jumps and comes back.
        When no validation loss is logged, a validation accuracy that peaks and
        then falls is read the same way. A training loss that drops in a
        staircase at every epoch boundary belongs to the same picture (the
        model recognises examples it has already seen), so `epoch_jumps` is
        not reported next to it.
    Root causes:
        - the model has more capacity than the data supports and is memorising the training set
        - too little regularisation: no or weak weight decay, dropout or augmentation
        - training runs far past the best checkpoint (no early stopping)
        - train/validation distribution differs (leakage into training, or a shifted validation set)
    Fix:
        - keep the checkpoint at the validation minimum (early stopping on validation loss, patience of a few evaluations)
        - raise regularisation: weight_decay (AdamW, e.g. 0.01 to 0.1), dropout 0.1 to 0.3, stronger data augmentation
        - more training data, or a smaller model
        When a validation accuracy or error rate logged beside the loss still
        improves after the loss's best, the finding says so and puts
        checkpoint selection by that metric first: the loss is growing from
        over-confident mistakes (common when fine-tuning), not from a model
        that gets worse at the task.
    Probe:
        none from logs alone; compare the checkpoint at the validation minimum with the last one on held-out data
    Example:
        A ResNet trained for 60 epochs: validation loss falls to 0.61 at epoch 14,
        then climbs to 0.92 by epoch 60 while training loss goes from 0.45 to 0.02.
    """

    code = "overfit"
    severity = "warning"
    suppresses = ("epoch_jumps",)
    defaults = {
        "min_val_points": 5,
        "min_points_after_min": 3,
        # ...and at least this share of the evaluations: a turn in the closing few percent of a long
        # run (a last-epochs change of augmentation, the final LR steps) is no overfit to act on
        "min_share_after_min": 0.1,
        "min_rise_relative": 0.05,
        # ...or, for one part of a multi-part validation loss that is not the primary, this share
        "min_part_rise_relative": 0.25,
        "min_rise_noise": 3.0,
        "min_rise_tau": 0.3,
        # ...or a step that holds: this share of the evaluations after the best stay above it by
        # at least half the final rise (a jump then a flat line, or a jump then a slow drift
        # back, has a weak Kendall tau; a validation loss thrown up and down by an unstable
        # optimizer comes back down to its best and does not hold)
        "min_held_share": 0.8,
        "min_held_rise_noise": 10.0,
        "smoothing_window": 3,
        # a training loss that no longer falls still counts when it sits at most this share of
        # the best validation loss (memorised: it has nowhere left to fall)
        "max_memorised_ratio": 0.1,
        # a validation accuracy / error rate still better by this share at the end than where the
        # validation loss was best: the loss rise is over-confidence, said in the finding
        "min_task_gain": 0.01,
        # a history too short for a noise estimate (2-4 evaluations of a fine-tune): the validation
        # loss rises this share above its best at every evaluation after it (or at all, when it is
        # min_short_gap times the training loss), while the training loss falls at every evaluation
        # and by this share over the same span
        "min_short_points": 2,
        "min_short_gap": 3.0,
        "min_short_rise": 0.2,
        "min_short_train_drop": 0.2,
    }

    def check(self, view: RunView) -> list[Finding]:
        train = view.series("train_loss")
        role = next((r for r in ("val_loss", "val_acc", "val_err") if view.series(r) is not None), "val_loss")
        if train is None or view.series(role) is None:
            return []
        # a multi-part loss (box / obj / cls) is judged part by part, each against its training twin:
        # a class loss can memorise while the box loss still generalises
        pairs = [(val, _twin(view, val) or train) for val in view.all_series(role)] if role == "val_loss" else [(view.series(role), train)]
        found = [f for val, twin in pairs for f in self._check_one(view, val, twin, role)]
        return sorted(found, key=lambda f: -f.confidence)[:1]

    def _check_one(self, view: RunView, val: Series, train: Series, role: str) -> list[Finding]:
        sign = -1.0 if higher_is_better(role) else 1.0
        ok = np.isfinite(val.values)
        if self.params["min_short_points"] <= ok.sum() < self.params["min_val_points"] and ok[-1] and role == "val_loss":
            return self._short(val, train)
        if ok.sum() < self.params["min_val_points"] or not ok[-1]:
            return []
        steps, raw = val.steps[ok], sign * val.values[ok]
        smooth = curves.smooth(raw, self.params["smoothing_window"])
        # a mirrored median always replaces the first evaluation by the second, so a validation
        # loss that was best at its first evaluation (a tiny training set memorised within the
        # first epoch) could never have its minimum there; a one-sided edge keeps it
        smooth[0] = min(smooth[0], raw[0])
        # the lowest smoothed point, moved to the lowest raw evaluation next to it (mirrored edges
        # make the first smoothed value echo the second evaluation)
        i = int(np.argmin(smooth))
        half = self.params["smoothing_window"] // 2
        lo = max(0, i - half)
        i_min = lo + int(np.argmin(raw[lo : i + half + 1]))
        after = len(raw) - 1 - i_min
        if after < max(self.params["min_points_after_min"], self.params["min_share_after_min"] * len(raw)):
            return []
        # the best smoothed level: at a zigzagging minimum the smoothed value at the raw low
        # echoes its high neighbours and would hide the rise
        best = float(smooth[i])
        tail = min(after + 1, max(3, after // 3))
        end = float(curves.median(raw[-tail:]))
        rise = end - best
        noise = _scatter(raw, i_min)
        rel = rise / max(abs(best), 1e-12)
        rising = curves.trend(steps[i_min:], raw[i_min:])
        tau, p = rising.tau, rising.p_value
        # a part beside the primary validation loss must rise further: with several parts, one of
        # them drifting a few percent from a lucky early evaluation is expected
        min_rel = self.params["min_rise_relative"] if val.name == view.roles.get(role) else self.params["min_part_rise_relative"]
        # the end level is a median of `tail` evaluations, the best one of `smoothing_window`: the
        # noise their difference carries shrinks with the tail (judged as at the shortest tail, 3)
        w = self.params["smoothing_window"]
        averaged = np.sqrt((1 / tail + 1 / w) / (1 / 3 + 1 / w))
        if rel < min_rel or rise < self.params["min_rise_noise"] * noise * averaged:
            return []
        held = float(np.mean(raw[i_min + 1 :] - best > rise / 2))
        # a held step must also stand far above the evaluation-to-evaluation scatter: a validation
        # loss bounced about by an unstable optimizer stays above a lucky first evaluation too
        held_clear = held >= self.params["min_held_share"] and rise >= self.params["min_held_rise_noise"] * noise
        if tau < self.params["min_rise_tau"] and not held_clear:
            return []
        # training must keep improving over the same steps (otherwise it is divergence, not overfitting)
        at = curves.on_axis_of(steps, train)
        width = max(float(curves.median(np.diff(at))), 1.0)
        train_at_min = curves.window_level(train, at[i_min] - width, at[i_min] + width)
        train_end = curves.window_level(train, at[-1] - 2 * width, at[-1])
        if not (np.isfinite(train_at_min) and np.isfinite(train_end)):
            return []
        # ...or sit still far below the validation loss: a training set memorised down to ~0
        # cannot fall further, and the gap is the overfit
        memorised = train_end <= train_at_min and train_at_min <= self.params["max_memorised_ratio"] * abs(best)
        if train_end >= train_at_min and not memorised:
            return []
        train_drop = (train_at_min - train_end) / max(abs(train_at_min), 1e-12)
        confidence = 0.45 + 0.55 * np.mean(
            [min(1.0, rel / (4 * self.params["min_rise_relative"])), min(1.0, after / 8), min(1.0, max(tau, held)), min(1.0, train_drop / 0.2)]
        )
        what = {"val_loss": "loss", "val_acc": "accuracy", "val_err": "error rate"}[role]
        part = "" if val.name == view.roles.get(role) else f" ({val.name})"
        title = f"validation {what}{part} {'rose' if sign > 0 else 'fell'} {percent(rel)} from its best at step {fmt_num(int(steps[i_min]))} while training loss kept falling"
        task = self._task_metric_improving(view, steps[i_min]) if role == "val_loss" else None
        causes = fixes = None
        task_evidence = {}
        if task is not None:
            name, at_best, last = task
            title += f"; {name} still improves ({fmt_num(at_best)} → {fmt_num(last)})"
            doc = self.doc()
            causes = [
                f"the validation loss grows from a few confidently wrong predictions while the task metric "
                f"({name}) still improves: calibration degrades, the model is not getting worse at the task",
                *bullets(doc["Root causes"]),
            ]
            fixes = [
                f"select checkpoints by {name} (metric_for_best_model, ModelCheckpoint(monitor=...)), not by the validation loss",
                "label smoothing (0.1) or temperature scaling if calibrated probabilities matter",
                *bullets(doc["Fix"]),
            ]
            confidence *= 0.75
            task_evidence = {"task_metric": name, "task_metric_at_val_best": at_best, "task_metric_end": last}
        return [
            self.finding(
                val,
                title=title,
                steps=(int(steps[i_min]), int(steps[-1])),
                confidence=confidence,
                causes=causes,
                fixes=fixes,
                evidence={
                    "val_best": sign * best,
                    "val_best_step": int(steps[i_min]),
                    "val_end": sign * end,
                    "val_relative_change": sign * rel,
                    "val_noise": noise,
                    "evaluations_after_best": after,
                    "val_trend_tau": tau,
                    "val_trend_p": p,
                    "val_held_share": held,
                    "train_at_val_best": train_at_min,
                    "train_end": train_end,
                    **task_evidence,
                },
            )
        ]

    def _short(self, val: Series, train: Series) -> list[Finding]:
        """Overfit in a history of 2-4 evaluations: no noise can be measured there, so the rise must
        be large (a fifth of the best by the last evaluation, none after the best back at it; or any
        rise of a validation loss already 3x the training loss), and come while the
        training loss falls at every evaluation (BERT fine-tuned 3 epochs: train 0.386 -> 0.227 ->
        0.113, validation 0.318 -> 0.320 -> 0.443)."""
        ok = np.isfinite(val.values)
        steps, y = val.steps[ok], val.values[ok]
        i_min = int(np.argmin(y))
        if i_min == len(y) - 1:
            return []
        best, end = float(y[i_min]), float(y[-1])
        rel = (end - best) / max(abs(best), 1e-12)
        held = bool(np.all(y[i_min + 1 :] > best))
        at = curves.on_axis_of(steps, train)
        # the training loss over each evaluation's own interval (half the gap either side; its own step at least)
        width = max(float(curves.median(np.diff(at))) / 2 - 0.5, 0.0)
        train_at = np.array([curves.window_level(train, a - width, a + width) for a in at])
        if not np.all(np.isfinite(train_at)) or not np.all(np.diff(train_at[i_min:]) < 0):
            return []
        drop = (train_at[i_min] - train_at[-1]) / max(abs(train_at[i_min]), 1e-12)
        # a rise of a fifth, or any rise of a validation loss that is already several times the
        # training loss (the gap is the overfit: two evaluations show it)
        gap = end / max(float(train_at[-1]), 1e-12)
        rose = rel >= self.params["min_short_rise"] or (rel > 0 and gap >= self.params["min_short_gap"])
        if not rose or not held or drop < self.params["min_short_train_drop"]:
            return []
        return [
            self.finding(
                val,
                title=(
                    f"validation loss rose {percent(rel)} from its best at step {fmt_num(int(steps[i_min]))} ({fmt_num(best)} → {fmt_num(end)}) "
                    f"while training loss fell {drop:.0%} ({fmt_num(train_at[i_min])} → {fmt_num(train_at[-1])})"
                    + (f", and ends at {fmt_num(gap)}× the training loss" if gap >= self.params["min_short_gap"] else "")
                    + f"; only {len(y)} evaluations"
                ),
                steps=(int(steps[i_min]), int(steps[-1])),
                confidence=0.5 + 0.2 * min(1.0, rel / 0.5),
                evidence={
                    "val_best": best,
                    "val_best_step": int(steps[i_min]),
                    "val_end": end,
                    "val_relative_change": rel,
                    "evaluations_after_best": len(y) - 1 - i_min,
                    "train_at_val_best": float(train_at[i_min]),
                    "train_end": float(train_at[-1]),
                    "val_over_train": gap,
                    "kind": "short history",
                },
            )
        ]

    def _task_metric_improving(self, view: RunView, best_step: int) -> tuple[str, float, float] | None:
        """A validation accuracy / score or error rate that is still better at the end than where the
        validation loss was best, beyond its own noise: (name, value there, value at the end)."""
        for score_role in ("val_acc", "val_err"):
            sign = -1.0 if higher_is_better(score_role) else 1.0
            for score in view.all_series(score_role):
                ok = np.isfinite(score.values)
                steps, values = score.steps[ok], score.values[ok]
                after = steps >= best_step
                if after.sum() < self.params["min_points_after_min"] + 1:
                    continue
                at_best = float(values[after][0])
                last = curves.level(values[after], "end", 0.25, min_points=1)
                gain = sign * (at_best - last)
                noise = curves.noise_sigma(values)
                if gain > max(self.params["min_task_gain"] * abs(at_best), 2 * noise):
                    return score.name, at_best, last
        return None



def _scatter(raw: np.ndarray, turn: int) -> float:
    """Evaluation-to-evaluation noise a rise after the minimum at index `turn` must clear: the
    noise of the whole curve, or of the stretch from the minimum on when that is smaller.

    Differencing removes one slope, not two: over a whole V of a few evaluations (falls 0.04 an
    epoch, then rises 0.03) the change of slope at the turn reads as noise as large as the rise
    itself. Differenced on its own, the stretch after the turn keeps its own slope; it needs three
    points to have a noise at all.
    """
    noise = curves.noise_sigma(raw)
    after = raw[turn:]
    return min(noise, curves.noise_sigma(after)) if len(after) >= 3 else noise


def _twin(view: RunView, val: Series) -> Series | None:
    """The training loss part a validation part mirrors (`val/cls_loss` -> `train/cls_loss`); of
    several, the one evaluated at the validation's own steps (nanoGPT's `step 800: train loss
    0.98, val loss 3.75` beside its noisy per-iteration `loss`)."""
    words = _part_words(val.name)
    twins = [t for t in view.all_series("train_loss") if _part_words(t.name) == words]
    same = [t for t in twins if len(t.steps) == len(val.steps) and np.array_equal(t.steps, val.steps)]
    return (same or twins or [None])[0]


def _part_words(name: str) -> tuple[str, ...]:
    return tuple(t for t in tokens(name) if split_of(t) is None)
