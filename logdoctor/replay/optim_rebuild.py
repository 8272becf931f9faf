"""Rebuild the run's optimizer around a model copy, from the checkpoint's saved state.

The class is not saved in an optimizer state_dict, so it is recognised from
the param-group keys (betas + decoupled_weight_decay -> AdamW/Adam, momentum
+ nesterov -> SGD, alpha + centered -> RMSprop). Param groups are rebuilt
with the names matched in `params.map_params`, and the saved moments are
loaded so that one step is the step the run would have taken next.
"""
from __future__ import annotations

import inspect

import torch
from torch import nn

from .probe import ReplayContext


def optimizer_class(hyper: dict) -> type[torch.optim.Optimizer]:
    if "betas" in hyper:
        return torch.optim.Adam if hyper.get("decoupled_weight_decay") is False else torch.optim.AdamW
    if "alpha" in hyper and "centered" in hyper:
        return torch.optim.RMSprop
    return torch.optim.SGD


def _kwargs(cls: type, hyper: dict) -> dict:
    accepted = set(inspect.signature(cls).parameters) - {"params"}
    return {k: v for k, v in hyper.items() if k in accepted and k not in ("foreach", "fused", "capturable", "differentiable")}


def build_optimizer(model: nn.Module, ctx: ReplayContext, fresh: bool = False) -> tuple[torch.optim.Optimizer, str]:
    """An optimizer for `model` shaped like the checkpoint's first optimizer (AdamW when there is none).

    With `fresh=False` the saved moments are loaded when the groups line up;
    `fresh=True` keeps hyperparameters only (the LR range test sets its own LR).
    """
    trainable = [p for p in model.parameters() if p.requires_grad]
    if not ctx.ckpt.optimizers or not ctx.ckpt.optimizers[0].get("param_groups"):
        return torch.optim.AdamW(trainable, lr=1e-3, weight_decay=0.0), "AdamW (default)"
    saved = ctx.ckpt.optimizers[0]
    groups_hyper = [{k: v for k, v in g.items() if k != "params"} for g in saved["param_groups"]]
    cls = optimizer_class(groups_hyper[0])
    by_name = dict(model.named_parameters())
    pmap = ctx.params()
    groups = []
    for g, hyper in zip(saved["param_groups"], groups_hyper):
        names = [pmap.names.get((0, pid)) for pid in g.get("params", [])]
        if any(n is None or n not in by_name for n in names):
            groups = []
            break
        groups.append({"params": [by_name[n] for n in names], **_kwargs(cls, hyper)})
    if not groups:
        return cls(trainable, **_kwargs(cls, groups_hyper[0])), f"{cls.__name__} (groups not matched: one group)"
    opt = cls(groups)
    if not fresh:
        try:
            opt.load_state_dict(saved)
        except (ValueError, KeyError, RuntimeError):
            return opt, f"{cls.__name__} (saved moments not loadable: fresh state)"
    return opt, cls.__name__
