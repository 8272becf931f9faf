"""Dynamic probes on gradient flow: parameters with no gradient, vanishing and exploding gradients."""
from __future__ import annotations

import math

from ..model import Finding
from .passes import get_pass
from .probe import Probe, ReplayContext, Skip, fmt, listed


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
    ruled_out_pattern = ""  # a clean model + loss says nothing about .item()/no_grad() in the user's training loop

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
        The largest gradient norm among the input-side quarter of the layers
        is below `ratio` times the largest among the output-side quarter (or
        every gradient is below `min_norm`): the early layers barely learn.
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
        top = max(norms.values())
        if top == 0:
            raise Skip("every gradient is zero (see no_grad)")
        first_name, first = _strongest(names[: max(1, len(names) // 4)], norms)
        last_name, last = _strongest(names[-max(1, len(names) // 4):], norms)
        ratio = first / last if last > 0 else math.inf
        evidence = {"input_layer": first_name, "output_layer": last_name, "input_grad_norm": first, "output_grad_norm": last, "ratio": ratio, "max_grad_norm": top}
        if ratio < self.params["ratio"]:
            title = f"gradient vanishes toward the input: {first_name} {fmt(first)} vs {last_name} {fmt(last)} (ratio {fmt(ratio)})"
        elif top < self.params["min_norm"]:
            title = f"every layer's gradient norm is below {self.params['min_norm']:g} (largest {fmt(top)})"
        else:
            return []
        return [self.report(ctx, title=title, confidence=0.8, where=first_name, evidence=evidence)]


def _strongest(names: list[str], norms: dict[str, float]) -> tuple[str, float]:
    """The layer with the largest gradient among `names`.

    Vanishing means every input-side layer gets almost nothing; one small layer among healthy ones
    is normal (an attention query or key at a near-uniform softmax), so each side is judged by its
    strongest layer, over the first and last quarter of the layers.
    """
    name = max(names, key=lambda n: norms[n])
    return name, norms[name]


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
