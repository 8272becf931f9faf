"""One training loop, with the faults switched in the way they appear in real scripts.

A `Spec` says what to train and which bug to carry; `train(spec)` runs it on CPU
and returns a `Log`: one row per optimizer step (loss, LR actually used, pre-clip
gradient norm, loss scale, epoch) and one row per evaluation (val loss/accuracy).
Writers turn a Log into each on-disk format. Faults are code paths, not edits of
the logged numbers: what the curves show is what the bug did to the training.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from . import data, models

#: Faults this loop knows, each a real bug (see the recipe that uses it for the story).
FAULTS = (
    "orphan_optimizer",          # model re-created after the optimizer was built
    "loss_rewrap",               # loss turned into a fresh leaf tensor: backward reaches no weight
    "zero_grad_after_backward",  # opt.zero_grad() between backward() and step()
    "frozen_head_swap",          # backbone frozen, new head attached after the optimizer was built
    "handwritten_bce",           # -(t log p + (1-t) log(1-p)) with p = sigmoid(logit): log(0)
    "fp16_no_scaler",            # model.half() trained without loss scaling / fp32 master weights
    "corrupt_batches",           # a shard that skipped normalisation: some batches arrive as raw pixels x factor
    "shuffled_labels",           # a collate bug permutes the labels of some batches
    "entropy_where_nan",         # fp16 entropy bonus guarded by torch.where: NaN grads once p underflows
)

@dataclass
class Spec:
    task: str = "digits_mlp"        # digits_mlp | digits_cnn | digits_binary | charlm
    steps: int = 1500
    batch: int = 32
    opt: str = "adam"               # adam | adamw | sgd
    lr: float = 1e-3
    momentum: float = 0.9
    weight_decay: float = 0.0
    schedule: str = "constant"      # constant | warmup_cosine | multistep | onecycle | hf_linear | steplr | warmup_only
    sched: dict[str, Any] = field(default_factory=dict)
    sched_every: str = "batch"      # when scheduler.step() is called: batch | epoch
    model: dict[str, Any] = field(default_factory=dict)
    train_subset: int | None = None
    shuffle: bool = True
    sort_by: str | None = None      # training set stored sorted by "ink" (total pixel mass) or "label"
    eval_every: int = 50            # steps between evaluations; 0 = at the end of every epoch
    amp: bool = False
    scaler: dict[str, Any] = field(default_factory=dict)
    clip: float | None = None
    fault: str | None = None
    fault_args: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    stop_on_nan: bool = False

    def hparams(self) -> dict[str, Any]:
        """What a real script would put in its config: the knobs, not the bug."""
        out: dict[str, Any] = {
            "task": self.task, "optimizer": self.opt, "lr": self.lr, "batch_size": self.batch,
            "max_steps": self.steps, "weight_decay": self.weight_decay, "lr_schedule": self.schedule,
            "seed": self.seed, "amp": self.amp,
        }
        if self.opt == "sgd":
            out["momentum"] = self.momentum
        out.update({f"sched_{k}": v for k, v in self.sched.items()})
        out.update({f"model_{k}": v for k, v in self.model.items()})
        if self.clip is not None:
            out["max_grad_norm"] = self.clip
        if self.train_subset:
            out["train_samples"] = self.train_subset
        return out

@dataclass
class Log:
    train: list[dict[str, float]]
    evals: list[dict[str, float]]
    steps_per_epoch: int
    spec: Spec
    started: float

def _dataset(spec: Spec) -> data.Dataset:
    return data.text() if spec.task == "charlm" else data.digits()

def _optimizer(spec: Spec, params) -> torch.optim.Optimizer:
    if spec.opt == "sgd":
        return torch.optim.SGD(params, lr=spec.lr, momentum=spec.momentum, weight_decay=spec.weight_decay)
    cls = torch.optim.AdamW if spec.opt == "adamw" else torch.optim.Adam
    return cls(params, lr=spec.lr, weight_decay=spec.weight_decay)

def _scheduler(spec: Spec, opt: torch.optim.Optimizer):
    s, kind = spec.sched, spec.schedule
    sched = torch.optim.lr_scheduler
    if kind == "constant":
        return None
    if kind == "warmup_cosine":
        warm, total, floor = s.get("warmup", 0), s["total"], s.get("floor", 0.0)

        def factor(t: int) -> float:
            if t < warm:
                return (t + 1) / warm
            progress = min(1.0, (t - warm) / max(1, total - warm))
            return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))

        return sched.LambdaLR(opt, factor)
    if kind == "hf_linear":  # transformers.get_linear_schedule_with_warmup
        warm, total = s.get("warmup", 0), s["total"]
        return sched.LambdaLR(
            opt, lambda t: (t / max(1, warm)) if t < warm else max(0.0, (total - t) / max(1, total - warm))
        )
    if kind == "multistep":
        return sched.MultiStepLR(opt, milestones=s["milestones"], gamma=s.get("gamma", 0.1))
    if kind == "steplr":
        return sched.StepLR(opt, step_size=s["step_size"], gamma=s.get("gamma", 0.1))
    if kind == "onecycle":
        return sched.OneCycleLR(opt, max_lr=spec.lr, total_steps=s["total"], pct_start=s.get("pct_start", 0.3))
    if kind == "warmup_only":
        return sched.LinearLR(opt, start_factor=s.get("start_factor", 1e-3), total_iters=s["warmup"])
    raise ValueError(kind)

def _loss(spec: Spec, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    if spec.task != "digits_binary":
        return F.cross_entropy(out.float(), y)
    target = (y < 5).float()
    logit = out.squeeze(1).float()
    if spec.fault == "handwritten_bce":
        p = torch.sigmoid(logit)
        return -(target * torch.log(p) + (1 - target) * torch.log(1 - p)).mean()
    return F.binary_cross_entropy_with_logits(logit, target)

def _accuracy(spec: Spec, out: torch.Tensor, y: torch.Tensor) -> float:
    if spec.task == "digits_binary":
        return float(((out.squeeze(1) > 0) == (y < 5)).float().mean())
    return float((out.argmax(1) == y).float().mean())

def _evaluate(spec: Spec, model: nn.Module, ds: data.Dataset, half: bool) -> tuple[float, float]:
    model.eval()
    with torch.no_grad():
        x = ds.val.x.half() if half and ds.train.x.is_floating_point() else ds.val.x
        out = model(x)
        loss = _loss(spec, out, ds.val.y).item()
        acc = _accuracy(spec, out, ds.val.y)
    model.train()
    return loss, acc

def train(spec: Spec) -> Log:
    torch.manual_seed(spec.seed)
    gen = torch.Generator().manual_seed(spec.seed)
    ds = _dataset(spec)
    x_all, y_all = ds.train.x, ds.train.y
    raw = ds.train_raw
    if spec.train_subset:
        x_all, y_all = x_all[: spec.train_subset], y_all[: spec.train_subset]
    base_order = torch.arange(len(y_all))
    if spec.sort_by == "ink":
        base_order = torch.argsort(raw[: len(y_all)].sum(1), stable=True)
    elif spec.sort_by == "label":
        base_order = torch.argsort(y_all, stable=True)

    build = lambda: models.build(spec.task, ds.classes, **spec.model)  # noqa: E731
    model = build()
    if spec.fault == "frozen_head_swap":
        # fine-tuning: freeze the pretrained body, build the optimizer, *then* swap in a new head
        model.body.requires_grad_(False)
        opt = _optimizer(spec, [p for p in model.parameters() if p.requires_grad])
        model.head = nn.Linear(model.head.in_features, model.head.out_features)
    else:
        opt = _optimizer(spec, model.parameters())
    if spec.fault == "orphan_optimizer":
        model = build()  # "re-initialise from config" after the optimizer already holds the old params
    half = spec.fault == "fp16_no_scaler"
    if half:
        model.half()
    sched = _scheduler(spec, opt)
    scaler = torch.amp.GradScaler("cpu", **spec.scaler) if spec.amp else None

    per_epoch = len(y_all) // spec.batch
    eval_every = spec.eval_every or per_epoch
    corrupt_every = spec.fault_args.get("every", 0)
    corrupt_rng = torch.Generator().manual_seed(spec.seed + 1)
    next_corrupt = spec.fault_args.get("first", corrupt_every)
    train_rows: list[dict[str, float]] = []
    eval_rows: list[dict[str, float]] = []
    started = time.time()
    order = base_order
    for step in range(spec.steps):
        epoch, i = divmod(step, per_epoch)
        if i == 0:
            order = base_order[torch.randperm(len(base_order), generator=gen)] if spec.shuffle else base_order
        idx = order[i * spec.batch : (i + 1) * spec.batch]
        x, y = x_all[idx], y_all[idx]
        if half and x.is_floating_point():
            x = x.half()
        if corrupt_every and step == next_corrupt:
            next_corrupt += int(corrupt_every * (0.5 + torch.rand(1, generator=corrupt_rng).item()))
            if spec.fault == "corrupt_batches":
                x = raw[idx] * spec.fault_args.get("factor", 1.0)
            elif spec.fault == "shuffled_labels":
                y = y[torch.randperm(len(y), generator=corrupt_rng)]

        with torch.autocast("cpu", dtype=torch.float16, enabled=spec.amp):
            out = model(x)
            loss = _loss(spec, out, y)
            objective = loss
            if spec.fault == "entropy_where_nan":
                # entropy bonus on the fp16 logits; where() hides log(0) in the forward pass only:
                # once a probability underflows to 0, d/dp of the masked branch is 0 * inf = NaN
                p = torch.softmax(out, dim=-1, dtype=out.dtype)
                plogp = torch.where(p > 0, p * torch.log(p), torch.zeros_like(p))
                objective = loss + spec.fault_args.get("weight", 0.01) * plogp.sum(-1).mean()
        if spec.fault == "loss_rewrap":
            # "fix" for 'element 0 of tensors does not require grad' after a .item() upstream
            objective = torch.tensor(objective.item(), requires_grad=True)

        lr_used = opt.param_groups[0]["lr"]
        if spec.fault != "zero_grad_after_backward":
            opt.zero_grad(set_to_none=True)
        if scaler is not None:
            scaler.scale(objective).backward()
            scaler.unscale_(opt)
        else:
            objective.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), spec.clip or float("inf"))
        if spec.fault == "zero_grad_after_backward":
            opt.zero_grad(set_to_none=True)  # the bug: clears the gradients step() is about to use
        if scaler is not None:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        if sched is not None and (spec.sched_every == "batch" or i == per_epoch - 1):
            sched.step()

        row = {"step": step, "epoch": epoch, "epoch_float": (step + 1) / per_epoch,
               "train_loss": loss.item(), "train_acc": _accuracy(spec, out.detach(), y),
               "lr": lr_used, "grad_norm": float(grad_norm), "time": time.time()}
        if scaler is not None:
            row["loss_scale"] = scaler.get_scale()
        train_rows.append(row)
        last = step == spec.steps - 1
        bad = not math.isfinite(row["train_loss"])
        if (step + 1) % eval_every == 0 or last or (bad and spec.stop_on_nan):
            vl, va = _evaluate(spec, model, ds, half)
            eval_rows.append({"step": step, "epoch": epoch, "epoch_float": (step + 1) / per_epoch,
                              "val_loss": vl, "val_acc": va, "time": time.time()})
        if bad and spec.stop_on_nan:
            break
    return Log(train_rows, eval_rows, per_epoch, spec, started)
