"""The audit's own report sections, as `(title, markdown)` pairs.

The terminal, Markdown and HTML renderers of `analyze` all take such extra
sections, so the audit adds its summary, links and run table there and leaves
the per-run detail to those renderers. Every log-supplied string (run names,
parameter values, error lines) goes through `md_escape`.
"""
from __future__ import annotations

from rich.console import Console
from rich.rule import Rule
from rich.table import Table

from ..numbers import count
from ..report.text import fmt_num, md_escape, middle_ellipsis
from .links import ALPHA
from .summary import AuditReport

STATUS_MARK = {"critical": "✖", "warning": "▲", "healthy": "✓"}


def _counts(report: AuditReport) -> str:
    s = report.by_status
    parts = [f"**{len(report.results)} runs**: {s['critical']} critical, {s['warning']} warning, {s['healthy']} healthy"]
    if s["error"]:
        parts.append(f"{s['error']} unreadable")
    return ", ".join(parts)


def summary_section(report: AuditReport) -> str:
    lines = [_counts(report), ""]
    if report.by_code:
        lines += ["| finding | runs |", "| --- | ---: |"]
        lines += [f"| `{code}` | {n} |" for code, n in report.by_code.items()]
        lines.append("")
    best, metric = report.best
    if best is not None:
        lines.append(f"**Best healthy run:** {md_escape(best.run)} ({metric.replace('_', ' ')} {fmt_num(best.stats[metric])})")
    else:
        lines.append("**Best healthy run:** none (no healthy run logs a finite loss)")
    st = report.stats
    if st:
        how = st.get("executor") or "this process"
        read, cached = st.get("read", 0), st.get("cached", 0)
        done = f"resumed from the cache ({cached} runs), {read} read" if read and cached else f"{read} read, {cached} from cache"
        lines += ["", f"Audited in {st.get('seconds', 0):.1f} s ({how}): {done}."]
    return "\n".join(lines)


def links_section(report: AuditReport) -> str:
    """How settings move the outcome (rank tests), then which settings gather a finding (Fisher), then the
    importance ranking over all settings together."""
    lines = [f"- {md_escape(e.text)}" for e in report.effects] + [f"- {md_escape(link.text)}" for link in report.links]
    with_params = sum(1 for r in report.results if r.params)
    if not lines:
        if with_params < 4:
            return f"No link searched: {count(with_params, 'run')} {'carries' if with_params == 1 else 'carry'} hyperparameters (a config / hparams); at least 4 are needed."
        lines = [
            "No setting moves the outcome or separates failing from healthy runs with enough support "
            f"(rank tests of every swept setting against the {report.rank_by} loss and failing or not; one-sided Fisher "
            f"exact tests per finding; permutation-adjusted, alpha = {ALPHA}; {with_params} runs with hyperparameters)."
        ]
    if report.importance is not None:
        lines += ["", md_escape(report.importance.text)]
    return "\n".join(lines)


def _cell(value) -> str:
    return "" if value is None else fmt_num(value)


#: Swept settings shown as Markdown table columns at most (all of them are in the JSON `table`).
MD_SETTINGS = 8


def table_section(report: AuditReport, quiet: bool = False) -> str:
    settings = report.swept[:MD_SETTINGS]
    stats = ("train_loss_final", "train_loss_best", "val_loss_final", "val_loss_best", "steps")
    head = ["run", "status", "top finding", *(md_escape(k) for k in settings),
            "train loss final", "train loss best", "val loss final", "val loss best", "steps"]
    lines = ["| " + " | ".join(head) + " |", "| --- | --- | --- |" + " ---: |" * (len(settings) + len(stats))]
    for row in report.table():
        if quiet and row["status"] == "healthy":
            continue
        top = f"`{row['top']}`" if row["top"] else ""
        cells = [md_escape(_cell(row["config"].get(k))) for k in settings] + [_cell(row[k]) for k in stats]
        lines.append(f"| {md_escape(row['run'])} | {STATUS_MARK.get(row['status'], '')} {row['status']} | {top} | " + " | ".join(cells) + " |")
    if len(report.swept) > MD_SETTINGS:
        lines += ["", f"{len(report.swept) - MD_SETTINGS} more swept settings in the JSON report's `audit.table`."]
    return "\n".join(lines)


def errors_section(report: AuditReport) -> str:
    return "\n".join(f"- {md_escape(e)}" for e in report.errors)


def sections(report: AuditReport, quiet: bool = False, table: bool = True) -> list[tuple[str, str]]:
    out = [("Sweep audit", summary_section(report)), ("Hyperparameter links", links_section(report))]
    if table and report.results:
        out.append(("Runs by severity", table_section(report, quiet)))
    if report.errors:
        out.append(("Unreadable runs", errors_section(report)))
    return out


STAT_COLUMNS = (("train_loss_final", "train"), ("val_loss_final", "val"), ("val_loss_best", "best val"), ("steps", "steps"))
#: Room a run name keeps before a swept setting's column is given up for it.
MIN_NAME_ROOM = 16


def runs_table(report: AuditReport, quiet: bool = False, width: int = 80, cut: bool = True) -> Table:
    """The per-run table for a terminal, one line per run at any width.

    Below 100 columns the status shrinks to its mark (the counts line above
    spells the words out) and run names are cut in the middle (with `cut`, on a
    terminal: piped, names stay whole for grep), so the numbers never wrap or
    get cut. Swept settings (linked ones first) get columns while the run name
    keeps `MIN_NAME_ROOM` characters.
    """
    rows = [r for r in report.table() if not (quiet and r["status"] == "healthy")]
    narrow = width < 100

    def column_width(label: str, cells: list[str]) -> int:
        return max([len(label)] + [len(c) for c in cells]) + 2

    stats = [[_cell(r[k]) for r in rows] for k, _ in STAT_COLUMNS]
    used = sum(column_width(label, cells) for (_, label), cells in zip(STAT_COLUMNS, stats))
    used += column_width("top finding", [r["top"] or "" for r in rows]) + (3 if narrow else 12)
    settings: list[tuple[str, list[str]]] = []
    for key in report.swept:
        cells = [_cell(r["config"].get(key)) for r in rows]
        if settings and width - used - column_width(key, cells) < MIN_NAME_ROOM:  # the key setting stays at any width
            break
        settings.append((key, cells))
        used += column_width(key, cells)
    run_room = max(12, width - used - 2) if cut else max([12] + [len(r["run"]) for r in rows])
    table = Table(box=None, pad_edge=False, header_style="bold", caption="loss columns: final train, final val, best val")
    table.add_column("run", no_wrap=True, overflow="ellipsis")
    table.add_column("" if narrow else "status", no_wrap=True)
    table.add_column("top finding", no_wrap=True)
    for i, (key, cells) in enumerate(settings):  # the key setting's values are never cut, whatever else shrinks
        table.add_column(key, justify="right", no_wrap=True, overflow="ellipsis", min_width=None if i else max(map(len, [key, *cells])))
    for _, label in STAT_COLUMNS:
        table.add_column(label, justify="right", no_wrap=True)
    for i, row in enumerate(rows):
        mark = STATUS_MARK.get(row["status"], "")
        status = mark if narrow else f"{mark} {row['status']}"
        cells = [c[i] for _, c in settings] + [c[i] for c in stats]
        table.add_row(middle_ellipsis(row["run"], run_room), status, row["top"] or "", *cells)
    return table


def print_terminal(console: Console, report: AuditReport, quiet: bool = False) -> None:
    """The default audit view on a terminal (--details adds every run's findings via the analyze renderer)."""
    from rich.markdown import Markdown  # markdown-it and pygments: only the terminal view draws Markdown

    for title, body in sections(report, quiet, table=False):
        console.print(Rule(title, align="left"))
        console.print(Markdown(body))
        console.print()
    if report.results:
        console.print(Rule("Runs by severity", align="left"))
        table = runs_table(report, quiet, console.width, cut=console.is_terminal)
        if console.is_terminal:
            console.print(table)
            return
        width = console.width  # piped: the table at its own width, names and numbers never cut
        console.width = max(width, console.measure(table, options=console.options.update_width(10_000)).maximum)
        console.print(table)
        console.width = width
