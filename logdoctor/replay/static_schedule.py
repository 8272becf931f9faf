"""Static probes on the saved LR scheduler and AMP GradScaler."""
from __future__ import annotations

import math
from typing import Any

from ..model import Finding
from .plan import early_floor, progress
from .probe import Probe, ReplayContext, Skip, fmt, planned_total, state_number


def schedule_position(state: dict[str, Any]) -> dict[str, Any]:
    """Where one scheduler stands: position, planned total (if it has one), LR as a fraction of its base."""
    out: dict[str, Any] = {"last_epoch": state_number(state.get("last_epoch"))}
    total = planned_total(state)
    if total:
        out["planned_total"], out["family"] = total
    base = [b for b in state.get("base_lrs", []) if isinstance(b, (int, float))]
    last = [x for x in state.get("_last_lr", []) if isinstance(x, (int, float))]
    ratios = [lr / b for lr, b in zip(last, base) if b > 0]
    if ratios:
        out["lr_fraction_of_base"] = max(ratios)
        out["last_lr"] = max(last)
    return out


class SchedulerExhausted(Probe):
    """The LR scheduler sits at its floor, or was stepped past its planned total.

    Symptom:
        The saved scheduler has stepped beyond the length it was built for
        (last_epoch > T_max / total_steps, or total_iters of a decaying
        PolynomialLR / LinearLR; a warmup's total_iters is no run length), or its LR is at a
        small fraction of the base LR while the run still had a large part of
        its planned steps to go, or it has stepped `cadence_ratio` or more
        times per update the optimizer actually applied (Adam's step count).
    Root causes:
        - the schedule was sized in epochs (or in optimizer steps) but stepped every batch (or every micro-batch under gradient accumulation), so it ran out early
        - T_max / num_training_steps computed from the wrong dataset length, batch size or epoch count
        - under AMP, many optimizer steps skipped by the GradScaler while the scheduler kept stepping
        - a cosine schedule stepped past T_max climbs back up (it is periodic), giving an unplanned second cycle
    Fix:
        - step the scheduler at the granularity its total was computed in: per optimizer step for warmup/cosine/OneCycle (inside the accumulation boundary), per epoch for epoch schedulers
        - compute the total as epochs x ceil(len(loader) / accum_steps) and log the actual LR every step
    Example:
        CosineAnnealingLR with T_max=1000 at last_epoch=9000; or LR at 1 % of base at step 2,000 of 10,000.
    """

    code, severity = "scheduler_exhausted", "warning"
    defaults = {"floor_fraction": 0.05, "remaining_fraction": 0.1, "cadence_ratio": 1.5}
    explains = ("lr_schedule_mismatch", "crawl", "flat")
    cause_pattern = r"schedul|floor|t_max|total_steps|cadence|stepped"
    ruled_out_pattern = r"floor|scheduler length|t_max"

    def probe(self, ctx: ReplayContext) -> list[Finding]:
        positions = [(f"scheduler{i}", schedule_position(state), optimizer_steps(ctx, i)) for i, state in enumerate(ctx.ckpt.schedulers)]
        if not positions:  # no scheduler state saved (timm): the groups' LR against the initial_lr it set
            positions = [("param groups", pos, None) for pos in group_positions(ctx)]
        logged = self._logged_floor(ctx)
        if not positions and logged is None:
            raise Skip("no scheduler state, no scheduler-set initial_lr and no logged LR in the checkpoint")
        findings = [logged] if logged else []
        checked = logged is not None
        for where, pos, opt_steps in positions:
            where += f" ({pos['family']})" if "family" in pos else ""
            evidence = {k: v for k, v in pos.items() if k != "family"}
            checks = (self._past_total(pos), self._floor_early(ctx, pos), self._cadence(pos, opt_steps))
            checked = checked or any(c is not None for c in checks)
            problem = next((c for c in checks if c), None)
            if problem and not logged:
                title, confidence, extra = problem
                findings.append(self.report(ctx, title=title, confidence=confidence, where=where, evidence={**evidence, **extra}))
        if not checked:
            raise Skip("the scheduler state has no planned total, and neither the run's planned steps nor the optimizer's step count are known")
        return findings

    def _logged_floor(self, ctx: ReplayContext) -> Finding | None:
        """The trainer's own LR log (HF) reaching its floor early, whichever checkpoint this is."""
        found = early_floor(ctx.ckpt.lr_log, ctx.ckpt.planned_steps, self.params["floor_fraction"], self.params["remaining_fraction"])
        if found is None:
            return None
        step, total = found["floor_from_step"], found["planned_steps"]
        title = f"the logged LR fell to its floor ({fmt(found['lr_at_floor'])}, peak {fmt(found['peak_lr'])}) at step {step:,} of {total:,} planned, and stayed there"
        return self.report(ctx, title=title, confidence=0.9, where="logged learning_rate", evidence=found)

    # Each check returns None (cannot tell), () (fine) or (title, confidence, extra evidence).

    def _past_total(self, pos: dict):
        last, total = pos["last_epoch"], pos.get("planned_total")
        if last is None or not total:
            return None
        if last <= total:
            return ()
        return f"scheduler stepped {fmt(last)} times, {fmt(last / total)}x its planned total of {fmt(total)}", 0.9, {}

    def _floor_early(self, ctx: ReplayContext, pos: dict):
        frac, done = pos.get("lr_fraction_of_base"), progress(ctx.ckpt)
        if frac is None or done is None:
            return None
        remaining = 1 - done
        if frac > self.params["floor_fraction"] or remaining < self.params["remaining_fraction"]:
            return ()
        ckpt = ctx.ckpt
        if ckpt.planned_steps and ckpt.step is not None:
            at, evidence = f"the run's {ckpt.planned_steps:,} steps", {"step": ckpt.step, "planned_steps": ckpt.planned_steps}
        else:
            at, evidence = f"the run's {ckpt.planned_epochs} epochs", {"epochs_done": ckpt.epochs_done, "planned_epochs": ckpt.planned_epochs}
        return f"LR at {frac:.1%} of its base with {remaining:.0%} of {at} to go", 0.85, evidence

    def _cadence(self, pos: dict, opt_steps: int | None):
        last = pos["last_epoch"]
        if last is None or not opt_steps:
            return None
        ratio = last / opt_steps
        if ratio < self.params["cadence_ratio"]:
            return ()
        title = (
            f"scheduler stepped {fmt(last)} times but the optimizer only {opt_steps}: {fmt(ratio)}x per optimizer step "
            "(stepped per micro-batch, or steps skipped by the GradScaler)"
        )
        return title, 0.8, {"optimizer_steps": opt_steps, "scheduler_steps_per_optimizer_step": ratio}


def group_positions(ctx: ReplayContext) -> list[dict[str, Any]]:
    """Per optimizer, its LR as a fraction of the `initial_lr` a scheduler recorded in its groups."""
    out = []
    for opt in ctx.ckpt.optimizers:
        pairs = [(state_number(g.get("lr")), state_number(g.get("initial_lr"))) for g in opt.get("param_groups", [])]
        ratios = [lr / base for lr, base in pairs if lr is not None and base]
        if ratios:
            out.append({"last_epoch": None, "lr_fraction_of_base": max(ratios), "last_lr": max(lr for lr, base in pairs if lr is not None and base)})
    return out


def optimizer_steps(ctx: ReplayContext, index: int) -> int | None:
    """Updates the optimizer really applied: the largest per-parameter `step` in its state (Adam, RMSprop...)."""
    if not ctx.ckpt.optimizers:
        return None
    opt = ctx.ckpt.optimizers[min(index, len(ctx.ckpt.optimizers) - 1)]
    steps = [state_number(st.get("step")) for st in opt.get("state", {}).values() if isinstance(st, dict)]
    steps = [s for s in steps if s is not None]
    return int(max(steps)) if steps else None


def applied_steps(ctx: ReplayContext) -> int | None:
    """Updates the optimizers applied, counted the way the checkpoint's step counter counts them.

    Lightning's global_step counts every optimizer's steps (a GAN's generator and discriminator
    each add one), so its optimizers' counts add up; a hand-written loop steps each optimizer once
    per iteration, so the most-stepped one is the iteration count.
    """
    counts = [c for c in (optimizer_steps(ctx, i) for i in range(len(ctx.ckpt.optimizers))) if c is not None]
    if not counts:
        return None
    return sum(counts) if ctx.ckpt.layout == "lightning" else max(counts)


#: The largest GradScaler init_scale assumed (the default is 2**16): generous, so that only a scale
#: no configuration could reach rules skipped steps out.
MAX_INIT_SCALE = 2.0**24


def skips_possible(state: dict[str, Any], scale: float, steps: int, skips: int) -> bool:
    """Could the scaler have skipped `skips` of `steps` steps and still sit at `scale`?

    Every skipped step multiplies the scale by backoff_factor (0.5); growing it back takes
    growth_interval clean steps per growth_factor. A scale above what that allows means the steps
    were not skipped: the step counter counts something else (micro-batches under gradient
    accumulation, several optimizers), and inferring skips from it would be a false alarm.
    """
    if skips <= 0 or scale <= 0:
        return True
    growth = state_number(state.get("growth_factor")) or 2.0
    backoff = state_number(state.get("backoff_factor")) or 0.5
    interval = state_number(state.get("growth_interval")) or 2000.0
    if not (growth > 1 and 0 < backoff < 1):
        return True
    highest = math.log2(MAX_INIT_SCALE) + ((steps - skips) // interval) * math.log2(growth) + skips * math.log2(backoff)
    return math.log2(scale) <= highest


class ScalerCollapse(Probe):
    """The saved AMP GradScaler scale has collapsed.

    Symptom:
        The GradScaler's scale is at or below a few units (it starts at 65536
        and only halves on an overflowing step), or far below its start with
        the growth tracker at 0: it just backed off again. Steps with inf/NaN
        gradients are skipped, so the weights stop moving while the loss still
        prints. Also fires when the optimizer's own step count (Adam's `step`;
        summed over optimizers for Lightning, whose global_step counts each
        optimizer's steps) is at least `skipped_fraction` behind the training
        step counter: that share of the steps was skipped. Not when the saved
        scale is too high for that many skips (each one halves it): then the
        counter counts micro-batches or something else, not skipped steps.
    Root causes:
        - fp16 activations or logits exceed 65504 every step, so every gradient overflows and every step is skipped
        - a NaN/Inf in the weights or the loss makes every step overflow, whatever the scale
    Fix:
        - switch fp16 to bf16 autocast (no scaler needed), or keep the overflowing block (final logits, attention) in fp32
        - log scaler.get_scale() and a skipped-step count; do not lower init_scale to hide it
    Example:
        scale 0.5 with growth tracker 0 at step 12,000.
    """

    code, severity = "scaler_collapse", "critical"
    defaults = {"collapsed_scale": 8.0, "low_scale": 256.0, "skipped_fraction": 0.2}
    explains = ("scaler_collapse", "flat", "diverge", "crawl")
    cause_pattern = r"scal|fp16|\bamp\b|mixed precision|overflow|skipp"
    ruled_out_pattern = ""  # a healthy saved scale may predate the collapse the logs show

    def probe(self, ctx: ReplayContext) -> list[Finding]:
        state = ctx.ckpt.scaler
        if not isinstance(state, dict) or state_number(state.get("scale")) is None:
            raise Skip("no GradScaler state in the checkpoint")
        scale = state_number(state["scale"])
        tracker = state_number(state.get("_growth_tracker"))
        evidence = {"scale": scale, "growth_tracker": tracker, "log2_scale": round(math.log2(scale), 2) if scale > 0 else None}
        applied, step = applied_steps(ctx), ctx.ckpt.step
        skipped = 1 - applied / step if applied is not None and step else None
        if skipped is not None:
            evidence.update(optimizer_steps=applied, training_steps=step, skipped_fraction=max(0.0, skipped))
            if not skips_possible(state, scale, step, step - applied):
                evidence["skipped_fraction_ruled_out_by_scale"] = True
                skipped = None
        if scale <= self.params["collapsed_scale"]:
            return [self.report(ctx, title=f"GradScaler scale collapsed to {fmt(scale)} (starts at 65536)", confidence=0.95, where="scaler", evidence=evidence)]
        if skipped is not None and skipped >= self.params["skipped_fraction"]:
            title = f"{skipped:.0%} of {step:,} training steps never reached the weights (optimizer stepped {applied:,} times; scale {fmt(scale)})"
            return [self.report(ctx, title=title, confidence=0.85, where="scaler", evidence=evidence)]
        if scale <= self.params["low_scale"] and tracker == 0:
            return [
                self.report(
                    ctx,
                    title=f"GradScaler scale {fmt(scale)}, far below 65536, and it just backed off again (growth tracker 0)",
                    confidence=0.7,
                    where="scaler",
                    severity="warning",
                    evidence=evidence,
                )
            ]
        return []
