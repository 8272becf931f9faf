"""Instrumented runs of the model that several dynamic probes read.

One forward + backward pass with forward hooks records, per module, whether
its output went non-finite (and whether its inputs already were), activation
dead / saturated fractions, and every parameter's gradient. Probes share it
through `ReplayContext.memo` so the model runs once. All work happens on a
private copy of the model: the checkpoint model is never stepped or mutated
(a train-mode forward would update BatchNorm statistics).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from .probe import ReplayContext
from .target import train_mode

RELU_LIKE = (nn.ReLU, nn.ReLU6)
SATURATING = (nn.Sigmoid, nn.Tanh, nn.Hardsigmoid, nn.Hardtanh)


@dataclass
class Activation:
    module: str
    kind: str
    #: Fraction of units (channels / features) that output 0 for every example (ReLU-like).
    dead: float | None = None
    #: Fraction of outputs in the flat tails (sigmoid < 0.01 or > 0.99, |tanh| > 0.99).
    saturated: float | None = None


@dataclass
class Pass:
    loss: float
    loss_has_grad: bool
    input_nonfinite: bool
    #: (module name, type, nan count, inf count) of the first module whose output is non-finite
    #: while its inputs were finite; None when every module stays finite.
    nan_source: tuple[str, str, int, int] | None
    activations: list[Activation] = field(default_factory=list)
    #: name -> gradient L2 norm (None: no gradient); only parameters with requires_grad.
    grad_norms: dict[str, float | None] = field(default_factory=dict)
    weight_norms: dict[str, float] = field(default_factory=dict)


def _tensors(obj: Any):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors(v)
    elif isinstance(obj, (tuple, list)):
        for v in obj:
            yield from _tensors(v)
    elif hasattr(obj, "logits") and isinstance(getattr(obj, "logits"), torch.Tensor):
        yield obj.logits


def _finite(obj: Any) -> bool:
    return all(bool(torch.isfinite(t).all()) for t in _tensors(obj) if t.is_floating_point())


def dead_units(out: torch.Tensor) -> float:
    """Fraction of units whose output is 0 for every example (channels of 4-D maps, last dim otherwise)."""
    zero = out.detach() == 0
    if zero.dim() <= 1:
        return float(zero.float().mean())
    unit_dim = 1 if zero.dim() == 4 else zero.dim() - 1
    return float(zero.movedim(unit_dim, 0).flatten(1).all(dim=1).float().mean())


def saturation(module: nn.Module, out: torch.Tensor) -> float:
    out = out.detach().float()
    if isinstance(module, (nn.Sigmoid, nn.Hardsigmoid)):
        return float(((out < 0.01) | (out > 0.99)).float().mean())
    return float((out.abs() > 0.99).float().mean())


def instrumented_pass(ctx: ReplayContext) -> Pass:
    """Forward + backward once on a copy of the checkpoint model, with hooks on every module."""
    target = ctx.target
    model = target.copy()
    train_mode(model)
    inputs, _ = target.batch
    seen: dict[str, int] = {}
    activations: list[Activation] = []
    source: list[tuple[str, str, int, int]] = []

    def hook(name: str):
        def record(module: nn.Module, args, output) -> None:
            seen[name] = seen.get(name, 0) + 1
            label = name if seen[name] == 1 else f"{name}#{seen[name]}"
            if not source and not _finite(output) and _finite(args):
                outs = [t for t in _tensors(output) if t.is_floating_point()]
                nan = sum(int(torch.isnan(t).sum()) for t in outs)
                inf = sum(int(torch.isinf(t).sum()) for t in outs)
                source.append((label, type(module).__name__, nan, inf))
            if isinstance(output, torch.Tensor) and output.numel():
                if isinstance(module, RELU_LIKE):
                    activations.append(Activation(label, type(module).__name__, dead=dead_units(output)))
                elif isinstance(module, SATURATING):
                    activations.append(Activation(label, type(module).__name__, saturated=saturation(module, output)))

        return record

    handles = [m.register_forward_hook(hook(n)) for n, m in model.named_modules() if n]
    try:
        loss, _ = target.loss(model)
    finally:
        for h in handles:
            h.remove()
    has_grad = loss.requires_grad and loss.grad_fn is not None
    if has_grad:
        loss.backward()
    result = Pass(
        loss=float(loss.detach()),
        loss_has_grad=has_grad,
        input_nonfinite=not _finite(inputs),
        nan_source=source[0] if source else None,
        activations=activations,
    )
    for name, p in model.named_parameters():
        result.weight_norms[name] = float(p.detach().double().norm())
        if p.requires_grad:
            result.grad_norms[name] = None if p.grad is None else float(p.grad.detach().double().norm())
    del model
    return result


def get_pass(ctx: ReplayContext) -> Pass:
    return ctx.memo("pass", lambda: instrumented_pass(ctx))


def subset(batch: tuple[Any, torch.Tensor], n: int) -> tuple[Any, torch.Tensor]:
    """The first `n` examples of a batch (every tensor sliced along dim 0)."""

    def cut(obj: Any) -> Any:
        if isinstance(obj, torch.Tensor):
            return obj[:n] if obj.dim() > 0 else obj
        if isinstance(obj, dict):
            return {k: cut(v) for k, v in obj.items()}
        if isinstance(obj, (tuple, list)):
            return type(obj)(cut(v) for v in obj)
        return obj

    return cut(batch[0]), cut(batch[1])
