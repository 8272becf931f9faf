"""Dynamic probes: run the model on a batch (needs --model and --batch/--data)."""
from __future__ import annotations

import copy
import math

import numpy as np
import torch
from torch import nn

from ..model import Finding
from .optim_rebuild import build_optimizer
from .passes import get_pass, subset
from .probe import Probe, ReplayContext, Skip, configured_lr, fmt, listed
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
    ruled_out_pattern = r"softmax|nllloss|detach|no_grad"  # one batch can be memorised even with wrong labels

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


def layer_grad_norms(ctx: ReplayContext) -> dict[str, float]:
    """Gradient L2 norm per layer (module), input side first, for layers holding a weight matrix."""
    p = get_pass(ctx)
    shapes = dict(ctx.target.trainable)
    layers: dict[str, list[float]] = {}
    matrix: set[str] = set()
    for name, g in p.grad_norms.items():
        layer = name.rsplit(".", 1)[0] if "." in name else name
        if g is not None:
            layers.setdefault(layer, []).append(g)
        if len(shapes.get(name, ())) >= 2:
            matrix.add(layer)
    return {k: math.sqrt(sum(x * x for x in v)) for k, v in layers.items() if k in matrix}


class NoGrad(Probe):
    """Trainable parameters receive no gradient.

    Symptom:
        After one backward pass some parameters with requires_grad=True have
        no gradient (None) or an exactly zero gradient, or the loss itself is
        not connected to the graph.
    Root causes:
        - the loss was cut from the graph: .item(), .detach(), .numpy() or torch.no_grad() on the path from parameters to loss
        - parameters unused in forward (a branch never taken, a head that is built but not called)
        - every unit upstream is dead (ReLU outputs all zero), so the gradient is exactly zero
        - every parameter frozen with requires_grad=False
    Fix:
        - assert loss.requires_grad and loss.grad_fn is not None before backward; keep logging scalars separate from the loss tensor
        - remove unused modules or call them; check the dead_relu probe for zero gradients
    Example:
        `encoder.0.weight`, `encoder.0.bias`: grad None (2 of 6 tensors).
    """

    code, severity, kind = "no_grad", "critical", "dynamic"
    explains = ("flat",)
    cause_pattern = r"detach|graph|no_grad"

    def confirms(self, finding: Finding) -> list[tuple[str, str]]:
        if finding.evidence.get("trainable") == 0:  # everything frozen
            return [("flat", r"frozen|requires_grad")]
        return super().confirms(finding)

    def probe(self, ctx: ReplayContext) -> list[Finding]:
        p = get_pass(ctx)
        if not p.grad_norms:
            return [self.report(ctx, title="every parameter has requires_grad=False", confidence=0.95, where=None, evidence={"trainable": 0})]
        if not p.loss_has_grad:
            return [self.report(ctx, title="the loss has no grad_fn: backward() cannot reach any parameter", confidence=0.95, where="loss", evidence={"trainable": len(p.grad_norms)})]
        none = [n for n, g in p.grad_norms.items() if g is None]
        zero = [n for n, g in p.grad_norms.items() if g == 0.0]
        if not none and not zero:
            return []
        names = none + zero
        return [
            self.report(
                ctx,
                title=f"{len(names)} of {len(p.grad_norms)} trainable tensor(s) get no gradient: {listed(names, 4)}",
                confidence=0.9,
                where=names[0],
                severity="critical" if len(names) == len(p.grad_norms) else "warning",
                evidence={"grad_none": none[:20], "grad_zero": zero[:20], "trainable": len(p.grad_norms)},
            )
        ]


class GradVanish(Probe):
    """Gradients vanish toward the input layers.

    Symptom:
        The gradient norm of the input-side layer is below `ratio` times that
        of the output-side layer (or every gradient is below `min_norm`): the
        early layers barely learn.
    Root causes:
        - saturating activations (sigmoid / tanh) stacked deep, or dead ReLUs, shrink the gradient at every layer
        - a deep plain network without residual connections or normalisation
        - initialisation too small for the depth (weights scaled down at every layer)
    Fix:
        - use ReLU/GELU-family activations with He/Kaiming init, add residual connections and normalisation (LayerNorm/BatchNorm)
        - check the dead_relu probe; lower the LR if units died
    Example:
        `layers.0` grad norm 3e-9 vs `layers.11` 0.4 (ratio 7e-9).
    """

    code, severity, kind = "grad_vanish", "warning", "dynamic"
    defaults = {"ratio": 1e-3, "min_norm": 1e-8}
    explains = ("crawl", "flat", "grad_norm_trend")
    cause_pattern = r"vanish"

    def probe(self, ctx: ReplayContext) -> list[Finding]:
        norms = {k: v for k, v in layer_grad_norms(ctx).items() if math.isfinite(v)}
        if len(norms) < 2:
            raise Skip("fewer than two layers with a weight matrix and a gradient")
        names = list(norms)
        first, last = norms[names[0]], norms[names[-1]]
        top = max(norms.values())
        if top == 0:
            raise Skip("every gradient is zero (see no_grad)")
        ratio = first / last if last > 0 else math.inf
        evidence = {"input_layer": names[0], "output_layer": names[-1], "input_grad_norm": first, "output_grad_norm": last, "ratio": ratio, "max_grad_norm": top}
        if ratio < self.params["ratio"]:
            title = f"gradient vanishes toward the input: {names[0]} {fmt(first)} vs {names[-1]} {fmt(last)} (ratio {fmt(ratio)})"
        elif top < self.params["min_norm"]:
            title = f"every layer's gradient norm is below {self.params['min_norm']:g} (largest {fmt(top)})"
        else:
            return []
        return [self.report(ctx, title=title, confidence=0.8, where=names[0], evidence=evidence)]


class GradExplode(Probe):
    """Gradients explode: non-finite, huge, or growing toward the input.

    Symptom:
        A gradient is NaN/Inf, a layer's gradient norm exceeds `max_norm`, or
        the input-side layer's gradient is more than `ratio` times the
        output-side layer's.
    Root causes:
        - initialisation too large for the depth, or no normalisation: activations and gradients grow layer by layer
        - an LR too high already pushed the weights to a region of huge curvature
        - a loss that is unbounded on this data (log of ~0, a large-magnitude regression target without scaling)
    Fix:
        - clip the gradient norm (torch.nn.utils.clip_grad_norm_(params, 1.0)) and lower the LR or lengthen warmup
        - fix init scale, add normalisation / residual scaling; scale regression targets
    Example:
        total gradient norm 4e6; `layers.0` grad 1e4 times `layers.11`.
    """

    code, severity, kind = "grad_explode", "critical", "dynamic"
    defaults = {"max_norm": 1e3, "ratio": 1e3}
    explains = ("diverge", "spike", "grad_norm_trend", "clip_saturation")
    cause_pattern = r"explo(d|sion)|initiali[sz]ation too large"

    def probe(self, ctx: ReplayContext) -> list[Finding]:
        norms = layer_grad_norms(ctx)
        if not norms:
            raise Skip("no layer with a weight matrix got a gradient")
        names = list(norms)
        bad = [n for n, v in norms.items() if not math.isfinite(v)]
        top_name = max((n for n in names if n not in bad), key=lambda n: norms[n], default=None)
        evidence = {"max_grad_norm": norms[top_name] if top_name else None, "layer": top_name, "nonfinite_layers": bad[:10]}
        if bad:
            return [self.report(ctx, title=f"non-finite gradient in {listed(bad, 3)}", confidence=0.95, where=bad[0], evidence=evidence)]
        first, last = norms[names[0]], norms[names[-1]]
        ratio = first / last if last > 0 else 0.0
        evidence.update(input_grad_norm=first, output_grad_norm=last, ratio=ratio)
        if norms[top_name] > self.params["max_norm"]:
            return [self.report(ctx, title=f"gradient norm {fmt(norms[top_name])} in {top_name} (above {self.params['max_norm']:g})", confidence=0.8, where=top_name, evidence=evidence)]
        if len(names) >= 2 and ratio > self.params["ratio"]:
            return [self.report(ctx, title=f"gradient grows toward the input: {names[0]} is {fmt(ratio)}x {names[-1]}", confidence=0.7, where=names[0], severity="warning", evidence=evidence)]
        return []


class DeadRelu(Probe):
    """A layer's activations are mostly dead (ReLU) or saturated (sigmoid / tanh).

    Symptom:
        Forward hooks on activation modules: at least `dead_fraction` of a
        ReLU layer's units output 0 for every example of the batch, or at
        least `saturated_fraction` of a sigmoid/tanh layer's outputs sit in
        its flat tails. Those units pass no gradient, so that capacity is gone.
    Root causes:
        - an LR too high once pushed weights and biases so far that the pre-activations are negative for every input
        - large negative biases or a bad initialisation
        - saturating activations fed unnormalised, large-magnitude inputs
    Fix:
        - lower the LR (the usual cause) and add warmup
        - switch ReLU to LeakyReLU / GELU / SiLU so negative inputs keep a gradient; fix init and normalise inputs
    Example:
        `net.3` (ReLU): 88 % of 256 units dead on 32 examples.
    """

    code, severity, kind = "dead_relu", "warning", "dynamic"
    defaults = {"dead_fraction": 0.5, "saturated_fraction": 0.9, "min_examples": 8}
    explains = ("crawl", "flat", "grad_norm_trend")
    cause_pattern = r"dead|dying|relu|saturat"

    def probe(self, ctx: ReplayContext) -> list[Finding]:
        examples = int(ctx.target.batch[1].shape[0]) if ctx.target.batch[1].dim() else 1
        if examples < self.params["min_examples"]:
            raise Skip(f"needs a batch of at least {self.params['min_examples']} examples (got {examples})")
        acts = get_pass(ctx).activations
        if not acts:
            raise Skip("no nn.ReLU / Sigmoid / Tanh modules to hook (functional activations cannot be hooked)")
        bad = [
            a for a in acts
            if (a.dead is not None and a.dead >= self.params["dead_fraction"])
            or (a.saturated is not None and a.saturated >= self.params["saturated_fraction"])
        ]
        per_layer = {a.module: a.dead if a.dead is not None else a.saturated for a in acts}
        if not bad:
            return []
        worst = max(bad, key=lambda a: a.dead if a.dead is not None else a.saturated)
        what = f"{worst.dead:.0%} of units dead" if worst.dead is not None else f"{worst.saturated:.0%} of outputs saturated"
        return [
            self.report(
                ctx,
                title=f"{worst.module} ({worst.kind}): {what} on {examples} examples ({len(bad)} layer(s) affected)",
                confidence=0.8,
                where=worst.module,
                evidence={"affected_layers": [a.module for a in bad][:10], "fraction_by_layer": dict(list(per_layer.items())[:12]), "examples": examples},
            )
        ]


class NanSource(Probe):
    """The first module whose output is NaN or Inf.

    Symptom:
        Forward hooks find the first module that turns finite inputs into
        NaN/Inf outputs (or the batch itself, or the loss function, carries
        them). Everything downstream is NaN, so that module is where to look.
    Root causes:
        - NaN/Inf weights in that module (see nan_weights), left by an earlier overflow
        - an operation that is undefined on its inputs: log of 0 or of a negative, sqrt of a negative, division by ~0, exp overflow
        - fp16 overflow (values above 65504) inside attention or the final logits
        - NaN/Inf already in the input data
    Fix:
        - inspect that module's weights and inputs; clamp arguments of log/sqrt/division, use numerically stable fused ops (log_softmax, BCEWithLogitsLoss)
        - under fp16 keep that block in fp32 or switch to bf16; filter or impute bad input rows
    Example:
        first non-finite output at `blocks.2.attn` (MultiheadAttention): 512 NaN.
    """

    code, severity, kind = "nan_source", "critical", "dynamic"
    explains = ("diverge", "spike", "scaler_collapse")
    cause_pattern = r"overflow|nan|\binf\b|explo(d|sion)"
    ruled_out_pattern = ""  # one finite batch in fp32 clears neither bad batches nor fp16 overflow

    def confirms(self, finding: Finding) -> list[tuple[str, str]]:
        where = finding.metric
        pattern = r"bad batch|input" if where == "input batch" else r"log\(0\)|loss" if where == "loss" else self.cause_pattern
        return [(code, pattern) for code in self.explains]

    def probe(self, ctx: ReplayContext) -> list[Finding]:
        p = get_pass(ctx)
        if p.input_nonfinite:
            return [self.report(ctx, title="the input batch itself contains NaN/Inf", confidence=0.95, where="input batch", evidence={"loss": p.loss})]
        if p.nan_source:
            name, kind, nan, inf = p.nan_source
            return [
                self.report(
                    ctx,
                    title=f"first non-finite output at {name} ({kind}): {nan} NaN, {inf} Inf",
                    confidence=0.9,
                    where=name,
                    evidence={"module": name, "type": kind, "nan_values": nan, "inf_values": inf, "loss": p.loss},
                )
            ]
        if not math.isfinite(p.loss):
            return [self.report(ctx, title=f"every module output is finite but the {ctx.target.loss_name} loss is {p.loss}", confidence=0.9, where="loss", evidence={"loss": p.loss})]
        return []


class LrRange(Probe):
    """LR range test: which LRs make progress from the checkpoint weights, and where the loss blows up.

    Symptom:
        For `points` LRs spaced geometrically from `min_lr` to `max_lr`, the
        model restarts from the checkpoint weights with a fresh optimizer of
        the run's kind and takes `steps` updates; the loss afterwards is
        recorded. (Restarting per LR, instead of Smith's single growing-LR
        run, keeps the test honest on a single probe batch, where progress
        would otherwise accumulate.) Fires when the run's current LR is more
        than two decades below the best LR, or at/above the LR where the loss
        ends worse than it started.
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
        model = target.copy()
        train_mode(model)
        start = copy.deepcopy(model.state_dict())
        with torch.no_grad():
            start_loss = float(target.loss(model)[0])
        curve: list[tuple[float, float]] = []
        kind = ""
        for lr in np.geomspace(self.params["min_lr"], self.params["max_lr"], int(self.params["points"])):
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
        best_lr, best = min(curve, key=lambda c: c[1])
        blowup = next((lr for lr, v in curve if lr > best_lr and v > start_loss), None)
        suggested = best_lr / 10
        current = _configured_lr(ctx)
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
        if not best < 0.98 * start_loss:
            evidence["verdict"] = "no_descent"
            return [self.report(ctx, title=f"LR range test: no LR in {self.params['min_lr']:g}..{fmt(curve[-1][0])} lowers the loss (not an LR problem)", confidence=0.6, where=None, severity="warning", evidence=evidence)]
        if current is None:
            evidence["verdict"] = "unknown"
            return [self.report(ctx, title=f"LR range test: suggested lr {fmt(suggested)} (best short-run lr {fmt(best_lr)})", confidence=0.6, where=None, evidence=evidence)]
        if current < best_lr / 10 ** self.params["too_low_decades"]:
            evidence["verdict"] = "too_low"
            title = f"configured lr {fmt(current)} is {fmt(best_lr / current)}x below the best lr {fmt(best_lr)} (suggested {fmt(suggested)})"
        elif blowup is not None and current >= blowup:
            evidence["verdict"] = "too_high"
            title = f"configured lr {fmt(current)} is at or past where the loss blows up ({fmt(blowup)}; suggested {fmt(suggested)})"
        else:
            evidence["verdict"] = "in_band"
            return [self.report(ctx, title=f"configured lr {fmt(current)} is within the productive band (suggested {fmt(suggested)})", confidence=0.6, where=None, evidence=evidence)]
        return [self.report(ctx, title=title, confidence=0.7, where=None, severity="warning", evidence=evidence)]


def _configured_lr(ctx: ReplayContext) -> float | None:
    """The run's configured LR (largest over groups; the scheduler's peak, not its current position)."""
    lrs = [configured_lr(g) for opt in ctx.ckpt.optimizers for g in opt.get("param_groups", [])]
    lrs = [lr for lr in lrs if lr]
    return max(lrs) if lrs else None
