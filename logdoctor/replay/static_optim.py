"""Static probes on the saved optimizer: param groups, weight decay, eps, coverage."""
from __future__ import annotations

import torch

from ..model import Finding
from .probe import Probe, ReplayContext, Skip, fmt, listed

def _need_optimizer(ctx: ReplayContext) -> None:
    if not ctx.ckpt.optimizers:
        raise Skip("no optimizer state in the checkpoint")


def optimizer_kind(hyper: dict) -> str:
    """Best guess at the optimizer class from a param group's keys."""
    if "betas" in hyper:
        if "decoupled_weight_decay" not in hyper:
            return "Adam/AdamW"
        return "AdamW" if hyper["decoupled_weight_decay"] else "Adam"
    if "momentum" in hyper and "nesterov" in hyper:
        return "SGD"
    if "alpha" in hyper and "centered" in hyper:
        return "RMSprop"
    return "unknown"


class OptimizerGroups(Probe):
    """The optimizer's actual per-group hyperparameters, and groups whose LR is 0.

    Symptom:
        Reports the LR, weight decay and eps each param group really had when
        the checkpoint was saved (what the scheduler left, not the config).
        Fires when a group's LR is 0 after training started and before its
        planned end: its parameters are not being updated.
    Root causes:
        - a scheduler stepped past its end or annealed to eta_min=0 (see scheduler_exhausted)
        - a warmup that starts at LR 0 and was never stepped (scheduler.step() missing)
        - a param group deliberately given lr=0 (freezing) that was meant to be unfrozen later
    Fix:
        - log optimizer.param_groups[i]['lr'] (or scheduler.get_last_lr()) every step for every group
        - step the scheduler after every optimizer.step() and size it in optimizer steps
    Example:
        group 0: AdamW lr 3e-4, wd 0.1; group 1: lr 0 (12 tensors).
    """

    code, severity = "optimizer_groups", "info"
    explains = ("flat", "crawl", "lr_schedule_mismatch")
    cause_pattern = r"\blr\b|learning rate|schedul|floor|warmup"
    ruled_out_pattern = ""  # a non-zero LR says nothing about whether it is too low

    def probe(self, ctx: ReplayContext) -> list[Finding]:
        _need_optimizer(ctx)
        groups = []
        zero = []
        for oi, opt in enumerate(ctx.ckpt.optimizers):
            for gi, g in enumerate(opt["param_groups"]):
                label = f"optimizer{oi}.group{gi}" if len(ctx.ckpt.optimizers) > 1 else f"group{gi}"
                entry = {"group": label, "optimizer": optimizer_kind(g), "params": len(g.get("params", []))}
                for key in ("lr", "weight_decay", "eps", "momentum"):
                    if isinstance(g.get(key), (int, float)):
                        entry[key] = float(g[key])
                if "betas" in g:
                    entry["betas"] = [float(b) for b in g["betas"]]
                groups.append(entry)
                if entry.get("lr") == 0.0 and entry["params"]:
                    zero.append(label)
        started = (ctx.ckpt.step is None or ctx.ckpt.step > 0) and not ctx.finished()
        lrs = ", ".join(f"{e['group']} {e['optimizer']} lr {fmt(e.get('lr', float('nan')))}" for e in groups[:4])
        if zero and started:
            return [
                self.report(
                    ctx,
                    title=f"LR is 0 in {listed(zero)}: those parameters are not being updated",
                    confidence=0.9,
                    where=zero[0],
                    severity="warning",
                    evidence={"groups": groups},
                )
            ]
        return [self.report(ctx, title=f"optimizer state: {lrs}", confidence=1.0, where=None, evidence={"groups": groups})]


class DecayOnNormBias(Probe):
    """Weight decay is applied to biases and normalisation weights.

    Symptom:
        One-dimensional parameters (biases, LayerNorm/BatchNorm gains and
        shifts) sit in a param group with weight_decay > 0.
    Root causes:
        - the optimizer was built from model.parameters() in one group, so weight decay shrinks norm gains and biases toward 0
        - Adam(weight_decay=...) used as if it were AdamW: coupled L2 decay passes through the adaptive preconditioner
    Fix:
        - two param groups: weight_decay on p.dim() >= 2 tensors, weight_decay=0.0 on biases and norm weights (nanoGPT's rule)
        - use torch.optim.AdamW (decoupled decay) instead of Adam(weight_decay=...)
    Example:
        12 of 30 decayed tensors are 1-D (ln_1.weight, attn.c_attn.bias...) with weight_decay 0.1.
    """

    code, severity = "decay_on_norm_bias", "warning"
    #: A misconfiguration worth fixing, but no curve symptom is specific to it: reported, not linked.
    explains = ()

    def probe(self, ctx: ReplayContext) -> list[Finding]:
        _need_optimizer(ctx)
        pmap = ctx.params()
        shapes = dict(pmap.params)
        decayed = [s for s in pmap.slots if float(s.hyper.get("weight_decay") or 0) > 0]
        if not decayed:
            return []
        flat = []
        unknown = 0
        for s in decayed:
            shape = s.shape if s.shape is not None else shapes.get(pmap.names.get((s.optimizer, s.pid), ""))
            if shape is None:
                unknown += 1
            elif len(shape) <= 1:
                flat.append(pmap.name(s))
        if not flat:
            if unknown == len(decayed):
                raise Skip("parameter shapes unknown (no optimizer moments and no matching weights)")
            return []
        coupled = any("betas" in s.hyper and s.hyper.get("decoupled_weight_decay") is False for s in decayed)
        wd = max(float(s.hyper["weight_decay"]) for s in decayed)
        return [
            self.report(
                ctx,
                title=f"weight decay {fmt(wd)} applied to {len(flat)} bias/norm tensor(s): {listed(flat, 4)}",
                confidence=0.9 if pmap.exact else 0.75,
                where=flat[0],
                evidence={
                    "decayed_1d_tensors": len(flat),
                    "decayed_tensors": len(decayed),
                    "weight_decay": wd,
                    "coupled_adam_l2": coupled,
                    "examples": flat[:8],
                    "names_certain": pmap.exact,
                },
            )
        ]


class AdamEpsUnderflow(Probe):
    """Adam's eps is too small for the dtype its moments are stored in.

    Symptom:
        The optimizer keeps exp_avg_sq in fp16 or bf16 and eps is below what
        that dtype can add to sqrt(v): in fp16 the default 1e-8 rounds to 0,
        so parameters whose second moment is tiny take unbounded steps.
    Root causes:
        - AdamW's fp32 default eps=1e-8 kept while the optimizer state was cast to half precision
        - a pure-fp16/bf16 model (model.half()) with the optimizer built on half-precision parameters
    Fix:
        - raise eps: 1e-7 or more for fp16 optimizer state, about 1e-6 for bf16
        - keep fp32 master weights and optimizer state (AMP autocast, FSDP MixedPrecision, DeepSpeed bf16 with fp32 master)
    Example:
        exp_avg_sq is float16 and eps=1e-8 (rounds to 0.0 in float16).
    """

    code, severity = "adam_eps_underflow", "warning"
    #: Smallest eps that still does its job, per optimizer-state dtype (O10).
    defaults = {"float16": 1e-7, "bfloat16": 1e-6}
    explains = ("diverge", "spike", "oscillate")
    cause_pattern = r"\beps\b|epsilon"

    def probe(self, ctx: ReplayContext) -> list[Finding]:
        _need_optimizer(ctx)
        pmap = ctx.params()
        adam = [s for s in pmap.slots if "eps" in s.hyper and isinstance(s.state.get("exp_avg_sq"), torch.Tensor)]
        if not adam:
            raise Skip("no Adam-style second moments (exp_avg_sq) in the optimizer state")
        bad: dict[str, dict] = {}
        for s in adam:
            dtype = s.state["exp_avg_sq"].dtype
            eps = float(s.hyper["eps"])
            floor = self.params.get(str(dtype).replace("torch.", ""))
            if floor is not None and eps < floor:
                key = str(dtype).replace("torch.", "")
                entry = bad.setdefault(key, {"eps": eps, "tensors": 0, "eps_in_dtype": float(torch.tensor(eps, dtype=dtype)), "min_eps": floor})
                entry["tensors"] += 1
        if not bad:
            return []
        dtype, info = next(iter(bad.items()))
        rounds = " (rounds to 0)" if info["eps_in_dtype"] == 0 else ""
        return [
            self.report(
                ctx,
                title=f"Adam eps {fmt(info['eps'])} with {dtype} moments{rounds}: below {fmt(info['min_eps'])}",
                confidence=0.9,
                where=dtype,
                evidence={"state_dtype": dtype, **info, "adam_tensors": len(adam)},
            )
        ]


class NotInOptimizer(Probe):
    """Trainable parameters the optimizer never updates.

    Symptom:
        Parameters that appear in no param group, or that sit in a group but
        have no optimizer state although the others do (they never received a
        gradient), so they keep their initial values.
    Root causes:
        - a submodule (often a new head) was never passed to the optimizer, or the optimizer was built before the module was added
        - the optimizer was built before model.to(device) and holds stale copies
        - params frozen with requires_grad=False, or unused in forward, so they never get a gradient (intended for a frozen backbone)
    Fix:
        - build the optimizer after model.to(device) from [p for p in model.parameters() if p.requires_grad] and assert every trainable parameter is in a group
        - if the parameters are meant to be frozen, also leave them out of the optimizer; if not, set requires_grad=True
    Example:
        `head.weight`, `head.bias` are in no param group (2 of 14 tensors).
    """

    code, severity = "not_in_optimizer", "warning"
    explains = ("flat",)
    cause_pattern = r"not in the optimi[sz]er|param(eter)? group|never passed|optimi[sz]er built before"

    def probe(self, ctx: ReplayContext) -> list[Finding]:
        _need_optimizer(ctx)
        pmap = ctx.params()
        if not pmap.params:
            raise Skip("no parameter list (no model weights in the checkpoint and no --model)")
        frozen = ctx.target.frozen if ctx.target is not None else set()
        missing = [n for n in pmap.unassigned() if n not in frozen] if len(pmap.params) > len(pmap.slots) else []
        stateful = [s for s in pmap.slots if s.state]
        # frozen tensors left in a group are frozen_in_optimizer's finding, not this one's
        stateless = [n for n in (pmap.name(s) for s in pmap.slots if not s.state) if n not in frozen] if stateful else []
        if not missing and not stateless:
            return []
        if pmap.source == "checkpoint" and not stateless and not any(_looks_like_parameter(n, pmap) for n in missing):
            return [self._buffers(ctx, missing, pmap)]
        exact = pmap.exact
        parts = []
        if missing:
            parts.append(f"{len(missing)} tensor(s) in no param group ({listed(missing, 3)})" if exact else f"{len(pmap.params) - len(pmap.slots)} tensor(s) in no param group")
        if stateless:
            parts.append(f"{len(stateless)} in a group but never stepped ({listed(stateless, 3)})")
        return [
            self.report(
                ctx,
                title="; ".join(parts),
                confidence=0.9 if pmap.source == "model" else 0.65,
                where=(missing or stateless)[0],
                evidence={
                    "not_in_any_group": missing[:20] if exact else len(pmap.params) - len(pmap.slots),
                    "never_stepped": stateless[:20],
                    "parameters": len(pmap.params),
                    "optimizer_slots": len(pmap.slots),
                    "parameter_list_from": pmap.source,
                },
            )
        ]


    def _buffers(self, ctx: ReplayContext, names: list[str], pmap) -> Finding:
        """Without --model, tensors outside every group that look like buffers: reported, not blamed."""
        return self.report(
            ctx,
            title=f"{len(names)} float tensor(s) in no param group look like registered buffers ({listed(names, 3)}); pass --model to be sure",
            confidence=0.4,
            where=names[0],
            severity="info",
            evidence={"not_in_any_group": names[:20], "parameters": len(pmap.params), "optimizer_slots": len(pmap.slots), "parameter_list_from": pmap.source},
        )


def _looks_like_parameter(name: str, pmap) -> bool:
    """Could a checkpoint tensor outside every param group be a parameter rather than a buffer?

    Without --model, any float tensor that is no well-known buffer counts as a candidate, so
    registered constants (detectron2's pixel_mean / pixel_std, masks, tables) would be blamed.
    Parameters are named ...weight / ...bias, or are matrices and embeddings (two or more
    dimensions larger than 1); a (3, 1, 1) mean is neither.
    """
    leaf = name.rsplit(".", 1)[-1].lower()
    if leaf.endswith(("weight", "bias")):
        return True
    shape = dict(pmap.params).get(name, ())
    return sum(d > 1 for d in shape) >= 2


class FrozenInOptimizer(Probe):
    """Frozen parameters (requires_grad=False) are still in the optimizer and still move.

    Symptom:
        With --model, parameters the model marks requires_grad=False sit in a
        param group that applies weight decay, or carry momentum / Adam state:
        the optimizer keeps changing weights that were meant to stay fixed.
    Root causes:
        - requires_grad was set to False after the optimizer was built from model.parameters(), so the frozen tensors stayed in its groups
        - a zero (not None) gradient on frozen tensors lets weight decay and momentum keep updating them
    Fix:
        - build the optimizer from [p for p in model.parameters() if p.requires_grad], or rebuild it after freezing
        - set p.grad = None for frozen tensors (zero_grad(set_to_none=True)) and give them weight_decay=0 if they must stay in a group
    Example:
        `backbone.0.weight` (frozen) is in group0 with weight_decay 0.01 and has Adam moments.
    """

    code, severity = "frozen_in_optimizer", "warning"
    explains = ()

    def probe(self, ctx: ReplayContext) -> list[Finding]:
        _need_optimizer(ctx)
        if ctx.target is None:
            raise Skip("needs --model to know which parameters are frozen")
        pmap = ctx.params()
        moving = [
            pmap.name(s)
            for s in pmap.slots
            if pmap.names.get((s.optimizer, s.pid)) in ctx.target.frozen
            and (float(s.hyper.get("weight_decay") or 0) > 0 or bool(s.state))
        ]
        if not moving:
            return []
        return [
            self.report(
                ctx,
                title=f"{len(moving)} frozen tensor(s) still updated by the optimizer: {listed(moving, 4)}",
                confidence=0.85 if pmap.exact else 0.65,
                where=moving[0],
                evidence={"frozen_in_optimizer": moving[:20], "frozen": len(ctx.target.frozen), "names_certain": pmap.exact},
            )
        ]
