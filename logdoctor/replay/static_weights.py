"""Static probes on the saved tensors themselves: NaN/Inf, BatchNorm statistics, weight norms."""
from __future__ import annotations

import math

import torch

from ..model import Finding
from .probe import Probe, ReplayContext, Skip, fmt, listed


def _nonfinite(t: torch.Tensor) -> tuple[int, int]:
    """(NaN count, Inf count) of a floating tensor."""
    if not t.is_floating_point() or t.numel() == 0:
        return 0, 0
    t = t.detach()
    return int(torch.isnan(t).sum()), int(torch.isinf(t).sum())


class NanWeights(Probe):
    """NaN or Inf values sit in the saved weights, buffers or optimizer moments.

    Symptom:
        Some saved tensors hold NaN or Inf; every forward pass through them
        returns NaN, so the loss curve ends in NaN or freezes.
    Root causes:
        - a numeric overflow (LR too high, fp16 activations past 65504, missing gradient clipping) wrote NaN into the weights
        - a NaN in the optimizer's second moment (exp_avg_sq) from one bad gradient, which then spreads to every update
        - a NaN-producing loss (log of 0, sqrt of a negative, division by zero) on one bad batch
    Fix:
        - resume from the last checkpoint with finite tensors, lower the LR or add gradient clipping (clip_grad_norm_ 1.0)
        - under fp16 switch to bf16, or keep the overflowing block in fp32
        - guard the loss: clamp log arguments, use BCEWithLogitsLoss instead of sigmoid + BCELoss
    Example:
        `layers.3.weight` holds 12 NaN; `exp_avg_sq` of `head.bias` is Inf.
    """

    code, severity = "nan_weights", "critical"
    #: NaN weights show *that* the run broke, not which cause broke it: reported, not linked.
    explains = ()

    def probe(self, ctx: ReplayContext) -> list[Finding]:
        bad: dict[str, tuple[int, int]] = {}
        for name, t in ctx.ckpt.model.items():
            nan, inf = _nonfinite(t)
            if nan or inf:
                bad[name] = (nan, inf)
        if not ctx.ckpt.model and not ctx.ckpt.optimizers:
            raise Skip("no weights or optimizer state in the checkpoint")
        pmap = ctx.params()
        for slot in pmap.slots:
            for key, t in slot.state.items():
                if isinstance(t, torch.Tensor) and t.dim() > 0:
                    nan, inf = _nonfinite(t)
                    if nan or inf:
                        bad[f"{pmap.name(slot)}[{key}]"] = (nan, inf)
        if not bad:
            return []
        names = list(bad)
        in_state = [n for n in names if n.endswith("]")]
        return [
            self.report(
                ctx,
                title=f"{len(names)} saved tensor(s) hold NaN/Inf: {listed(names, 4)}",
                confidence=0.99,
                where=names[0],
                evidence={
                    "tensors": names[:20],
                    "nan_values": sum(v[0] for v in bad.values()),
                    "inf_values": sum(v[1] for v in bad.values()),
                    "in_weights_or_buffers": len(names) - len(in_state),
                    "in_optimizer_state": len(in_state),
                },
            )
        ]


class BatchNormStats(Probe):
    """BatchNorm running statistics are degenerate.

    Symptom:
        A BatchNorm layer's saved running statistics were never updated
        (mean 0, variance 1, zero batches tracked after training), or some
        channels have a collapsed (near-zero) or exploded running variance.
        Eval-mode outputs then differ wildly from train-mode outputs.
    Root causes:
        - the model trained in eval() mode, so BatchNorm never updated its running statistics (forgot model.train())
        - collapsed channels: the input to those channels is constant (dead ReLUs upstream), so normalising divides by ~sqrt(eps)
        - a frozen backbone left in train() mode drifted its statistics toward tiny or shifted fine-tuning batches
    Fix:
        - call model.train() at the top of every training epoch and model.eval() only for evaluation
        - put frozen BatchNorm layers in eval() after model.train(), or build them with track_running_stats=False
        - look for dead units upstream of collapsed channels (dead_relu probe)
    Example:
        `bn1.running_var` has 40 % of channels below 1e-6.
    """

    code, severity = "bn_stats_degenerate", "warning"
    defaults = {"min_var": 1e-6, "max_var": 1e6}
    explains = ("flat", "val_metric_constant")
    cause_pattern = r"batch ?norm|\bbn\b|eval\(\)|running stat|eval mode|train mode"

    def probe(self, ctx: ReplayContext) -> list[Finding]:
        model = ctx.ckpt.model
        layers = [n[: -len("running_var")] for n in model if n.endswith("running_var")]
        if not layers:
            raise Skip("no BatchNorm running statistics in the checkpoint")
        trained = ctx.ckpt.step is None or ctx.ckpt.step > 0
        problems: dict[str, str] = {}
        for prefix in layers:
            var = model[prefix + "running_var"].double()
            mean = model.get(prefix + "running_mean")
            tracked = model.get(prefix + "num_batches_tracked")
            if not torch.isfinite(var).all():
                continue  # nan_weights reports it
            untouched = bool((var == 1).all()) and (mean is None or bool((mean == 0).all()))
            if tracked is not None:
                untouched = untouched and int(tracked) == 0
            if untouched and trained:
                problems[prefix.rstrip(".")] = "never updated (mean 0, var 1)"
                continue
            low = float((var < self.params["min_var"]).double().mean())
            if low > 0:
                problems[prefix.rstrip(".")] = f"{low:.0%} of channels with variance < {self.params['min_var']:g}"
            elif float(var.max()) > self.params["max_var"]:
                problems[prefix.rstrip(".")] = f"variance up to {fmt(float(var.max()))}"
        if not problems:
            return []
        first = next(iter(problems))
        return [
            self.report(
                ctx,
                title=f"{len(problems)}/{len(layers)} BatchNorm layer(s) with degenerate running stats: {first} {problems[first]}",
                confidence=0.85,
                where=first,
                evidence={"layers": [f"{k}: {v}" for k, v in list(problems.items())[:10]], "batchnorm_layers": len(layers)},
            )
        ]


class WeightNormOutlier(Probe):
    """One layer's weight scale is orders of magnitude off the others.

    Symptom:
        The root-mean-square of a weight matrix is more than `decades` powers
        of ten above or below the median over the model's weight matrices, or
        a weight matrix is entirely zero.
    Root causes:
        - a bad or missing initialisation (a custom layer left at zeros, a scale factor applied twice)
        - an LR too high for that layer: its weights grew without bound (exploding weights precede divergence)
        - weight decay far too strong for that group, collapsing it toward zero
    Fix:
        - re-initialise the layer with the framework default (kaiming/xavier) and check custom init code
        - use per-group LRs or lower the LR; add gradient clipping
        - exclude the layer from weight decay or lower weight_decay
    Example:
        `proj.weight` RMS 310 while the median layer is 0.04.
    """

    code, severity = "weight_norm_outlier", "warning"
    defaults = {"decades": 2.0, "min_layers": 3}
    explains = ("grad_norm_trend", "diverge")
    cause_pattern = r"\binit|grow|shrinks the weights"
    ruled_out_pattern = ""

    def probe(self, ctx: ReplayContext) -> list[Finding]:
        rms = {
            name: float(t.detach().double().pow(2).mean().sqrt())
            for name, t in ctx.ckpt.model.items()
            if t.is_floating_point() and t.dim() >= 2 and t.numel() > 0
        }
        rms = {k: v for k, v in rms.items() if math.isfinite(v)}
        if len(rms) < self.params["min_layers"]:
            raise Skip(f"fewer than {self.params['min_layers']} weight matrices to compare")
        logs = sorted(math.log10(v) for v in rms.values() if v > 0)
        if not logs:
            raise Skip("every weight matrix is zero")
        median = logs[len(logs) // 2]
        out = {
            name: v
            for name, v in rms.items()
            if v == 0 or abs(math.log10(v) - median) > self.params["decades"]
        }
        if not out:
            return []
        worst = max(out, key=lambda n: math.inf if out[n] == 0 else abs(math.log10(out[n]) - median))
        return [
            self.report(
                ctx,
                title=f"{len(out)} weight matrix(es) far off the median scale: {worst} RMS {fmt(out[worst])} vs median {fmt(10 ** median)}",
                confidence=0.7,
                where=worst,
                evidence={
                    "median_rms": 10**median,
                    "outliers": {k: v for k, v in list(out.items())[:10]},
                    "weight_matrices": len(rms),
                },
            )
        ]
