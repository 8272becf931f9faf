"""The LR range test probe: which LRs make progress from the checkpoint weights."""
from __future__ import annotations

import copy
import math

import numpy as np
import torch

from ..model import Finding
from .optim_rebuild import build_optimizer
from .probe import Probe, ReplayContext, Skip, configured_run_lr, fmt
from .target import train_mode, without_dropout


class LrRange(Probe):
    """LR range test: which LRs make progress from the checkpoint weights, and where the loss blows up.

    Symptom:
        For `points` LRs spaced geometrically from `min_lr` to `max_lr`, the
        model restarts from the checkpoint weights with a fresh optimizer of
        the run's kind and takes `steps` updates; the loss afterwards is
        recorded. (Restarting per LR, instead of Smith's single growing-LR
        run, keeps the test honest on a single probe batch, where progress
        would otherwise accumulate.) Suggests a decade below the best LR (a
        few steps on one batch favour large LRs). Fires when the run's
        configured LR is more than `too_low_decades` decades below the
        suggestion, or at/above the LR where the loss ends worse than it started.
    Root causes:
        - an LR copied from a different batch size, optimizer or model, one to three decades off the productive band
        - a scheduler that left the LR at its floor, or a warmup that never ended
    Fix:
        - set the LR near the suggested value (a decade below the best short-horizon LR), then re-check warmup
        - re-run the range test whenever batch size, optimizer or architecture changes
    Example:
        current lr 1e-6; best 3e-2, suggested 3e-3; loss blows up from 1.
    """

    code, severity, kind = "lr_range", "info", "dynamic"
    defaults = {"min_lr": 1e-7, "max_lr": 10.0, "points": 22, "steps": 5, "too_low_decades": 2.0}
    explains = ("crawl", "flat", "oscillate", "diverge", "spike")
    LOW = r"(\blr\b|learning rate)[^.;]*\b(low|small)|too low|under-?step"
    HIGH = r"(\blr\b|learning rate)[^.;]*\b(high|large|big)|too high|over-?step"

    def confirms(self, finding: Finding) -> list[tuple[str, str]]:
        verdict = finding.evidence.get("verdict")
        if verdict == "too_low":
            return [("crawl", self.LOW), ("flat", self.LOW)]
        if verdict == "too_high":
            return [(c, self.HIGH) for c in ("oscillate", "diverge", "spike")]
        return []

    def rules_out(self, outcome) -> list[tuple[str, str]]:
        verdicts = {f.evidence.get("verdict") for f in outcome.findings}
        low = [("crawl", self.LOW), ("flat", self.LOW)]
        if "in_band" in verdicts:
            return low + [(c, self.HIGH) for c in ("oscillate", "diverge", "spike")]
        if "no_descent" in verdicts:
            return low
        return []

    def sweep(self, ctx: ReplayContext) -> tuple[float, list[tuple[float, float]], str]:
        """(start loss, [(lr, loss after `steps` updates)], optimizer kind), stopping once past divergence."""
        target = ctx.target
        model = without_dropout(target.copy())
        train_mode(model)
        start = copy.deepcopy(model.state_dict())
        with torch.no_grad():
            start_loss = float(target.loss(model)[0])
        curve: list[tuple[float, float]] = []
        kind = ""
        lrs = np.geomspace(self.params["min_lr"], self.params["max_lr"], int(self.params["points"]))
        for i, lr in enumerate(lrs):
            if ctx.out_of_time():
                ctx.cache["lr_range_cut"] = f"--budget spent after {i} of {len(lrs)} LRs (up to {fmt(curve[-1][0]) if curve else 'none'})"
                break
            ctx.progress(f"replay: lr_range {i + 1}/{len(lrs)} (lr {float(lr):.2g})")
            model.load_state_dict(start)
            opt, kind = build_optimizer(model, ctx, fresh=True)
            for g in opt.param_groups:
                g["lr"] = float(lr)
            for i in range(int(self.params["steps"])):
                opt.zero_grad(set_to_none=True)
                loss, _ = target.loss(model, target.batches[i % len(target.batches)])
                if not loss.requires_grad or not torch.isfinite(loss):
                    break
                loss.backward()
                opt.step()
            with torch.no_grad():
                after = float(target.loss(model)[0])
            curve.append((float(lr), after if math.isfinite(after) else math.inf))
            if len(curve) >= 2 and min(curve[-1][1], curve[-2][1]) > start_loss:
                if any(v < start_loss for _, v in curve):
                    break
        del model, start
        return start_loss, curve, kind

    def probe(self, ctx: ReplayContext) -> list[Finding]:
        start_loss, curve, kind = self.sweep(ctx)
        if not math.isfinite(start_loss):
            raise Skip("the loss at the checkpoint weights is not finite (see nan_source)")
        if len(curve) < 2:
            raise Skip(ctx.cache.get("lr_range_cut", "fewer than two LRs tried"))
        best_lr, best = min(curve, key=lambda c: c[1])
        ctx.cache["lr_range_best_lr"] = best_lr  # overfit_batch_failed tries it too
        blowup = next((lr for lr, v in curve if lr > best_lr and v > start_loss), None)
        suggested = best_lr / 10
        current = configured_run_lr(ctx)
        evidence = {
            "suggested_lr": suggested,
            "best_lr": best_lr,
            "blowup_lr": blowup,
            "configured_lr": current,
            "optimizer": kind,
            "start_loss": start_loss,
            "best_loss": best,
            "loss_by_lr": {f"{lr:.2g}": float(f"{v:.4g}") for lr, v in curve},
        }
        if "lr_range_cut" in ctx.cache:
            evidence["cut"] = ctx.cache["lr_range_cut"]
        if not best < 0.98 * start_loss:
            evidence["verdict"] = "no_descent"
            return [self.report(ctx, title=f"LR range test: no LR in {self.params['min_lr']:g}..{fmt(curve[-1][0])} lowers the loss (not an LR problem)", confidence=0.6, where=None, severity="warning", evidence=evidence)]
        if current is None:
            evidence["verdict"] = "unknown"
            return [self.report(ctx, title=f"LR range test: suggested lr {fmt(suggested)} (best short-run lr {fmt(best_lr)})", confidence=0.6, where=None, evidence=evidence)]
        # Against the suggestion, not the best short-run LR: a few steps from one batch favour LRs a
        # decade or more above what a whole run can use, which is why the suggestion is a decade lower.
        if current < suggested / 10 ** self.params["too_low_decades"]:
            evidence["verdict"] = "too_low"
            title = f"configured lr {fmt(current)} is {fmt(suggested / current)}x below the suggested lr {fmt(suggested)} (best short-run lr {fmt(best_lr)})"
        elif blowup is not None and current >= blowup:
            evidence["verdict"] = "too_high"
            title = f"configured lr {fmt(current)} is at or past where the loss blows up ({fmt(blowup)}; suggested {fmt(suggested)})"
        else:
            evidence["verdict"] = "in_band"
            return [self.report(ctx, title=f"configured lr {fmt(current)} is within the productive band (suggested {fmt(suggested)})", confidence=0.6, where=None, evidence=evidence)]
        return [self.report(ctx, title=title, confidence=0.7, where=None, severity="warning", evidence=evidence)]

