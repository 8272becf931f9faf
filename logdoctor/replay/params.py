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


def candidate_params(model_state: dict[str, torch.Tensor], order: list[str] | None = None) -> list[tuple[str, tuple[int, ...]]]:
    """Checkpoint tensors that look like trainable parameters, in `order` (the model's) where it
    names them, else in saved order."""
    found = [
        (name, tuple(t.shape))
        for name, t in model_state.items()
        if t.is_floating_point() and not name.endswith(BUFFER_SUFFIXES)
    ]
    if order:
        rank = {name: i for i, name in enumerate(order)}
        found.sort(key=lambda p: rank.get(p[0], len(rank)))
    return found


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
    # Same-shaped tensors (biases, norm weights, square matrices) could swap places between groups,
    # so matching runs from both ends, first with the usual decay / no-decay split (matrices decayed,
    # biases and norm weights not) when the groups have it, then without.
    complete = all(s.shape is not None for s in slots)
    options = []
    for split in (True, False) if _decay_split(slots) else (False,):
        left, right = (_subsequences(slots, params, from_end=end, split=split) for end in (False, True))
        if left == right and len(left) == len(slots):
            pmap.names, pmap.exact = left, complete
            return pmap
        options += [m for m in (left, right) if len(m) == len(slots)]
    # No agreement: the reading that leaves one contiguous block out (a frozen backbone or a
    # forgotten head, never a scatter of tensors) is the credible one, when exactly one does.
    single = [m for m in options if _runs_left_out(m, params) == 1]
    if complete and single and all(m == single[0] for m in single):
        pmap.names, pmap.exact = single[0], True
        return pmap
    pmap.names = options[0] if options else _subsequences(slots, params, from_end=False, split=False)
    return pmap


def _decay_split(slots: list[Slot]) -> bool:
    """Do the groups separate decayed from undecayed parameters (nanoGPT, HF Trainer, timm)?"""
    decays = {float(s.hyper.get("weight_decay") or 0) > 0 for s in slots}
    return decays == {True, False}


def _runs_left_out(names: dict, params: list[tuple[str, tuple[int, ...]]]) -> int:
    """How many separate runs of consecutive parameters a mapping leaves unassigned."""
    used = set(names.values())
    runs, inside = 0, False
    for name, _ in params:
        out = name not in used
        runs += out and not inside
        inside = out
    return runs


def _subsequences(slots: list[Slot], params: list[tuple[str, tuple[int, ...]]], from_end: bool, split: bool) -> dict[tuple[int, int], str]:
    """Each group, in order, matched greedily as a shape-consistent subsequence of the unused parameters.

    With `split`, a group with weight decay takes only matrices (two or more dimensions) and one
    without takes only vectors, the convention decay / no-decay groups follow.
    """
    remaining = list(params)
    names: dict[tuple[int, int], str] = {}
    groups: dict[tuple[int, int], list[Slot]] = {}
    for s in slots:
        groups.setdefault((s.optimizer, s.group), []).append(s)
    for group in groups.values():
        order = list(reversed(group)) if from_end else group
        pool = list(reversed(remaining)) if from_end else remaining
        decayed = float(group[0].hyper.get("weight_decay") or 0) > 0

        def fits(shape: tuple[int, ...]) -> bool:
            return not split or (len(shape) >= 2) == decayed

        j = 0
        for s in order:
            while j < len(pool) and ((s.shape is not None and pool[j][1] != s.shape) or not fits(pool[j][1])):
                j += 1
            if j >= len(pool):
                break
            names[(s.optimizer, s.pid)] = pool.pop(j)[0]
        remaining = list(reversed(pool)) if from_end else pool
    return names
