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
from .claims import measured_change, refutation
from .model import SEVERITY_RANK, Diagnosis, Finding, Run, RunDiagnosis, printable
from .numbers import fmt_num
from .rules import all_rules
from .view import RunView
from .window import within_window


def build_rules(config: Config) -> list:
    """Instantiate every enabled rule with its configured thresholds."""
    return [cls(config.thresholds(code)) for code, cls in all_rules().items() if config.rule_enabled(code)]


#: The codes that can name a run's failure to learn, per code the judgement names (its own first).
NOT_LEARNED = {
    "diverge": ("diverge", "oscillate"),
    "oscillate": ("oscillate", "diverge", "flat"),
    # a loss that is NaN behind a printed 0 sits still: diverge names it better than flat
    "flat": ("diverge", "flat", "oscillate", "crawl"),
    "crawl": ("crawl", "flat"),
    "overfit": ("overfit", "oscillate", "diverge"),
    "val_metric_constant": ("val_metric_constant", "overfit"),
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


def diagnose_run(run: Run, config: Config, rules: list | None = None, view: RunView | None = None) -> RunDiagnosis:
    """Roles + every enabled rule on one run; a failing rule becomes a warning line, not a crash.
    `view`: the run's RunView when the caller reads the run's arrays too (the audit), built here
    otherwise."""
    view = view or RunView(run, config.roles)
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
    findings = within_window(_proven(findings, view, run), view)
    lead = lead if lead in findings else None
    return RunDiagnosis(run=run, roles=view.roles, findings=rank(findings, lead), learning=learning)


def _proven(findings: list[Finding], view: RunView, run: Run) -> list[Finding]:
    """The findings whose headline their own numbers prove; a refuted one is withdrawn with a line."""
    kept = []
    for f in findings:
        why = refutation(f, view.metric(f.metric) if f.metric else None)
        if why is None:
            kept.append(f)
        else:
            run.warnings.append(f"finding {f.code} withdrawn: its own numbers refute it ({why})")
    return kept


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
    lead = rule.finding(
        learning.series,
        title=_lead_title(learning),
        steps=learning.steps,
        confidence=learning.confidence,
        severity=learning.severity if learning.learned is False else "warning",
        evidence={"learned": learning.learned, "reason": learning.reason, **learning.evidence},
    )
    return [*findings, lead], lead


def _lead_title(learning: Learning) -> str:
    """The judgement's headline, stating the numbers that prove it (checked by `claims`)."""
    ev, name = learning.evidence, learning.series.name
    change = measured_change(ev["loss_start"], ev["loss_end"], ev.get("change_noise"))
    if learning.learned is not False:
        return f"{learning.reason} (loss {change})"
    claim = ev.get("claim")
    if claim == "never_below_first":
        return (
            f"{name} did not learn: {learning.reason} (first {fmt_num(ev['loss_start'])}, best "
            f"{fmt_num(ev['val_loss_best'])}, within its noise ±{fmt_num(ev['change_noise'])}; "
            f"{fmt_num(ev['loss_end'])} at the end)"
        )
    if "metric" in ev:
        return (
            f"{name} did not learn: {ev['metric']} is 0 at its last {ev['metric_zero_points']} evaluations "
            f"(loss {change})"
        )
    return f"{name} did not learn: {learning.reason} ({change})"


def analyze(path: str | Path, config: Config | None = None, progress: Callable[[int, int, str], None] | None = None) -> Diagnosis:
    """Discover, read and diagnose every run under `path` (the Python API behind `logdoctor analyze`).
    `progress(done, total, stage)`: each source read ("reading", counted from the start: the sources
    are found first), then each run diagnosed ("diagnosing")."""
    config = config or Config()
    runs, errors = load_runs(Path(path), (lambda done, total: progress(done, total, "reading")) if progress else None)
    rules = build_rules(config)
    results = []
    for i, run in enumerate(runs):
        results.append(diagnose_run(run, config, rules))
        if progress:
            progress(i + 1, len(runs), "diagnosing")
    return Diagnosis(root=printable(str(path)), runs=results, errors=errors)  # a Latin-1 folder name, escaped like run paths
