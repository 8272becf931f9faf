"""Terminal report (rich): one block per run, status first, findings with their numbers."""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from ..model import Diagnosis, Finding, RunDiagnosis

STATUS_STYLE = {"critical": "bold red", "warning": "bold yellow", "healthy": "bold green"}
SEVERITY_STYLE = {"critical": "red", "warning": "yellow", "info": "cyan"}


def format_evidence(evidence: dict) -> str:
    parts = []
    for key, value in evidence.items():
        if isinstance(value, float):
            value = f"{value:.4g}"
        parts.append(f"{key}={value}")
    return ", ".join(parts)


def _finding(console: Console, f: Finding) -> None:
    steps = f" steps {f.steps[0]:,}–{f.steps[1]:,}" if f.steps else ""
    console.print(
        Text.assemble(
            ("  ● ", SEVERITY_STYLE.get(f.severity, "")),
            (f"{f.code}", "bold"),
            f" ({f.severity}, confidence {f.confidence:.2f}) ",
            f.title,
        )
    )
    meta = f"    {escape(f.metric or '')}{steps}"
    console.print(meta, style="dim", highlight=False)
    if f.evidence:
        console.print(f"    evidence: {escape(format_evidence(f.evidence))}", highlight=False)
    if f.causes:
        console.print(f"    likely cause: {escape(f.causes[0])}", highlight=False)
    if f.fixes:
        console.print(f"    fix: {escape(f.fixes[0])}", highlight=False)


def render_run(console: Console, rd: RunDiagnosis) -> None:
    console.print(
        Text.assemble((f"{rd.status.upper():8}", STATUS_STYLE[rd.status]), " ", (rd.run.name, "bold"), f"  [{rd.run.format}]")
    )
    for f in rd.findings:
        _finding(console, f)
    for w in rd.run.warnings:
        console.print(f"  ! {escape(w)}", style="yellow", highlight=False)


def render_terminal(diagnosis: Diagnosis, console: Console, quiet: bool = False) -> None:
    for rd in diagnosis.runs:
        if quiet and rd.status == "healthy":
            continue
        render_run(console, rd)
        console.print()
    if not diagnosis.runs:
        console.print(f"No training runs found under {escape(diagnosis.root)}.")
