"""Terminal report (rich): one block per run, status first, findings with their numbers.

Layout of a run block (fits 80 columns; every wrapped line hangs under its
label, and no line carries trailing blanks, piped or not):

    ✖ CRITICAL  sweep/lr=1.0  [tensorboard]
      train/loss ▇▆▅▄▃▃▂×  logged 2.301 → NaN, steps 0–1,500
      1. diverge  critical · confidence 0.95
         Loss becomes NaN at step 1,500
         train/loss, steps 1,400–1,500: loss 2.1 → inf, first nan step 1,500
         cause: LR too high for this batch size
            or: no gradient clipping
         fix:   lower the LR 3-10x ...
      · not_checked — what could not be judged (info findings: one line)

Runs come worst first (the order every format shares). Healthy runs get one
line; a run no rule could judge reads `· NOT CHECKED`. With three runs or more
a summary table ends the report, so the triage is the last thing on screen.
Status is spelled out and marked with a symbol, so nothing depends on colour
(NO_COLOR). The glance line says `logged` because its numbers are the first and
last raw points, while a finding's evidence may quote smoothed levels.

Public API (also used by `logdoctor audit`):
`render_terminal(diagnosis, console, quiet=False, extra_sections=None)` where
`extra_sections` is a list of `(title, markdown)` printed after the runs, and
`render_summary(diagnosis, console)` for the summary table alone, and
`render_text(diagnosis, width, quiet, extra_sections) -> str` for a file.
"""
from __future__ import annotations

import io

from rich.console import Console
from rich.rule import Rule
from rich.text import Text

from ..model import Diagnosis, Finding, RunDiagnosis, Series
from .sparkline import sparkline
from ..naming import fit_names
from .text import TOP_CAUSES, TOP_EVIDENCE, Advice, by_severity, counts_line, evidence_items, fmt_num, main_loss, plain_fixes, verdict, where

VERDICT_STYLE = {"critical": "bold red", "warning": "bold yellow", "healthy": "bold green", "not checked": "bold cyan", "stopped": "bold magenta"}
VERDICT_MARK = {"critical": "✖", "warning": "▲", "healthy": "✓", "not checked": "·", "stopped": "■"}
SEVERITY_STYLE = {"critical": "red", "warning": "yellow", "info": "cyan"}
#: Show the summary table from this many runs on.
SUMMARY_MIN_RUNS = 3
#: Below this width the summary table marks status with its symbol alone and draws shorter
#: sparklines, leaving the room to run names.
WIDE = 100


def status_text(rd: RunDiagnosis) -> Text:
    """'✖ CRITICAL', '· NOT CHECKED', ...: readable without colour."""
    v = verdict(rd)
    return Text(f"{VERDICT_MARK.get(v, '?')} {v.upper()}", style=VERDICT_STYLE.get(v, "bold"))


def loss_glance(series: Series | None, width: int = 24) -> tuple[str, str]:
    """(sparkline, 'first → last') of a loss series; empty strings when there is none."""
    if series is None:
        return "", ""
    finite = series.values[series.finite]
    last = series.values[-1]
    ends = f"{fmt_num(finite[0])} → {fmt_num(last)}" if len(finite) else f"all {fmt_num(last)}"
    return sparkline(series, width), ends


def print_hanging(console: Console, prefix: Text | str, body: Text | str, indent: int | None = None) -> None:
    """`prefix` then `body` wrapped to the console width, continuation lines under the body.

    A hanging indent keeps labels (`cause:`, a finding number, the status) in a column of
    their own, and lines are printed without padding so nothing trails when piped.
    """
    prefix = Text(prefix) if isinstance(prefix, str) else prefix
    body = Text(body) if isinstance(body, str) else body
    indent = prefix.cell_len if indent is None else indent
    lines = body.wrap(console, max(20, console.width - indent), overflow="fold")
    for n, line in enumerate(lines):
        line.rstrip()
        lead = prefix if n == 0 else Text(" " * indent)
        console.print(Text.assemble(lead, line), soft_wrap=True)


def evidence_line(f: Finding, limit: int | None = TOP_EVIDENCE, located: bool = True) -> str:
    """Where the finding is (unless not `located`) and its first `limit` evidence items (all of
    them with None); the rest counted, not shown."""
    items = evidence_items(f.evidence, f.code)
    shown = items if limit is None else items[:limit]
    text = ", ".join(f"{k} = {v}" if len(k) <= 2 else f"{k} {v}" for k, v in shown)
    if len(items) > len(shown):
        text += f" (+{len(items) - len(shown)} more: -v)"
    return ": ".join(p for p in (where(f) if located else "", text) if p)


def _finding(console: Console, i: int, f: Finding, advice: Advice) -> None:
    limit = None if advice.verbose else TOP_EVIDENCE
    if f.severity == "info":
        ev = evidence_line(f, limit, located=False)
        body = Text.assemble((f.code, "bold cyan"), " — ", f.title, (f" ({ev})" if ev else "", "dim"))
        print_hanging(console, "  · ", body)
        return
    head = Text.assemble(
        (f"  {i}. ", "bold"),
        (f.code, f"bold {SEVERITY_STYLE.get(f.severity, '')}"),
        "  ",
        (f"{f.severity} · confidence {f.confidence:.2f}", SEVERITY_STYLE.get(f.severity, "")),
    )
    console.print(head, soft_wrap=True)
    pad = " " * 5
    print_hanging(console, pad, Text(f.title, style="bold"))
    ev = evidence_line(f, limit)
    if ev:
        print_hanging(console, pad, ev)
    docs = f"logdoctor explain {f.code}"
    if not advice.first_time(f):
        print_hanging(console, Text(pad + "cause, fix: ", style="dim"), Text(f"as above ({docs})", style="dim"))
        return
    causes = f.causes if advice.verbose else f.causes[:TOP_CAUSES]
    for n, cause in enumerate(causes):
        print_hanging(console, Text(pad + ("cause: " if n == 0 else "   or: "), style="dim"), Text(cause, style="" if n == 0 else "dim"))
    fixes = plain_fixes(f)
    for n, fix in enumerate(fixes if advice.verbose else fixes[:1]):
        print_hanging(console, Text(pad + ("fix:   " if n == 0 else "   or: "), style="dim"), Text(fix, style="green"))
    if f.probe:
        print_hanging(console, Text(pad + "probe: ", style="dim"), Text(f"{' '.join(f.probe.split())} (logdoctor replay)", style="dim"))
    print_hanging(console, Text(pad + "docs:  ", style="dim"), Text(docs, style="dim"))


def render_run(console: Console, rd: RunDiagnosis, advice: Advice | None = None) -> None:
    """One run: a single line when healthy with nothing to say, else the header, glance and findings."""
    advice = advice or Advice()
    status = status_text(rd)
    status.append("  ")
    name = Text.assemble((rd.run.name, "bold"), (f"  [{rd.run.format}]", "dim"))
    loss = main_loss(rd)
    if rd.status == "healthy" and not rd.findings:
        spark, ends = loss_glance(loss, width=16)
        tail = f"  {spark}  {ends}" if spark else ""
        if status.cell_len + name.cell_len + len(tail) <= console.width:
            name.append(tail, style="dim")
            tail = ""
        print_hanging(console, status, name)
        if tail:
            console.print(Text("  " + tail.strip(), style="dim"), soft_wrap=True)
        _warnings(console, rd)
        return
    print_hanging(console, status, name)
    if loss is not None:
        _, ends = loss_glance(loss)
        span = f"logged {ends}, steps {fmt_num(int(loss.steps[0]))}–{fmt_num(int(loss.steps[-1]))}"
        # the sparkline gives way (24 down to 12 cells) before the glance wraps onto a second line
        room = console.width - 4 - len(loss.name) - 1 - 2 - len(span)  # the body wraps at width - its hang of 4
        spark, _ = loss_glance(loss, width=max(12, min(24, room)))
        print_hanging(console, "  ", Text.assemble((loss.name, "dim"), " ", spark, "  ", (span, "dim")), indent=4)
    for i, f in enumerate((f for f in rd.findings if f.severity != "info"), 1):
        _finding(console, i, f, advice)
    for f in rd.findings:
        if f.severity == "info":
            _finding(console, 0, f, advice)
    _warnings(console, rd)


def _warnings(console: Console, rd: RunDiagnosis) -> None:
    for w in rd.run.warnings:
        print_hanging(console, Text("  ! ", style="yellow"), Text(w, style="yellow"))


def render_summary(diagnosis: Diagnosis, console: Console) -> None:
    """One row per run, worst first: status, run, finding codes, loss sparkline, last loss.

    The name column takes whatever width the other columns leave; a name cut to fit keeps
    the characters that tell it from its neighbours (`fit_names`).
    """
    runs = by_severity(diagnosis.runs)
    narrow = console.width < WIDE
    rows = []
    for rd in runs:
        spark, ends = loss_glance(main_loss(rd), width=8 if narrow else 12)
        codes = Text(" ").join(Text(f.code, style=SEVERITY_STYLE.get(f.severity, "")) for f in rd.findings)
        status = status_text(rd)
        rows.append((status[:1] if narrow else status, rd.run.name, codes, spark, ends.split("→")[-1].strip()))
    status_w = max(1 if narrow else len("status"), *(r[0].cell_len for r in rows))
    spark_w = max(len("loss"), *(len(r[3]) for r in rows))
    last_w = max(len("last"), *(len(r[4]) for r in rows))
    room = console.width - status_w - spark_w - last_w - 8  # four gaps of two
    codes_need = max(len("findings"), *(r[2].cell_len for r in rows))
    name_need = max(len("run"), *(len(r[1]) for r in rows))
    # piped or written to a file, a name is never cut (a script greps for it): its column takes it whole
    name_w = min(name_need, max(20, room - min(codes_need, 20))) if console.is_terminal else name_need
    codes_w = max(8, room - name_w)
    names = fit_names([r[1] for r in rows], name_w)
    header = (("" if narrow else "status").ljust(status_w), "run".ljust(name_w), "findings".ljust(codes_w), "loss".ljust(spark_w), "last".rjust(last_w))
    console.print(Text("  ".join(header).rstrip(), style="bold"), soft_wrap=True)
    for (status, _, codes, spark, last), name in zip(rows, names):
        lines = codes.wrap(console, codes_w) if codes else [Text()]
        first = Text.assemble(
            status, " " * (status_w - status.cell_len + 2),
            name.ljust(name_w), "  ",
            lines[0], " " * (codes_w - lines[0].cell_len + 2),
            spark.ljust(spark_w), "  ", last.rjust(last_w),
        )
        first.rstrip()
        console.print(first, soft_wrap=True)
        for more in lines[1:]:
            more.rstrip()
            console.print(Text.assemble(" " * (status_w + name_w + 4), more), soft_wrap=True)


def render_problem_lines(diagnosis: Diagnosis, console: Console) -> None:
    """`--quiet`: one line per run with a problem (or not checked): status mark, name, top finding
    code and title (the title carries the headline number), in columns. On a terminal a line is
    cut to its width and the name column takes at most a third of it (longer names cut, still
    distinct); piped or written to a file nothing is cut, so `grep NAME` finds every run."""
    rows = []
    for rd in by_severity(diagnosis.runs):
        top = next((f for f in rd.findings if f.severity != "info"), None) or next(
            (f for code in ("stopped", "not_checked") for f in rd.findings if f.code == code), None
        )
        if verdict(rd) != "healthy" and top is not None:
            rows.append((rd, top))
    if not rows:
        return
    cut = console.is_terminal
    name_w = max(len(rd.run.name) for rd, _ in rows)
    if cut:
        name_w = min(name_w, max(12, console.width // 3))
    code_w = max(len(top.code) for _, top in rows)
    names = fit_names([rd.run.name for rd, _ in rows], name_w)
    # where the output cannot encode the marks (PYTHONIOENCODING=ascii) the word says it
    marks = VERDICT_MARK if console.encoding.lower().startswith("utf") else {v: v.upper() for v in VERDICT_MARK}
    for (rd, top), name in zip(rows, names):
        v = verdict(rd)
        line = Text.assemble(
            (marks.get(v, "?"), VERDICT_STYLE.get(v, "")), " ", (name.ljust(name_w), "bold"), "  ",
            (top.code.ljust(code_w), SEVERITY_STYLE.get(top.severity, "")), "  ", top.title,
        )
        if cut:
            line.truncate(console.width, overflow="ellipsis")
        console.print(line, soft_wrap=True)


def render_terminal(
    diagnosis: Diagnosis,
    console: Console,
    quiet: bool = False,
    verbose: bool = False,
    extra_sections: list[tuple[str, str]] | None = None,
    config_source: str | None = None,
    skip_healthy: bool = False,
) -> None:
    """The whole report, worst run first, the counts on its last line (as pytest and ruff end).

    `quiet`: one line per problem run (`render_problem_lines`), then the counts. `verbose`: every
    cause, fix and evidence item on every finding; by default a code's causes and fix are
    printed once per report. `skip_healthy`: run blocks only for runs with a problem.
    `config_source` names the configuration file used, if any.
    """
    if not diagnosis.runs:
        console.print(f"No training runs found under {diagnosis.root}.", highlight=False, soft_wrap=True)
        return
    if quiet:
        render_problem_lines(diagnosis, console)
    else:
        advice = Advice(verbose)
        for rd in by_severity(diagnosis.runs):
            if skip_healthy and verdict(rd) == "healthy":
                continue
            render_run(console, rd, advice)
            console.print()
        if len(diagnosis.runs) >= SUMMARY_MIN_RUNS and not skip_healthy:
            render_summary(diagnosis, console)
    for title, body in extra_sections or []:
        from rich.markdown import Markdown  # markdown-it and pygments load only for extra sections

        console.print()
        console.print(Rule(title, align="left"))
        console.print(Markdown(body))
    if config_source:
        console.print(Text(f"config: {config_source}", style="dim"), soft_wrap=True)
    console.print(_counts(diagnosis), style="bold", soft_wrap=True)


def _counts(diagnosis: Diagnosis) -> str:
    """The last line: '52 runs: 11 critical, 24 warning, 17 healthy', or 'N runs: all healthy'."""
    line = counts_line(diagnosis.runs)
    n = len(diagnosis.runs)
    return f"{n} run{'s' if n != 1 else ''}: all healthy" if line.endswith(f": 0 critical, 0 warning, {n} healthy") else line


def render_text(
    diagnosis: Diagnosis,
    width: int = 100,
    quiet: bool = False,
    verbose: bool = False,
    extra_sections: list[tuple[str, str]] | None = None,
    config_source: str | None = None,
    skip_healthy: bool = False,
) -> str:
    """The terminal report as plain text (no colour, no trailing blanks), for `-o report.txt`."""
    console = Console(file=io.StringIO(), width=width, no_color=True, color_system=None, highlight=False, emoji=False)
    render_terminal(diagnosis, console, quiet, verbose, extra_sections, config_source, skip_healthy)
    return "\n".join(line.rstrip() for line in console.file.getvalue().splitlines()) + "\n"
