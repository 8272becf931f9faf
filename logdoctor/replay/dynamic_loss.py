"""Dynamic probes on the loss itself: its value at initialisation, and whether one batch can be memorised."""
from __future__ import annotations

import math

import torch
from torch import nn

from ..model import Finding
from .passes import subset
from .probe import Probe, ReplayContext, Skip, fmt
from .target import train_mode


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
    """Overfit-one-batch could not drive the loss toward zero.

    Symptom:
        On 2-32 examples, with dropout and weight decay off, `steps` Adam
        updates on that one batch leave the loss above `target_fraction` of
        where it started. A correct model + loss + labels can memorise a
        handful of examples; if it cannot, no hyperparameter will help.
    Root causes:
        - the loss is computed on the wrong thing: softmax before CrossEntropyLoss, sigmoid before BCELoss, detached tensors, a metric instead of the loss
        - parameters that never learn: requires_grad=False, a .detach() or no_grad() in forward, dead units
        - labels that do not correspond to inputs (a shuffled or misaligned target tensor), or an architecture that cannot represent the mapping
    Fix:
        - fix the bug before tuning: feed raw logits to the loss, assert loss.requires_grad, check the data pipeline on these exact examples
        - run this test after every model or loss change, with augmentation, dropout and weight decay off
    Example:
        loss 2.31 -> 1.46 after 200 steps on 32 examples (63 % of the start).
    """

    code, severity, kind = "overfit_batch_failed", "critical", "dynamic"
    defaults = {"examples": 32, "steps": 200, "lr": 1e-3, "target_fraction": 0.1, "floor": 0.01}
    explains = ("flat", "crawl")
    cause_pattern = r"softmax|nllloss|detach|no_grad|label"
    #: What a clean run clears: the model + loss. Not labels (one batch is memorised even when they are
    #: wrong) and not the user's loop (.item(), no_grad(), step order), which this test does not run.
    ruled_out_pattern = r"softmax|nllloss"

    def probe(self, ctx: ReplayContext) -> list[Finding]:
        target = ctx.target
        model = target.copy() if target.loaded else target.fresh()
        for m in model.modules():
            if isinstance(m, nn.modules.dropout._DropoutNd):
                m.p = 0.0
        train_mode(model)
        batch = subset(target.batch, self.params["examples"])
        examples = int(batch[1].shape[0]) if batch[1].dim() else 1
        params = [p for p in model.parameters() if p.requires_grad]
        evidence = {"examples": examples, "steps": 0, "lr": self.params["lr"]}
        if not params:
            return [self._failed(ctx, "no parameter has requires_grad=True: nothing can learn", evidence)]
        opt = torch.optim.Adam(params, lr=self.params["lr"])
        first = best = None
        for i in range(self.params["steps"]):
            opt.zero_grad(set_to_none=True)
            loss, _ = target.loss(model, batch)
            value = float(loss.detach())
            if not math.isfinite(value):
                evidence.update(steps=i, start_loss=first, final_loss=value)
                return [self._failed(ctx, f"loss became {value} after {i} step(s) on one batch", evidence)]
            first = value if first is None else first
            best = value if best is None else min(best, value)
            if not loss.requires_grad:
                evidence.update(steps=i, start_loss=first, final_loss=value)
                return [self._failed(ctx, "the loss has no grad_fn: it is detached from the parameters", evidence)]
            if best <= max(self.params["target_fraction"] * first, self.params["floor"]):
                break
            loss.backward()
            opt.step()
        del model, opt
        evidence.update(steps=i + 1, start_loss=first, best_loss=best, fraction_of_start=best / first if first else None)
        if best <= max(self.params["target_fraction"] * first, self.params["floor"]):
            return []
        return [self._failed(ctx, f"overfit-one-batch stalled: loss {fmt(first)} -> {fmt(best)} after {i + 1} steps on {examples} examples", evidence)]

    def _failed(self, ctx: ReplayContext, title: str, evidence: dict) -> Finding:
        return self.report(ctx, title=title, confidence=0.85, where="one batch", evidence=evidence)
