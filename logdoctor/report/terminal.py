"""Terminal report (rich): one block per run, status first, findings with their numbers.

Layout of a run block (readable at 80 columns; hanging indents wrap):

    ✖ CRITICAL  sweep/lr=1.0  [tensorboard]
      train/loss ▇▆▅▄▃▃▂×  2.301 → NaN  (steps 0–1,500)
      1. diverge  critical · confidence 0.95
         Loss becomes NaN at step 1,500
         train/loss, steps 1,400–1,500: loss 2.1 → inf, first nan step 1,500
         cause: LR too high for this batch size
                also: no gradient clipping
         fix:   lower the LR 3-10x ...

Healthy runs get one line. With three runs or more a summary table (worst
first) ends the report, so the triage is the last thing on screen. Status is
spelled out and marked with a symbol, so nothing depends on colour (NO_COLOR).

Public API (also used by `logdoctor audit`):
`render_terminal(diagnosis, console, quiet=False, extra_sections=None)` where
`extra_sections` is a list of `(title, markdown)` printed after the runs, and
`render_summary(diagnosis, console)` for the summary table alone, and
`render_text(diagnosis, width, quiet, extra_sections) -> str` for a file.
"""
from __future__ import annotations

import io

from rich.console import Console, Group
from rich.markdown import Markdown
from rich.padding import Padding
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from ..model import Diagnosis, Finding, RunDiagnosis, Series
from .sparkline import sparkline
from .text import by_severity, counts_line, evidence_text, fmt_num, main_loss, run_column_width, middle_ellipsis, where

STATUS_STYLE = {"critical": "bold red", "warning": "bold yellow", "healthy": "bold green"}
STATUS_MARK = {"critical": "✖", "warning": "▲", "healthy": "✓"}
SEVERITY_STYLE = {"critical": "red", "warning": "yellow", "info": "cyan"}
#: Show the summary table from this many runs on.
SUMMARY_MIN_RUNS = 3
#: Causes shown per finding (the rest are in `logdoctor explain CODE` and the other formats).
TOP_CAUSES = 2


def status_text(status: str) -> Text:
    return Text(f"{STATUS_MARK.get(status, '?')} {status.upper()}", style=STATUS_STYLE.get(status, "bold"))


def loss_glance(series: Series | None, width: int = 24) -> tuple[str, str]:
    """(sparkline, 'first → last') of a loss series; empty strings when there is none."""
    if series is None:
        return "", ""
    finite = series.values[series.finite]
    last = series.values[-1]
    ends = f"{fmt_num(finite[0])} → {fmt_num(last)}" if len(finite) else f"all {fmt_num(last)}"
    return sparkline(series, width), ends


def _labelled(label: str, text: str, style: str = "") -> Table:
    """'label: text' with the text wrapping under itself, not under the label."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(width=len(label), no_wrap=True, style="dim")
    grid.add_column(overflow="fold")
    grid.add_row(label, Text(text, style=style))
    return grid


def _finding(console: Console, i: int, f: Finding) -> None:
    if f.severity == "info":
        line = Text.assemble("  · ", (f.code, "bold cyan"), " — ", f.title)
        ev = evidence_text(f.evidence)
        if ev:
            line.append(f" ({ev})", style="dim")
        console.print(line, overflow="fold")
        return
    head = Text.assemble(
        (f"  {i}. ", "bold"),
        (f.code, f"bold {SEVERITY_STYLE.get(f.severity, '')}"),
        "  ",
        (f"{f.severity} · confidence {f.confidence:.2f}", SEVERITY_STYLE.get(f.severity, "")),
    )
    console.print(head)
    body: list = [Text(f.title, style="bold")]
    loc, ev = where(f), evidence_text(f.evidence)
    if loc or ev:
        body.append(Text(": ".join(p for p in (loc, ev) if p)))
    fixes = [x for x in f.fixes if not x.startswith("Confirm with replay:")]
    confirm = [x.split(":", 1)[1].strip() for x in f.fixes if x.startswith("Confirm with replay:")]
    if f.causes:
        body.append(_labelled("cause:", f.causes[0]))
        for cause in f.causes[1:TOP_CAUSES]:
            body.append(_labelled("   or:", cause, style="dim"))
    if fixes:
        body.append(_labelled("fix:  ", fixes[0], style="green"))
    if confirm:
        body.append(_labelled("probe:", f"{confirm[0]} (logdoctor replay)", style="dim"))
    console.print(Padding(Group(*body), (0, 0, 0, 5), expand=False))


def render_run(console: Console, rd: RunDiagnosis) -> None:
    head = Text.assemble(status_text(rd.status), "  ", (rd.run.name, "bold"), (f"  [{rd.run.format}]", "dim"))
    loss = main_loss(rd)
    spark, ends = loss_glance(loss, width=16 if rd.status == "healthy" else 24)
    if rd.status == "healthy" and not rd.findings:
        if spark:
            head.append(f"  {spark}  {ends}", style="dim")
        console.print(head, overflow="fold")
        _warnings(console, rd)
        return
    console.print(head, overflow="fold")
    if loss is not None:
        span = f"  (steps {int(loss.steps[0]):,}–{int(loss.steps[-1]):,})"
        console.print(Text.assemble("  ", (loss.name, "dim"), " ", spark, f"  {ends}", (span, "dim")), overflow="fold")
    for i, f in enumerate(rd.findings, 1):
        _finding(console, i, f)
    _warnings(console, rd)


def _warnings(console: Console, rd: RunDiagnosis) -> None:
    for w in rd.run.warnings:
        console.print(Padding(Text(f"! {w}", style="yellow"), (0, 0, 0, 2), expand=False))


def render_summary(diagnosis: Diagnosis, console: Console) -> None:
    """One row per run, worst first: status, run, finding codes, loss sparkline, last loss."""
    table = Table(title=counts_line(diagnosis.runs), title_justify="left", box=None, pad_edge=False, header_style="bold")
    table.add_column("status", no_wrap=True)
    table.add_column("run", no_wrap=True, overflow="ellipsis")
    table.add_column("findings", overflow="fold", min_width=15)
    table.add_column("loss", no_wrap=True)
    table.add_column("last", justify="right", no_wrap=True)
    for rd in by_severity(diagnosis.runs):
        spark, ends = loss_glance(main_loss(rd), width=12)
        codes = Text()
        for f in rd.findings:
            if codes:
                codes.append(" ")
            codes.append(f.code, style=SEVERITY_STYLE.get(f.severity, ""))
        table.add_row(status_text(rd.status), middle_ellipsis(rd.run.name, run_column_width(console.width)), codes, spark, ends.split("→")[-1].strip())
    console.print(table)


def render_terminal(
    diagnosis: Diagnosis,
    console: Console,
    quiet: bool = False,
    extra_sections: list[tuple[str, str]] | None = None,
) -> None:
    """The whole report; `quiet` keeps only runs with a problem (and no summary table)."""
    shown = [rd for rd in diagnosis.runs if not (quiet and rd.status == "healthy")]
    for rd in shown:
        render_run(console, rd)
        console.print()
    if not diagnosis.runs:
        console.print(f"No training runs found under {diagnosis.root}.", highlight=False)
    elif not quiet and len(diagnosis.runs) >= SUMMARY_MIN_RUNS:
        render_summary(diagnosis, console)
    elif not quiet:
        console.print(counts_line(diagnosis.runs), style="dim")
    for title, body in extra_sections or []:
        console.print()
        console.print(Rule(title, align="left"))
        console.print(Markdown(body))


def render_text(
    diagnosis: Diagnosis,
    width: int = 100,
    quiet: bool = False,
    extra_sections: list[tuple[str, str]] | None = None,
) -> str:
    """The terminal report as plain text (no colour, no trailing blanks), for `-o report.txt`."""
    console = Console(file=io.StringIO(), width=width, no_color=True, color_system=None, highlight=False)
    render_terminal(diagnosis, console, quiet=quiet, extra_sections=extra_sections)
    return "\n".join(line.rstrip() for line in console.file.getvalue().splitlines()) + "\n"
