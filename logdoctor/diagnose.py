"""Run the enabled rules on a run and rank what they find.

Ranking: findings whose rule `suppresses` another present code remove it (a
diverged run is not also oscillating); then order by severity and confidence;
then root causes move ahead of the symptoms they explain (`outranks`), even
across severities: "the LR hit its floor at 30 %" belongs above "loss is flat".
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .config import Config
from .ingest import load_runs
from .model import SEVERITY_RANK, Diagnosis, Finding, Run, RunDiagnosis
from .rules import all_rules
from .view import RunView


def build_rules(config: Config) -> list:
    """Instantiate every enabled rule with its configured thresholds."""
    return [cls(config.thresholds(code)) for code, cls in all_rules().items() if config.rule_enabled(code)]


def rank(findings: list[Finding]) -> list[Finding]:
    rules = all_rules()
    suppressed = {s for f in findings for s in getattr(rules.get(f.code), "suppresses", ())}
    kept = [f for f in findings if f.code not in suppressed]
    kept.sort(key=lambda f: (SEVERITY_RANK.get(f.severity, 9), -f.confidence))
    # each finding is preceded by the (non-info) findings that explain it, transitively: a root
    # cause takes its symptom's place in the order; a cycle falls back to severity/confidence order
    ordered: list[Finding] = []
    placed: set[int] = set()

    def place(f: Finding, visiting: set[int]) -> None:
        if id(f) in placed or id(f) in visiting:
            return
        visiting.add(id(f))
        for g in kept:
            if g.severity != "info" and f.code in getattr(rules.get(g.code), "outranks", ()):
                place(g, visiting)
        placed.add(id(f))
        ordered.append(f)

    for f in kept:
        place(f, set())
    return ordered


def diagnose_run(run: Run, config: Config, rules: list | None = None) -> RunDiagnosis:
    """Roles + every enabled rule on one run; a failing rule becomes a warning line, not a crash."""
    view = RunView(run, config.roles)
    findings: list[Finding] = []
    for rule in rules if rules is not None else build_rules(config):
        try:
            findings.extend(rule.check(view))
        except Exception as exc:  # noqa: BLE001 - one rule's bug must not hide the others
            run.warnings.append(f"rule {rule.code} failed on this run ({type(exc).__name__}: {exc})")
    return RunDiagnosis(run=run, roles=view.roles, findings=rank(findings))


def analyze(path: str | Path, config: Config | None = None, progress: Callable[[int, int], None] | None = None) -> Diagnosis:
    """Discover, read and diagnose every run under `path` (the Python API behind `logdoctor analyze`)."""
    config = config or Config()
    runs, errors = load_runs(Path(path))
    rules = build_rules(config)
    results = []
    for i, run in enumerate(runs):
        results.append(diagnose_run(run, config, rules))
        if progress:
            progress(i + 1, len(runs))
    return Diagnosis(root=str(path), runs=results, errors=errors)
