"""Which loss a shape rule reads: the training loss, else the validation loss.

Shared by the shape rules (flat, crawl, oscillate, diverge, spike,
epoch_jumps) so they agree on the series they judge. Not a rule module
(leading underscore), so the catalogue skips it.

Reinforcement-learning runs (a reward / return is logged) are left out of
the shape judgements: a policy-gradient or critic loss is not minimised
toward a floor — it moves with the data the policy collects — so "flat",
"crawl" or "rising" say nothing about the run. A NaN is still a NaN there. The same
holds for a GAN's generator and discriminator losses.
"""
from __future__ import annotations

from ..model import Series
from ..roles import DISCRIMINATOR, GENERATOR, tokens
from ..view import LOSS_ROLES, RunView


def is_reinforcement(view: RunView) -> bool:
    """True when the run logs a reward / return: its losses are not convergence curves."""
    return view.series("reward") is not None


def is_adversarial(view: RunView) -> bool:
    """True when the run logs both generator-side and discriminator-side values (a GAN): its
    generator and discriminator losses hover by design, each the other's opponent."""
    words = [set(tokens(name)) for name in view.counts]
    return any(w & GENERATOR for w in words) and any(w & DISCRIMINATOR for w in words)


def shape_loss(view: RunView, role: str) -> Series | None:
    """The loss of `role` when its shape means something (not an RL run, not a GAN), else None."""
    if is_reinforcement(view) or is_adversarial(view):
        return None
    series = view.series(role)
    return series if series is not None and len(series) else None


def primary_loss(view: RunView) -> Series | None:
    """The training loss when logged, else the validation loss (None for RL runs)."""
    for role in LOSS_ROLES:
        series = shape_loss(view, role)
        if series is not None:
            return series
    return None


def loss_series(view: RunView) -> list[Series]:
    """Every loss the run logs, training first (RL runs included: for NaN checks)."""
    return [s for s in (view.series(r) for r in LOSS_ROLES) if s is not None and len(s)]
