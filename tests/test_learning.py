"""The did-it-learn judgement: a run that never learned is never called healthy.

The corpus test is the contract, over every labelled corpus there is
(sample_runs/, and the real runs by other people in ../shared when present):
a run whose primary loss ends no lower than it started, by a plain reading
independent of the judgement's noise model, is never healthy, and its first
finding names a failure to learn. The synthetic cases pin the judgement's
parts (which code a shape gets, chance from an accuracy, a metric at zero,
validation that never improved) and what is left unjudged (RL, GANs, a log
that starts mid-run).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from logdoctor.config import Config
from logdoctor.diagnose import NOT_LEARNED, analyze, diagnose_run
from logdoctor.learning import judge
from logdoctor.model import Run, tidy
from logdoctor.view import RunView

ROOT = Path(__file__).parents[1]
SHARED = Path(__file__).parents[2] / "shared"
CORPORA = [
    ROOT / "sample_runs",
    ROOT / "tests" / "data" / "lr_sweep",
    *(SHARED / name / "runs" for name in ("real-logs-dev", "real-logs-dev2", "real-logs-dev-text", "real-logs-dev2-text")),
    SHARED / "real-logs",
    SHARED / "external-curves",
]
RNG = np.random.default_rng(5)
LEARNING_FAILURES = {code for codes in NOT_LEARNED.values() for code in codes}


def synthetic(metrics: dict[str, tuple], config: dict | None = None) -> Run:
    frames = [
        pl.DataFrame({"metric": [name] * len(s), "step": np.asarray(s, dtype=np.int64), "value": np.asarray(v, dtype=float)})
        for name, (s, v) in metrics.items()
    ]
    return Run("synthetic", "synthetic", "synthetic", scalars=tidy(pl.concat(frames)), config=config or {})


def plainly_no_lower(values: np.ndarray) -> bool:
    """The plain reading: the median of the closing tenth at or above the first logged value's
    neighbourhood (median of the opening 3 %), with a margin of the series' own spread. A run
    ended no lower when every loss it logs (each part, training and validation) did."""
    y = values[np.isfinite(values)]
    if len(y) < 3:
        return False
    start = float(np.median(y[: max(1, round(0.03 * len(y)))]))
    end = float(np.median(y[-max(1, round(0.1 * len(y))) :]))
    return end >= start + 0.1 * float(np.std(y))


@pytest.mark.parametrize("corpus", CORPORA, ids=lambda p: p.parent.name if p.name == "runs" else p.name)
def test_no_run_that_ended_no_lower_than_it_started_is_healthy(corpus):
    if not corpus.is_dir():
        pytest.skip(f"{corpus} not present")
    checked = 0
    for folder in sorted(p for p in corpus.iterdir() if p.is_dir()):
        for result in analyze(folder).runs:
            loss_name = result.roles.get("train_loss") or result.roles.get("val_loss")
            if loss_name is None or result.learning.learned is None:
                continue  # RL, GAN, a mid-run window: not judged (and said so in the JSON)
            view = RunView(result.run)
            reward = view.series("reward")
            if reward is not None:  # an RL run is judged by its return: no higher than it started
                losses = [reward.__class__(reward.name, reward.steps, -reward.values)]
            else:
                losses = [s for role in ("train_loss", "val_loss") for s in view.all_series(role)]
            if not losses or not all(plainly_no_lower(s.values) for s in losses):
                continue
            checked += 1
            # ended no lower: it did not learn, or it learned (validation far below the untrained loss
            # at some evaluation) and lost it again, which is named too
            lost_it = result.learning.learned is True and result.learning.code is not None
            assert result.learning.learned is False or lost_it, f"{folder.name}: {loss_name} ended no lower, judged {result.learning}"
            assert result.status != "healthy", f"{folder.name}: never learned but healthy"
            assert result.findings[0].code in LEARNING_FAILURES | {"lr_schedule_mismatch", "scaler_collapse"}, (
                f"{folder.name}: first finding {result.findings[0].code}"
            )
    assert checked or corpus.name != "sample_runs", "sample_runs/ must hold runs that never learned"


def _judged(metrics: dict[str, tuple], config: dict | None = None):
    run = synthetic(metrics, config)
    return judge(RunView(run)), diagnose_run(run, Config())


STEPS = np.arange(0, 2000, 10)


def test_a_loss_that_bounces_back_to_its_start_did_not_learn_and_is_named_oscillate():
    """The issue's lr sweep: SGD at lr 3, ten classes, loss 2.3 -> bouncing between 2 and 10 -> 2.4."""
    loss = 2.3 + np.abs(RNG.normal(0, 2.5, len(STEPS)))
    loss[0] = 2.3
    loss[-20:] = 2.4 + np.abs(RNG.normal(0, 0.3, 20))
    learning, result = _judged({"train_loss": (STEPS, loss)})
    assert learning.learned is False and learning.code == "oscillate"
    assert result.status == "critical" and result.findings[0].code == "oscillate"
    assert "did not learn" in result.findings[0].title


def test_one_high_first_batch_is_no_start_a_run_fell_from():
    """22 batch losses around ln 2 (0.67-0.95, no trend) whose first is 0.845: the start is the
    level of the opening batches, not that one point, and the run did not learn."""
    y = np.array([0.845, 0.706, 0.718, 0.772, 0.732, 0.763, 0.690, 0.703, 0.746, 0.950, 0.717,
                  0.712, 0.700, 0.717, 0.715, 0.694, 0.706, 0.672, 0.714, 0.746, 0.697, 0.704])
    learning, _ = _judged({"loss": (np.arange(5, 27), y)})
    assert learning.learned is False and learning.code == "flat"


def test_a_loss_bouncing_by_a_twentieth_of_its_level_without_progress_is_oscillate():
    """15 values of a language model's loss bounce 8.36-9.86 and end where they began."""
    y = np.array([9.28, 8.96, 9.01, 8.55, 8.94, 8.42, 9.06, 8.36, 8.71, 9.45, 8.49, 8.80, 9.30, 9.86, 8.57])
    learning, _ = _judged({"loss": (np.arange(15), y)})
    assert learning.learned is False and learning.code == "oscillate"


def test_a_loss_that_rose_well_above_its_start_and_stayed_is_named_diverge():
    loss = np.r_[np.full(50, 2.3), np.linspace(2.3, 7.5, 50), np.full(100, 7.5)] + RNG.normal(0, 0.05, 200)
    learning, _ = _judged({"train_loss": (STEPS, loss)})
    assert (learning.learned, learning.code) == (False, "diverge")


def test_a_loss_that_sat_still_is_named_flat():
    learning, result = _judged({"train_loss": (STEPS, 0.6931 + RNG.normal(0, 0.002, len(STEPS)))})
    assert (learning.learned, learning.code) == (False, "flat")
    assert result.findings[0].code == "flat"


def test_a_loss_at_ln2_with_accuracy_at_half_sits_at_chance_even_though_it_fell_a_little():
    loss = np.linspace(0.75, 0.69, len(STEPS)) + RNG.normal(0, 0.003, len(STEPS))
    acc = 0.5 + RNG.normal(0, 0.01, 20)
    learning, result = _judged({"train_loss": (STEPS, loss), "val_acc": (STEPS[::10], acc)})
    assert learning.learned is False and "chance (ln 2" in learning.reason
    assert result.status != "healthy"


def test_the_same_loss_with_an_accuracy_far_above_chance_learned():
    loss = np.linspace(0.75, 0.69, len(STEPS)) + RNG.normal(0, 0.003, len(STEPS))
    learning, _ = _judged({"train_loss": (STEPS, loss), "val_acc": (STEPS[::10], np.linspace(0.6, 0.9, 20))})
    assert learning.learned is True


def test_the_config_class_count_gives_chance_without_an_accuracy():
    loss = 2.40 * np.exp(-STEPS / 300) * 0.05 + math.log(10) + RNG.normal(0, 0.002, len(STEPS))
    learning, _ = _judged({"train_loss": (STEPS, loss)}, {"model.num_classes": 10})
    assert learning.learned is False and learning.evidence["classes"] == 10


def test_an_accuracy_at_one_in_k_overrules_a_config_class_count_that_does_not_fit():
    """CIFAR-10 logged with num_classes: 200: accuracy exactly 10 % and the loss at ln 10 is chance."""
    loss = 2.45 * np.exp(-STEPS / 50) * 0.05 + math.log(10) + RNG.normal(0, 0.0005, len(STEPS))
    learning, _ = _judged({"train_loss": (STEPS, loss), "val_acc": (STEPS[::20], np.full(10, 10.0))}, {"num_classes": 200})
    assert learning.learned is False and learning.code == "flat" and learning.evidence["classes"] == 10


def test_validation_at_chance_while_training_falls_did_not_learn():
    """Train 2.31 -> 1.72 over 9 epochs; validation sits at ln 6 (1.79) with an accuracy of
    0.16-0.24, whose closing point alone would say 4 or 5 classes: the loss names K = 6."""
    e = np.arange(1, 10)
    metrics = {
        "loss": (e, np.array([2.31, 2.05, 1.96, 1.94, 1.88, 1.83, 1.80, 1.80, 1.72])),
        "acc": (e, np.linspace(0.15, 0.35, 9)),
        "val_loss": (e, np.array([1.799, 1.861, 1.820, 1.803, 1.820, 1.796, 1.809, 1.801, 1.787])),
        "val_acc": (e, np.array([0.159, 0.222, 0.206, 0.191, 0.222, 0.191, 0.206, 0.222, 0.238])),
    }
    learning, _ = _judged(metrics)
    assert learning.learned is False and learning.code == "flat" and learning.evidence["classes"] == 6


def test_a_training_loss_near_ln_k_with_a_training_accuracy_beyond_chance_is_no_chance_level():
    """Train loss 2.18 -> 1.61 (ln 5 = 1.609 by coincidence) with training accuracy 0.40 -> 0.54."""
    e = np.arange(20)
    metrics = {
        "loss": (e, np.linspace(2.18, 1.61, 20)),
        "accuracy": (e, np.linspace(0.40, 0.54, 20)),
        "val_loss": (e, 2.9 + 0.2 * np.sin(e)),
        "val_accuracy": (e, 0.25 + 0.01 * np.cos(e)),
    }
    learning, _ = _judged(metrics)
    assert "chance" not in learning.reason


def test_a_loss_falling_into_chance_is_flat_not_crawl():
    """A 9-class run that falls 2.35 -> 2.20 (ln 9 = 2.197) and is still falling a little: at chance."""
    loss = math.log(9) + 0.15 * (1 - STEPS / STEPS[-1]) + RNG.normal(0, 0.002, len(STEPS))
    learning, _ = _judged({"train_loss": (STEPS, loss)}, {"num_classes": 9})
    assert learning.learned is False and learning.code == "flat"


def test_validation_improving_only_from_an_inflated_first_evaluation_is_no_learning():
    """SGD at lr 3: the training loss starts at ln 10, bounces and ends there; validation falls from an
    inflated first evaluation (4.1) but never gets below the untrained loss (2.30)."""
    train = math.log(10) + np.abs(RNG.normal(0, 0.5, len(STEPS))) * (RNG.random(len(STEPS)) < 0.2)
    train[:5] = math.log(10)
    val = np.r_[4.1, np.linspace(2.6, 2.35, 9)]
    learning, result = _judged({"train_loss": (STEPS, train), "val_loss": (STEPS[::20], val)})
    assert learning.learned is False and result.status != "healthy"


def test_a_task_metric_that_ends_at_zero_did_not_learn():
    """A detector whose training loss falls while its mAP ends at exactly 0."""
    loss = 2.0 * np.exp(-STEPS / 500) + 0.1 + RNG.normal(0, 0.005, len(STEPS))
    learning, result = _judged({"train_loss": (STEPS, loss), "metrics/mAP50(B)": (STEPS[::20], np.zeros(10))})
    assert learning.learned is False and "ends at 0" in learning.reason
    assert result.status != "healthy"


def test_validation_that_never_got_below_its_first_evaluation_while_training_fell_is_overfit():
    train = 2.0 * np.exp(-STEPS / 400) + 0.05 + RNG.normal(0, 0.01, len(STEPS))
    evals = STEPS[::20]
    val = 1.3 + 0.002 * np.arange(10) ** 2 + RNG.normal(0, 0.01, 10)
    val[0] = 1.25
    learning, result = _judged({"train_loss": (STEPS, train), "val_loss": (evals, val)})
    assert (learning.learned, learning.code) == (False, "overfit")
    assert result.findings[0].code == "overfit"


def test_a_falling_loss_learned_and_adds_nothing():
    loss = 2.3 * np.exp(-STEPS / 400) + 0.2 + RNG.normal(0, 0.02, len(STEPS))
    learning, result = _judged({"train_loss": (STEPS, loss)})
    assert learning.learned is True and result.status == "healthy"


@pytest.mark.parametrize(
    "extra, reason",
    [
        ({"rollout/ep_rew_mean": (STEPS, np.linspace(0, 200, len(STEPS)))}, "reinforcement"),
        ({"loss_D": (STEPS, 0.7 + RNG.normal(0, 0.05, len(STEPS))), "loss_G": (STEPS, 1.2 + RNG.normal(0, 0.1, len(STEPS)))}, "adversarial"),
        ({"epoch": (STEPS, np.linspace(3.0, 4.0, len(STEPS)))}, "judged"),
    ],
    ids=["rl", "gan", "mid-run window"],
)
def test_runs_whose_loss_has_no_floor_or_no_start_are_not_judged_on_its_level(extra, reason):
    flat = {"train_loss": (STEPS, 0.5 + RNG.normal(0, 0.01, len(STEPS)))}
    learning, _ = _judged({**flat, **extra})
    assert learning.learned is not False


def test_the_judgement_is_in_the_json():
    learning, result = _judged({"train_loss": (STEPS, 0.6931 + RNG.normal(0, 0.002, len(STEPS)))})
    judged = result.to_json()["learning"]
    # the reason says which side of its start the end fell, as measured
    assert judged["reason"] in ("ended no lower than it started", "fell no further than its noise")
    assert {**judged, "reason": None} == {"learned": False, "reason": None, "code": "flat"}


def test_a_constant_zero_loss_part_is_not_the_primary_loss_nor_a_finding():
    """A one-class detector: its class loss is 0 at every step, train and validation."""
    evals = STEPS[::20]
    metrics = {
        "train/box_loss": (STEPS, 0.1 * np.exp(-STEPS / 500) + 0.02 + RNG.normal(0, 0.001, len(STEPS))),
        "train/cls_loss": (STEPS, np.zeros(len(STEPS))),
        "val/box_loss": (evals, np.linspace(0.06, 0.035, 10)),
        "val/cls_loss": (evals, np.zeros(10)),
    }
    run = synthetic(metrics)
    view = RunView(run)
    assert view.all_roles["train_loss"] == ["train/box_loss"] and view.all_roles["val_loss"] == ["val/box_loss"]
    assert diagnose_run(run, Config()).status == "healthy"


def test_an_accuracy_stuck_at_zero_beside_a_low_loss_is_a_broken_metric_not_a_run_that_did_not_learn():
    """Keras `accuracy` on an MSE regression target: the loss falls to 0.03 (exp(-loss) = 0.97), the
    accuracy is 0 at every epoch. The run learned; its metric says nothing."""
    epochs = np.arange(1, 10)
    loss = 0.03 + 0.13 * np.exp(-(epochs - 1) / 1.5)
    learning, result = _judged({"loss": (epochs, loss), "val_loss": (epochs, loss * 0.6), "val_acc": (epochs, np.zeros(9))})
    assert learning.learned is True and learning.code == "val_metric_constant"
    assert result.findings[0].code == "val_metric_constant" and result.status == "warning"


def test_a_sequence_accuracy_at_zero_beside_a_loss_near_ln_v_is_the_run_not_learning_yet():
    """A language model at loss 8.7 (exp(-loss) = 0.0002): exact-match accuracy 0 is what it earns."""
    epochs = np.arange(52)
    loss = 8.6 + 2.6 * np.exp(-epochs / 12)
    learning, _ = _judged({"train_loss": (epochs, loss), "train_seq_acc": (epochs, np.zeros(52))})
    assert learning.learned is False and learning.code == "crawl"


def test_an_rl_run_is_judged_by_its_return():
    """REINFORCE with the log-probabilities detached: the return stays at its random-walk level."""
    policy_loss = (STEPS, RNG.normal(-0.8, 0.3, len(STEPS)))
    stuck, result = _judged({"train/policy_loss": policy_loss, "rollout/ep_rew_mean": (STEPS, RNG.normal(-0.2, 0.05, len(STEPS)))})
    assert (stuck.learned, stuck.code) == (False, "flat") and result.findings[0].code == "flat"
    rising = -0.2 + 200 * (1 - np.exp(-STEPS / 500)) + RNG.normal(0, 5, len(STEPS))
    learned, _ = _judged({"train/policy_loss": policy_loss, "rollout/ep_rew_mean": (STEPS, rising)})
    assert learned.learned is True


def test_a_gan_whose_discriminator_won_is_diverge_and_one_that_hovers_is_not_judged():
    gen = 0.7 + 5.0 * (1 - np.exp(-STEPS / 50)) + RNG.normal(0, 0.2, len(STEPS))
    disc = 0.02 + 1.3 * np.exp(-STEPS / 30) + np.abs(RNG.normal(0, 0.01, len(STEPS)))
    won, result = _judged({"Loss/D": (STEPS, disc), "Loss/G": (STEPS, gen)})
    assert (won.learned, won.code) == (False, "diverge") and result.findings[0].code == "diverge"
    hovering, _ = _judged({"Loss/D": (STEPS, 0.6 + RNG.normal(0, 0.05, len(STEPS))), "Loss/G": (STEPS, 0.9 + RNG.normal(0, 0.1, len(STEPS)))})
    assert hovering.learned is None


def test_the_last_batches_of_the_first_epoch_are_a_window_not_a_start():
    """`Train Epoch: 0 [7007/7010]`: epoch 0 at both ends says nothing about where the log starts;
    a batch counter at 7007 of 7010 says it is the end of a long epoch, whose first point is no start."""
    steps = np.arange(7000, 7012)
    loss = 0.2 + 0.08 * np.sin(steps)
    learning, result = _judged({"train_loss": (steps, loss), "epoch": (steps, np.zeros(len(steps)))})
    assert learning.learned is None and "mid-run" in learning.reason
    assert result.status == "healthy"
