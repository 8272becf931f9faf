"""Static probes on the saved optimizer: param groups, weight decay, eps, coverage."""
from __future__ import annotations

import torch

from ..model import Finding
from .probe import Probe, ReplayContext, Skip, fmt, listed, state_number

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
        Fires when a group's LR is 0 after training started and no scheduler
        took it there (or its scheduler was never stepped): its parameters are
        not being updated. An LR a scheduler annealed to 0 is reported, not
        blamed: at the end of the planned run it is the plan, and before the
        end scheduler_exhausted judges it against the planned length.
    Root causes:
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
        zero: list[str] = []
        annealed: list[str] = []
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
                    if _annealed(ctx, oi, gi, g):
                        annealed.append(label)
        started = ctx.ckpt.step is None or ctx.ckpt.step > 0
        lrs = ", ".join(f"{e['group']} {e['optimizer']} lr {fmt(e.get('lr', float('nan')))}" for e in groups[:4])
        blamed = [z for z in zero if z not in annealed] if started and not ctx.finished() else []
        if blamed:
            return [
                self.report(
                    ctx,
                    title=f"LR is 0 in {listed(blamed)} and no scheduler annealed it: those parameters are not being updated",
                    confidence=0.9,
                    where=blamed[0],
                    severity="warning",
                    evidence={"groups": groups},
                )
            ]
        if zero:
            end = "at the end of its planned run" if ctx.finished() else "(scheduler_exhausted judges whether that was early)"
            lrs += f"; {listed(zero)} annealed to LR 0 by the scheduler {end}"
        return [self.report(ctx, title=f"optimizer state: {lrs}", confidence=1.0, where=None, evidence={"groups": groups})]


def _annealed(ctx: ReplayContext, oi: int, gi: int, group: dict) -> bool:
    """Did a scheduler take this group's LR to 0 from a positive start, stepping as it went?

    Every torch and timm scheduler records the group's starting LR as `initial_lr`; a saved
    scheduler state that never stepped (last_epoch 0) while training did is a missing
    scheduler.step(), not an anneal.
    """
    states = [s for s in ctx.ckpt.schedulers if isinstance(s, dict)]
    state = states[min(oi, len(states) - 1)] if states else None
    if state is not None:
        bases = state.get("base_lrs") or []
        base = bases[gi] if gi < len(bases) else None
        stepped = (state_number(state.get("last_epoch")) or 0) > 0
        return stepped and isinstance(base, (int, float)) and base > 0
    initial = group.get("initial_lr")
    return isinstance(initial, (int, float)) and not isinstance(initial, bool) and initial > 0


class DecayOnNormBias(Probe):
    """Weight decay is applied to biases and normalisation weights (a best-practice note).

    Symptom:
        One-dimensional parameters (biases, LayerNorm/BatchNorm gains and
        shifts) sit in a param group with weight_decay > 0. Reported as info:
        many good runs decay everything (it is torch's default with one param
        group), so it is worth fixing, not a cause of this run's trouble.
    Root causes:
        - the optimizer was built from model.parameters() in one group, so weight decay shrinks norm gains and biases toward 0
        - Adam(weight_decay=...) used as if it were AdamW: coupled L2 decay passes through the adaptive preconditioner
    Fix:
        - two param groups: weight_decay on p.dim() >= 2 tensors, weight_decay=0.0 on biases and norm weights (nanoGPT's rule)
        - use torch.optim.AdamW (decoupled decay) instead of Adam(weight_decay=...)
    Example:
        12 of 30 decayed tensors are 1-D (ln_1.weight, attn.c_attn.bias...) with weight_decay 0.1.
    """

    code, severity = "decay_on_norm_bias", "info"
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
                advice=True,
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
        The optimizer keeps exp_avg_sq in fp16 or bf16 and eps rounds to 0 in
        that dtype (fp16's default 1e-8 does), so parameters whose second
        moment is tiny take unbounded steps. An eps that is representable but
        below the dtype's usual minimum (bf16 with 1e-8) is a note, not a
        warning: it does not underflow.
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
        dtype, info = max(bad.items(), key=lambda kv: kv[1]["eps_in_dtype"] == 0)
        underflows = info["eps_in_dtype"] == 0
        rounds = " (rounds to 0)" if underflows else f" (representable in {dtype}: a note, it does not underflow)"
        return [
            self.report(
                ctx,
                title=f"Adam eps {fmt(info['eps'])} with {dtype} moments{rounds}: below {fmt(info['min_eps'])}",
                confidence=0.9 if underflows else 0.6,
                where=dtype,
                severity=None if underflows else "info",
                advice=True,
                evidence={"state_dtype": dtype, **info, "adam_tensors": len(adam)},
            )
        ]


class NotInOptimizer(Probe):
    """Trainable parameters the optimizer never updates.

    Symptom:
        Parameters that appear in no param group keep their initial values.
        Frozen parameters are meant to be left out, so this fires only when
        the left-out tensors are not frozen: with --model, they require grad;
        without it, they are not the input-side block a frozen backbone is
        (the HF Trainer only ever optimises parameters that require grad, so
        there nothing left out is a fault). Those cases are reported as info.
    Root causes:
        - a submodule (often a new head) was never passed to the optimizer, or the optimizer was built before the module was added
        - the optimizer was built before model.to(device) and holds stale copies
    Fix:
        - build the optimizer after model.to(device) from [p for p in model.parameters() if p.requires_grad] and assert every trainable parameter is in a group
        - if the parameters are meant to be frozen, set requires_grad=False on them as well
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
        if not missing:
            return []
        if pmap.source == "checkpoint" and not any(_looks_like_parameter(n, pmap) for n in missing):
            return [self._buffers(ctx, missing, pmap)]
        exact = pmap.exact
        count = len(missing) if exact else len(pmap.params) - len(pmap.slots)
        evidence = {
            "not_in_any_group": missing[:20] if exact else count,
            "parameters": len(pmap.params),
            "optimizer_slots": len(pmap.slots),
            "parameter_list_from": pmap.source,
        }
        left_out = _left_out_on_purpose(ctx, pmap, missing)
        if left_out:
            title = f"{count} tensor(s) in no param group ({listed(missing, 3)}): {left_out}"
            return [self.report(ctx, title=title, confidence=0.6, where=missing[0], severity="info", evidence=evidence)]
        title = f"{count} tensor(s) in no param group ({listed(missing, 3)})" if exact else f"{count} tensor(s) in no param group"
        return [self.report(ctx, title=title, confidence=0.9 if pmap.source == "model" else 0.65, where=missing[0], evidence=evidence)]

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


def _left_out_on_purpose(ctx: ReplayContext, pmap, missing: list[str]) -> str:
    """Why tensors outside every group are most likely frozen on purpose ('' when they are not).

    The HF Trainer builds its optimizer from the parameters that require grad, so whatever it left
    out was frozen. Without --model, a frozen backbone shows as a block on the input side with the
    output side optimised; a forgotten module (a new head, the last block added) does not, nor
    does a lone parameter such as a position embedding: a backbone is layers (`*.weight` matrices).
    """
    if ctx.ckpt.layout == "hf_trainer":
        return "the HF Trainer optimises only parameters with requires_grad=True, so these were frozen"
    if pmap.source != "checkpoint" or not pmap.exact:
        return ""
    order = [n for n, _ in pmap.params]
    shapes = dict(pmap.params)
    held = [order.index(n) for n in pmap.names.values() if n in order]
    layers = [n for n in missing if n.endswith(".weight") and len(shapes.get(n, ())) >= 2]
    if held and layers and max(order.index(n) for n in missing) < min(held):
        return "input-side layers with everything after them optimised: looks like a frozen backbone (pass --model to confirm)"
    return ""


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


def gradless(ctx: ReplayContext) -> dict[str, str]:
    """Optimizer-held parameters that never received a gradient, by name: 'no state' (grad None at
    every step, so the optimizer skipped them) or 'zero moments' (grad exactly 0 at every step).

    Only when some parameter has state: an optimizer that never stepped, or one that keeps no
    state (plain SGD), says nothing about gradients.
    """

    def compute() -> dict[str, str]:
        pmap = ctx.params()
        if not any(s.state for s in pmap.slots):
            return {}
        out = {}
        for s in pmap.slots:
            if not s.state:
                out[pmap.name(s)] = "no state"
            elif _zero_moments(s.state):
                out[pmap.name(s)] = "zero moments"
        return out

    return ctx.memo("gradless", compute)


def _zero_moments(state: dict) -> bool:
    """Adam's second moment (or SGD's momentum buffer) exactly 0 after at least one step."""
    for key in ("exp_avg_sq", "momentum_buffer"):
        value = state.get(key)
        if isinstance(value, torch.Tensor) and value.numel():
            return bool((value == 0).all()) and (state_number(state.get("step")) or 1) > 0
    return False


class NeverUpdated(Probe):
    """Parameters in the optimizer that never received a gradient, read from its saved state.

    Symptom:
        A parameter sits in a param group but has no optimizer state while
        others do (its gradient was None at every step, so the optimizer
        skipped it), or its Adam second moment / momentum buffer is exactly 0
        after training (its gradient was exactly 0 at every step). Either way
        it kept its initial values, whatever the LR. Parameters --model marks
        frozen are frozen_in_optimizer's business.
    Root causes:
        - no state: the tensor is unused in forward or cut from the loss (.detach(), a branch never taken, torch.no_grad() around part of forward)
        - zero moments: every unit feeding it is dead (ReLU outputs all zero), or its output is multiplied by 0, so its gradient is exactly 0
    Fix:
        - look for .detach(), no_grad() and unused modules in forward; assert every trainable parameter has a non-zero gradient after the first backward
        - for zero gradients look for dead ReLUs (dead_relu probe): a large negative bias, an LR that was too high, LeakyReLU/GELU instead
    Example:
        `body.0.weight`, `body.0.bias` have no optimizer state while 2 other tensors have Adam moments (gradient None at every step).
    """

    code, severity = "never_updated", "warning"
    explains = ("flat", "crawl")
    cause_pattern = r"detach|graph|no_grad|unused|dead|dying|relu"
    ruled_out_pattern = ""  # gradients reaching every tensor say nothing about the user's loop

    def probe(self, ctx: ReplayContext) -> list[Finding]:
        _need_optimizer(ctx)
        pmap = ctx.params()
        if not any(s.state for s in pmap.slots):
            raise Skip("no parameter has optimizer state (never stepped, or an optimizer that keeps none)")
        frozen = ctx.target.frozen if ctx.target is not None else set()
        found = {n: why for n, why in gradless(ctx).items() if n not in frozen}
        if not found:
            return []
        none = [n for n, why in found.items() if why == "no state"]
        zero = [n for n, why in found.items() if why == "zero moments"]
        parts = []
        if none:
            parts.append(f"{len(none)} with no optimizer state, gradient None at every step ({listed(none, 3)}): unused or detached in forward")
        if zero:
            parts.append(f"{len(zero)} with moments exactly 0, gradient 0 at every step ({listed(zero, 3)}): dead units upstream")
        return [
            self.report(
                ctx,
                title=f"{len(found)} of {len(pmap.slots)} optimised tensor(s) never got a gradient: " + "; ".join(parts),
                confidence=0.85 if pmap.exact else 0.65,
                where=(none or zero)[0],
                evidence={"no_state": none[:20], "zero_moments": zero[:20], "optimizer_slots": len(pmap.slots), "names_certain": pmap.exact},
            )
        ]


class FrozenInOptimizer(Probe):
    """Frozen parameters (requires_grad=False) are still in the optimizer and still move.

    Symptom:
        With --model, parameters the model marks requires_grad=False sit in a
        param group and carry momentum / Adam state: the optimizer keeps
        changing weights that were meant to stay fixed (momentum and weight
        decay act without a gradient). Frozen tensors in a group with no
        state were skipped at every step, so they did not move: reported as
        info.
    Root causes:
        - requires_grad was set to False after the optimizer had stepped them, so their momentum keeps moving them
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
        held = [s for s in pmap.slots if pmap.names.get((s.optimizer, s.pid)) in ctx.target.frozen]
        moving = [pmap.name(s) for s in held if s.state and not _zero_moments(s.state)]
        still = [pmap.name(s) for s in held if pmap.name(s) not in moving]
        evidence = {"frozen_in_optimizer": moving[:20], "frozen_without_state": still[:20], "frozen": len(ctx.target.frozen), "names_certain": pmap.exact}
        if moving:
            return [
                self.report(
                    ctx,
                    title=f"{len(moving)} frozen tensor(s) still updated by the optimizer (they carry its state): {listed(moving, 4)}",
                    confidence=0.85 if pmap.exact else 0.65,
                    where=moving[0],
                    evidence=evidence,
                )
            ]
        if still:
            title = f"{len(still)} frozen tensor(s) sit in a param group but never got a gradient (no state or zero moments): unchanged, harmless; leave them out"
            return [self.report(ctx, title=title, confidence=0.8, where=still[0], severity="info", advice=True, evidence=evidence)]
        return []
