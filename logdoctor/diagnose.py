"""Run the enabled rules on a run and rank what they find.

Ranking: findings whose rule `suppresses` another present code remove it (a
diverged run is not also oscillating); then order by severity and confidence;
then root causes move ahead of the symptoms they explain (`outranks`), even
across severities: "the LR hit its floor at 30 %" belongs above "loss is flat".

Before any of that, every run gets the "did it learn" judgement (`learning`):
a run that did not learn is never healthy. The finding that names its failure
(one a rule already made, else one the judgement makes under the likeliest
code) leads the ranking, behind only the root causes that explain it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from .config import Config
from .ingest import load_runs
from .learning import Learning, judge
from .model import SEVERITY_RANK, Diagnosis, Finding, Run, RunDiagnosis, printable
from .rules import all_rules
from .view import RunView


def build_rules(config: Config) -> list:
    """Instantiate every enabled rule with its configured thresholds."""
    return [cls(config.thresholds(code)) for code, cls in all_rules().items() if config.rule_enabled(code)]


#: The codes that can name a run's failure to learn, per code the judgement names (its own first).
NOT_LEARNED = {
    "diverge": ("diverge", "oscillate"),
    "oscillate": ("oscillate", "diverge", "flat"),
    "flat": ("flat", "oscillate", "crawl", "diverge"),
    "crawl": ("crawl", "flat"),
    "overfit": ("overfit", "oscillate", "diverge"),
    "val_metric_constant": ("val_metric_constant",),
}


def rank(findings: list[Finding], lead: Finding | None = None) -> list[Finding]:
    """Findings in report order; `lead` (the did-not-learn finding) first, never suppressed."""
    rules = all_rules()
    suppressed = {s for f in findings for s in getattr(rules.get(f.code), "suppresses", ())}
    kept = [f for f in findings if f is lead or f.code not in suppressed]
    kept.sort(key=lambda f: (f is not lead, SEVERITY_RANK.get(f.severity, 9), -f.confidence))
    # each finding is preceded by the (non-info) findings that explain it, transitively: a root
    # cause takes its symptom's place in the order; a cycle falls back to severity/confidence order
    ordered: list[Finding] = []
    placed: set[int] = set()

    def place(f: Finding, visiting: set[int]) -> None:
        if id(f) in placed or id(f) in visiting:
            return
        visiting.add(id(f))
        for g in kept:
            if g.severity != "info" and _explains(rules.get(g.code), g, f):
                place(g, visiting)
        placed.add(id(f))
        ordered.append(f)

    for f in kept:
        place(f, set())
    return ordered


def _explains(rule, cause: Finding, symptom: Finding) -> bool:
    """`cause` is a root cause of `symptom`: its rule outranks the symptom's code (and, for rules
    that say so, its finding starts no later than the symptom's)."""
    if symptom.code not in getattr(rule, "outranks", ()):
        return False
    if getattr(rule, "explains_only_earlier", False) and cause.steps and symptom.steps:
        return cause.steps[0] <= symptom.steps[0]
    return True


def diagnose_run(run: Run, config: Config, rules: list | None = None) -> RunDiagnosis:
    """Roles + every enabled rule on one run; a failing rule becomes a warning line, not a crash."""
    view = RunView(run, config.roles)
    findings: list[Finding] = []
    for rule in rules if rules is not None else build_rules(config):
        try:
            findings.extend(rule.check(view))
        except Exception as exc:  # noqa: BLE001 - one rule's bug must not hide the others
            run.warnings.append(f"rule {rule.code} failed on this run ({type(exc).__name__}: {exc})")
    try:
        learning = judge(view)
    except Exception as exc:  # noqa: BLE001 - like a rule's bug, it must not hide the findings
        run.warnings.append(f"the did-it-learn judgement failed on this run ({type(exc).__name__}: {exc})")
        learning = Learning(None, "not judged")
    findings, lead = _lead_for(learning, findings, config)
    return RunDiagnosis(run=run, roles=view.roles, findings=rank(findings, lead), learning=learning)


def _lead_for(learning: Learning, findings: list[Finding], config: Config) -> tuple[list[Finding], Finding | None]:
    """The finding that names a did-not-learn run's failure, added to the findings if no rule made one.

    A rule's own finding of a fitting code wins (its shape judgement is the more careful one;
    a remark is raised to a warning); otherwise the judgement's code is filed through that
    rule, so the finding carries the rule's documented causes and fixes."""
    if learning.code is None:
        return findings, None
    fitting = NOT_LEARNED.get(learning.code, (learning.code,))
    for code in fitting:
        for i, f in enumerate(findings):
            if f.code == code:
                if f.severity == "info":
                    f = findings[i] = replace(f, severity="warning")
                return findings, f
    if not config.rule_enabled(learning.code):
        return findings, None
    rule = all_rules()[learning.code](config.thresholds(learning.code))
    start, end = learning.evidence["loss_start"], learning.evidence["loss_end"]
    lead = rule.finding(
        learning.series,
        title=(
            f"{learning.series.name} did not learn: {learning.reason} ({start:.4g} at the start, {end:.4g} at the end)"
            if learning.learned is False
            else f"{learning.reason} (loss {start:.4g} at the start, {end:.4g} at the end)"
        ),
        steps=learning.steps,
        confidence=learning.confidence,
        severity="critical" if learning.learned is False else "warning",
        evidence={"learned": learning.learned, "reason": learning.reason, **learning.evidence},
    )
    return [*findings, lead], lead


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
    return Diagnosis(root=printable(str(path)), runs=results, errors=errors)  # a Latin-1 folder name, escaped like run paths
