"""Markdown report (GitHub-flavoured): the terminal report's content, pasteable into an issue or PR.

Layout: a title line with the counts, any extra sections, a summary table
(worst first, linking to each run), then one section per run: the status, a
PNG plot (written next to the report; none with `--no-plots`), and each
finding with where it is, its evidence in numbers, likely causes and fixes.

Every string that came from a log (run names, metric names, paths, warning
lines) goes through `md_escape`, so a run named `<script>` or `a|b` neither
injects markup nor breaks a table.

Public API (also used by `logdoctor audit`):
`render_markdown(diagnosis, extra_sections=None, plots_dir=None, plots_href=None, progress=None, config_source=None) -> str`.
`extra_sections` is a list of `(title, markdown body)` placed after the
header, before the summary; the body is trusted Markdown (escape log strings
in it with `report.text.md_escape`).
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from .. import __version__
from ..model import Diagnosis, Finding, RunDiagnosis
from .sparkline import sparkline
from .text import Advice, by_severity, counts_line, evidence_items, fmt_num, main_loss, md_code, md_escape, plain_fixes, slug, step_range, verdict

STATUS_MARK = {"critical": "🔴", "warning": "🟠", "healthy": "🟢", "not checked": "🔵", "stopped": "🟣"}
SEVERITY_MARK = {"critical": "🔴", "warning": "🟠", "info": "🔵"}


def _anchor(i: int) -> str:
    return f"run-{i}"


def _finding(i: int, f: Finding, advice: Advice, place: tuple[str, str]) -> list[str]:
    """A finding: headline, where, evidence, then its causes and fixes, or, when an earlier run's
    section printed the same ones for this code, a link to them (`place`: this run's name and anchor)."""
    lines = [f"**{i}. `{f.code}`** — {f.severity}, confidence {f.confidence:.2f}: {md_escape(f.title)}", ""]
    loc = ", ".join(p for p in (md_code(f.metric) if f.metric else "", step_range(f)) if p)
    if loc:
        lines.append(f"- **where:** {loc}")
    items = evidence_items(f.evidence, f.code)
    if items:
        lines.append("- **evidence:** " + ", ".join(f"{md_escape(k)} **{md_escape(v)}**" for k, v in items))
    if not advice.first_time(f, place):
        name, anchor = advice.place(f.code)
        lines += [f"- **causes, fix:** as for [{md_escape(name)}](#{anchor}) · `logdoctor explain {f.code}`", ""]
        return lines
    if f.causes:
        lines.append("- **likely causes:**")
        lines += [f"  {n}. {md_escape(c)}" for n, c in enumerate(f.causes, 1)]
    fixes = plain_fixes(f)
    if fixes:
        lines.append("- **fix:**")
        lines += [f"  - {md_escape(x)}" for x in fixes]
    if f.probe:
        lines.append(f"- **confirm with replay:** {md_escape(' '.join(f.probe.split()))}")
    lines.append(f"- **docs:** `logdoctor explain {f.code}`")
    lines.append("")
    return lines


def _run(i: int, rd: RunDiagnosis, plot: str | None, advice: Advice, plot_error: str = "") -> list[str]:
    lines = [
        f'<a id="{_anchor(i)}"></a>',
        "",
        f"### {STATUS_MARK.get(verdict(rd), '')} {verdict(rd).upper()} · {md_escape(rd.run.name)}",
        "",
        f"{md_code(rd.run.format)} · {md_code(rd.run.path)}",
        "",
    ]
    loss = main_loss(rd)
    if loss is not None and plot is None:
        lines += [f"{md_code(loss.name)} {sparkline(loss)}", ""]
    if plot:
        lines += [f"![loss and findings of {md_escape(rd.run.name)}]({plot})", ""]
    elif plot_error:
        lines += [f"_{md_escape(plot_error)}_", ""]
    if not rd.findings:
        lines += ["No problem found.", ""]
    for n, f in enumerate(rd.findings, 1):
        lines += _finding(n, f, advice, (rd.run.name, _anchor(i)))
    for w in rd.run.warnings:
        lines.append(f"> ⚠️ {md_escape(w)}")
    if rd.run.warnings:
        lines.append("")
    return lines


def summary_table(diagnosis: Diagnosis, index: dict[int, int]) -> list[str]:
    """Worst-first table of runs; `index` maps id(run diagnosis) to its section number (for links; a run
    without a section is named, not linked)."""
    lines = ["| status | run | findings | loss | last |", "| --- | --- | --- | --- | ---: |"]
    for rd in by_severity(diagnosis.runs):
        loss = main_loss(rd)
        last = fmt_num(loss.values[-1]) if loss is not None else ""
        codes = " ".join(f"{SEVERITY_MARK.get(f.severity, '')}`{f.code}`" for f in rd.findings)
        name = md_escape(rd.run.name)
        run = f"[{name}](#{_anchor(index[id(rd)])})" if id(rd) in index else name  # -q: healthy runs have no section
        lines.append(f"| {STATUS_MARK.get(verdict(rd), '')} {verdict(rd)} | {run} | {codes} | {sparkline(loss, 12)} | {last} |")
    return lines + [""]


#: The list of plots a report wrote into its plots folder: the only files a re-run deletes.
_MANIFEST = ".logdoctor-plots"


def _remove_own_plots(plots_dir: Path) -> None:
    """Delete the plots the previous report wrote here, so a re-run leaves no stale PNGs.

    Only the files that report listed in its manifest go: anything else in the folder (a
    user's own `2024-curves.png`) is someone else's, whatever its name.
    """
    manifest = plots_dir / _MANIFEST
    try:
        names = manifest.read_text(encoding="utf-8").split("\n")
    except OSError:
        return
    for name in names:
        old = plots_dir / name
        if name and "/" not in name and old.is_file():
            old.unlink()


def render_markdown(
    diagnosis: Diagnosis,
    extra_sections: list[tuple[str, str]] | None = None,
    plots_dir: Path | None = None,
    plots_href: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    config_source: str | None = None,
    quiet: bool = False,
    verbose: bool = False,
) -> str:
    """The whole report as Markdown; with `plots_dir`, one PNG per run is written there and linked.
    `config_source` names the configuration file used (in the header), if any.

    Sized to paste into an issue or PR (GitHub takes 65,536 characters a comment): a code's causes
    and fixes are printed in full at its first (worst) run and linked from the others (`verbose`:
    everywhere); `quiet` leaves healthy runs to the summary table, without a section."""
    ordered = by_severity(diagnosis.runs)
    sections = [rd for rd in ordered if not (quiet and verdict(rd) == "healthy")]
    advice = Advice(verbose, full=True)
    figures = iter(())
    if plots_dir is not None and sections:
        from .plots import draw_all

        plots_dir.mkdir(exist_ok=True)
        _remove_own_plots(plots_dir)
        figures = draw_all(sections, progress)
    # the folder's own bytes, percent-encoded: a space or a Latin-1 byte in a report's name would break the link
    href = plots_href if plots_href is not None else (quote(os.fsencode(plots_dir.name)) if plots_dir else "")
    lines = [
        "# logdoctor report",
        "",
        f"{md_code(diagnosis.root)} · {counts_line(diagnosis.runs)} · logdoctor {__version__}"
        + (f" · config {md_code(config_source)}" if config_source else ""),
        "",
    ]
    for title, body in extra_sections or []:
        lines += [f"## {title}", "", body.rstrip(), ""]
    if not diagnosis.runs:
        lines += [f"No training runs found under {md_code(diagnosis.root)}.", ""]
    index = {id(rd): i for i, rd in enumerate(sections, 1)}
    if len(diagnosis.runs) > 1:
        lines += ["## Summary", ""] + summary_table(diagnosis, index)
    if sections:
        lines += ["## Runs", ""]
    written: list[str] = []
    for i, rd in enumerate(sections, 1):
        plot, figure = None, next(figures, None)
        if figure is not None and figure.png:
            name = f"{i:04d}-{slug(rd.run.name)}.png"
            (plots_dir / name).write_bytes(figure.png)
            written.append(name)
            plot = f"{href}/{name}" if href else name
        lines += _run(i, rd, plot, advice, figure.error if figure is not None else "")
    if plots_dir is not None and sections:
        (plots_dir / _MANIFEST).write_text("\n".join(written), encoding="utf-8")
    if diagnosis.errors:
        lines += ["## Skipped", ""] + [f"- {md_escape(e)}" for e in diagnosis.errors] + [""]
    return "\n".join(lines).rstrip() + "\n"
