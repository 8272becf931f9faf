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
]
