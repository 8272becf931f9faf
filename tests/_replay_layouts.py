"""Small real checkpoints in the four layouts people have, each fault planted beside a clean twin.

* plain torch: a training dict written by a hand-written loop;
* PyTorch Lightning: `Trainer.fit` with ModelCheckpoint (`LitNet` below is also the `--model` class);
* Hugging Face: `Trainer` with a tiny BERT built from its config (nothing downloaded);
* timm: timm cannot be installed beside the CPU torch build here (its torchvision dependency ships
  CUDA-only kernels that fail to load, and importing Lightning then fails too), so its checkpoint is the
  dict timm's CheckpointSaver writes (`epoch`, `arch`, `state_dict`, `optimizer`, `version`, `args` as an
  argparse Namespace, `metric`), trained by a loop that applies timm's per-epoch cosine schedule
  (which records `initial_lr` in the param groups and saves no scheduler state).

Every builder takes a `variant` (seed and width) so the acceptance set is built apart from the set the
probes were developed on. Builders return what `logdoctor replay` is given: (checkpoint path, --model).
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

FEATURES, CLASSES, EXAMPLES = 16, 10, 64
HERE = Path(__file__)


def batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """A learnable batch: labels from a fixed random linear teacher."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(EXAMPLES, FEATURES, generator=g)
    teacher = torch.randn(FEATURES, CLASSES, generator=torch.Generator().manual_seed(123))
    return x, (x @ teacher).argmax(dim=1)


class Net(nn.Module):
    """backbone (two Linear+ReLU) and head; `dead` plants a bias that kills every unit of the first
    layer, `detach` cuts the backbone from the loss."""

    def __init__(self, hidden: int = 32, dead: bool = False, detach: bool = False, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)
        self.backbone = nn.Sequential(nn.Linear(FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.LayerNorm(hidden), nn.ReLU())
        self.head = nn.Linear(hidden, CLASSES)
        self.detach = detach
        if dead:
            with torch.no_grad():
                self.backbone[0].bias.fill_(-100.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.backbone(x)
        return self.head(h.detach() if self.detach else h)


def _linear_to_zero(total: int):
    return lambda step: max(0.0, 1 - step / total)


# ---------------------------------------------------------------------------------------------- plain


def plain(out: Path, case: str, variant: int = 0) -> tuple[Path, str]:
    """A hand-written loop saving {model, optimizer, scheduler, step, config}; `--model` is a factory."""
    hidden, steps = 32 + 16 * variant, 40
    model = Net(hidden, dead=case == "dead_relu", detach=case == "detached", seed=variant)
    if case == "clean_frozen_backbone":
        model.backbone.requires_grad_(False)
    params = model.parameters()
    if case in ("clean_frozen_backbone",):
        params = [p for p in model.parameters() if p.requires_grad]
    if case == "head_not_in_optimizer":
        params = model.backbone.parameters()
    lr = 1e-8 if case == "lr_too_low" else 1e-3
    if case == "clean_bf16":
        model = model.to(torch.bfloat16)
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    sched_total = steps // 4 if case == "schedule_ran_out" else steps
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _linear_to_zero(sched_total))
    save_at = steps // 2 if case == "schedule_ran_out" else steps
    x, y = batch(variant)
    if case == "clean_bf16":
        x = x.to(torch.bfloat16)
    for step in range(save_at):
        opt.zero_grad()
        F.cross_entropy(model(x).float(), y).backward()
        opt.step()
        sched.step()
    path = out / f"plain-{case}.pt"
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(), "step": save_at, "config": {"max_steps": steps, "hidden": hidden}}, path)
    torch.save(batch(variant), out / "plain-batch.pt")
    flags = {"dead_relu": "dead", "detached": "detach"}.get(case)
    factory = out / f"plain_factory_{case}.py"
    factory.write_text(
        f"import sys\nsys.path.insert(0, {str(HERE.parent)!r})\nfrom _replay_layouts import Net\n"
        f"def build():\n    m = Net({hidden}{', ' + flags + '=True' if flags else ''}, seed={variant})\n"
        + ("    m.backbone.requires_grad_(False)\n" if case == "clean_frozen_backbone" else "")
        + ("    m = m.to(__import__('torch').bfloat16)\n" if case == "clean_bf16" else "")
        + "    return m\n"
    )
    return path, f"{factory}:build"


# ------------------------------------------------------------------------------------------ Lightning


def lightning_module():
    """LitNet, defined only when Lightning imports (it is the `--model module:LitNet` class)."""
    import lightning as L

    class LitNet(L.LightningModule):
        def __init__(self, hidden: int, max_steps: int, lr: float = 1e-3, freeze_backbone: bool = False, skip_head: bool = False,
                     dead: bool = False, sched_steps: int | None = None, seed: int = 0):
            super().__init__()
            self.save_hyperparameters()
            self.net = Net(hidden, dead=dead, seed=seed)
            if freeze_backbone:
                self.net.backbone.requires_grad_(False)

        def forward(self, x):
            return self.net(x)

        def training_step(self, b, i):
            x, y = b
            return F.cross_entropy(self(x), y)

        def configure_optimizers(self):
            hp = self.hparams
            params = self.net.backbone.parameters() if hp.skip_head else [p for p in self.parameters() if p.requires_grad]
            opt = torch.optim.AdamW(params, lr=hp.lr, weight_decay=0.01)
            sched = torch.optim.lr_scheduler.LambdaLR(opt, _linear_to_zero(hp.sched_steps or hp.max_steps))
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    return LitNet


def lightning(out: Path, case: str, variant: int = 0) -> tuple[Path, str]:
    """Trainer.fit with ModelCheckpoint; the planted fault rides on LitNet's hyperparameters."""
    import lightning as L

    LitNet = globals().setdefault("LitNet", lightning_module())
    steps = 40
    hp = dict(hidden=32 + 16 * variant, max_steps=steps, seed=variant)
    hp.update({
        "clean_frozen_backbone": {"freeze_backbone": True},
        "head_not_in_optimizer": {"skip_head": True},
        "dead_relu": {"dead": True},
        "lr_too_low": {"lr": 1e-8},
        "schedule_ran_out": {"sched_steps": steps // 4},
    }.get(case, {}))
    x, y = batch(variant)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=16)
    folder = out / f"lightning-{case}"
    every = steps // 2 if case == "schedule_ran_out" else steps
    saver = L.pytorch.callbacks.ModelCheckpoint(dirpath=folder, every_n_train_steps=every, save_top_k=-1, filename="{step}")
    trainer = L.Trainer(max_steps=steps, logger=False, enable_progress_bar=False, enable_model_summary=False, callbacks=[saver],
                        accelerator="cpu", num_sanity_val_steps=0, enable_checkpointing=True)
    trainer.fit(LitNet(**hp), loader)
    torch.save(batch(variant), out / "lightning-batch.pt")
    return folder / f"step={every}.ckpt", f"{HERE}:LitNet"


def __getattr__(name: str):
    """`--model tests/_replay_layouts.py:LitNet` resolves the Lightning class on first use."""
    if name == "LitNet":
        return globals().setdefault("LitNet", lightning_module())
    raise AttributeError(name)


# ----------------------------------------------------------------------------------- Hugging Face


def hf_config(variant: int = 0):
    from transformers import BertConfig

    config = BertConfig(vocab_size=64, hidden_size=32 + 16 * variant, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64, num_labels=3)
    config.architectures = ["BertForSequenceClassification"]
    return config


class TokenTask(torch.utils.data.Dataset):
    """Sequences whose label is their first token mod 3."""

    def __len__(self):
        return 64

    def __getitem__(self, i):
        ids = torch.randint(0, 64, (12,), generator=torch.Generator().manual_seed(i))
        return {"input_ids": ids, "labels": int(ids[0] % 3)}


def hf_batch(n: int = 16):
    from transformers import BatchEncoding

    items = [TokenTask()[i] for i in range(n)]
    return BatchEncoding({"input_ids": torch.stack([it["input_ids"] for it in items]), "labels": torch.tensor([it["labels"] for it in items])})


def hf(out: Path, case: str, variant: int = 0) -> tuple[Path, str]:
    """transformers.Trainer on a tiny BERT; returns the final checkpoint-N/ folder and `--model hf`."""
    from transformers import BertForSequenceClassification, Trainer, TrainingArguments

    steps = 20
    torch.manual_seed(variant)
    model = BertForSequenceClassification(hf_config(variant))
    if case == "clean_frozen_backbone":
        model.bert.embeddings.requires_grad_(False)
    args = TrainingArguments(str(out / f"hf-{case}"), max_steps=steps, per_device_train_batch_size=16, save_steps=steps,
                             learning_rate=1e-8 if case == "lr_too_low" else 5e-4, weight_decay=0.01, logging_steps=2,
                             report_to=[], use_cpu=True, disable_tqdm=True, seed=variant)
    optimizers = (None, None)
    if case == "schedule_ran_out":  # a schedule sized for a quarter of the run
        opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.01)
        optimizers = (opt, torch.optim.lr_scheduler.LambdaLR(opt, _linear_to_zero(steps // 4)))
    Trainer(model=model, args=args, train_dataset=TokenTask(), optimizers=optimizers).train()
    torch.save(hf_batch(), out / "hf-batch.pt")
    return out / f"hf-{case}" / f"checkpoint-{steps}", "hf"


# --------------------------------------------------------------------------------------------- timm


def timm_cosine(epoch: int, base: float, epochs: int, min_lr: float = 0.0) -> float:
    """timm's CosineLRScheduler per epoch (t_initial=epochs, no warmup); min_lr after its end (cooldown)."""
    if epoch >= epochs:
        return min_lr
    return min_lr + 0.5 * (base - min_lr) * (1 + math.cos(math.pi * epoch / epochs))


def timm(out: Path, case: str, variant: int = 0) -> tuple[Path, str]:
    """The dict timm's CheckpointSaver writes after each epoch (this one after its last, or mid-run)."""
    epochs, cooldown, base = 6, 2, 1e-3
    model = Net(32 + 16 * variant, seed=variant)
    params = model.backbone.parameters() if case == "head_not_in_optimizer" else model.parameters()
    opt = torch.optim.AdamW(params, lr=base, weight_decay=0.05)
    for group in opt.param_groups:
        group["initial_lr"] = group["lr"]  # timm's Scheduler records it
    sized = 2 if case == "schedule_ran_out" else epochs  # a schedule built for 2 epochs of a 6-epoch run
    last = 3 if case == "schedule_ran_out" else epochs + cooldown - 1
    x, y = batch(variant)
    for epoch in range(last + 1):
        for group in opt.param_groups:
            group["lr"] = timm_cosine(epoch + 1 if case != "schedule_ran_out" else epoch * 3, base, sized)
        for _ in range(4):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
    args = argparse.Namespace(model="layouts_net", epochs=epochs, cooldown_epochs=cooldown, lr=base, min_lr=0.0, sched="cosine",
                              num_classes=CLASSES, output=Path("/runs/timm"), opt="adamw", weight_decay=0.05)
    path = out / f"timm-{case}.pth.tar"
    torch.save({"epoch": last, "arch": "layouts_net", "state_dict": model.state_dict(), "optimizer": opt.state_dict(), "version": 2,
                "args": args, "metric": 0.5}, path)
    torch.save(batch(variant), out / "timm-batch.pt")
    return path, ""
