"""Update-to-weight ratio per tensor: ||lr * update|| / ||w||, healthy around 1e-3 (O22).

The LR used is the one each group was configured with (the scheduler's peak,
`initial_lr` / `max_lr`): a scheduler at its floor is scheduler_exhausted's
finding, not a too-low LR. Measured when the model and a batch are given (one step of the rebuilt
optimizer with its saved moments, on a copy of the model); otherwise estimated
from the checkpoint alone: for Adam the next update is lr * m_hat / (sqrt(v_hat)
+ eps) (+ lr * wd * w for AdamW), for momentum SGD lr * momentum_buffer.
"""
from __future__ import annotations

import math
import statistics

import torch

from ..model import Finding
from .optim_rebuild import build_optimizer
from .probe import Probe, ReplayContext, Skip, configured_lr, fmt, listed, state_number
from .static_optim import gradless
from .target import train_mode


def estimated_ratios(ctx: ReplayContext) -> dict[str, float]:
    """Per-tensor ratio of the next update predicted from the saved optimizer moments."""
    pmap = ctx.params()
    out: dict[str, float] = {}
    for slot in pmap.slots:
        name = pmap.names.get((slot.optimizer, slot.pid))
        w = ctx.ckpt.model.get(name) if name else None
        lr = configured_lr(slot.hyper)
        if w is None or lr is None:
            continue
        w = w.detach().double()
        wnorm = float(w.norm())
        if wnorm == 0 or not math.isfinite(wnorm):
            continue
        st = slot.state
        if isinstance(st.get("exp_avg"), torch.Tensor) and isinstance(st.get("exp_avg_sq"), torch.Tensor):
            t = max(state_number(st.get("step", 1)) or 1.0, 1.0)
            b1, b2 = (float(b) for b in slot.hyper.get("betas", (0.9, 0.999)))
            m = st["exp_avg"].double() / (1 - b1**t)
            v = st["exp_avg_sq"].double() / (1 - b2**t)
            update = lr * m / (v.sqrt() + float(slot.hyper.get("eps", 1e-8)))
            if slot.hyper.get("decoupled_weight_decay"):
                update = update + lr * float(slot.hyper.get("weight_decay") or 0) * w
        elif isinstance(st.get("momentum_buffer"), torch.Tensor):
            update = lr * st["momentum_buffer"].double()
        else:
            continue
        if update.shape != w.shape:
            continue
        out[name] = float(update.norm()) / wnorm
    return out


def measured_ratios(ctx: ReplayContext) -> dict[str, float]:
    """Per-tensor ratio after one real optimizer step on the batch (model copy, saved moments)."""
    target = ctx.target
    model = target.copy()
    train_mode(model)
    opt, _ = build_optimizer(model, ctx)
    for g in opt.param_groups:  # judge the configured LR, not where a scheduler has taken it
        g["lr"] = configured_lr(g) or g["lr"]
    before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    opt.zero_grad(set_to_none=True)
    loss, _ = target.loss(model)
    if not loss.requires_grad:
        raise Skip("the loss has no grad_fn (see no_grad)")
    loss.backward()
    opt.step()
    out = {}
    for n, p in model.named_parameters():
        if n in before:
            w0 = float(before[n].double().norm())
            if w0 > 0 and math.isfinite(w0):
                out[n] = float((p.detach() - before[n]).double().norm()) / w0
    del model, opt, before
    return out


def ratio_summary(ctx: ReplayContext) -> dict:
    """Ratios, how they were obtained, and their median over weight matrices (computed once)."""

    def compute() -> dict:
        if not ctx.ckpt.optimizers:
            raise Skip("no optimizer state in the checkpoint (its LR and moments are needed)")
        if ctx.target is not None:
            ratios, method = measured_ratios(ctx), "measured after one step"
            shapes = dict(ctx.target.trainable)
        else:
            ratios, method = estimated_ratios(ctx), "estimated from optimizer moments"
            shapes = {n: tuple(t.shape) for n, t in ctx.ckpt.model.items()}
        ratios = {n: r for n, r in ratios.items() if math.isfinite(r)}
        stuck = [n for n in gradless(ctx) if len(shapes.get(n, ())) >= 2]
        if stuck:
            raise Skip(
                f"{len(stuck)} weight matrix(es) never got a gradient (never_updated): "
                "an update ratio over the rest would blame the LR for a model fault"
            )
        if not ratios:
            raise Skip("no tensor with both weights and Adam/momentum state to compare")
        # Weight matrices only: biases and norm shifts start at 0, so their relative updates are huge early on.
        matrices = {n: r for n, r in ratios.items() if len(shapes.get(n, ())) >= 2} or ratios
        return {"ratios": matrices, "method": method, "median": statistics.median(matrices.values())}

    if "ratio_summary" not in ctx.cache:
        try:
            ctx.cache["ratio_summary"] = compute()
        except Skip as why:
            ctx.cache["ratio_summary"] = why
    if isinstance(ctx.cache["ratio_summary"], Skip):
        raise ctx.cache["ratio_summary"]
    return ctx.cache["ratio_summary"]


class _UpdateRatio(Probe):
    """Shared check: the median over weight matrices, or single tensors a further decade out."""

    direction = ""

    def probe(self, ctx: ReplayContext) -> list[Finding]:
        s = ratio_summary(ctx)
        ratios, median = s["ratios"], s["median"]
        limit, factor = self.params["limit"], self.params["outlier_factor"]
        low = self.direction == "low"
        beyond = (lambda r, lim: r < lim) if low else (lambda r, lim: r > lim)
        ordered = sorted(ratios, key=ratios.get, reverse=not low)
        evidence = {"median_ratio": median, "method": s["method"], "limit": limit, "tensors": len(ratios)}
        if beyond(median, limit):
            evidence["extreme"] = {n: ratios[n] for n in ordered[:5]}
            return [
                self.report(
                    ctx,
                    title=f"update/weight ratio {fmt(median)} (median, {s['method']}), {'below' if low else 'above'} {limit:g}",
                    confidence=0.8 if s["method"].startswith("measured") else 0.7,
                    where=ordered[0],
                    evidence=evidence,
                )
            ]
        outliers = [n for n in ordered if beyond(ratios[n], limit / factor if low else limit * factor)]
        if not outliers:
            return []
        evidence["outliers"] = {n: ratios[n] for n in outliers[:8]}
        return [
            self.report(
                ctx,
                title=f"{len(outliers)} tensor(s) with update/weight ratio {'far below' if low else 'far above'} the rest: {listed(outliers, 3)}",
                confidence=0.6,
                where=outliers[0],
                evidence=evidence,
            )
        ]


class UpdateRatioLow(_UpdateRatio):
    """Updates are tiny relative to the weights: the LR is effectively too low.

    Symptom:
        The update-to-weight L2 ratio per weight matrix (healthy near 1e-3)
        has its median below `limit`, or single matrices sit a further
        `outlier_factor` below it: the weights barely change per step.
    Root causes:
        - LR one to three decades too low (copied from another batch size or optimizer, or a too-cautious default)
        - for single tensors: a param group with a far smaller LR, or weights with a huge norm
    Fix:
        - raise the LR (run the LR range test: a decade below where the loss diverges), per param group if only some tensors are low
    Example:
        median ratio 2e-6 with lr 1e-6.
    """

    code, severity, kind, direction = "update_ratio_low", "warning", "static", "low"
    defaults = {"limit": 1e-4, "outlier_factor": 10.0}
    explains = ("crawl", "flat")
    cause_pattern = r"(\blr\b|learning rate)[^.;]*\b(low|small)|too low|under-?step"


class UpdateRatioHigh(_UpdateRatio):
    """Updates are large relative to the weights: the LR is effectively too high.

    Symptom:
        The update-to-weight L2 ratio per weight matrix (healthy near 1e-3)
        has its median above `limit`, or single matrices a further
        `outlier_factor` above it: each step rewrites a visible fraction of
        the weights.
    Root causes:
        - LR too high for this phase (no or too short warmup, LR scaled up with batch size too aggressively)
        - Adam eps too small, so tensors with tiny second moments take huge steps (see adam_eps_underflow)
        - for single tensors: an embedding or head with its own, larger LR
    Fix:
        - lower the LR or lengthen warmup; clip the gradient norm
        - raise Adam eps under half precision; use per-group LRs
    Example:
        median ratio 0.08 with lr 0.1.
    """

    code, severity, kind, direction = "update_ratio_high", "warning", "static", "high"
    #: Above 1e-2 rather than at it: Adam's early steps are sign-like (|m_hat / sqrt(v_hat)| ~ 1),
    #: so ~1e-2 is routine for small weights at lr 1e-3; 3e-2 is clearly past the band.
    defaults = {"limit": 3e-2, "outlier_factor": 10.0}
    explains = ("oscillate", "diverge", "spike", "clip_saturation")
    cause_pattern = r"(\blr\b|learning rate)[^.;]*\b(high|large|big)|too high|over-?step"
