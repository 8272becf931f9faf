"""The Probe base class and the context every probe reads.

A probe is a Rule whose input is a checkpoint (and optionally a model and a
batch) instead of log curves: it keeps the Rule's docstring-as-documentation
(Symptom / Root causes / Fix), its thresholds and `Rule.finding`, so replay
findings carry causes and fixes exactly like log findings and render through
the same reports. Two extra class attributes drive the merge with the logs:
`explains` (log finding codes this probe can confirm or rule out) and
`cause_pattern` (a regex picking, among those findings' causes, the ones it
speaks to; `ruled_out_pattern` narrows what a clean run may rule out).
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from ..model import Finding
from ..rules.base import Rule
from .checkpoint import Checkpoint
from .params import ParamMap, candidate_params, map_params, optimizer_slots
from .hf import parameter_order
from .plan import progress


class Skip(Exception):
    """A probe that cannot run on this input (says why in one line)."""


@dataclass
class ReplayContext:
    """What probes read: the checkpoint, an optional model/batch target, and shared caches."""

    ckpt: Checkpoint
    #: `target.Target` when --model and --batch/--data were given.
    target: Any = None
    cache: dict[str, Any] = field(default_factory=dict)
    #: time.monotonic() after which long probes stop and say so (--budget); None: no limit.
    deadline: float | None = None
    #: Where progress lines go (stderr in the CLI); None: nowhere.
    say: Callable[[str], None] | None = None
    #: When the last progress line was said (none in the first seconds: short runs stay quiet).
    _last_said: float = field(default_factory=time.monotonic)

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def progress(self, message: str, every: float = 2.0) -> None:
        """A progress line for a long probe, at most one per `every` seconds."""
        now = time.monotonic()
        if self.say is not None and now - self._last_said >= every:
            self._last_said = now
            self.say(message)

    @property
    def steps(self) -> tuple[int, int] | None:
        return None if self.ckpt.step is None else (self.ckpt.step, self.ckpt.step)

    def params(self) -> ParamMap:
        """Optimizer slots matched to parameter names, in the model's parameter order (computed once).

        With --model, the optimizer most likely holds exactly the parameters that require grad, so
        those are tried first; all parameters when that does not line up (frozen ones left in a
        group). Without it, the checkpoint's tensors, put in model order when config.json can say it.
        """
        if "params" not in self.cache:
            slots = optimizer_slots(self.ckpt.optimizers)
            target = self.target
            if target is not None and target.trainable:
                pmap = map_params(slots, [p for p in target.trainable if p[0] not in target.frozen], source="model")
                if target.frozen and not pmap.exact:
                    pmap = map_params(slots, target.trainable, source="model")
            else:
                pmap = map_params(slots, candidate_params(self.ckpt.model, parameter_order(self.ckpt.config)))
            self.cache["params"] = pmap
        return self.cache["params"]

    def finished(self) -> bool:
        """Saved at the end of its planned run? (Then an LR annealed to 0 is expected, not a fault.)"""
        done = progress(self.ckpt)
        if done is not None:
            return done >= 1
        for state in self.ckpt.schedulers:
            total = planned_total(state)
            if total and isinstance(state.get("last_epoch"), (int, float)) and state["last_epoch"] >= total[0]:
                return True
        return False

    def memo(self, key: str, compute):
        """Compute a shared intermediate (grad norms, update ratios...) once for all probes."""
        if key not in self.cache:
            self.cache[key] = compute()
        return self.cache[key]


def state_number(value: Any) -> float | None:
    """A number saved in optimizer / scheduler / scaler state, as a float; None for anything else.

    States hold plain ints and floats or one-element tensors (Adam's `step` since torch 1.12), and
    a bool there is a flag, not a count: every probe reading a count must treat them alike.
    """
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def planned_total(state: dict[str, Any]) -> tuple[float, str] | None:
    """(the run length a scheduler was built for, its family), or None when its state holds none.

    `total_iters` is a run length only for schedules that decay over it (PolynomialLR, a LinearLR
    from high to low). For a LinearLR warmup or a ConstantLR it is the warmup's length: past it the
    LR simply stays at its base, which is the plan, not an exhausted schedule.
    """
    def number(key: str) -> float | None:
        return state_number(state.get(key))

    for key, family in (("T_max", "CosineAnnealingLR"), ("total_steps", "OneCycleLR")):
        if number(key):
            return number(key), family
    total = number("total_iters")
    if not total:
        return None
    if "power" in state:
        return total, "PolynomialLR"
    start, end = number("start_factor"), number("end_factor")
    if start is not None and end is not None and end < start:
        return total, "LinearLR (decay)"
    return None


@dataclass
class Outcome:
    """What one probe did: fired (a warning/critical finding), clear, or skipped (with the reason)."""

    probe: "Probe"
    status: str  # "fired" | "clear" | "skipped"
    findings: list[Finding] = field(default_factory=list)
    reason: str = ""


class Probe(Rule):
    """Base class; subclasses set code/severity/kind/explains and implement `probe`."""

    #: "static" (checkpoint only) or "dynamic" (needs --model and a batch).
    kind: ClassVar[str] = "static"
    explains: ClassVar[tuple[str, ...]] = ()
    cause_pattern: ClassVar[str] = ""
    #: Causes a clean run of this probe rules out (None: the same as cause_pattern; "": none).
    ruled_out_pattern: ClassVar[str | None] = None

    def probe(self, ctx: ReplayContext) -> list[Finding]:
        raise NotImplementedError

    #: Dynamic probes test the checkpoint's network; a --model that does not match it is another one.
    needs_matching_model: ClassVar[bool] = True

    def run(self, ctx: ReplayContext) -> Outcome:
        if self.kind == "dynamic":
            if ctx.target is None:
                return Outcome(self, "skipped", reason="needs --model and --batch/--data")
            if self.needs_matching_model and ctx.target.partial:
                return Outcome(self, "skipped", reason="the --model does not match the checkpoint (see partial_load)")
            if ctx.out_of_time():
                return Outcome(self, "skipped", reason="the --budget was spent")
            ctx.progress(f"replay: running {self.code}")
        try:
            findings = self.probe(ctx)
        except Skip as why:
            return Outcome(self, "skipped", reason=str(why))
        fired = any(f.severity != "info" for f in findings)
        return Outcome(self, "fired" if fired else "clear", findings)

    def confirms(self, finding: Finding) -> list[tuple[str, str]]:
        """(log code, cause regex) pairs a fired finding of this probe confirms."""
        if finding.severity == "info":
            return []
        return [(code, self.cause_pattern) for code in self.explains]

    def rules_out(self, outcome: Outcome) -> list[tuple[str, str]]:
        """(log code, cause regex) pairs a probe that ran clean rules out."""
        pattern = self.cause_pattern if self.ruled_out_pattern is None else self.ruled_out_pattern
        if outcome.status != "clear" or not pattern:
            return []
        return [(code, pattern) for code in self.explains]

    def report(
        self,
        ctx: ReplayContext,
        *,
        title: str,
        confidence: float,
        evidence: dict[str, Any],
        where: str | None = None,
        severity: str | None = None,
        advice: bool = False,
    ) -> Finding:
        """A finding located at the checkpoint's step; `where` names the tensor/module/group.

        An info finding reports a measurement, not a problem: no causes or fixes to suggest, unless
        it is a best-practice note (`advice`), whose fix is the point of reporting it.
        """
        severity = severity or self.severity
        quiet = [] if severity == "info" and not advice else None
        f = self.finding(
            None, title=title, steps=ctx.steps, confidence=confidence, evidence=_rounded(evidence), severity=severity, causes=quiet, fixes=quiet
        )
        f.metric = where
        return f


def _rounded(value: Any) -> Any:
    """Evidence floats to 4 significant digits (readable in every renderer, exact enough to act on)."""
    if isinstance(value, float):
        return float(f"{value:.4g}") if math.isfinite(value) else value
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    return value


def configured_lr(hyper: dict) -> float | None:
    """A param group's configured (peak) LR: what schedulers record as max_lr / initial_lr, else its LR.

    The update-ratio and LR-range probes judge the LR the run was set up with; where the
    scheduler has taken it since is scheduler_exhausted's job.
    """
    for key in ("max_lr", "initial_lr", "lr"):
        value = hyper.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and (value > 0 or key == "lr"):
            return float(value)
    return None


def configured_run_lr(ctx: ReplayContext) -> float | None:
    """The run's configured LR (largest over groups; the scheduler's peak, not its current position)."""
    lrs = [configured_lr(g) for opt in ctx.ckpt.optimizers for g in opt.get("param_groups", [])]
    lrs = [lr for lr in lrs if lr]
    return max(lrs) if lrs else None


def fmt(x: float) -> str:
    """A compact number for titles (3 significant digits)."""
    if x == 0 or not math.isfinite(x):
        return str(x)
    return f"{x:.3g}"


def listed(names: list[str], limit: int = 6) -> str:
    """'a, b, c (+4 more)' for titles and evidence."""
    head = ", ".join(names[:limit])
    return head + (f" (+{len(names) - limit} more)" if len(names) > limit else "")
