"""Metric names -> roles: general token rules over the names real writers produce."""
from __future__ import annotations

import pytest

from logdoctor.roles import assign_roles, classify, higher_is_better, primary, tokens


@pytest.mark.parametrize(
    "name, role",
    [
        # training loss, however it is spelled
        ("loss", "train_loss"), ("train/loss", "train_loss"), ("Loss/train", "train_loss"),
        ("train_loss_step", "train_loss"), ("train_loss_epoch", "train_loss"), ("train/epoch_loss", "train_loss"),
        ("trainLoss", "train_loss"), ("train/box_loss", "train_loss"), ("nll", "train_loss"),
        # validation / test loss
        ("val_loss", "val_loss"), ("eval_loss", "val_loss"), ("validation/loss", "val_loss"),
        ("validation/epoch_loss", "val_loss"), ("Loss/valid", "val_loss"), ("valLoss", "val_loss"),
        ("eval_g3_loss", "val_loss"), ("dev-loss", "val_loss"),
        ("value_loss", "train_loss"),  # PPO's value-function loss is not a validation loss
        # learning rate, one per param group
        ("lr", "lr"), ("learning_rate", "lr"), ("train/learning_rate", "lr"), ("lr-AdamW", "lr"),
        ("lr-AdamW/pg1", "lr"), ("lr/group_0", "lr"), ("lr/pg2", "lr"), ("optimizer/lr_group_1", "lr"), ("LearningRate", "lr"),
        ("lr-AdamW-momentum", None), ("lr-SGD-weight_decay", None), ("beta1", None),
        # gradient norm, AMP scale
        ("grad_norm", "grad_norm"), ("train/grad_norm", "grad_norm"), ("gradient_norm", "grad_norm"),
        ("grad_norm/total", "grad_norm"), ("total_norm", "grad_norm"), ("param_norm", None),
        ("scaler/scale", "loss_scale"), ("loss_scale", "loss_scale"), ("amp/loss_scale", "loss_scale"), ("grad_scale", "loss_scale"),
        # accuracy-like: a bare accuracy is the training one, eval-only scores are validation
        ("accuracy", "train_acc"), ("train_acc_step", "train_acc"), ("val_accuracy", "val_acc"),
        ("eval_mean_token_accuracy", "val_acc"), ("val_sparse_categorical_accuracy", "val_acc"),
        ("metrics/mAP50(B)", "val_acc"), ("metrics/precision(B)", "val_acc"), ("f1", "val_acc"),
        ("test_accuracy", "val_acc"), ("top1", "train_acc"),
        # reward-like
        ("episodic_reward", "reward"), ("Eval_AverageReturn", "reward"), ("rollout/ep_rew_mean", "reward"),
        ("episode_return", "reward"), ("Eval_StdReturn", None), ("loss_std", None), ("Eval_AverageEpLen", None),
        ("epoch", "epoch"), ("train/epoch", "epoch"),
        # bookkeeping
        ("eval_runtime", None), ("num_tokens", None), ("eval_samples_per_second", None), ("global_step", None),
    ],
)
def test_classify(name, role):
    assert classify(name) == role


def test_tokens_split_separators_and_camel_case():
    assert tokens("Train/epochLoss-v2") == ["train", "epoch", "loss", "v2"]
    assert tokens("metrics/mAP50-95(B)") == ["metrics", "m", "ap50", "95", "b"]


def test_primary_prefers_plain_totals_and_dense_step_level_series():
    roles = primary(assign_roles(["train/box_loss", "train/loss", "loss_components/kl"]))
    assert roles["train_loss"] == "train/loss"
    roles = primary(assign_roles(["train_loss_epoch", "train_loss_step"], counts={"train_loss_epoch": 10, "train_loss_step": 1000}))
    assert roles["train_loss"] == "train_loss_step"
    roles = primary(assign_roles(["loss/reconstruction", "loss/total", "loss/kl"]))
    assert roles["train_loss"] == "loss/total"


def test_per_group_lrs_all_kept_primary_is_first_group():
    found = assign_roles(["lr-AdamW/pg2", "lr-AdamW/pg0", "lr-AdamW/pg1", "lr-AdamW-momentum"])
    assert found["lr"] == ["lr-AdamW/pg0", "lr-AdamW/pg1", "lr-AdamW/pg2"]


def test_accuracy_primary_prefers_accuracy_then_map_and_validation_over_test():
    found = assign_roles(["metrics/recall(B)", "metrics/mAP50-95(B)", "metrics/precision(B)", "metrics/mAP50(B)"])
    assert found["val_acc"][0].startswith("metrics/mAP50")
    found = assign_roles(["test_accuracy", "val_f1", "val_accuracy"])
    assert found["val_acc"][0] == "val_accuracy" and found["val_acc"][-1] == "test_accuracy"


def test_test_loss_stands_in_only_without_validation():
    assert primary(assign_roles(["loss", "test_loss"]))["val_loss"] == "test_loss"
    assert primary(assign_roles(["loss", "test_loss", "val_loss"]))["val_loss"] == "val_loss"


def test_overrides_pin_names_and_regexes():
    found = assign_roles(
        ["objective", "holdout_objective", "loss", "my_rate"],
        overrides={"train_loss": ["objective"], "val_loss": ["/^holdout_/"], "lr": ["my_rate"]},
    )
    assert found["train_loss"] == ["objective"]  # pinned: the plain 'loss' no longer competes
    assert found["val_loss"] == ["holdout_objective"] and found["lr"] == ["my_rate"]
    assert "loss" not in sum(found.values(), [])


def test_direction_of_roles():
    assert higher_is_better("val_acc") and higher_is_better("reward") and higher_is_better("train_acc")
    assert not higher_is_better("train_loss") and not higher_is_better("lr")


def test_reward_primary_is_the_training_average():
    found = assign_roles(["Eval_AverageReturn", "Eval_MaxReturn", "Train_BestReturn", "Train_AverageReturn", "Eval_StdReturn"])
    assert found["reward"][0] == "Train_AverageReturn"
    assert "Eval_StdReturn" not in found["reward"]
