"""Metric names -> roles: general token rules over the names real writers produce."""
from __future__ import annotations

import numpy as np
import pytest

from logdoctor.roles import (
    amp_scale_candidates,
    assign_roles,
    classify,
    higher_is_better,
    primary,
    tokens,
)


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
        ("test_accuracy", "val_acc"), ("top1", "val_acc"),  # top-k accuracy is an evaluation score
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


#: What real projects log, by the code that logs it: name -> role (None: no role, must stay so).
REAL_WORLD_NAMES = {
    "PyTorch Lightning (self.log, LearningRateMonitor, WandbLogger)": [
        ("train/loss_epoch", "train_loss"), ("train/loss_step", "train_loss"), ("val_loss_epoch", "val_loss"),
        ("val/acc_epoch", "val_acc"), ("ptl/val_loss", "val_loss"), ("lr-SGD/pg1", "lr"), ("lr-Adam", "lr"),
        ("trainer/epoch", "epoch"), ("trainer/global_step", None), ("hp_metric", None), ("step", None),
    ],
    "TensorBoard tutorials": [
        ("Loss/val", "val_loss"), ("Loss/test", "test_loss"), ("Accuracy/train", "train_acc"), ("acc/val", "val_acc"),
        ("Train/Loss", "train_loss"), ("Test/Accuracy", "val_acc"), ("training loss", "train_loss"),
    ],
    "HF Trainer (trainer_state.json, W&B) and TRL": [
        ("eval/loss", "val_loss"), ("eval_accuracy", "val_acc"), ("eval_f1", "val_acc"), ("eval_rouge1", "val_acc"),
        ("train/epoch", "epoch"), ("train/train_loss", "train_loss"), ("train/mean_token_accuracy", "train_acc"),
        ("rewards/accuracies", "train_acc"), ("eval_rewards/accuracies", "val_acc"), ("rewards/chosen", None), ("rewards/margins", None),
        ("objective/rlhf_reward", "reward"), ("eval_wer", "val_err"), ("val/top1_err", "val_err"), ("train_error", None), ("train_runtime", None), ("total_flos", None),
        ("train/global_step", None), ("train_samples_per_second", None), ("objective/kl", None), ("logps/chosen", None),
    ],
    "LLM trainers (nanoGPT, Megatron, DeepSpeed, composer, t5x)": [
        ("val/loss", "val_loss"), ("mfu", None), ("iter", None), ("lm loss", "train_loss"), ("lm loss validation", "val_loss"),
        ("learning-rate", "lr"), ("loss-scale", "loss_scale"), ("grad-norm", "grad_norm"), ("params-norm", None),
        ("Train/Samples/loss_scale", "loss_scale"), ("loss/train/total", "train_loss"), ("metrics/eval/Accuracy", "val_acc"),
        ("lr-DecoupledAdamW/group0", "lr"), ("loss_scale-DecoupledAdamW", "loss_scale"), ("time/epoch", "epoch"),
        ("time/token", None), ("optim/lr", "lr"), ("z_loss", "train_loss"), ("xent", "train_loss"),
    ],
    "perplexity is exp(loss), not the loss": [
        ("ppl", None), ("perplexity", None), ("valid_ppl", None), ("lm loss validation ppl", None), ("eval_perplexity", None),
    ],
    "fairseq": [
        ("train_nll_loss", "train_loss"), ("valid_loss", "val_loss"), ("valid_nll_loss", "val_loss"), ("valid_bleu", "val_acc"),
        ("train_inner/loss", "train_loss"), ("train_lr", "lr"), ("gnorm", "grad_norm"), ("train_gnorm", "grad_norm"),
        ("train_loss_scale", "loss_scale"), ("clip", None), ("train_clip", None), ("wps", None), ("ups", None),
        ("train_wpb", None), ("train_gb_free", None), ("train_wall", None),
    ],
    "image classification (timm, torchvision, mmpretrain)": [
        ("eval_top1", "val_acc"), ("eval_top5", "val_acc"), ("train_acc1", "train_acc"), ("test_acc1", "val_acc"),
        ("val_acc1", "val_acc"), ("acc@1", "val_acc"), ("val_top1", "val_acc"), ("accuracy/top1", "val_acc"),
    ],
    "detection and segmentation (detectron2, mmdet, YOLO, TF OD API, mmseg)": [
        ("total_loss", "train_loss"), ("loss_box_reg", "train_loss"), ("loss_cls", "train_loss"), ("loss_bbox", "train_loss"),
        ("fast_rcnn/cls_accuracy", "train_acc"), ("bbox/AP", "val_acc"), ("segm/AP", "val_acc"), ("coco/bbox_mAP", "val_acc"),
        ("mAP50-95", "val_acc"), ("metrics/mAP_0.5:0.95", "val_acc"), ("x/lr0", "lr"), ("base_lr", "lr"), ("mIoU", "val_acc"),
        ("Loss/total_loss", "train_loss"), ("DetectionBoxes_Precision/mAP", "val_acc"), ("fast_rcnn/false_negative", None),
        ("data_time", None), ("eta_seconds", None), ("time", None), ("memory", None), ("iteration", None),
    ],
    "Keras (CSVLogger, TensorBoard callback)": [
        ("epoch_loss", "train_loss"), ("epoch_accuracy", "train_acc"), ("epoch_learning_rate", "lr"), ("epoch_lr", "lr"),
        ("batch_loss", "train_loss"), ("sparse_categorical_accuracy", "train_acc"), ("val_auc", "val_acc"),
        ("val_precision_1", "val_acc"), ("val_mae", "val_loss"),
    ],
    "VAEs (negative ELBO = reconstruction + KL)": [
        ("train/elbo", "train_loss"), ("val/elbo", "val_loss"), ("train/kl_loss", "train_loss"),
    ],
    "GANs (pytorch-CycleGAN-and-pix2pix loss_log.txt, the DCGAN tutorial)": [
        ("D_A", "train_loss"), ("G_B", "train_loss"), ("cycle_A", "train_loss"), ("idt_B", "train_loss"),
        ("Loss_D", "train_loss"), ("errG", "train_loss"), ("lr_G", "lr"), ("d_model", None), ("g_norm", None), ("cycle", None),
    ],
    "reinforcement learning (stable-baselines3, cleanrl, rllib)": [
        ("rollout/ep_rew_mean", "reward"), ("eval/mean_reward", "reward"), ("charts/episodic_return", "reward"),
        ("episode_reward_mean", "reward"), ("train/value_loss", "train_loss"), ("losses/qf1_loss", "train_loss"),
        ("charts/learning_rate", "lr"), ("train/learning_rate", "lr"), ("losses/entropy", None), ("losses/approx_kl", None),
        ("losses/clipfrac", None), ("losses/q_values", None), ("train/clip_fraction", None), ("train/explained_variance", None),
        ("rollout/ep_len_mean", None), ("time/fps", None), ("time/total_timesteps", None), ("charts/SPS", None), ("perf/fps", None),
    ],
    "gradient norm and AMP scale": [
        ("gradient_norm", "grad_norm"), ("optim/grad_norm", "grad_norm"), ("global_grad_norm", "grad_norm"),
        ("GradNorm", "grad_norm"), ("train/grad_norm_clipped", "grad_norm"), ("amp/scale", "loss_scale"),
        ("scale", None), ("train/scale", None),  # ambiguous by name: decided by values (test below)
        ("logit_scale", None),
    ],
    "hyperparameters and bookkeeping carrying a quantity's word": [
        ("lr_decay_steps", None), ("lr_warmup_steps", None), ("lr_scheduler", None), ("warmup_steps", None),
        ("loss_weight", None), ("loss_scale_window", None), ("max_grad_norm", None), ("gradient_accumulation_steps", None),
        ("init_scale", None), ("weight_decay", None), ("num_train_epochs", None), ("max_epochs", None),
        ("epoch_time", None), ("samples_per_second", None), ("_runtime", None), ("_step", None), ("_timestamp", None),
    ],
}


@pytest.mark.parametrize(
    "name, role",
    [pytest.param(name, role, id=f"{source.split(' (')[0]}: {name}") for source, cases in REAL_WORLD_NAMES.items() for name, role in cases],
)
def test_real_world_names(name, role):
    assert classify(name) == role


def test_plain_or_total_loss_is_primary_among_component_losses():
    detectron2 = ["loss_box_reg", "loss_cls", "loss_rpn_cls", "loss_rpn_loc", "total_loss", "fast_rcnn/cls_accuracy"]
    assert primary(assign_roles(detectron2))["train_loss"] == "total_loss"
    assert primary(assign_roles(["loss_cls", "loss_bbox", "loss", "acc"]))["train_loss"] == "loss"  # mmdet
    sb3 = ["train/value_loss", "train/entropy_loss", "train/loss", "train/policy_gradient_loss"]
    assert primary(assign_roles(sb3))["train_loss"] == "train/loss"
    cleanrl = ["losses/entropy", "losses/value_loss", "losses/approx_kl"]
    assert assign_roles(cleanrl)["train_loss"] == ["losses/value_loss"]


def test_bare_scale_is_the_loss_scale_only_when_its_values_are_powers_of_two():
    values = {
        "scale": np.array([65536.0, 131072.0, np.nan, 32768.0]),  # GradScaler logged as `scale`
        "train/scale": np.array([14.3, 27.9, 100.0]),  # open_clip's logit scale
        "aug/scale": np.array([32.0, 64.0]),  # names another thing's scale
        "val/scale": np.array([1.0, 1.0, 1.0]),
    }
    assert amp_scale_candidates(values, values.get) == {"scale"}
    assert amp_scale_candidates(["scale"], lambda name: np.array([1.0, 1.0])) == set()  # a constant 1.0 setting
    found = primary(assign_roles(["loss", "scale"], amp_scales={"scale"}))
    assert found["loss_scale"] == "scale"
    assert "loss_scale" not in assign_roles(["loss", "scale"])


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


def test_an_epoch_level_loss_denser_than_the_step_level_one_is_primary():
    # Lightning logs the step value every 50 steps: a one-batch epoch leaves 8 of them beside 400 epoch values
    counts = {"train_loss_epoch": 400, "train_loss_step": 8}
    assert primary(assign_roles(["train_loss_step", "train_loss_epoch"], counts=counts))["train_loss"] == "train_loss_epoch"
    # merely denser (1000 epochs of 32 steps beside a value every 50 steps), the epoch means still hide spikes
    counts = {"train_loss_epoch": 1000, "train_loss_step": 640}
    assert primary(assign_roles(["train_loss_epoch", "train_loss_step"], counts=counts))["train_loss"] == "train_loss_step"


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
    assert all("loss" not in names for names in found.values())


def test_direction_of_roles():
    assert higher_is_better("val_acc") and higher_is_better("reward") and higher_is_better("train_acc")
    assert not higher_is_better("train_loss") and not higher_is_better("lr")


def test_reward_primary_is_the_training_average():
    found = assign_roles(["Eval_AverageReturn", "Eval_MaxReturn", "Train_BestReturn", "Train_AverageReturn", "Eval_StdReturn"])
    assert found["reward"][0] == "Train_AverageReturn"
    assert "Eval_StdReturn" not in found["reward"]


def test_the_first_override_pattern_listed_gives_the_primary():
    metrics = ["losses/val", "metrics/eval/LanguageCrossEntropy"]
    roles = assign_roles(metrics, overrides={"val_loss": ["/LanguageCrossEntropy$/", "losses/val"]})
    assert roles["val_loss"] == ["metrics/eval/LanguageCrossEntropy", "losses/val"]


@pytest.mark.parametrize(
    "name, role",
    [
        # YOLO classification logs both top-k accuracies on the validation set
        ("metrics/accuracy_top1", "val_acc"), ("metrics/accuracy_top5", "val_acc"),
        # add_hparams summaries are one number per session: never a role
        ("hparam/loss", None), ("hparam/accuracy", None), ("1700000000.123/hparam/accuracy", None),
        # cross-entropy is a loss, under any spelling
        ("cross_entropy", "train_loss"), ("metrics/eval/LanguageCrossEntropy", "val_loss"),
        ("sparse_categorical_crossentropy", "train_loss"), ("entropy", None),
        # held-out data is validation data
        ("heldout_loss", "val_loss"), ("hold_out_loss", "val_loss"),
        # a plural `losses` with only a split beside it is the loss; with another word, a namespace
        ("losses/train", "train_loss"), ("losses/val", "val_loss"), ("losses/entropy", None),
    ],
)
def test_review_names(name, role):
    assert classify(name) == role


def test_add_hparams_metrics_never_become_the_primary():
    names = ["Loss/train", "Accuracy/test", "1700000000.1/hparam/loss", "1700000000.1/hparam/accuracy"]
    assert primary(assign_roles(names, counts={"Loss/train": 20, "Accuracy/test": 20})) == {
        "train_loss": "Loss/train", "val_acc": "Accuracy/test",
    }


def test_a_split_less_score_beside_its_validation_twin_is_the_training_score():
    """Keras writes `dice_coef` and `val_dice_coef`: a Dice score with no split word would count as
    validation (nobody computes it on training batches, usually), but its val_ twin says otherwise."""
    roles = assign_roles(["loss", "dice_coef", "val_loss", "val_dice_coef", "val_accuracy"])
    assert "dice_coef" in roles["train_acc"] and "dice_coef" not in roles.get("val_acc", [])
    assert roles["val_acc"][0] in ("val_accuracy", "val_dice_coef")
    alone = assign_roles(["loss", "dice_coef"])
    assert alone["val_acc"] == ["dice_coef"]
