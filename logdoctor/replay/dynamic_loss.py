"""Dynamic probes on the loss itself: its value at initialisation, and whether one batch can be memorised."""
from __future__ import annotations

import copy
import math

import torch
from torch import nn

from ..model import Finding
from .passes import subset
from .probe import Probe, ReplayContext, Skip, configured_run_lr, fmt
from .target import train_mode, without_dropout


class InitLossOff(Probe):
    """The loss of a freshly initialised model is far from log K.

    Symptom:
        With K classes and a correct setup, a newly initialised classifier
        predicts roughly uniformly, so its cross-entropy is about ln K. The
        model built by --model scores far above (over-confident, badly scaled
        logits) or far below (the loss is not the quantity it seems).
    Root causes:
        - badly scaled initialisation of the output layer: large weights or biases give confident, wrong logits
        - the loss gets the wrong input: softmax/log_softmax applied twice, NLLLoss fed raw logits, or probabilities where logits are expected
        - labels do not match the outputs (wrong class count, off-by-one ids)
    Fix:
        - initialise the last layer small (zero or 0.01 std weights, bias at the class prior)
        - feed raw logits to nn.CrossEntropyLoss (no softmax in the model); use log_softmax before NLLLoss
        - check that labels lie in [0, K) and K equals the output width
    Example:
        init loss 14.2 with K=10 (ln K = 2.30).
    """

    code, severity, kind = "init_loss_off", "warning", "dynamic"
    defaults = {"tolerance": 0.5}
    explains = ("init_loss", "crawl", "flat")
    cause_pattern = r"softmax|nllloss|probabilit|\binit"
    ruled_out_pattern = r"\binit|inputs not normali[sz]ed"  # a double softmax still starts near ln K

    def probe(self, ctx: ReplayContext) -> list[Finding]:
        target = ctx.target
        model = target.fresh()
        train_mode(model)
        with torch.no_grad():
            loss, out = target.loss(model)
        k = target.classes(out)
        del model
        if k is None or k < 2:
            raise Skip(f"only checked for cross-entropy / NLL losses (loss is {target.loss_name})")
        value, expected = float(loss), math.log(k)
        tol = self.params["tolerance"]
        evidence = {"init_loss": value, "log_k": expected, "classes": k, "ratio": value / expected}
        if math.isfinite(value) and (1 - tol) * expected <= value <= (1 + tol) * expected:
            return []
        off = abs(math.log(max(value, 1e-12) / expected)) if math.isfinite(value) else 5.0
        return [
            self.report(
                ctx,
                title=f"loss at init {fmt(value)}, expected about ln {k} = {fmt(expected)}",
                confidence=min(0.95, 0.5 + off / 2),
                where="fresh model",
                evidence=evidence,
            )
        ]


class OverfitBatchFailed(Probe):
    """Overfit-one-batch could not drive the loss toward zero, at any LR tried.

    Symptom:
        On 2-32 examples, with dropout off, the model restarts from the
        checkpoint weights for each LR tried (the run's configured LR, the LR
        range test's best LR when it ran, and the grid `lrs`) and takes up to
        `steps` Adam updates on that one batch. The best loss reached stays
        above `target_fraction` of the reference: ln K for a classifier (the
        loss of a uniform guess), else the fresh model's loss, and never less
        than the loss at the checkpoint. A correct model + loss + labels can
        memorise a handful of examples; if it cannot at any LR, no
        hyperparameter will help. The probe runs its own training loop, so it
        says nothing about the user's loop (.item(), no_grad, step order).
    Root causes:
        - the loss does not match the model's outputs: softmax before CrossEntropyLoss, sigmoid before BCELoss, a regression loss on class ids
        - the model cannot fit the examples: an architecture or capacity bug (a bottleneck, a .detach() or frozen block inside forward, dead units)
        - labels that do not correspond to inputs, or lie outside the output's range
    Fix:
        - fix the model or loss before tuning: feed raw logits to the loss, assert loss.requires_grad, check the labels of these exact examples
        - run this test after every model or loss change, with augmentation, dropout and weight decay off
    Example:
        loss 2.31 -> 1.46 at best over lr 1e-3, 3e-3, 1e-2 (goal 0.23 = 10 % of ln 10).
    """

    code, severity, kind = "overfit_batch_failed", "critical", "dynamic"
    defaults = {"examples": 32, "steps": 200, "lrs": [1e-3, 3e-3, 1e-2], "target_fraction": 0.1, "floor": 0.01}
    explains = ("flat", "crawl")
    #: Model/data-level causes only: the probe trains with its own loop, so a fault in the user's loop
    #: (.item()/.detach() on the loss, zero_grad order, a missing step) is invisible to it.
    cause_pattern = r"softmax|nllloss|\blabels?\b|architect|capacity"
    #: What a clean run clears: the model + loss. Not labels (one batch is memorised even when they are
    #: wrong) and not the user's loop, which this test does not run.
    ruled_out_pattern = r"softmax|nllloss"

    def probe(self, ctx: ReplayContext) -> list[Finding]:
        target = ctx.target
        model = without_dropout(target.copy() if target.loaded else target.fresh())
        train_mode(model)
        batch = subset(target.batch, self.params["examples"])
        examples = int(batch[1].shape[0]) if batch[1].dim() else 1
        evidence: dict = {"examples": examples}
        if not any(p.requires_grad for p in model.parameters()):
            return [self._failed(ctx, "no parameter has requires_grad=True: nothing can learn", evidence)]
        with torch.no_grad():
            loss, out = target.loss(model, batch)
        start = float(loss)
        reference, basis = self._reference(target, start, out, batch)
        goal = max(self.params["target_fraction"] * reference, self.params["floor"])
        evidence.update(start_loss=start, reference=reference, reference_is=basis, goal=goal)
        weights = copy.deepcopy(model.state_dict())
        by_lr: dict[str, float] = {}
        lrs = self.candidate_lrs(ctx)
        for i, lr in enumerate(lrs):
            if ctx.out_of_time():
                if not by_lr:
                    raise Skip("the --budget was spent before any LR was tried")
                evidence["cut"] = f"--budget spent after {i} of {len(lrs)} LRs"
                break
            ctx.progress(f"replay: overfit_batch_failed lr {lr:.2g} ({i + 1}/{len(lrs)})")
            model.load_state_dict(weights)
            best, detached = self._fit(model, target, batch, lr, goal)
            if detached:
                return [self._failed(ctx, "the model's loss has no grad_fn: its forward cuts the graph to the parameters", evidence)]
            by_lr[f"{lr:.2g}"] = best
            if best <= goal:
                return []
        del model, weights
        best_lr, best = min(by_lr.items(), key=lambda kv: kv[1] if math.isfinite(kv[1]) else math.inf)
        evidence.update(best_loss=best, best_lr=float(best_lr), loss_by_lr=by_lr, steps=self.params["steps"])
        if "cut" in evidence:  # not every LR was tried: no verdict
            title = f"overfit-one-batch not judged ({evidence['cut']}): loss {fmt(start)} -> {fmt(best)} at best, goal {fmt(goal)}"
            return [self.report(ctx, title=title, confidence=0.3, where="one batch", severity="info", evidence=evidence)]
        title = (
            f"overfit-one-batch failed at every LR tried: loss {fmt(start)} -> {fmt(best)} at best (lr {best_lr}), "
            f"goal {fmt(goal)} = {self.params['target_fraction']:.0%} of {basis} {fmt(reference)}, {examples} examples"
        )
        return [self._failed(ctx, title, evidence)]

    def candidate_lrs(self, ctx: ReplayContext) -> list[float]:
        """The LRs to try, most telling first: the run's own, the LR range test's best, then the grid.

        One fixed LR misjudges models tuned for another (a checkpoint deep in training may only make
        progress at its own LR); trying a few and keeping the best tests the model, not the LR.
        """
        wanted = [configured_run_lr(ctx), ctx.cache.get("lr_range_best_lr"), *self.params["lrs"]]
        lrs: list[float] = []
        for lr in wanted:
            if lr and lr > 0 and all(abs(math.log(lr / seen)) > 0.05 for seen in lrs):
                lrs.append(float(lr))
        return lrs

    def _reference(self, target, start: float, out: torch.Tensor, batch) -> tuple[float, str]:
        """The loss a model that learned nothing would have: ln K for classifiers, else a fresh model's loss.

        Judging against the checkpoint's own loss alone would demand a trained model fall to a tenth of
        an already low loss; the checkpoint's loss still counts when it is worse than a fresh start.
        """
        k = target.classes(out)
        if k and k >= 2:
            return max(start, math.log(k)), f"ln {k}"
        if target.loaded:
            fresh = target.fresh()
            train_mode(fresh)
            with torch.no_grad():
                initial = float(target.loss(fresh, batch)[0])
            del fresh
            if math.isfinite(initial):
                return max(start, initial), "the fresh model's loss"
        return start, "the starting loss"

    def _fit(self, model: nn.Module, target, batch, lr: float, goal: float) -> tuple[float, bool]:
        """(best loss within `steps` Adam updates at `lr`, whether the loss had no grad_fn); stops at the goal."""
        opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
        best = math.inf
        for _ in range(int(self.params["steps"])):
            opt.zero_grad(set_to_none=True)
            loss, _ = target.loss(model, batch)
            value = float(loss.detach())
            if not math.isfinite(value):
                break
            best = min(best, value)
            if not loss.requires_grad:
                return best, True
            if best <= goal:
                break
            loss.backward()
            opt.step()
        return best, False

    def _failed(self, ctx: ReplayContext, title: str, evidence: dict) -> Finding:
        return self.report(ctx, title=title, confidence=0.85, where="one batch", evidence=evidence)
