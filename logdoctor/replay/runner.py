"""Load a checkpoint (and optionally a model + batch), run every probe, collect the outcomes."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..config import Config
from ..diagnose import rank
from ..model import Diagnosis, Finding, Run, RunDiagnosis
from . import PROBE_CODES
from .catalogue import PROBES
from .checkpoint import Checkpoint, load_checkpoint
from .probe import Outcome, ReplayContext
from .target import build_target


@dataclass
class ReplayOptions:
    """The command-line knobs of `logdoctor replay` / `analyze --replay`."""

    model: str | None = None
    batch: str | None = None
    data: str | None = None
    loss: str | None = None
    device: str = "auto"
    #: Full unpickling of the checkpoint (--trust-checkpoint) / of the --batch file (--trust-batch).
    trust: bool = False
    trust_batch: bool = False
    #: Which element of a tuple batch holds the targets (--targets-index); None: the second.
    targets_index: int | None = None
    #: Seconds the dynamic probes may take in all (--budget); None: no limit.
    budget: float | None = None
    #: Where warning and progress lines go as they happen (stderr in the CLI).
    say: Callable[[str], None] | None = None
    config: Config = field(default_factory=Config)


@dataclass
class ReplayResult:
    checkpoint: Checkpoint
    outcomes: list[Outcome]
    #: Notes about loading (prefix stripped, tensors not matched, probes that failed).
    warnings: list[str]
    device: str

    @property
    def findings(self) -> list[Finding]:
        return rank([f for o in self.outcomes for f in o.findings])

    def summary(self) -> str:
        """One line: which probes fired, which ran clean, which were skipped and why."""
        by = {s: [o.probe.code for o in self.outcomes if o.status == s] for s in ("fired", "clear", "skipped")}
        reasons = sorted({o.reason for o in self.outcomes if o.status == "skipped"})
        line = f"replay on {self.device}: {len(by['fired'])} probe(s) fired, {len(by['clear'])} clear"
        if by["clear"]:
            line += f" ({', '.join(by['clear'])})"
        if by["skipped"]:
            line += f", {len(by['skipped'])} skipped ({'; '.join(reasons)})"
        return line

    def diagnosis(self) -> Diagnosis:
        """The checkpoint as a one-run Diagnosis, for the usual report renderers."""
        path = Path(self.checkpoint.path)
        run = Run(name=path.name, path=str(path), format=f"checkpoint/{self.checkpoint.layout}", warnings=list(self.warnings))
        return Diagnosis(root=str(path), runs=[RunDiagnosis(run=run, roles={}, findings=self.findings)])


def probe_enabled(config: Config, code: str) -> bool:
    """select / ignore applied to probes: a select list naming no probe leaves every probe on.

    One select list serves rules and probes (`--select flat` must not switch replay off, nor
    `--select lr_range` every log rule), so each family is narrowed only by the codes of its own.
    """
    chosen = [c for c in config.select or [] if c in PROBE_CODES]
    return code not in config.ignore and (not chosen or code in chosen)


def run_replay(checkpoint: str | Path, options: ReplayOptions | None = None) -> ReplayResult:
    """Every enabled probe on `checkpoint`; raises ReplayError for input the user must fix."""
    options = options or ReplayOptions()
    trusted: list[str] = []

    def warn(line: str) -> None:
        trusted.append(line)
        if options.say is not None:
            options.say(line)

    ckpt = load_checkpoint(checkpoint, trust=options.trust, warn=warn)
    target = None
    if options.model:
        target = build_target(
            ckpt, options.model, options.batch, options.data, options.loss, options.device, options.trust_batch, options.targets_index, warn
        )
    warnings = trusted + list(ckpt.notes) + (target.notes if target is not None else [])
    if not options.model and (options.batch or options.data):
        warnings.append("--batch/--data given without --model: dynamic probes skipped")
    device = str(target.device) if target is not None else "cpu"
    deadline = time.monotonic() + options.budget if options.budget else None
    ctx = ReplayContext(ckpt, target, deadline=deadline, say=options.say)
    outcomes = []
    try:
        for cls in PROBES:
            if not probe_enabled(options.config, cls.code):
                continue
            probe = cls(options.config.thresholds(cls.code))
            try:
                outcomes.append(probe.run(ctx))
            except Exception as exc:  # noqa: BLE001 - one probe's failure must not hide the others
                warnings.append(f"probe {cls.code} failed ({type(exc).__name__}: {exc})")
                outcomes.append(Outcome(probe, "skipped", reason=f"{cls.code} failed"))
    finally:
        ctx.cache.clear()
        if target is not None:
            target.release()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    return ReplayResult(ckpt, outcomes, warnings, device)
