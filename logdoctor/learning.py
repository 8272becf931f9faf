"""Did the run learn? The one judgement every run gets before it may be called healthy.

Each rule looks for one failure shape, so all of them can stay silent on a run
that went nowhere in a shape none of them knows: a loss that bounces
2.3 -> 10 -> 2.4 is neither still enough to be flat nor steadily rising enough
to diverge. This module asks the plain question first, for every run:

* the primary loss (training, else validation) **ends no lower than it
  started**, beyond the noise of the two levels, and validation did not get
  clearly below the *untrained* loss either (the training loss's first level:
  a classifier's chance at initialisation; a validation loss that only fell
  from an inflated first evaluation learned nothing), nor its score beyond
  chance (the start is the median of the opening 3 %, three points at least on
  ten or more, or the first value when lower; the end of the closing tenth).
  A log that begins mid-run (a paste whose epoch counter starts well past 0)
  shows no start, so this test is left out there. A run whose validation once
  got below half the untrained loss learned, however it bounced after;
* or it **ends at chance**: within 5 % of ln K, with K the class count the
  run's config gives, every K its accuracy fits (an accuracy near 1/K; it
  overrules a config that does not fit), or the K the loss itself names (within
  1 % of ln K, K <= 20) while that split's accuracy is no better than 1.5/K;
  a validation loss at chance while training falls counts too;
* or its **task metric ends at zero** (accuracy, mAP, F1...: every one of its
  closing points exactly 0);
* or the training loss fell but the **validation loss never got clearly below
  its first evaluation** while the validation score did not improve either:
  the run learned its training set and nothing else (not judged in a window
  that starts mid-run).

Any of these makes the run one that did not learn, whatever else fired (critical
for the first three, absolute references; the named rule's documented severity for
the last, a relative one); the likeliest failure is then named and ranked first
(`diagnose`): diverge when
the loss rose well above its start and stayed there, oscillate when it
bounces, flat when it sat still or ended at chance, overfit when only validation never improved (val_metric_constant
when it repeated itself bit for bit while training fell), val_metric_constant when
an accuracy sat at 0 throughout while the loss says the model is far better
than that (a broken metric, not a broken run). A run logging several parts
of its loss learned while any part fell; fewer than four finite points
cannot be judged.

Reinforcement-learning and adversarial (GAN) runs have losses that are not
minimised toward a floor, so they are judged otherwise: an RL run by its
return (it learned when the return rose beyond its noise; flat when it never
did), a GAN only for its one failure the losses show (the discriminator
winning: the generator's loss climbs well above its start and ends ten times
the discriminator's or more: diverge);
otherwise a GAN is not judged.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import curves
from .model import Series
from .roles import DISCRIMINATOR, GENERATOR, TOTAL_WORDS, is_adversarial_part, tokens
from .rules._loss import is_adversarial
from .view import RunView

#: Config keys that give the number of classes (or tokens) a cross-entropy is taken over.
CLASS_KEYS = ("num_classes", "num_labels", "n_classes", "nb_classes", "num_class", "n_labels", "vocab_size", "n_vocab")
#: Accuracy words whose chance level is 1/K (mAP, F1, BLEU have no such level).
_ACCURACY = {"acc", "accuracy", "top1", "categoricalaccuracy", "sparsecategoricalaccuracy", "binaryaccuracy"}

#: A primary loss needs this many finite points to be judged (a validation series three).
MIN_POINTS = 4
#: The smallest change of a level, as a share of it, that counts (float32 rounding is far below).
RESOLUTION = 5e-4
#: Levels closer than this many standard errors are the same level.
LEVEL_Z = 2.0
#: A loss within this share of ln K sits at chance.
CHANCE_LOSS_TOLERANCE = 0.05
#: A loss within this share of ln K names K by itself (with an accuracy no better than 1.5/K), for a
#: K up to MAX_LOSS_K (beyond it every loss lies within 1 % of some ln K).
LOSS_K_TOLERANCE = 0.01
MAX_LOSS_K = 20
#: An accuracy within this share of 1/K (or 0.03, whichever is larger) sits at chance.
CHANCE_ACC_TOLERANCE = 0.2
#: A loss that ends this share above its start (and beyond noise) rose and stayed: diverge.
ROSE_SHARE = 0.05
#: A GAN whose generator loss ends this share above its start and this many times the
#: discriminator's loss: the discriminator won (near equilibrium both sit near ln 2).
GENERATOR_RISE, GENERATOR_OVER_DISCRIMINATOR = 0.5, 10.0
#: A task metric frozen at 0 beside a loss whose exp(-loss) is at least this is broken, not the run.
BROKEN_METRIC_PROBABILITY = 0.1
#: A validation loss ending this share below its first evaluation improved, whatever its swings.
VAL_CLEAR_SHARE = 0.02
#: A validation loss that got below this share of the training loss's first level learned at some point.
LEARNED_ONCE_SHARE = 0.5
#: A loss ending below this share of its start fell most of the way: it learned something.
FELL_FAR_SHARE = 0.5
#: Point noise above this share of the loss's level: the loss bounces (oscillate).
BOUNCE_SHARE = 0.05


@dataclass(frozen=True)
class Learning:
    """The verdict with what it was read from (the evidence a finding carries)."""

    #: True / False, or None when the run cannot be judged.
    learned: bool | None
    #: Why, in a few words: "ended no lower than it started", "ends at chance (ln 10)", ...
    reason: str
    #: The failure code the verdict names: why the run did not learn, or (learned) a broken metric.
    code: str | None = None
    series: Series | None = None
    confidence: float = 0.0
    steps: tuple[int, int] | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    #: "critical" when the run failed an absolute reference (no fall at all, chance, a task metric
    #: at 0); None when only a relative one (validation never improved on its first evaluation),
    #: where the named rule's documented severity holds.
    severity: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"learned": self.learned, "reason": self.reason, **({"code": self.code} if self.code else {})}


@dataclass(frozen=True)
class _Levels:
    start: float
    end: float
    #: Standard error of end - start.
    error: float
    #: Point noise as a share of the level.
    bounce: float
    n: int
    first_step: int
    last_step: int


def judge(view: RunView) -> Learning:
    """Did this run learn? (see the module doc for the tests and the order they are tried in)."""
    reward = view.series("reward")
    if reward is not None:
        return _judge_return(view, reward)
    if is_adversarial(view):
        return _judge_adversarial(view)
    loss = next((s for s in (view.series("train_loss"), view.series("val_loss")) if s is not None), None)
    levels = _levels(loss, MIN_POINTS)
    if loss is None or levels is None:
        return Learning(None, "too few loss points to judge")
    if _another_part_learned(view, loss):
        return Learning(True, "a part of the loss fell beyond its noise")
    noise = LEVEL_Z * levels.error
    evidence = {"loss_start": levels.start, "loss_end": levels.end, "change_noise": noise}
    steps = (levels.first_step, levels.last_step)
    confidence = 0.7 + 0.25 * min(1.0, levels.n / 20)
    chance = _at_chance(view, levels.end)
    no_lower = levels.end >= levels.start - noise and not _validation_improved(view, loss, chance)
    window = no_lower and _starts_mid_run(view, loss)
    if no_lower and not window:
        peak = _validation_learned_once(view, loss, levels)
        if peak is not None:
            # it learned, then lost it: the loss thrown back up by the optimiser (oscillate, or the
            # diverge a rule found), a warning, never "did not learn"
            return Learning(True, peak, "oscillate", loss, confidence, steps, evidence)
        rose = levels.end - levels.start > max(noise, ROSE_SHARE * abs(levels.start))
        blew_up = curves.nonfinite(loss) is not None
        code = "diverge" if rose or blew_up else "oscillate" if levels.bounce > BOUNCE_SHARE else "flat"
        reason, claim = ("rose above its start and stayed there", "rose") if rose else (
            ("ended no lower than it started", "no_fall") if levels.end >= levels.start else ("fell no further than its noise", "no_fall")
        )
        return Learning(False, reason, code, loss, confidence, steps, {**evidence, "claim": claim}, "critical")
    if chance is None and loss.name == view.roles.get("train_loss"):
        val_chance = _validation_at_chance(view)
        if val_chance is not None:
            return val_chance
    if chance is not None:
        reason, extra = chance
        code = "flat"  # at chance at the end, whatever its path there: nothing learned beyond the class prior
        return Learning(False, reason, code, loss, max(confidence, 0.85), steps, {**evidence, **extra, "claim": "at_chance"}, "critical")
    metric = next((m for m in (view.series("val_acc"), view.series("train_acc")) if m is not None and _ends_at_zero(m)), None)
    if metric is not None:
        # an accuracy that never left 0 while the loss says the right class gets a fair share of
        # the probability (exp(-loss) of 0.1 or more) is a broken metric (accuracy on a regression
        # target, a miscounted accuracy), which `val_metric_constant` names
        extra = {"metric": metric.name, "metric_end": 0.0, "metric_zero_points": _zero_tail(metric)}
        plain_accuracy = _is_accuracy(metric.name)
        if plain_accuracy and curves.frozen(metric.values) and math.exp(-max(levels.end, 0.0)) >= BROKEN_METRIC_PROBABILITY:
            reason = f"the loss fell, but {metric.name} is 0 at every point: the metric is broken, not the run"
            return Learning(True, reason, "val_metric_constant", metric, 0.8, steps, {**evidence, **extra})
        # a loss that fell most of the way while the task metric went to 0 learned the training
        # set and nothing the metric counts (labels that match nothing, a broken evaluation)
        fell_far = levels.end < FELL_FAR_SHARE * levels.start and levels.start > 0
        code = "val_metric_constant" if fell_far else "crawl" if _still_falling(loss) else "flat"
        return Learning(False, f"{metric.name} ends at 0", code, loss, 0.85, steps, {**evidence, **extra}, "critical")
    # (in a log that starts mid-run the first evaluation shown is no first evaluation of the run)
    if loss.name == (view.roles.get("train_loss")) and not _starts_mid_run(view, loss):
        unseen = _validation_never_improved(view)
        if unseen is not None:
            return unseen
    if window:
        return Learning(None, "the log starts mid-run: its first point is no start", evidence=evidence)
    return Learning(True, "the loss fell beyond its noise", evidence=evidence)


def _judge_return(view: RunView, reward: Series) -> Learning:
    """An RL run learned when its return rose beyond its noise (its losses are no guide: they move
    with the data the policy collects). A return that never rose is a policy that never learned."""
    levels = _levels(reward, MIN_POINTS)
    if levels is None:
        return Learning(None, "reinforcement learning: too few return points to judge")
    evidence = {"loss_start": levels.start, "loss_end": levels.end, "change_noise": LEVEL_Z * levels.error}
    if levels.end > levels.start + LEVEL_Z * levels.error:
        return Learning(True, "the return rose beyond its noise", evidence=evidence)
    if _starts_mid_run(view, reward):
        return Learning(None, "the log starts mid-run: its first return is no start", evidence=evidence)
    confidence = 0.7 + 0.2 * min(1.0, levels.n / 50)
    reason = "the return ended no higher than it started"
    return Learning(False, reason, "flat", reward, confidence, (levels.first_step, levels.last_step), evidence, "critical")


def _judge_adversarial(view: RunView) -> Learning:
    """A GAN's losses hover by design; the one failure its losses show is the discriminator winning:
    its loss collapses toward 0 while the generator's climbs well above its start and stays there."""
    parts = [s for s in view.all_series("train_loss") if is_adversarial_part(s.name)]
    gen = next((s for s in parts if set(tokens(s.name)) & GENERATOR), None)
    disc = next((s for s in parts if set(tokens(s.name)) & DISCRIMINATOR), None)
    g, d = _levels(gen, MIN_POINTS), _levels(disc, MIN_POINTS)
    if gen is None or disc is None or g is None or d is None:
        return Learning(None, "adversarial losses hover by design")
    # the generator's loss at initialisation: the discriminator wins within the opening steps
    g_init = float(curves.median(gen.values[gen.finite][:3]))
    rose = g.end - g_init > max(LEVEL_Z * g.error, GENERATOR_RISE * abs(g_init))
    if rose and 0 <= d.end * GENERATOR_OVER_DISCRIMINATOR <= g.end:
        evidence = {"loss_start": g_init, "loss_end": g.end, "change_noise": LEVEL_Z * g.error, "discriminator_end": d.end, "claim": "rose"}
        reason = f"the discriminator won ({disc.name} ends at {d.end:.3g}, {gen.name} at {g.end:.3g}) and the generator stopped learning"
        return Learning(False, reason, "diverge", gen, 0.8, (g.first_step, g.last_step), evidence, "critical")
    return Learning(None, "adversarial losses hover by design")


def class_count(config: dict) -> int | None:
    """K from the first class-count key in a (possibly nested, dotted) config, when it is an int >= 2."""
    for key, value in config.items():
        name = str(key).lower().rsplit(".", 1)[-1].rsplit("/", 1)[-1]
        if name in CLASS_KEYS:
            try:
                k = int(value)
            except (TypeError, ValueError):
                continue
            if k >= 2 and float(value) == k:
                return k
    return None


def _levels(series: Series | None, min_points: int = 3) -> _Levels | None:
    if series is None:
        return None
    ok = series.finite
    y, steps = series.values[ok], series.steps[ok]
    n = len(y)
    if n < min_points:
        return None
    # the start is read from few points (a steep first fall is over within the opening tenth),
    # three at least on ten points or more (one noisy first batch is no level), the end from the
    # closing tenth
    k_start, k_end = min(20, max(1 if n < 10 else 3, round(0.03 * n))), max(1, round(0.1 * n))
    start, end = float(curves.median(y[:k_start])), float(curves.median(y[-k_end:]))
    if y[0] != 0 and np.sign(y[0]) == np.sign(start):
        # a loss that jumps up from its first value at once (an LR far too high) started there
        start = min(start, float(y[0]))
    sigma = max(curves.noise_sigma(y), curves.quantum(y) / 2)
    level = max(abs(float(curves.median(y))), curves.TINY)
    # a change below a small share of the level is float rounding, never learning
    error = max(sigma * math.sqrt(1.0 / k_start + 1.0 / k_end), RESOLUTION * level)
    return _Levels(start, end, error, sigma / level, n, int(steps[0]), int(steps[-1]))


def _another_part_learned(view: RunView, loss: Series) -> bool:
    """A run logging several parts of its loss (box, class, pose) learns while any part falls:
    a solved part sits still beside one still learning. A logged total, when there is one, is
    the primary and speaks for all."""
    role = "train_loss" if loss.name == view.roles.get("train_loss") else "val_loss"
    if set(tokens(loss.name)) & TOTAL_WORDS:
        return False  # the primary is the logged total
    for other in view.all_series(role):
        if other.name == loss.name or set(tokens(other.name)) & TOTAL_WORDS:
            continue
        levels = _levels(other, MIN_POINTS)
        if levels is not None and levels.end < levels.start - LEVEL_Z * levels.error:
            return True
    return False


def _validation_improved(view: RunView, loss: Series, chance: tuple[str, dict[str, Any]] | None) -> bool:
    """A noisy training loss can hide learning its validation loss or score shows beyond noise.

    Improved means better than where the model began, not only than an inflated first
    evaluation: the validation loss must also end clearly below the training loss's first
    level (a classifier's first loss is its chance level at initialisation), and a plain
    accuracy must end beyond chance where the run's chance level is known."""
    if loss.name != view.roles.get("train_loss"):
        return False
    train = _levels(loss, MIN_POINTS)
    val = _levels(view.series("val_loss"))
    if val is not None and val.start - val.end > LEVEL_Z * val.error:
        if train is None or _starts_mid_run(view, loss) or val.end < train.start - LEVEL_Z * val.error:
            return True
    score = view.series("val_acc")
    levels = _levels(score)
    if levels is not None and levels.end - levels.start > LEVEL_Z * levels.error:
        return chance is None or "accuracy_end" not in chance[1]
    return False


def _validation_learned_once(view: RunView, loss: Series, train: _Levels) -> str | None:
    """The validation loss got far below the training loss's first level at some evaluation: the
    model learned, whatever the training loss did after (an LR that makes it bounce back up).
    Far: below half of that level (a noisy validation series has a noise as large as its swings, so a
    share of the level, not the noise, is the yardstick)."""
    if loss.name != view.roles.get("train_loss") or train.start <= 0:
        return None
    val = view.series("val_loss")
    levels = _levels(val)
    if val is None or levels is None:
        return None
    y = val.values[val.finite]
    best = float(np.min(y))
    # ...and lost at least half of that gain again by its end (a validation loss that sits below the
    # training loss, as with dropout, lost nothing)
    lost = levels.end >= best + 0.5 * (train.start - best)
    if best < LEARNED_ONCE_SHARE * train.start and lost:
        at = int(val.steps[val.finite][int(np.argmin(y))])
        return f"{val.name} reached {best:.4g} at step {at}, far below the training loss's first level {train.start:.4g}, before it worsened"
    return None


def _starts_mid_run(view: RunView, loss: Series) -> bool:
    """The logged epoch counter is already past a quarter of its last value at the loss's first
    point (or, with no epoch logged or the whole log inside one epoch, the series starts past a
    quarter of its last step, past half of it for fewer than 10 points): the log is a window of
    a longer run, and its first point is no start."""
    epoch = view.series("epoch")
    if epoch is not None:
        at = curves.values_at(epoch, loss.steps[[0, -1]].astype(np.float64))
        if not np.all(np.isfinite(at)):
            at = epoch.values[epoch.finite][[0, -1]] if epoch.finite.sum() >= 2 else at
        first, last = float(at[0]), float(at[-1])
        if first != last:
            return bool(np.isfinite(first) and np.isfinite(last) and last > 0 and first > 0.25 * last)
        # the whole log inside one epoch (`Train Epoch: 0 [7007/7010]`, `epoch 1 | step 100`): the epoch
        # says nothing, the step does
    steps = loss.steps[loss.finite]
    late = 0.25 if len(steps) >= 10 else 0.5  # a few evaluations start late by nature
    return bool(len(steps) >= 2 and steps[-1] > 0 and steps[0] > late * steps[-1])


def _at_chance(view: RunView, loss_end: float, accuracies: tuple[str, ...] = ("val_acc", "train_acc")) -> tuple[str, dict[str, Any]] | None:
    """'ends at chance' with its numbers, when the loss sits at ln K for the run's K.

    K is tried from the config's class count, then from a plain accuracy ending near 1/K
    (a config can be wrong: `num_classes: 200` on a run whose accuracy sits at exactly 10 %);
    a K whose chance accuracy the run's accuracy clearly beats is no chance level of this run."""
    accuracy = _accuracy_end(view)
    config_k = class_count(view.run.config)
    ends = _accuracy_ends(view, accuracies)
    by_loss = _k_from_loss(loss_end, max(ends) if ends else None)
    candidates = ([config_k] if config_k is not None else []) + _ks_from_accuracy(accuracy) + by_loss
    for k in dict.fromkeys(candidates):
        beaten = _loss_k_accuracy(k) if k in by_loss else 1 / k + max(0.03, CHANCE_ACC_TOLERANCE / k)
        if accuracy is not None and accuracy > beaten:
            continue  # the accuracy beat chance: the loss only looks like ln K
        chance = math.log(k)
        tolerance = CHANCE_LOSS_TOLERANCE * chance
        if abs(loss_end - chance) > tolerance:
            continue
        extra: dict[str, Any] = {"classes": k, "chance_level": chance, "chance_tolerance": tolerance}
        if accuracy is not None:
            extra["accuracy_end"] = accuracy
        return f"ends at chance (ln {k} = {chance:.4g})", extra
    return None


def _validation_at_chance(view: RunView) -> Learning | None:
    """The training loss fell, but the validation loss ends at ln K with the validation accuracy at
    1/K: the model fits its training set and predicts nothing it was not shown (a window of 9 of 80
    epochs: train 2.31 -> 1.72, val 1.79-1.86 at ln 6 with val accuracy 0.16-0.24)."""
    val = view.series("val_loss")
    levels = _levels(val)
    if val is None or levels is None or view.series("val_acc") is None:
        return None
    found = _at_chance(view, levels.end, ("val_acc",))
    if found is None or "accuracy_end" not in found[1]:
        return None
    reason, extra = found
    evidence = {"loss_start": levels.start, "loss_end": levels.end, "change_noise": LEVEL_Z * levels.error, **extra, "claim": "at_chance"}
    return Learning(False, reason, "flat", val, 0.85, (levels.first_step, levels.last_step), evidence, "critical")


def _k_from_loss(loss_end: float, accuracy: float | None) -> list[int]:
    """The K a loss sitting within 1 % of ln K says, when an accuracy is logged and none of the
    loss's split is better than 1.5/K (a training loss needs its training accuracy at chance too: a
    training set learned beyond chance is no uniform guess): a mean probability of 1/K on the right class with an accuracy near 1/K is a
    uniform guess over K, whatever the task's real class count (val loss 1.787 = ln 6 beside a
    validation accuracy of 0.16-0.24 whose closing point alone would say 4 or 5 classes)."""
    if accuracy is None or not math.log(2) * (1 - LOSS_K_TOLERANCE) < loss_end < math.log(MAX_LOSS_K + 1):
        return []
    k = round(math.exp(loss_end))
    if not 2 <= k <= MAX_LOSS_K or abs(loss_end - math.log(k)) > LOSS_K_TOLERANCE * math.log(k) or accuracy > _loss_k_accuracy(k):
        return []
    return [k]


def _loss_k_accuracy(k: int) -> float:
    """The best accuracy a loss-derived K allows: 1.5/K, and at most 0.1 above 1/K (binary: 0.6)."""
    return min(1.5 / k, 1 / k + 0.1)


def _ks_from_accuracy(accuracy: float | None) -> list[int]:
    """The class counts an accuracy sitting at chance may say (1/K within tolerance), nearest first:
    an accuracy read off a few noisy evaluations (0.2 at 6 classes) fits more than one K."""
    if accuracy is None or not 0 < accuracy <= 0.55:
        return []
    near = round(1 / accuracy)
    ks = [k for k in range(max(2, near - 1), near + 2) if abs(accuracy - 1 / k) <= max(0.03, CHANCE_ACC_TOLERANCE / k)]
    return sorted(ks, key=lambda k: abs(accuracy - 1 / k))


def _accuracy_end(view: RunView) -> float | None:
    """The end level of the run's plain accuracy (validation first; a share), if any."""
    ends = _accuracy_ends(view)
    return ends[0] if ends else None


def _accuracy_ends(view: RunView, roles: tuple[str, ...] = ("val_acc", "train_acc")) -> list[float]:
    """The end levels of the run's plain accuracies of these roles, in their order (shares:
    percentages divided by 100)."""
    ends = []
    for role in roles:
        series = view.series(role)
        if series is None or not _is_accuracy(series.name):
            continue
        y = series.values[series.finite]
        if len(y) < 2:
            continue
        end = curves.level(y, "end", min_points=1)
        ends.append(end / 100 if np.nanmax(y) > 1.0 else end)
    return ends


def _is_accuracy(name: str) -> bool:
    """A plain accuracy (top-1, categorical...), whose chance level is 1/K; mAP, F1, BLEU have none."""
    return bool(set(tokens(name)) & _ACCURACY) or "accuracy" in name.lower()


def _ends_at_zero(series: Series) -> bool:
    y = series.values[series.finite]
    if len(y) < 3 or np.any(y < 0):
        return False
    tail = y[-max(2, round(0.1 * len(y))):]
    return bool(np.all(tail == 0.0))


def _zero_tail(series: Series) -> int:
    """How many closing points of a task metric are exactly 0."""
    y = series.values[series.finite]
    nonzero = np.flatnonzero(y != 0.0)
    return int(len(y) - (nonzero[-1] + 1 if len(nonzero) else 0))


def _still_falling(series: Series) -> bool:
    """The loss's last third still lies clearly below its middle third: it is crawling, not stuck."""
    y = series.values[series.finite]
    third = len(y) // 3
    if third < 2:
        return False
    middle, last = y[third : 2 * third], y[2 * third :]
    error = max(curves.noise_sigma(y), 1e-12) * math.sqrt(1 / len(middle) + 1 / len(last))
    return float(curves.median(middle) - curves.median(last)) > 3 * error


def _fell_over(train: Series | None, span: np.ndarray) -> bool:
    """The training loss fell beyond its noise between the two steps of `span`."""
    if train is None:
        return False
    ok = train.finite
    steps, y = train.steps[ok], train.values[ok]
    before, after = y[steps <= span[0]], y[steps >= span[1]]
    if not len(before) or not len(after):
        return False
    k = max(1, min(len(before), len(after), round(0.05 * len(y))))
    error = max(curves.noise_sigma(y), 1e-12) * math.sqrt(2.0 / k)
    return float(curves.median(before[-k:]) - curves.median(after[-k:])) > LEVEL_Z * error


def _validation_never_improved(view: RunView) -> Learning | None:
    """Training fell, validation never got clearly below its first evaluation and its score never rose.

    Clearly: its best by more than the noise of a change between two single evaluations,
    and its end by more than that noise or 2 % of the first evaluation, whichever is less (a
    validation series that swings widely has a large noise; one that ends 12 % below its first
    evaluation learned, however wide its swings)."""
    val = view.series("val_loss")
    levels = _levels(val)
    if val is None or levels is None:
        return None
    first = float(val.values[val.finite][0])
    rest = val.values[val.finite][1:]
    if not _fell_over(view.series("train_loss"), val.steps[val.finite][[0, -1]]):
        return None  # training stalled over the same span: a stall, not memorisation
    noise = max(RESOLUTION * abs(first), LEVEL_Z * levels.error * math.sqrt(2.0))
    best = float(np.min(rest))
    if best < first - noise or levels.end < first - min(noise, VAL_CLEAR_SHARE * abs(first)):
        return None
    score = view.series("val_acc")
    score_levels = _levels(score)
    if score_levels is not None and score_levels.end > score_levels.start + LEVEL_Z * score_levels.error:
        return None
    evidence = {"loss_start": first, "loss_end": levels.end, "val_loss_best": best, "change_noise": noise, "claim": "never_below_first"}
    # a validation loss repeating itself bit for bit came from weights that stopped moving
    return Learning(
        False,
        "validation never got clearly below its first evaluation",
        "val_metric_constant" if curves.frozen(val.values) else "overfit",
        val,
        0.7 + 0.2 * min(1.0, levels.n / 10),
        (levels.first_step, levels.last_step),
        evidence,
    )
