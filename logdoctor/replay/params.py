"""Which model tensor does each optimizer slot belong to?

An optimizer's state_dict names its parameters by integer id only: ids are
handed out in order over `param_groups`, and each group's list usually is the
model's `named_parameters()` filtered in order (one group, or decay / no-decay
groups, or per-module groups). So each group is matched, in order, as a
subsequence of the model's parameters, using the shapes of the optimizer's
moment tensors to stay aligned. Without the model code, "parameters" are the
checkpoint's floating-point tensors minus well-known buffers; with `--model`
they are exactly the trainable parameters.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

#: Buffers every common layer registers; they are never in an optimizer.
BUFFER_SUFFIXES = ("running_mean", "running_var", "num_batches_tracked", "position_ids", "inv_freq", "masked_bias")


@dataclass(frozen=True)
class Slot:
    """One parameter as an optimizer sees it."""

    optimizer: int
    group: int
    pid: int | str  # an index, or the parameter's name in name-keyed (FSDP-style) state dicts
    #: The optimizer's per-parameter state (exp_avg, exp_avg_sq, momentum_buffer, step...).
    state: dict
    hyper: dict  # the group's hyperparameters (lr, weight_decay, eps, betas...)

    @property
    def shape(self) -> tuple[int, ...] | None:
        for value in self.state.values():
            if isinstance(value, torch.Tensor) and value.dim() > 0:
                return tuple(value.shape)
        return None


@dataclass
class ParamMap:
    """Optimizer slots matched to model parameter names."""

    slots: list[Slot]
    #: Candidate parameter names in model order, with shapes.
    params: list[tuple[str, tuple[int, ...]]]
    names: dict[tuple[int, int], str] = field(default_factory=dict)  # (optimizer, pid) -> name
    #: True when every slot was matched by a known shape (names are then reliable).
    exact: bool = False
    #: Where the parameter list came from: "model" (--model) or "checkpoint".
    source: str = "checkpoint"

    def name(self, slot: Slot) -> str:
        return self.names.get((slot.optimizer, slot.pid), f"optimizer{slot.optimizer}/param{slot.pid}")

    def unassigned(self) -> list[str]:
        used = set(self.names.values())
        return [n for n, _ in self.params if n not in used]


def candidate_params(model_state: dict[str, torch.Tensor]) -> list[tuple[str, tuple[int, ...]]]:
    """Checkpoint tensors that look like trainable parameters, in saved order."""
    return [
        (name, tuple(t.shape))
        for name, t in model_state.items()
        if t.is_floating_point() and not name.endswith(BUFFER_SUFFIXES)
    ]


def optimizer_slots(optimizers: list[dict]) -> list[Slot]:
    slots = []
    for oi, opt in enumerate(optimizers):
        state = opt.get("state", {})
        for gi, group in enumerate(opt.get("param_groups", [])):
            hyper = {k: v for k, v in group.items() if k != "params"}
            for pid in group.get("params", []):
                slots.append(Slot(oi, gi, pid, state.get(pid, {}) or {}, hyper))
    return slots


def map_params(slots: list[Slot], params: list[tuple[str, tuple[int, ...]]], source: str = "checkpoint") -> ParamMap:
    """Match slots to names: straight order when it fits, else per-group subsequences by shape."""
    pmap = ParamMap(slots=slots, params=params, source=source)
    if slots and all(isinstance(s.pid, str) for s in slots):  # name-keyed state (FSDP optim_state_dict)
        pmap.names = {(s.optimizer, s.pid): s.pid for s in slots}
        pmap.exact = True
        return pmap
    if len(slots) == len(params) and all(s.shape in (None, p[1]) for s, p in zip(slots, params)):
        pmap.names = {(s.optimizer, s.pid): p[0] for s, p in zip(slots, params)}
        pmap.exact = all(s.shape is not None for s in slots) or source == "model"
        return pmap
    left, right = _subsequences(slots, params, from_end=False), _subsequences(slots, params, from_end=True)
    pmap.names = left
    # Same-shaped tensors (biases, norm weights) could swap places between groups; the names are
    # certain only when matching from either end agrees and every slot's shape was known.
    pmap.exact = left == right and len(left) == len(slots) and all(s.shape is not None for s in slots)
    return pmap


def _subsequences(slots: list[Slot], params: list[tuple[str, tuple[int, ...]]], from_end: bool) -> dict[tuple[int, int], str]:
    """Each group, in order, matched greedily as a shape-consistent subsequence of the unused parameters."""
    remaining = list(params)
    names: dict[tuple[int, int], str] = {}
    groups: dict[tuple[int, int], list[Slot]] = {}
    for s in slots:
        groups.setdefault((s.optimizer, s.group), []).append(s)
    for group in groups.values():
        order = list(reversed(group)) if from_end else group
        pool = list(reversed(remaining)) if from_end else remaining
        j = 0
        for s in order:
            while j < len(pool) and s.shape is not None and pool[j][1] != s.shape:
                j += 1
            if j >= len(pool):
                break
            names[(s.optimizer, s.pid)] = pool.pop(j)[0]
        remaining = list(reversed(pool)) if from_end else pool
    return names
