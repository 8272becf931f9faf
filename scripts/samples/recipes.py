"""Every sample run: what it trains, which bug it carries, how it is logged, and its label.

Labels (`codes`, `notes`) were set by looking at the generated curves (plots and
numbers from `make_sample_runs.py --plots`), not read off the recipe: where an
injected bug did not show its symptom the recipe was changed until it did.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .train import Spec

#: Default metric names per format (a run may override some).
NAMES: dict[str, dict[str, str]] = {
    "tensorboard": {"train_loss": "Loss/train", "val_loss": "Loss/val", "val_acc": "Accuracy/val",
                    "lr": "LR", "grad_norm": "grad_norm", "loss_scale": "amp/loss_scale", "epoch": "epoch"},
    "tensorboard-new": {"train_loss": "train/loss", "val_loss": "val/loss", "val_acc": "val/acc",
                        "lr": "train/lr", "grad_norm": "train/grad_norm", "loss_scale": "scaler/scale",
                        "epoch": "trainer/epoch"},
    "wandb": {"train_loss": "train/loss", "val_loss": "eval/loss", "val_acc": "eval/accuracy",
              "lr": "train/learning_rate", "grad_norm": "train/grad_norm", "loss_scale": "train/loss_scale",
              "epoch": "train/epoch"},
    "lightning": {"train_loss": "train_loss_step", "val_loss": "val_loss", "val_acc": "val_acc",
                  "lr": "lr", "grad_norm": "grad_norm", "loss_scale": "loss_scale", "epoch": "epoch"},
    "mlflow": {"train_loss": "train_loss", "val_loss": "val_loss", "val_acc": "val_accuracy",
               "lr": "learning_rate", "grad_norm": "grad_norm", "loss_scale": "loss_scale", "epoch": "epoch"},
    "csv": {"train_loss": "loss", "val_loss": "val_loss", "val_acc": "val_acc", "lr": "lr",
            "grad_norm": "grad_norm", "loss_scale": "scale", "epoch": "epoch"},
}


@dataclass
class Recipe:
    run_id: str
    format: str  # tensorboard | tensorboard-new | keras | wandb | lightning | hf | mlflow | csv | keras-csv
    spec: Spec
    codes: list[str]
    fault: str
    notes: str
    #: Canonical keys to log (subset of NAMES[format]) and renames.
    log: tuple[str, ...] = ("train_loss", "val_loss", "val_acc", "lr", "grad_norm", "epoch")
    rename: dict[str, str] = field(default_factory=dict)
    writer: dict[str, Any] = field(default_factory=dict)

    @property
    def healthy(self) -> bool:
        return not self.codes

    def names(self) -> dict[str, str]:
        base = NAMES.get(self.format, NAMES["csv"])
        out = {k: base[k] for k in self.log if k in base}
        out.update(self.rename)
        return out


def _r(run_id, fmt, codes, story, notes, **spec) -> Recipe:
    """A recipe: `story` is how the fault was injected (labels' `fault`), `spec` the Spec fields."""
    extra = {k: spec.pop(k) for k in ("log", "rename", "writer") if k in spec}
    return Recipe(run_id, fmt, Spec(**spec), codes, story, notes, **extra)


AMP_LOG = ("train_loss", "val_loss", "val_acc", "lr", "grad_norm", "loss_scale", "epoch")

RECIPES: list[Recipe] = [
    # ---------------------------------------------------------------- flat
    _r("tb_flat_orphan_optimizer", "tensorboard", ["flat"],
       "model re-created from config after the optimizer was built: optimizer.step() updates the discarded model",
       "loss sits at ln(10)=2.30 with batch noise for the whole run; val loss constant; grad norm grows (grads never zeroed)",
       fault="orphan_optimizer", steps=1200),
    _r("hf_flat_zero_grad_order", "hf", ["flat"],
       "optimizer.zero_grad() called between loss.backward() and optimizer.step(): every step applies a zero gradient",
       "loss flat at 2.30 (4-decimal HF rounding) from step 0 to the end; eval_loss constant",
       fault="zero_grad_after_backward", steps=1500),
    _r("wb_flat_loss_rewrap", "wandb", ["flat"],
       "char-LM loss re-wrapped as torch.tensor(loss.item(), requires_grad=True) to silence a 'does not require grad' error",
       "loss flat at ln(97)=4.57 for the whole run; grad norm exactly 0",
       task="charlm", steps=800, batch=64, eval_every=40, fault="loss_rewrap"),
    _r("pl_flat_frozen_head_swap", "lightning", ["flat"],
       "fine-tune: backbone frozen, optimizer built, then a fresh classification head attached (never in the optimizer)",
       "loss flat at 2.30 throughout; val loss constant",
       task="digits_cnn", steps=1500, fault="frozen_head_swap", writer={"every": 10}),
    # ---------------------------------------------------------------- crawl
    _r("tbn_crawl_lr1000x_low", "tensorboard-new", ["crawl"],
       "Adam lr=1e-6 (intended 1e-3; a 1000x unit slip)",
       "loss falls steadily but only from 2.31 to 2.28 over 1500 steps; val loss tracks it down slowly",
       lr=1e-6, steps=1500),
    _r("mlf_crawl_sgd_lr_low", "mlflow", ["crawl"],
       "SGD lr=1e-4 copied from a fine-tuning config onto training from scratch (1000x below the working 0.1)",
       "loss declines almost linearly from 2.31 to 2.18 and is nowhere near converged; gain per 1k steps tiny vs range",
       opt="sgd", lr=1e-4, steps=1500),
    _r("csv_crawl_charlm_lr_low", "csv", ["crawl"],
       "char-LM with Adam lr=3e-6 (config value meant as 3e-3)",
       "loss creeps from 4.57 down a few hundredths per hundred steps; far above the ~1.7 a healthy run reaches",
       task="charlm", lr=3e-6, steps=900, batch=64, eval_every=45),
    # ---------------------------------------------------------------- diverge
    _r("tbn_diverge_sgd_lr_high", "tensorboard-new", ["diverge"],
       "SGD lr=2.0 with momentum 0.9 on the MLP (20x too high)",
       "loss explodes to ~1e19 in the first steps then NaN for the rest of the run; val loss NaN",
       opt="sgd", lr=2.0, steps=600),
    _r("hf_diverge_bce_log0", "hf", ["diverge"],
       "hand-written BCE -(t log p + (1-t) log(1-p)) on sigmoid outputs: p saturates to exactly 1.0 and log(0) = -inf",
       "loss falls briefly then becomes inf/NaN and stays NaN; eval_loss NaN",
       task="digits_binary", opt="adam", lr=0.05, steps=1200, fault="handwritten_bce"),
    # ---------------------------------------------------------------- overfit
    _r("tb_overfit_charlm_tiny_subset", "tensorboard", ["overfit"],
       "char-LM with 512 hidden units trained on 3000 windows only, no dropout or weight decay",
       "train loss falls to ~0.02 while val loss bottoms out early (~3.1) and climbs to ~5.5",
       task="charlm", steps=800, batch=64, train_subset=3000, model={"hidden": 512}, eval_every=20),
    # ---------------------------------------------------------------- lr_schedule_mismatch
    _r("tb_sched_cosine_tenth", "tensorboard", ["lr_schedule_mismatch"],
       "cosine schedule sized with total=150 steps (one run of a tenth the length) clamped at its floor of 0",
       "LR reaches 0 at 10 % of the run; loss stalls at ~0.3 from then on while a healthy run reaches ~0.001",
       schedule="warmup_cosine", sched={"total": 150, "floor": 0.0}, steps=1500),
    _r("pl_sched_steplr_per_batch", "lightning", ["lr_schedule_mismatch"],
       "StepLR(step_size=30, gamma=0.1) meant per epoch but stepped every batch",
       "LR collapses by 10x every 30 batches to ~1e-50 inside the first epoch; loss freezes at ~0.47",
       opt="sgd", lr=0.05, schedule="steplr", sched={"step_size": 30, "gamma": 0.1}, steps=1500,
       writer={"every": 10, "lr_name": "lr-SGD"}),
    _r("wb_sched_warmup_never_ends", "wandb", ["lr_schedule_mismatch"],
       "LinearLR warmup with total_iters=100000 (samples, not steps) on a 1500-step run",
       "LR rises linearly for the entire run and never reaches its peak; loss is slow early and only speeds up at the end",
       opt="sgd", lr=0.05, schedule="warmup_only", sched={"warmup": 100000}, steps=1500),
    # ---------------------------------------------------------------- oscillate
    _r("tb_oscillate_adam_lr_high", "tensorboard", ["oscillate"],
       "Adam lr=0.03 constant (30x the usual 1e-3), no decay",
       "loss drops then bounces between ~0.01 and ~1 without settling; val loss swings the same way",
       lr=0.03, steps=1500),
    # ---------------------------------------------------------------- healthy
    _r("tb_healthy_adam_constant", "tensorboard", [],
       "none: Adam lr=1e-3 constant on the digits MLP",
       "smooth exponential-like decay from 2.3 to ~0.001; val loss falls to ~0.04 and stays flat",
       steps=1500),
    _r("tbn_healthy_charlm_warmup_cosine", "tensorboard-new", [],
       "none: char-LM AdamW, 100-step warmup then cosine to 10 % over the whole run",
       "loss falls from 4.6 to ~1.6 and flattens as the LR anneals; val loss falls throughout",
       task="charlm", opt="adamw", lr=2e-3, weight_decay=0.01, schedule="warmup_cosine",
       sched={"warmup": 100, "total": 900, "floor": 0.1}, steps=900, batch=64, eval_every=45),
    _r("hf_healthy_linear_warmup", "hf", [],
       "none: HF-style linear warmup (100 steps) then linear decay to 0 at the last step",
       "loss falls smoothly to ~0.01; eval_loss falls then stays flat",
       opt="adamw", lr=2e-3, schedule="hf_linear", sched={"warmup": 100, "total": 1500}, steps=1500),
    _r("mlf_healthy_sgd_step_decay", "mlflow", [],
       "none: SGD momentum lr=0.05 with MultiStepLR milestones at 50 % and 75 %",
       "loss falls fast, small drops after each LR decay; val loss flat at its minimum",
       opt="sgd", lr=0.05, schedule="multistep", sched={"milestones": [750, 1125]}, steps=1500),
    _r("tb_healthy_stopped_while_falling", "tensorboard", [],
       "none: SGD lr=0.01 stopped early at 600 steps (budget), still improving",
       "loss falls steadily the whole run at a useful rate (halves every couple of hundred steps); not converged, not crawling",
       opt="sgd", lr=0.01, momentum=0.9, steps=600, model={"hidden": 64}),
    # ================================================================ second batch
    # ---------------------------------------------------------------- flat / crawl (more formats)
    _r("keras_crawl_sgd_lr_low", "keras", ["crawl"],
       "Keras-style run: SGD lr=1e-4 (1000x below the 0.1 this MLP trains with), 60 epochs",
       "epoch_loss falls almost linearly and slowly from 2.31 to ~2.0 over 60 epochs; validation tracks it",
       opt="sgd", lr=1e-4, steps=42 * 60, eval_every=0),
    # ---------------------------------------------------------------- oscillate
    _r("pl_oscillate_sgd_momentum_high", "lightning", ["oscillate"],
       "SGD lr=0.4 with momentum 0.9 on a tanh MLP (about 10x too high), constant",
       "loss bounces between ~0 and 2-3 for the whole run without settling; val loss swings 0.4-1.4",
       opt="sgd", lr=0.4, momentum=0.9, model={"act": "tanh"}, steps=1500, writer={"every": 5, "lr_name": "lr-SGD"}),
    _r("wb_oscillate_adam_small_batch_lr_high", "wandb", ["oscillate"],
       "Adam lr=0.01 with batch size 8 (LR tuned for batch 256 kept after shrinking the batch), no decay",
       "loss keeps bursting up to 2-6 between near-zero stretches; val loss swings 0.15-1.8 and never settles",
       lr=0.01, batch=8, steps=1500),
    # ---------------------------------------------------------------- diverge
    _r("csv_diverge_warmup_to_high_lr", "csv", ["diverge"],
       "linear LR warmup of SGD (tanh MLP) towards a peak of 6.0 (a 0.06 typo): the loss blows up as LR grows",
       "loss reaches ~0.1 early, then climbs steadily to 30-80 once LR passes ~1; val loss climbs to ~45",
       opt="sgd", lr=6.0, schedule="warmup_only", sched={"warmup": 1000, "start_factor": 0.01}, steps=1200,
       model={"act": "tanh"}),
    _r("mlf_diverge_fp16_adam", "mlflow", ["diverge"],
       "model.half() trained with Adam and no AMP/fp32 master weights: eps=1e-8 rounds to 0 in fp16, first update is NaN",
       "first logged loss 2.3, NaN from the second step to the end; val loss NaN",
       fault="fp16_no_scaler", lr=1e-3, steps=400),
    # ---------------------------------------------------------------- overfit
    _r("keras_overfit_charlm_small_corpus", "keras", ["overfit"],
       "Keras-style run: char-LM (256 hidden) on 3200 training windows, Adam, no dropout/weight decay, 30 epochs",
       "train epoch_loss falls to ~0.1; validation epoch_loss is lowest around epoch 3 and then rises every epoch",
       task="charlm", train_subset=3200, batch=64, model={"hidden": 256}, steps=50 * 30, eval_every=0),
    _r("hf_overfit_charlm_small_corpus", "hf", ["overfit"],
       "char-LM, 512 hidden units, 6400 training windows, no regularisation, evaluated every 50 steps",
       "training loss falls to ~0.1 while eval_loss is lowest near step 150 and then rises to ~5",
       task="charlm", train_subset=6400, batch=64, model={"hidden": 512}, steps=1000, eval_every=50),
    _r("mlf_overfit_charlm_small_corpus", "mlflow", ["overfit", "epoch_jumps"],
       "char-LM (384 hidden) trained on 4800 windows only, AdamW without weight decay",
       "train loss falls towards ~0.1 in a staircase (drops at each 100-step epoch); val loss bottoms out near step 150 and climbs after",
       task="charlm", opt="adamw", train_subset=4800, batch=48, model={"hidden": 384}, steps=900, eval_every=30),
    # ---------------------------------------------------------------- lr_schedule_mismatch
    _r("hf_sched_linear_one_epoch", "hf", ["lr_schedule_mismatch"],
       "get_linear_schedule_with_warmup(num_training_steps=len(loader)) - one epoch - for a 36-epoch run",
       "LR ramps 10 steps, decays to 0 by step 42 (3 % of the run) and stays 0; loss freezes at ~1.0 from then",
       opt="adamw", lr=2e-3, schedule="hf_linear", sched={"warmup": 10, "total": 42}, steps=1500),
    # ---------------------------------------------------------------- scaler_collapse
    _r("tbn_scaler_entropy_where_nan", "tensorboard-new", ["scaler_collapse"],
       "AMP (fp16 autocast + GradScaler) with an entropy bonus written as where(p>0, p*log(p), 0): NaN grads once p underflows",
       "loss falls to ~0.1 by step 150, then every step is skipped: loss frozen and loss scale halves every step to ~1e-33",
       amp=True, fault="entropy_where_nan", fault_args={"weight": 0.01}, steps=360, eval_every=20,
       log=AMP_LOG),
    _r("wb_scaler_entropy_where_nan", "wandb", ["scaler_collapse"],
       "same where()-guarded fp16 entropy bonus under GradScaler, 256-unit MLP",
       "scale holds at 32768, starts halving after ~100 steps and falls by ~1e-30 by the end; loss stops improving",
       amp=True, fault="entropy_where_nan", fault_args={"weight": 0.01}, model={"hidden": 256}, seed=1,
       steps=290, eval_every=20, log=AMP_LOG, writer={"every": 1}),
    _r("mlf_scaler_entropy_where_nan", "mlflow", ["scaler_collapse"],
       "where()-guarded fp16 entropy bonus (weight 0.1) under GradScaler",
       "loss scale collapses from 65536 toward 0 after the model becomes confident; loss flat from then",
       amp=True, fault="entropy_where_nan", fault_args={"weight": 0.1}, seed=2, steps=360, eval_every=20,
       log=AMP_LOG),
    # ---------------------------------------------------------------- spike
    _r("tb_spike_unnormalised_shard", "tensorboard", ["spike"],
       "a data shard skipped normalisation: every ~200 steps one batch arrives as raw 0-16 pixels",
       "isolated loss spikes to 1.5-5 at corrupted batches, each recovering within a few steps; baseline ~0.01",
       fault="corrupt_batches", fault_args={"every": 200}, steps=1500, writer={"every": 1}),
    _r("hf_spike_charlm_shuffled_labels", "hf", ["spike"],
       "collate bug: every ~120 steps a batch's targets are permuted (wrong next characters)",
       "sharp spikes of the 5-step-averaged loss (HF logging_steps=5) above a smoothly falling curve; recover at once",
       task="charlm", fault="shuffled_labels", fault_args={"every": 120}, steps=900, batch=64, eval_every=90,
       writer={"logging_steps": 5}),
    _r("csv_spike_shuffled_labels", "csv", ["spike"],
       "every ~150 steps a batch's labels are shuffled by a buggy collate_fn",
       "loss spikes from ~0.01 to 2-8 at the bad batches and falls back within ~20 steps",
       fault="shuffled_labels", fault_args={"every": 150}, steps=1500),
    # ---------------------------------------------------------------- epoch_jumps
    _r("tb_epoch_jumps_charlm_repeated_data", "tensorboard", ["epoch_jumps"],
       "char-LM, 6400 windows reshuffled each epoch and repeated for 10 epochs: the model memorises what it has seen",
       "staircase: train loss drops abruptly at every epoch boundary (every 100 steps) and drifts up within the epoch",
       task="charlm", train_subset=6400, batch=64, lr=2e-3, model={"hidden": 256}, steps=1000, eval_every=100,
       log=("train_loss", "lr", "epoch")),
    _r("wb_epoch_jumps_charlm_repeated_data", "wandb", ["epoch_jumps"],
       "char-LM, 512 hidden units, 3200 windows repeated for 10 epochs (batch 32)",
       "loss drops in a step at every epoch boundary (every 100 steps), flat or rising in between",
       task="charlm", train_subset=3200, batch=32, lr=1e-3, model={"hidden": 512}, steps=1000, eval_every=100,
       log=("train_loss", "lr", "epoch"), writer={"every": 2}),
    _r("pl_epoch_jumps_charlm_repeated_data", "lightning", ["epoch_jumps"],
       "char-LM AdamW(wd=0.1) on 12800 windows repeated for 6 epochs",
       "train loss steps down at each epoch boundary (every 200 steps) with flat stretches between",
       task="charlm", train_subset=12800, batch=64, lr=2e-3, opt="adamw", weight_decay=0.1, model={"hidden": 256},
       steps=1200, eval_every=200, log=("train_loss", "lr", "epoch"), writer={"every": 5, "lr_name": "lr-AdamW"}),
    # ---------------------------------------------------------------- clip_saturation
    _r("tbn_clip_sgd_max_norm_tiny", "tensorboard-new", ["clip_saturation"],
       "clip_grad_norm_(max_norm=0.01) with SGD (a value meant for per-parameter clipping); grad_norm is the pre-clip norm",
       "pre-clip grad norm 0.3-1.0 on every step, 30-100x the 0.01 threshold; loss falls slowly as a smooth S-curve",
       opt="sgd", lr=0.1, clip=0.01, steps=1500),
    _r("wb_clip_charlm_adam", "wandb", ["clip_saturation"],
       "char-LM with clip_grad_norm_(max_norm=0.1) while its gradient norm is ~2",
       "grad norm sits at 1.5-2.5 on every step, ~20x above max_grad_norm; loss trains (Adam rescales)",
       task="charlm", clip=0.1, steps=800, batch=64, eval_every=40),
    _r("mlf_clip_sgd_max_norm_tiny", "mlflow", ["clip_saturation"],
       "SGD momentum 0.9 with clip_grad_norm_(max_norm=0.05)",
       "pre-clip grad norm 0.3-1.0, above the 0.05 threshold on every step; loss falls steadily",
       opt="sgd", lr=0.05, clip=0.05, seed=3, steps=1500),
    _r("pl_clip_charlm_sgd", "lightning", ["clip_saturation"],
       "char-LM, SGD lr=0.5, Trainer(gradient_clip_val=0.25) with gradient norms of 1-3",
       "grad_norm logged above 0.25 on every step; loss falls",
       task="charlm", opt="sgd", lr=0.5, clip=0.25, steps=800, batch=64, eval_every=40,
       writer={"every": 5, "lr_name": "lr-SGD"}),
    # ---------------------------------------------------------------- healthy
    _r("tb_healthy_chance_then_learn", "tensorboard", [],
       "none: 3-layer ReLU MLP with 0.2x init and SGD lr=0.05 (seed 1): sits on a saddle at chance before learning",
       "loss flat at ln(10)=2.30 for a few hundred steps, then drops fast to ~0.01; val loss follows",
       opt="sgd", lr=0.05, model={"depth": 3, "init_gain": 0.2}, seed=1, steps=1500),
    _r("hf_healthy_chance_then_learn", "hf", [],
       "none: 3-layer ReLU MLP with 0.2x init, SGD lr=0.05: long saddle at chance then learns",
       "loss 2.30 (HF rounding) for ~400 steps, then a steep fall to ~0.01",
       opt="sgd", lr=0.05, model={"depth": 3, "init_gain": 0.2}, steps=1500),
    _r("pl_healthy_onecycle_cnn", "lightning", [],
       "none: small CNN, OneCycleLR(max_lr=3e-3) over the whole run",
       "loss falls fast during the LR ramp and settles near 0 as LR anneals; val loss flat at its minimum",
       task="digits_cnn", lr=3e-3, schedule="onecycle", sched={"total": 1200}, steps=1200,
       writer={"every": 5, "lr_name": "lr-Adam"}),
    _r("mlf_healthy_noisy_small_batch", "mlflow", [],
       "none: batch size 4, Adam lr=3e-4",
       "very noisy per-step loss (0 to ~1 excursions) around a clearly falling trend; val loss falls and flattens",
       batch=4, lr=3e-4, steps=1500),
    _r("csv_healthy_amp_charlm", "csv", [],
       "none: char-LM with fp16 autocast + GradScaler(growth_interval=100)",
       "loss falls 4.6 -> ~1.9; loss scale grows x2 every 100 clean steps and halves on the occasional overflow",
       task="charlm", amp=True, scaler={"growth_interval": 100}, steps=600, batch=32, eval_every=40, log=AMP_LOG),
    _r("wb_healthy_amp_digits", "wandb", [],
       "none: digits MLP with fp16 autocast + GradScaler(growth_interval=200)",
       "loss falls to ~0.001; loss scale only grows (65536 -> ~8e6), never collapses",
       amp=True, scaler={"growth_interval": 200}, steps=1200, log=AMP_LOG),
    _r("keras_healthy_val_plateau", "keras", [],
       "none: MLP with dropout 0.3 and AdamW weight decay 1e-2, 60 epochs",
       "train epoch_loss keeps falling; validation epoch_loss falls and then plateaus (does not rise)",
       opt="adamw", weight_decay=1e-2, model={"dropout": 0.3}, steps=42 * 60, eval_every=0),
    _r("keras_healthy_short_10_epochs", "keras", [],
       "none: 10 epochs of Adam lr=1e-3 (a short run: 10 points per curve)",
       "epoch_loss falls every epoch from ~1.3 to ~0.05; validation follows",
       steps=42 * 10, eval_every=0),
    _r("kcsv_healthy_history", "keras-csv", [],
       "none: Keras CSVLogger-style history.csv, 30 epochs of SGD momentum lr=0.02",
       "loss and val_loss fall each epoch and flatten; no rise",
       opt="sgd", lr=0.02, steps=42 * 30, eval_every=0),
    _r("wb_healthy_charlm_stopped_while_falling", "wandb", [],
       "none: char-LM Adam lr=1e-3 stopped after 600 steps (time budget) while still improving",
       "loss still falling at a useful rate at the end (about 0.2 per 100 steps); val loss falling",
       task="charlm", steps=600, batch=64, eval_every=30),
    _r("mlf_healthy_short_10_epochs", "mlflow", [],
       "none: 10 epochs at batch 64 (210 steps), Adam lr=2e-3",
       "loss falls from 2.3 to ~0.05 within the short run; val loss falls",
       batch=64, lr=2e-3, steps=210, eval_every=21),
]
