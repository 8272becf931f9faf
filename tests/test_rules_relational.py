"""Relational rules (they relate series to each other): every rule has runs that must fire and near-misses that must not.

Synthetic runs mimic what real loggers write: per-step training loss with
noise, per-epoch validation, LR logged every step, loss scale and gradient
norm on their own cadence.
"""
from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from logdoctor.model import Run
from logdoctor.rules.clip_saturation import ClipSaturation, clip_threshold
from logdoctor.rules.grad_norm_trend import GradNormTrend
from logdoctor.rules.lr_schedule_mismatch import LrScheduleMismatch
from logdoctor.rules.overfit import Overfit
from logdoctor.rules.scaler_collapse import ScalerCollapse
from logdoctor.rules.val_metric_constant import ValMetricConstant
from logdoctor.view import RunView

STEPS = 2000


def make_view(metrics: dict[str, tuple], config: dict | None = None) -> RunView:
    """A RunView over metric -> (steps, values)."""
    frames = [
        pl.DataFrame({"metric": [name] * len(s), "step": np.asarray(s, dtype=np.int64), "value": np.asarray(v, dtype=float)})
        for name, (s, v) in metrics.items()
    ]
    scalars = pl.concat(frames).with_columns(pl.lit(None, dtype=pl.Float64).alias("wall_time"))
    return RunView(Run(name="synthetic", path="synthetic", format="csv", scalars=scalars, config=config or {}))


def noisy(values: np.ndarray, rel: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return values * (1 + rel * rng.standard_normal(len(values)))


def train_curve(seed: int = 0, floor: float = 0.05) -> tuple:
    steps = np.arange(STEPS)
    return steps, noisy(floor + 2.3 * np.exp(-steps / 300), 0.05, seed)


def codes(rule, view) -> list[str]:
    findings = rule.check(view)
    for f in findings:  # every finding must serialise to the JSON contract
        json.dumps(f.to_json())
        assert 0 <= f.confidence <= 1
    return [f.code for f in findings]


# --------------------------------------------------------------------------- overfit


def epochs(n: int = 20) -> np.ndarray:
    return np.linspace(STEPS / n, STEPS, n).astype(int) - 1


def test_overfit_fires_when_val_turns_up_and_train_keeps_falling():
    e = np.arange(20)
    val = 0.6 + 1.7 * np.exp(-e / 2.0) + 0.02 * np.maximum(0, e - 7) ** 1.3
    view = make_view({"train/loss": train_curve(), "val/loss": (epochs(), noisy(val, 0.01, 1))})
    [f] = Overfit().check(view)
    assert f.code == "overfit" and f.metric == "val/loss"
    assert f.evidence["val_relative_change"] > 0.2
    assert 5 * 100 <= f.steps[0] <= 10 * 100
    assert f.confidence > 0.7


def test_overfit_with_validation_counted_in_epochs_and_training_in_steps():
    e = np.arange(20)
    val = 0.6 + 1.7 * np.exp(-e / 2.0) + 0.02 * np.maximum(0, e - 7) ** 1.3
    view = make_view({"batch_loss": train_curve(), "val_epoch_loss": (e, noisy(val, 0.01, 1))})
    [f] = Overfit().check(view)
    assert f.evidence["train_end"] < f.evidence["train_at_val_best"] < 0.2


def test_overfit_fires_on_a_slow_drift_read_over_many_noisy_evaluations():
    """Best at epoch ~5, then +0.0006 an epoch for 54 epochs under scatter 0.016: each evaluation moves
    more than the drift, but the closing level is a median of 17 of them, far steadier than one."""
    epochs = np.arange(60)
    train = 0.6 * np.exp(-epochs / 3) + 0.005
    drift = 0.15 + 0.09 * np.exp(-epochs / 1.5) + np.where(epochs > 5, 0.0006 * (epochs - 5), 0.0)
    val = drift + 0.016 * np.random.default_rng(3).standard_normal(60)
    assert codes(Overfit(), make_view({"train_loss": (epochs, train), "val_loss": (epochs, val)})) == ["overfit"]
    for seed in range(8):  # the same scatter about a level that does not drift stays silent
        flat = 0.15 + 0.09 * np.exp(-epochs / 1.5) + 0.016 * np.random.default_rng(seed).standard_normal(60)
        assert codes(Overfit(), make_view({"train_loss": (epochs, train), "val_loss": (epochs, flat)})) == []


def test_overfit_silent_when_val_plateaus():
    e = np.arange(20)
    val = 0.6 + 1.7 * np.exp(-e / 2.0)
    view = make_view({"train/loss": train_curve(), "val/loss": (epochs(), noisy(val, 0.02, 2))})
    assert codes(Overfit(), view) == []


def test_overfit_silent_on_one_late_outlier():
    e = np.arange(20)
    val = 0.6 + 1.7 * np.exp(-e / 2.0)
    val[-1] *= 1.4
    view = make_view({"train/loss": train_curve(), "val/loss": (epochs(), noisy(val, 0.01, 3))})
    assert codes(Overfit(), view) == []


def test_overfit_silent_when_train_rises_too():
    """Both losses going up is divergence, not overfitting."""
    e = np.arange(20)
    val = 0.6 + 1.7 * np.exp(-e / 2.0) + 0.05 * np.maximum(0, e - 7)
    steps = np.arange(STEPS)
    train = 0.3 + 2.0 * np.exp(-steps / 300) + 0.0004 * np.maximum(0, steps - 700)
    view = make_view({"train/loss": (steps, train), "val/loss": (epochs(), val)})
    assert codes(Overfit(), view) == []


def step_then_hold(evals: int = 40, drift: float = -0.002) -> np.ndarray:
    """Validation loss that jumps up within four evaluations of its best, then sits still.

    A tiny training set memorised in the first steps: the later evaluations barely move (here a
    slight downward drift, so Kendall's tau over the rise is weak or negative).
    """
    val = np.full(evals, 1.3) + drift * np.arange(evals)
    val[:4] = [0.8, 1.05, 1.2, 1.27]
    return noisy(val, 0.0005, 4)


def test_overfit_fires_on_a_step_up_that_holds():
    view = make_view({"train/loss": train_curve(), "val/loss": (epochs(40), step_then_hold())})
    [f] = Overfit().check(view)
    assert f.evidence["val_trend_tau"] < Overfit.defaults["min_rise_tau"]
    assert f.evidence["val_held_share"] >= Overfit.defaults["min_held_share"]
    assert f.evidence["val_best_step"] == epochs(40)[0]


def test_overfit_silent_when_val_is_thrown_about_rather_than_held():
    """Large bumps that come back down (an unstable optimizer) are neither a trend nor a held step."""
    e = np.arange(40)
    val = 0.3 + 0.8 * np.abs(np.sin(e / 2.2)) * np.exp(-e / 25) + 0.15
    val[0] = 0.25
    view = make_view({"train/loss": train_curve(), "val/loss": (epochs(40), val)})
    assert codes(Overfit(), view) == []


def memorised_then_jumped(evals: int = 40) -> np.ndarray:
    """Validation loss best at its very first evaluation, thrown up by memorisation, then drifting back.

    The shape of a small model that memorises a 30-example subset within its first epoch: the
    first evaluation is the best one (1.54), the next jumps to 1.96, the rest drift down to ~1.78.
    """
    val = 1.96 - 0.0047 * np.arange(evals)
    val[0] = 1.54
    return val


def test_overfit_fires_when_the_first_evaluation_is_best_and_training_is_memorised():
    """Train loss pinned at ~0 cannot 'keep falling'; sitting far below the validation loss counts."""
    steps = np.arange(STEPS)
    train = np.where(steps < 30, 0.7 * np.exp(-steps / 5), 1e-9)
    view = make_view({"train/loss": (steps, train), "val/loss": (epochs(40), memorised_then_jumped())})
    [f] = Overfit().check(view)
    assert f.evidence["val_best_step"] == epochs(40)[0]
    assert f.evidence["val_held_share"] == 1.0


def test_overfit_silent_when_training_stalls_at_a_high_level():
    """Near miss: the same validation jump with a training loss stuck well above zero is no memorisation."""
    steps = np.arange(STEPS)
    train = np.full(STEPS, 0.9)
    view = make_view({"train/loss": (steps, train), "val/loss": (epochs(40), memorised_then_jumped())})
    assert codes(Overfit(), view) == []


def test_overfit_fires_after_a_zigzag_minimum():
    """The best level is the lowest smoothed one, not the smoothed value at the lowest raw point
    (which, in a zigzag, echoes its high neighbours and hides the later rise)."""
    val = np.r_[np.full(12, 1.07), [0.74, 0.48, 0.46, 0.43, 0.56, 0.34, 0.57, 0.36, 0.42, 0.37, 0.34, 0.37],
                np.linspace(0.40, 0.55, 12)]
    view = make_view({"train/loss": train_curve(), "val/loss": (epochs(len(val)), val)})
    [f] = Overfit().check(view)
    assert f.evidence["val_best"] < 0.4 and f.evidence["val_end"] > 0.5


def test_overfit_fires_on_a_short_v_shaped_validation_loss():
    """Seven Keras epochs: validation loss falls about 0.035 an epoch to its best at epoch 3, then
    rises 0.01, 0.03, 0.035 (+17 %) while the training loss keeps falling. Differenced over the
    whole V, the change of slope at the turn read as noise as large as the rise; measured after
    the turn, the rise stands well clear of it.

    Near miss: the same fall that then only wobbles about its floor is no overfit.
    """
    e = np.arange(7)
    train = np.array([0.631, 0.526, 0.449, 0.371, 0.287, 0.219, 0.158])
    val = np.array([0.563, 0.523, 0.495, 0.457, 0.469, 0.498, 0.534])
    [f] = Overfit().check(make_view({"loss": (e, train), "val_loss": (e, val)}))
    assert f.evidence["val_best_step"] == 3 and f.evidence["val_end"] > 0.49
    wobble = np.array([0.563, 0.523, 0.495, 0.457, 0.469, 0.452, 0.466])
    assert codes(Overfit(), make_view({"loss": (e, train), "val_loss": (e, wobble)})) == []


def test_overfit_reads_validation_accuracy_when_no_val_loss():
    e = np.arange(15)
    acc = 0.85 - 0.6 * np.exp(-e / 1.5) - 0.015 * np.maximum(0, e - 5)
    view = make_view({"loss": train_curve(), "val_accuracy": (epochs(15), acc)})
    [f] = Overfit().check(view)
    assert f.evidence["val_relative_change"] < 0


# --------------------------------------------------------------------------- lr_schedule_mismatch


def loss_driven_by(lr: np.ndarray, seed: int = 0) -> np.ndarray:
    """A loss that improves in proportion to the LR actually applied (progress = cumulative LR)."""
    progress = np.cumsum(lr) / np.sum(np.full(len(lr), lr.max()))
    return noisy(0.2 + 2.1 * np.exp(-6 * progress), 0.03, seed)


def cosine(n: int, length: int, peak: float = 1e-3) -> np.ndarray:
    t = np.minimum(np.arange(n), length) / length
    return peak * 0.5 * (1 + np.cos(np.pi * t))


def test_lr_floor_early_with_stalled_loss_fires():
    steps = np.arange(STEPS)
    lr = cosine(STEPS, STEPS // 5)
    view = make_view({"train_loss": (steps, loss_driven_by(lr)), "lr": (steps, lr)})
    [f] = LrScheduleMismatch().check(view)
    assert f.evidence["kind"] == "early_floor"
    assert 0.1 < f.evidence["floor_at_fraction"] < 0.25
    assert f.confidence > 0.6


def test_lr_collapsing_in_first_epoch_with_flat_loss_fires():
    steps = np.arange(STEPS)
    lr = 0.1 * 0.1 ** (steps // 10)  # StepLR(step_size=10 batches) meant as 10 epochs
    loss = noisy(np.full(STEPS, 2.3026), 0.01, 4)
    view = make_view({"loss": (steps, loss), "learning_rate": (steps, lr)})
    [f] = LrScheduleMismatch().check(view)
    assert f.evidence["floor_at_fraction"] < 0.05


@pytest.mark.parametrize(
    "schedule",
    [
        cosine(STEPS, STEPS),  # cosine sized for the whole run
        np.where(np.arange(STEPS) < STEPS // 2, 1e-3, np.where(np.arange(STEPS) < 3 * STEPS // 4, 1e-4, 1e-5)),
        np.full(STEPS, 3e-4),  # constant
        np.minimum(1.0, np.arange(STEPS) / 100) * 1e-3,  # short warmup then constant
        np.interp(np.arange(STEPS), [0, 600, STEPS - 1], [4e-5, 1e-3, 4e-9]),  # one-cycle
    ],
    ids=["cosine", "step-decay", "constant", "warmup-constant", "one-cycle"],
)
def test_lr_healthy_schedules_do_not_fire(schedule):
    steps = np.arange(STEPS)
    view = make_view({"train_loss": (steps, loss_driven_by(schedule, 5)), "lr": (steps, schedule)})
    assert codes(LrScheduleMismatch(), view) == []


def test_lr_early_floor_silent_when_loss_keeps_improving():
    """The LR reached a low floor early, but the loss keeps falling well: not what stalls it."""
    steps = np.arange(STEPS)
    lr = np.maximum(cosine(STEPS, STEPS // 4), 1.5e-4)
    loss = noisy(0.1 + 2.2 * np.exp(-steps / 700), 0.03, 6)
    view = make_view({"train_loss": (steps, loss), "lr": (steps, lr)})
    assert codes(LrScheduleMismatch(), view) == []


def test_lr_cut_by_reduce_on_plateau_after_the_loss_stalled_is_silent():
    """ReduceLROnPlateau: the loss stalled first, then the LR was cut to its floor; the floor is the reaction."""
    steps = np.arange(STEPS)
    loss = noisy(0.4 + 1.9 * np.exp(-steps / 60), 0.02, 25)
    lr = 1e-3 * 0.1 ** np.clip((steps - 600) // 100 + 1, 0, 3)  # first cut at 30 %, floor at 50 %
    view = make_view({"train_loss": (steps, loss), "lr": (steps, lr)})
    assert codes(LrScheduleMismatch(), view) == []


def test_lr_staircase_still_dividing_has_not_reached_its_floor():
    """ReduceLROnPlateau(factor=0.2, min_lr=1e-6) over 24 epochs: 4 % of the peak by epoch 8, yet cut
    three more times (x0.2 each) before it sits at 1e-6 from epoch 18: the floor is at 75 %, not 35 %."""
    epochs = np.arange(24)
    lr = np.repeat([1e-3, 2e-4, 4e-5, 8e-6, 1.6e-6, 1e-6], [4, 4, 5, 3, 2, 6])
    loss = noisy(0.026 + 0.03 * np.exp(-epochs / 3), 0.005, 31)
    view = make_view({"loss": (epochs, loss), "lr": (epochs, lr)})
    assert codes(LrScheduleMismatch(), view) == []


def test_a_steplr_staircase_that_stops_training_at_mid_run_fires_from_the_cut_that_stopped_it():
    """StepLR(30, 0.1) over 160 epochs: each cut brings a step down of the loss until the third
    (0.05 -> 5e-5 at epoch 90); from there the loss gains nothing for the last 44 % of the run.
    The second cut (1 % of the peak at epoch 60) is no floor: the loss still fell 0.8 -> 0.5 after it."""
    epochs = np.arange(160)
    lr = 0.05 * 0.1 ** np.minimum(epochs // 30, 4)
    level = np.select([epochs < 30, epochs < 60, epochs < 90], [2.0 - 0.02 * epochs, 1.2 - 0.01 * (epochs - 30), 0.8 - 0.01 * (epochs - 60)], 0.48)
    view = make_view({"train_loss": (epochs, noisy(level, 0.004, 41)), "lr": (epochs, lr)})
    [f] = LrScheduleMismatch().check(view)
    assert f.evidence["floor_step"] == 90 and f.evidence["lr_floor"] == pytest.approx(5e-5)


def test_lr_logged_per_epoch_against_a_per_batch_loss():
    """Keras-style: LR counted in epochs (0..19), loss in batches: the floor is found on the loss's axis."""
    steps = np.arange(STEPS)
    lr_batches = cosine(STEPS, STEPS // 5)
    view = make_view({"batch_loss": (steps, loss_driven_by(lr_batches, 27)), "lr": (np.arange(20), lr_batches[::100])})
    [f] = LrScheduleMismatch().check(view)
    assert 0.1 < f.evidence["floor_at_fraction"] < 0.3 and f.steps[0] > 100


def test_lr_warmup_that_never_ends_fires():
    steps = np.arange(STEPS)
    lr = 1e-3 * (steps + 1) / (3 * STEPS)  # warmup sized for 3x the run
    view = make_view({"train_loss": (steps, loss_driven_by(lr, 7)), "lr": (steps, lr)})
    [f] = LrScheduleMismatch().check(view)
    assert f.evidence["kind"] == "endless_warmup"
    assert f.evidence["warmup_end_fraction"] > 0.9


def test_the_first_updates_of_a_run_cut_off_during_warmup_are_no_endless_warmup():
    """A paste of a run's first 500 updates (fairseq's train_inner every 100): the LR is still
    ramping at the last of its five values, as in any run's opening; nothing says the ramp never ends."""
    steps = np.arange(100, 600, 100)
    view = make_view({"train_loss": (steps, np.array([12.8, 11.6, 11.0, 10.6, 10.1])), "lr": (steps, steps / 100 + 0.01)})
    assert codes(LrScheduleMismatch(), view) == []


def test_lr_ramp_into_divergence_is_not_called_a_long_warmup():
    """The LR ramps most of the run to a peak the model cannot take: the loss climbs; that is divergence."""
    steps = np.arange(STEPS)
    lr = np.minimum(1.0, 0.01 + steps / 1600) * 6.0
    loss = noisy(np.where(steps < 200, 2.3 - steps / 200, 1.3 + 20 * (steps - 200) / STEPS), 0.3, 26)
    view = make_view({"loss": (steps, loss), "lr": (steps, lr)})
    assert codes(LrScheduleMismatch(), view) == []


def test_lr_checks_every_param_group():
    steps = np.arange(STEPS)
    head = np.full(STEPS, 1e-3)
    body = cosine(STEPS, STEPS // 8, 1e-4)
    view = make_view({"train_loss": (steps, loss_driven_by(body, 8)), "lr-AdamW/pg1": (steps, head), "lr-AdamW/pg2": (steps, body)})
    [f] = LrScheduleMismatch().check(view)
    assert f.metric == "lr-AdamW/pg2"


def test_an_lr_that_cycles_many_times_is_a_schedule_mismatch_but_a_few_warm_restarts_are_not():
    """CosineAnnealingLR(T_max=epochs) stepped per batch runs through its period again and again;
    SGDR with three restarts is a schedule someone chose."""
    steps = np.arange(STEPS)
    many = 1e-3 * (0.5 + 0.5 * np.cos(np.pi * steps / 40))  # 25 full periods
    [f] = LrScheduleMismatch().check(make_view({"train_loss": train_curve(), "lr": (steps, many)}))
    assert f.evidence["kind"] == "cycling" and f.evidence["lr_cycles"] >= 20
    restarts = 1e-3 * (0.5 + 0.5 * np.cos(np.pi * (steps % (STEPS // 4)) / (STEPS // 4)))
    assert codes(LrScheduleMismatch(), make_view({"train_loss": train_curve(), "lr": (steps, restarts)})) == []


# --------------------------------------------------------------------------- scaler_collapse


def test_scaler_halving_toward_one_fires():
    steps = np.arange(0, STEPS, 10)
    log2 = np.maximum(0, 16 - steps // 120)
    frozen = np.minimum(np.arange(STEPS), 400)  # updates skipped once the scale is low: the loss stops moving
    loss = noisy(0.5 + 1.8 * np.exp(-frozen / 150), 0.02, 29)
    view = make_view({"train_loss": (np.arange(STEPS), loss), "amp/loss_scale": (steps, 2.0**log2)})
    [f] = ScalerCollapse().check(view)
    assert f.evidence["scale_final"] == 1.0 and f.evidence["halvings_from_peak"] == 16
    assert f.severity == "critical" and f.confidence > 0.9


def test_scaler_range_starts_where_the_scale_leaves_its_peak_for_good():
    """The finding's range is where the problem is: a scale that sat at its peak for the first 600 steps
    (halved once and grew back) and then fell for good is marked from its last step at the peak, 590, not from step 0."""
    steps = np.arange(0, STEPS, 10)
    log2 = np.where(steps < 600, 16 - (steps == 300), 15 - (steps - 600) // 60).astype(float)
    loss = noisy(0.5 + 1.8 * np.exp(-np.minimum(np.arange(STEPS), 700) / 150), 0.02, 31)
    view = make_view({"train_loss": (np.arange(STEPS), loss), "loss_scale": (steps, 2.0**log2)})
    [f] = ScalerCollapse().check(view)
    assert f.steps == (590, 1990)


def test_a_scale_already_far_below_one_and_still_halving_fires_however_few_halvings_are_logged():
    """Overflow lines pasted from two ranks once the scale is denormal (2e-320 halving to 1.3e-321):
    four halvings in view, but every value is hundreds of halvings under any scaler's start."""
    scale = np.repeat([2.0237e-320, 1.012e-320, 5.06e-321, 2.53e-321, 1.265e-321], 2)
    [f] = ScalerCollapse().check(make_view({"loss_scale": (np.arange(len(scale)), scale)}))
    assert f.evidence["scale_final"] == 1.265e-321 and 1000 < f.evidence["halvings_from_peak"] < 1100


def test_scaler_low_but_still_learning_is_silent():
    """A scale that settled low (large activations) while the loss keeps falling: steps still happen."""
    steps = np.arange(0, STEPS, 10)
    log2 = np.maximum(3, 16 - steps // 100) + (steps // 10) % 2  # bounces between 2^3 and 2^4 late
    loss = (steps, noisy(0.1 + 2.0 * np.exp(-np.arange(STEPS) / 900), 0.02, 28)[steps])
    view = make_view({"train_loss": loss, "loss_scale": (steps, 2.0**log2)})
    assert codes(ScalerCollapse(), view) == []


def test_scaler_healthy_sawtooth_is_silent():
    rng = np.random.default_rng(9)
    log2, out = 16.0, []
    for i in range(STEPS):
        if rng.random() < 0.002:
            log2 -= 1
        elif i % 200 == 199:
            log2 += 1
        out.append(2.0**log2)
    view = make_view({"train_loss": train_curve(), "scaler/scale": (np.arange(STEPS), np.array(out))})
    assert codes(ScalerCollapse(), view) == []


def test_scaler_early_calibration_then_stable_is_silent():
    steps = np.arange(0, STEPS, 10)
    log2 = np.where(steps < 60, 16 - steps // 10, 10)
    view = make_view({"train_loss": train_curve(), "loss_scale": (steps, 2.0**log2)})
    assert codes(ScalerCollapse(), view) == []


def test_two_pasted_scale_lines_below_one_are_a_collapse_but_two_high_ones_are_not():
    """A paste holds apex's `reducing loss scale to 1.52587890625e-05` twice: too few values for a
    history, but a scale under 1 is many halvings below every scaler's initial value."""
    loss = (np.arange(10), np.linspace(17.6, 18.4, 10))
    [f] = ScalerCollapse().check(make_view({"train_loss": loss, "loss_scale": (np.array([7, 9]), np.array([2.0**-16, 2.0**-17]))}))
    assert f.evidence["scale_final"] == 2.0**-17 and f.evidence["halvings_from_peak"] == 24
    assert codes(ScalerCollapse(), make_view({"train_loss": loss, "loss_scale": (np.array([7, 9]), np.array([2048.0, 1024.0]))})) == []



def test_a_pasted_run_of_halvings_down_to_two_is_counted_from_the_smallest_initial_scale():
    """DeepSpeed's overflow lines, one per step: `64, reducing to 32` ... `4, reducing to 2`. The log
    shows four halvings, but no dynamic scaler starts below 128: the scale is six halvings down."""
    loss = (np.array([2]), np.array([2.05]))
    [f] = ScalerCollapse().check(make_view({"train_loss": loss, "loss_scale": (np.arange(5), np.array([32.0, 16, 8, 4, 2]))}))
    assert f.evidence["halvings_from_peak"] == 6 and f.evidence["halvings_logged"] == 4
    assert "at least 128" in f.title


def test_a_scale_that_never_halves_is_no_collapse_however_low():
    """Megatron prints `loss scale: 1.0` on every line of a bf16 run: no overflow, nothing skipped."""
    view = make_view({"train_loss": train_curve(), "loss_scale": (np.arange(0, STEPS, 100), np.ones(STEPS // 100))})
    assert codes(ScalerCollapse(), view) == []


# --------------------------------------------------------------------------- clip_saturation


def grad_norms(level: float, seed: int, n: int = 500) -> tuple:
    rng = np.random.default_rng(seed)
    return np.arange(n) * 4, level * np.exp(0.3 * rng.standard_normal(n))


@pytest.mark.parametrize(
    "config",
    [
        {"max_grad_norm": 0.01},
        {"trainer": {"gradient_clip_val": 0.01}},
        {"optim": {"value": None}, "grad_clip": {"value": 0.01, "desc": None}},  # W&B config.yaml shape
        {"clip_grad_norm": "0.01"},
    ],
)
def test_clip_saturation_fires_with_threshold_from_config(config):
    view = make_view({"train_loss": train_curve(), "grad_norm": grad_norms(0.8, 10)}, config)
    [f] = ClipSaturation().check(view)
    assert f.evidence["clip_threshold"] == 0.01
    assert f.evidence["fraction_clipped"] > 0.99 and f.confidence > 0.8


def test_clip_saturation_is_a_remark_when_the_loss_falls_fast_while_clipped():
    """Clipped on every step, but the loss made 90% of its fall in the opening 3% of the run:
    clipping is not holding it back."""
    steps = np.arange(STEPS)
    fast = (steps, 2.3 * np.exp(-steps / 15) + 0.1 + 0.002 * np.random.default_rng(3).standard_normal(STEPS))
    [f] = ClipSaturation().check(make_view({"train_loss": fast, "grad_norm": grad_norms(0.8, 10)}, {"max_grad_norm": 0.01}))
    assert f.severity == "info" and f.evidence["fall_90_at_fraction"] < 0.1


def test_a_logged_clipped_share_on_every_update_is_clip_saturation_without_a_config():
    """fairseq prints 'gnorm=0.788, clip=100%' on each progress line: 8 lines of a paste say it."""
    steps = np.arange(371, 451, 10)
    metrics = {"loss": (steps, np.linspace(10.093, 9.979, 8)), "gnorm": (steps, np.full(8, 0.79)), "clip": (steps, np.full(8, 100.0))}
    [f] = ClipSaturation().check(make_view(metrics))
    assert f.evidence["fraction_clipped"] == 1.0 and f.severity == "warning"
    rarely = {**metrics, "clip": (steps, np.full(8, 12.0))}
    assert codes(ClipSaturation(), make_view(rarely)) == []


def test_clip_saturation_silent_when_clipping_only_spikes():
    steps, norms = grad_norms(0.3, 11)
    norms[::25] *= 8  # rare spikes above 1.0
    view = make_view({"train_loss": train_curve(), "grad_norm": (steps, norms)}, {"max_grad_norm": 1.0})
    assert codes(ClipSaturation(), view) == []


def test_clip_saturation_silent_without_a_known_threshold_on_a_pre_clip_norm():
    view = make_view({"train_loss": train_curve(), "grad_norm": grad_norms(5.0, 12)}, {"clip_range": 0.2, "lr": 3e-4})
    assert codes(ClipSaturation(), view) == []


def test_clip_saturation_detects_a_post_clip_ceiling_without_config():
    steps, norms = grad_norms(2.0, 13)
    view = make_view({"train_loss": train_curve(), "grad_norm": (steps, np.minimum(norms, 1.0))})
    [f] = ClipSaturation().check(view)
    assert f.evidence["clip_threshold"] == 1.0 and f.evidence["threshold_from"] != "config"


def test_clip_saturation_ignores_a_constant_logged_hyperparameter():
    """A 'max_grad_norm' scalar that never changes is the setting, not a pinned norm."""
    view = make_view({"train_loss": train_curve(), "max_grad_norm": (np.arange(100), np.full(100, 1.0))})
    assert codes(ClipSaturation(), view) == []


def test_clip_threshold_lookup_is_general_and_respects_off_and_value_clipping():
    assert clip_threshold({"model": {"grad_norm_clip": 0.5}}) == (0.5, "model.grad_norm_clip")
    assert clip_threshold({"max_grad_norm": 0}) == (None, None)
    assert clip_threshold({"gradient_clip_val": None}) == (None, None)
    assert clip_threshold({"gradient_clip_val": 0.5, "gradient_clip_algorithm": "value"}) == (None, None)
    assert clip_threshold({"clip_range": 0.2, "clipvalue": 1.0, "vf_clip_param": 10}) == (None, None)


# --------------------------------------------------------------------------- grad_norm_trend


def test_vanishing_grad_norm_with_stuck_loss_fires():
    steps = np.arange(STEPS)
    grad = noisy(0.3 * 10 ** (-3.5 * steps / STEPS), 0.2, 14)
    loss = noisy(2.30 - 0.05 * (1 - np.exp(-steps / 200)), 0.01, 15)
    view = make_view({"train_loss": (steps, loss), "grad_norm": (steps, grad)})
    [f] = GradNormTrend().check(view)
    assert f.evidence["direction"] == "vanishing" and f.evidence["decades"] < -2
    assert all("residual" in c or "init" in c or "decay" in c or "saturating" in c for c in f.causes)


def test_shrinking_grad_norm_of_a_converging_run_is_silent():
    steps = np.arange(STEPS)
    grad = noisy(1.0 * 10 ** (-2.5 * steps / STEPS), 0.2, 16)
    view = make_view({"train_loss": train_curve(17, floor=0.01), "grad_norm": (steps, grad)})
    assert codes(GradNormTrend(), view) == []


def test_exploding_grad_norm_fires():
    steps = np.arange(STEPS)
    grad = noisy(0.5 * 10 ** (1.6 * steps / STEPS), 0.2, 18)
    view = make_view({"train_loss": train_curve(19), "grad_norm": (steps, grad)})
    [f] = GradNormTrend().check(view)
    assert f.evidence["direction"] == "exploding"
    assert any("LR" in fix for fix in f.fixes)


def test_noisy_stationary_grad_norm_is_silent():
    steps = np.arange(STEPS)
    view = make_view({"train_loss": train_curve(20), "grad_norm": (steps, noisy(np.full(STEPS, 2.0), 0.8, 21).clip(1e-3))})
    assert codes(GradNormTrend(), view) == []


def test_an_overfit_in_three_epochs_fires_when_the_rise_is_large_and_training_falls_at_every_epoch():
    """BERT on IMDB, 3 epochs (Keras history): train 0.386 -> 0.227 -> 0.113, val 0.318 -> 0.320 -> 0.443."""
    e = np.arange(3)
    view = make_view({"loss": (e, np.array([0.386, 0.227, 0.113])), "val_loss": (e, np.array([0.318, 0.320, 0.443]))})
    [f] = Overfit().check(view)
    assert f.evidence["kind"] == "short history" and f.evidence["val_relative_change"] == pytest.approx(0.393, abs=0.01)


def test_two_evaluations_of_a_validation_loss_several_times_the_training_loss_and_rising_are_overfit():
    """nanoGPT fine-tune: 'step 800: train loss 0.98, val loss 3.75' then 'step 1000: 0.67, 3.90';
    the per-iteration loss beside it is noisy (0.28-2.4): the evaluations' own train loss is the twin."""
    iters = np.arange(791, 1000)
    rng = np.random.default_rng(12)
    view = make_view({
        "loss": (iters, np.exp(rng.normal(0, 0.5, len(iters)))),
        "train_loss": (np.array([800, 1000]), np.array([0.9795, 0.6703])),
        "val_loss": (np.array([800, 1000]), np.array([3.7535, 3.8986])),
    })
    [f] = Overfit().check(view)
    assert f.evidence["val_over_train"] > 5 and f.evidence["train_at_val_best"] == pytest.approx(0.9795)
    near = make_view({"train_loss": (np.array([800, 1000]), np.array([0.98, 0.67])), "val_loss": (np.array([800, 1000]), np.array([1.10, 1.12]))})
    assert codes(Overfit(), near) == []  # a small rise with a small gap: nothing to call in two points


@pytest.mark.parametrize(
    "val, train",
    [
        ([0.318, 0.300, 0.330], [0.386, 0.227, 0.113]),  # +10% from a best in the middle: too little to call in 3 points
        ([0.318, 0.320, 0.443], [0.386, 0.390, 0.385]),  # training did not fall: not memorisation
        ([0.318, 0.443, 0.310], [0.386, 0.227, 0.113]),  # back at its best by the end
    ],
    ids=["small-rise", "train-flat", "recovers"],
)
def test_short_history_near_misses(val, train):
    e = np.arange(3)
    assert codes(Overfit(), make_view({"loss": (e, np.array(train)), "val_loss": (e, np.array(val))})) == []


# --------------------------------------------------------------------------- val_metric_constant


def test_constant_val_accuracy_while_training_learns_fires():
    view = make_view({"train_loss": train_curve(22), "val_acc": (epochs(), np.full(20, 0.1135))})
    [f] = ValMetricConstant().check(view)
    assert f.evidence["value"] == pytest.approx(0.1135) and f.evidence["evaluations"] == 20


@pytest.mark.parametrize(
    "metrics",
    [
        {"val_acc": (epochs(), np.full(20, 1.0))},  # perfect score can stay perfect
        {"val_acc": (epochs(), 0.9 + 1e-3 * np.sin(np.arange(20)))},  # moves a little
        {"val_loss": (epochs(2), np.full(2, 0.7))},  # too few evaluations
    ],
    ids=["perfect", "moving", "two-evals"],
)
def test_val_metric_constant_near_misses(metrics):
    view = make_view({"train_loss": train_curve(23), **metrics})
    assert codes(ValMetricConstant(), view) == []


def test_one_per_class_score_at_0_beside_an_overall_score_that_moves_is_a_remark():
    """NER: eval_T007_f1 is 0 at every evaluation while eval_overall_f1 rises: the evaluation sees
    the live model, one entity class is never predicted."""
    view = make_view(
        {
            "train_loss": train_curve(25),
            "eval_T007_f1": (epochs(), np.zeros(20)),
            "eval_overall_f1": (epochs(), np.linspace(0.5, 0.53, 20)),
        }
    )
    [f] = ValMetricConstant().check(view)
    assert f.severity == "info" and f.evidence["moving_validation_metric"] == "eval_overall_f1"


def test_many_per_class_scores_frozen_beside_one_that_moves_are_one_remark():
    """A W&B history of per-class evaluation scores (fuzz case 76852: 1,000 of them over 100,000
    steps judged every score against every other, 36 CPU-s): the remark names the score that
    moves, as for one frozen class."""
    scores = {f"eval_class_{k}_f1": (epochs(), np.full(20, 0.5 + k % 7 / 20)) for k in range(300)}
    view = make_view({"train_loss": train_curve(26), **scores, "eval_overall_f1": (epochs(), np.linspace(0.5, 0.53, 20))})
    [f] = ValMetricConstant().check(view)
    assert f.severity == "info" and f.metric == "eval_class_0_f1" and f.evidence["moving_validation_metric"] == "eval_overall_f1"


def test_val_metric_constant_silent_when_training_is_flat_too():
    steps = np.arange(STEPS)
    view = make_view({"train_loss": (steps, noisy(np.full(STEPS, 2.3), 0.01, 24)), "val_loss": (epochs(), np.full(20, 2.3026))})
    assert codes(ValMetricConstant(), view) == []


# --------------------------------------------------------------------------- real logs written by other people

SHARED = __import__("pathlib").Path(__file__).resolve().parents[2] / "shared"
RELATIONAL = {"overfit", "lr_schedule_mismatch", "scaler_collapse", "clip_saturation", "grad_norm_trend", "val_metric_constant"}


@pytest.mark.skipif(not (SHARED / "real-logs").is_dir(), reason="shared real logs not present")
def test_relational_rules_on_real_logs():
    """Checked by eye on plots: two HF fine-tunes and the two Keras tutorial runs (IMDB, Reuters: the
    textbook overfitting examples) have validation loss rising for many evaluations while training loss
    keeps falling; nothing else in these logs shows a relational fault."""
    from logdoctor.diagnose import analyze

    fired = {
        rd.run.name: {f.code for f in rd.findings if f.code in RELATIONAL}
        for rd in analyze(SHARED / "real-logs").runs
        if any(f.code in RELATIONAL for f in rd.findings)
    }
    assert fired == {
        "hf_trainer_state_viz_aigoncharov": {"overfit"},
        "hf_whisper_large_v2_japanese_P4P4N1CK": {"overfit"},
        "keras_tb_tutorial_TheCodeheadMT/archive/logs/imdb-model-1690485351": {"overfit"},
        "keras_tb_tutorial_TheCodeheadMT/archive/logs/mod1-reuters-1690485395": {"overfit"},
    }


@pytest.mark.skipif(not (SHARED / "external-curves").is_dir(), reason="shared external curves not present")
def test_relational_rules_quiet_on_external_keras_histories():
    """Short noisy Keras histories: no validation curve there turns and rises while training falls."""
    from logdoctor.diagnose import analyze

    for rd in analyze(SHARED / "external-curves").runs:
        assert not [f.code for f in rd.findings if f.code in RELATIONAL], rd.run.name


# --------------------------------------------------------------------------- degenerate input never crashes a rule

DEGENERATE = {
    "one-point": (np.array([0]), np.array([1.0])),
    "all-nan": (np.arange(50), np.full(50, np.nan)),
    "inf-tail": (np.arange(50), np.r_[np.linspace(2, 1, 25), np.full(25, np.inf)]),
    "zeros": (np.arange(50), np.zeros(50)),
    "negative": (np.arange(50), -np.linspace(1, 2, 50)),
    "same-step": (np.zeros(5, dtype=int), np.arange(5.0)),
}


@pytest.mark.parametrize("shape", sorted(DEGENERATE))
@pytest.mark.parametrize("rule", [Overfit, LrScheduleMismatch, ScalerCollapse, ClipSaturation, GradNormTrend, ValMetricConstant])
def test_degenerate_series_do_not_crash(rule, shape):
    s, v = DEGENERATE[shape]
    metrics = {name: (s, v) for name in ("train_loss", "val_loss", "val_acc", "lr", "grad_norm", "loss_scale")}
    rule().check(make_view(metrics, {"max_grad_norm": 1.0}))
    rule().check(make_view({"train_loss": train_curve(), **{k: m for k, m in metrics.items() if k != "train_loss"}}))


def test_overfit_says_when_the_task_metric_still_improves():
    """Whisper fine-tuning: eval loss rises from over-confidence while the word error rate keeps
    falling. Still reported (the loss did rise), but checkpoint selection by the WER comes first.

    Near miss: a WER that rises with the loss leaves the usual overfit causes and fixes first.
    """
    e = np.arange(20)
    val = 0.6 + 1.7 * np.exp(-e / 2.0) + 0.02 * np.maximum(0, e - 7) ** 1.3
    falling_wer = 60 * np.exp(-e / 3.0) + 30 - 0.2 * e
    view = make_view({"train/loss": train_curve(), "eval_loss": (epochs(), val), "eval_wer": (epochs(), falling_wer)})
    [f] = Overfit().check(view)
    assert f.evidence["task_metric"] == "eval_wer" and f.evidence["task_metric_end"] < f.evidence["task_metric_at_val_best"]
    assert "eval_wer" in f.fixes[0] and "eval_wer still improves" in f.title
    rising_wer = 60 * np.exp(-e / 3.0) + 30 + 0.8 * np.maximum(0, e - 7)
    view = make_view({"train/loss": train_curve(), "eval_loss": (epochs(), val), "eval_wer": (epochs(), rising_wer)})
    [f] = Overfit().check(view)
    assert "task_metric" not in f.evidence and f.fixes[0] == Overfit().finding(None, title="", steps=None, confidence=1, evidence={}).fixes[0]


def test_overfit_reads_an_error_rate_the_right_way_round_when_no_val_loss():
    e = np.arange(20)
    err = 40 * np.exp(-e / 2.0) + 10 + 0.6 * np.maximum(0, e - 7) ** 1.3  # val/top1_err turns back up
    [f] = Overfit().check(make_view({"train/loss": train_curve(), "val/top1_err": (epochs(), err)}))
    assert f.metric == "val/top1_err" and "error rate rose" in f.title


def test_step_decay_that_keeps_dividing_reaches_its_floor_at_one_percent_of_its_peak():
    """StepLR(100, 0.1) over 600 steps: 1 % of the peak from step 200 while the loss has stalled; the LR
    keeps dividing (1e-3, 1e-4 of peak...) but trains as good as stopped from there: an early floor."""
    steps = np.arange(600)
    lr = 3e-3 * 0.1 ** (steps // 100)
    loss = noisy(2.3 + 1.2 * np.exp(-np.minimum(steps, 200) / 60), 0.01, 37)
    [f] = LrScheduleMismatch().check(make_view({"train_loss": (steps, loss), "lr": (steps, lr)}))
    assert f.evidence["kind"] == "early_floor" and f.evidence["floor_step"] == 200
