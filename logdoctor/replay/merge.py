"""Fold replay probe results into a run's log diagnosis.

Logs say *what* happened; probes can say *which* of the documented causes it
was. For every log finding a probe `explains`:

* a probe that fired and whose `cause_pattern` matches one of the finding's
  causes moves that cause to the top, tagged "confirmed by probe X: <what it
  saw>"; when no listed cause matches, the probe's own leading cause is put on
  top with the same tag;
* a probe that ran clean tags the causes it speaks to "ruled out by probe X"
  and moves them to the bottom (a confirmed cause stays confirmed).

The probe findings themselves join the run's findings and everything is
re-ranked; a probe finding with the same code as a log finding (the
`scaler_collapse` pair) is merged into it instead of listed twice.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..diagnose import rank
from ..model import SEVERITY_RANK, Diagnosis, Finding, RunDiagnosis
from ..rules.base import bullets
from . import ReplayError


@dataclass
class _Cause:
    text: str
    confirmed: list[str] = field(default_factory=list)
    ruled_out: list[str] = field(default_factory=list)

    def render(self) -> str:
        if self.confirmed:
            return f"{self.text} (confirmed by {'; '.join(self.confirmed)})"
        if self.ruled_out:
            return f"{self.text} (ruled out by {', '.join(self.ruled_out)})"
        return self.text


def pick_run(diagnosis: Diagnosis, checkpoint: str | Path) -> RunDiagnosis:
    """The run a checkpoint belongs to: the only run, or the deepest run folder containing it."""
    if len(diagnosis.runs) == 1:
        return diagnosis.runs[0]
    ckpt = Path(checkpoint).resolve()
    owners = [rd for rd in diagnosis.runs if _contains(Path(rd.run.path), ckpt)]
    if owners:
        return max(owners, key=lambda rd: len(Path(rd.run.path).resolve().parts))
    raise ReplayError(
        f"{checkpoint}: analyze found {len(diagnosis.runs)} runs and the checkpoint lies in none of them; "
        "point analyze at the checkpoint's run"
    )


def _contains(run_path: Path, ckpt: Path) -> bool:
    folder = run_path.resolve()
    folder = folder if folder.is_dir() else folder.parent
    return ckpt == folder or folder in ckpt.parents


def merge_replay(rd: RunDiagnosis, result) -> RunDiagnosis:
    """Return `rd` with causes confirmed / ruled out by `result` (a runner.ReplayResult) and probe findings added."""
    log_findings = list(rd.findings)
    causes = {id(f): [_Cause(c) for c in f.causes] for f in log_findings}
    extra: list[Finding] = []
    fired = [(o.probe, pf) for o in result.outcomes for pf in o.findings]
    # Weakest first: each confirmation moves its cause to the top, so the strongest ends up there.
    fired.sort(key=lambda item: (-SEVERITY_RANK.get(item[1].severity, 9), item[1].confidence))
    for probe, pf in fired:
        twin = next((f for f in log_findings if f.code == pf.code), None)
        if twin is not None:
            _absorb(twin, causes[id(twin)], pf, probe.code)
        else:
            extra.append(pf)
        for code, pattern in probe.confirms(pf):
            for f in log_findings:
                if f.code == code and f is not twin:
                    _confirm(f, causes[id(f)], probe, pf, pattern)
    for outcome in result.outcomes:
        probe = outcome.probe
        for code, pattern in probe.rules_out(outcome):
            for f in log_findings:
                if f.code == code:
                    _rule_out(f, causes[id(f)], probe.code, pattern)
    for f in log_findings:
        items = causes[id(f)]
        ordered = [c for c in items if c.confirmed] + [c for c in items if not c.confirmed and not c.ruled_out]
        ordered += [c for c in items if c.ruled_out and not c.confirmed]
        f.causes = [c.render() for c in ordered]
    rd.findings = rank(log_findings + extra)
    rd.run.warnings.extend(f"replay: {w}" for w in result.warnings)
    return rd


def _confirm(f: Finding, items: list[_Cause], probe, pf: Finding, pattern: str) -> None:
    tag = f"probe {probe.code}: {pf.title}"
    match = next((c for c in items if pattern and re.search(pattern, c.text, re.IGNORECASE)), None)
    if match is None:
        own = bullets(probe.doc().get("Root causes", ""))
        if not own:
            return
        match = _Cause(own[0])
        items.insert(0, match)
    else:  # most recent confirmation first
        items.remove(match)
        items.insert(0, match)
    if tag not in match.confirmed:
        match.confirmed.append(tag)
    fix = next(iter(bullets(probe.doc().get("Fix", ""))), None)
    if fix and fix not in f.fixes:
        f.fixes.insert(0, fix)
    f.evidence.setdefault("confirmed_by", [])
    if probe.code not in f.evidence["confirmed_by"]:
        f.evidence["confirmed_by"].append(probe.code)


def _rule_out(f: Finding, items: list[_Cause], code: str, pattern: str) -> None:
    hit = False
    for c in items:
        if pattern and re.search(pattern, c.text, re.IGNORECASE) and f"probe {code}" not in c.ruled_out:
            c.ruled_out.append(f"probe {code}")
            hit = True
    if hit:
        f.evidence.setdefault("ruled_out_by", [])
        if code not in f.evidence["ruled_out_by"]:
            f.evidence["ruled_out_by"].append(code)


def _absorb(f: Finding, items: list[_Cause], pf: Finding, code: str) -> None:
    """A probe finding with the log finding's own code: one finding, both evidences, the probe's cause on top."""
    f.evidence.update({f"probe_{k}": v for k, v in pf.evidence.items()})
    f.evidence.setdefault("confirmed_by", []).append(code)
    f.confidence = max(f.confidence, pf.confidence)
    if pf.causes:
        same = next((c for c in items if c.text == pf.causes[0]), None)
        if same is None:
            same = _Cause(pf.causes[0])
        else:
            items.remove(same)
        items.insert(0, same)
        same.confirmed.append(f"probe {code}: {pf.title}")
