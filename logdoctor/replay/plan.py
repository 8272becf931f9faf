"""What the run was meant to do: its planned length, from whatever the checkpoint says about it.

An LR at 0 is the plan at the end of a linear or cosine anneal and a fault
halfway through it, so the probes need to know how far the run was from its
end. Each layout says it differently: HF's trainer_state.json has `max_steps`,
Lightning saves the hyperparameters the module was built with (often
`max_steps` / `max_epochs`) and the epoch reached, timm saves its argparse
args (`epochs` plus `cooldown_epochs`) and the epoch just finished, and a
scheduler's own state holds its length (`T_max`, `total_steps`...; see
`probe.planned_total`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .checkpoint import Checkpoint

#: Hyperparameter names that hold a run's planned length in optimizer steps / in epochs.
STEP_TOTAL_KEYS = ("max_steps", "total_steps", "num_training_steps", "training_steps", "num_steps", "max_iters", "total_iterations")
EPOCH_TOTAL_KEYS = ("max_epochs", "epochs", "num_epochs", "num_train_epochs", "n_epochs")
#: Epochs run after the main schedule, at its floor (timm's `--cooldown-epochs`).
EXTRA_EPOCH_KEYS = ("cooldown_epochs",)


def _count(value: Any) -> int | None:
    """A positive whole count from a hyperparameter (bools and -1 'unlimited' are not counts)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return None
    return int(value)


def fill_plan(ckpt: "Checkpoint") -> None:
    """Set `planned_steps` / `planned_epochs` from the saved hyperparameters where the layout gave none."""
    hp = ckpt.hparams
    if ckpt.planned_steps is None:
        ckpt.planned_steps = next((n for n in (_count(hp.get(k)) for k in STEP_TOTAL_KEYS) if n), None)
    if ckpt.planned_epochs is None:
        epochs = next((n for n in (_count(hp.get(k)) for k in EPOCH_TOTAL_KEYS) if n), None)
        if epochs is not None:
            ckpt.planned_epochs = epochs + sum(_count(hp.get(k)) or 0 for k in EXTRA_EPOCH_KEYS)


def progress(ckpt: "Checkpoint") -> float | None:
    """How far through its planned length the run was when saved (1.0 = finished), or None if unknown."""
    if ckpt.planned_steps and ckpt.step is not None:
        return ckpt.step / ckpt.planned_steps
    if ckpt.planned_epochs and ckpt.epochs_done is not None:
        return ckpt.epochs_done / ckpt.planned_epochs
    return None


def early_floor(lr_log: list[tuple[int, float]], planned_steps: int | None, floor_fraction: float, remaining_fraction: float) -> dict | None:
    """Where a logged LR fell to its floor with much of the run still planned, or None.

    The floor is `floor_fraction` of the peak logged LR, reached after the peak and never left
    again; it counts as early when more than `remaining_fraction` of the planned steps remained.
    Read from the whole log, so a schedule that ran out early is found at any later checkpoint.
    """
    if len(lr_log) < 2 or not planned_steps:
        return None
    peak_at = max(range(len(lr_log)), key=lambda i: lr_log[i][1])
    peak = lr_log[peak_at][1]
    if peak <= 0:
        return None
    after = lr_log[peak_at:]
    low = [lr <= floor_fraction * peak for _, lr in after]
    if not low[-1]:
        return None
    first = len(low) - next(i for i, v in enumerate(reversed(low)) if not v)  # start of the final run at the floor
    step = after[first][0]
    if step > (1 - remaining_fraction) * planned_steps:
        return None
    return {"floor_from_step": step, "peak_lr": peak, "lr_at_floor": after[first][1], "planned_steps": planned_steps}
