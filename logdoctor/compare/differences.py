"""What else sets the run apart from its baselines: the settings it was run with, and the findings.

Neither is measured here: settings are read from each run's logged config (`Run.config`,
flat `dotted.key: value`, the same in every format), findings come from the diagnosis
every run gets (`diagnose.diagnose_run`). This module only lines them up.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..model import Finding, RunDiagnosis

#: Finding severities that count as a difference (an info finding is a remark, not a problem).
PROBLEMS = ("critical", "warning")


@dataclass(frozen=True)
class SettingDiff:
    """One setting whose value in the run is not its value in every baseline (None: not logged there)."""

    key: str
    run: Any
    baselines: tuple[Any, ...]

    @property
    def among_baselines(self) -> bool:
        """The baselines disagree among themselves too (a seed): a difference that is part of the band."""
        return len({_key(v) for v in self.baselines if v is not None}) > 1


@dataclass(frozen=True)
class BaselineFinding:
    """A finding code some baselines have and the run has not, with the baselines that have it."""

    code: str
    severity: str
    title: str
    baselines: tuple[str, ...]


def settings_diff(run: dict[str, Any], baselines: list[dict[str, Any]]) -> list[SettingDiff]:
    """Every logged setting whose run value differs from at least one baseline's, by key.

    Only runs that logged settings take part (a plain CSV carries none: every key would read
    "not logged" there); a run that logged none is named by `logged_no_settings`."""
    logged = [b for b in baselines if b]
    if not run or not logged:
        return []
    out = []
    for key in sorted(set(run).union(*logged)):
        mine, theirs = run.get(key), tuple(b.get(key) for b in baselines)
        if any(_key(mine) != _key(b.get(key)) for b in logged):
            out.append(SettingDiff(key, mine, theirs))
    return out


def _key(value: Any) -> Any:
    """A value as compared: 1e-3 logged as 0.001 in one format and "0.001" in another is one value."""
    if isinstance(value, bool) or value is None:
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return number if not math.isnan(number) else "nan"


def run_only(run: RunDiagnosis, baselines: list[RunDiagnosis]) -> list[Finding]:
    """The run's problems whose code no baseline has: what the change may have brought."""
    theirs = {f.code for rd in baselines for f in rd.findings if f.severity in PROBLEMS}
    return [f for f in run.findings if f.severity in PROBLEMS and f.code not in theirs]


def baselines_only(run: RunDiagnosis, baselines: list[RunDiagnosis]) -> list[BaselineFinding]:
    """The baselines' problems whose code the run has not: what the change may have cured."""
    mine = {f.code for f in run.findings if f.severity in PROBLEMS}
    found: dict[str, tuple[Finding, list[str]]] = {}
    for rd in baselines:
        for f in rd.findings:
            if f.severity in PROBLEMS and f.code not in mine:
                first, names = found.setdefault(f.code, (f, []))
                if rd.run.name not in names:
                    names.append(rd.run.name)
    return [BaselineFinding(code, f.severity, f.title, tuple(names)) for code, (f, names) in found.items()]
