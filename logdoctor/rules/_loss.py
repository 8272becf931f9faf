"""Which loss a shape rule reads: the training loss, else the validation loss.

Shared by the shape rules (flat, crawl, oscillate, diverge, spike,
epoch_jumps, plateau) so they agree on the series they judge. Not a rule
module (leading underscore), so the catalogue skips it.
"""
from __future__ import annotations

from ..model import Series
from ..view import RunView

LOSS_ROLES = ("train_loss", "val_loss")


def primary_loss(view: RunView) -> Series | None:
    """The training loss when logged, else the validation loss, else None."""
    for role in LOSS_ROLES:
        series = view.series(role)
        if series is not None and len(series):
            return series
    return None


def loss_series(view: RunView) -> list[Series]:
    """Every loss the run logs, training first."""
    return [s for s in (view.series(r) for r in LOSS_ROLES) if s is not None and len(s)]
