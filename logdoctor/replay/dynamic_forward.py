"""Dynamic probes from forward hooks: dead / saturated activations, and where NaN first appears."""
from __future__ import annotations

import math

from ..model import Finding
from .passes import get_pass
from .probe import Probe, ReplayContext, Skip


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
