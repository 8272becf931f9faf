"""Markdown report of a comparison (GitHub-flavoured, for a PR comment): the answer, a table of the
compared metrics, one PNG per metric beside the report (the run, its baselines and the band,
the departure marked), the settings that differ and the findings only one side has.

`comparison_body` is also the comparison section of the HTML page.
"""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from .. import __version__
from ..compare import Comparison
from .compare_text import (
    axis_phrase, band_phrase, change, compared_steps, headline, metric_names, names, role_label, setting_value, settings_summary,
)
from .text import fmt_num, md_code, md_escape, slug


def comparison_body(cmp: Comparison, images: dict[str, str] | None = None) -> str:
    """The comparison as Markdown sections (no title): verdicts, plots, settings, findings."""
    lines = [
        f"**{md_escape(headline(cmp))}** · {md_escape(names(cmp))} · {axis_phrase(cmp)} · {band_phrase(cmp)}",
        "",
        "| metric | verdict | departs at step | at the end: run vs baseline | change | at its best: run vs baseline | change | level within ± |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for m in cmp.metrics:
        gate = " (gate)" if any(g is m for g in cmp.gates) else ""
        lines.append(
            f"| {role_label(m.role)}{gate}: {md_code(metric_names(m))}, {compared_steps(m)} | **{m.verdict}** | "
            f"{fmt_num(m.departs) if m.departs is not None else '–'} | {fmt_num(m.end.run)} vs {fmt_num(m.end.baseline)} | {change(m.end)} | "
            f"{fmt_num(m.best.run)} vs {fmt_num(m.best.baseline)} | {change(m.best)} | {fmt_num(m.tolerance)} |"
        )
    lines.append("")
    lines += [f"- not compared: {md_escape(line)}" for line in cmp.unshared]
    for role, href in (images or {}).items():
        lines += [f"![{role_label(role)}: the run, its baselines and the band]({href})", ""]
    lines += ["### Settings that differ", ""]
    if cmp.settings:
        heads = " | ".join(md_escape(rd.run.name) for rd in cmp.baselines)
        lines += [f"| setting | {md_escape(cmp.run.run.name)} (run) | {heads} |", "| --- | --- |" + " --- |" * len(cmp.baselines)]
        for d in cmp.settings:
            theirs = " | ".join(md_escape(setting_value(v)) for v in d.baselines)
            lines.append(f"| {md_code(d.key)}{' (baselines differ too)' if d.among_baselines else ''} | {md_escape(setting_value(d.run))} | {theirs} |")
    else:
        lines.append(md_escape(settings_summary(cmp)).capitalize() + ".")
    lines += ["", "### Findings only one side has", ""]
    lines += [f"- run only: **{f.code}** ({f.severity}) {md_escape(f.title)}" for f in cmp.run_only]
    lines += [f"- baselines only ({md_escape(', '.join(b.baselines))}): **{b.code}** ({b.severity}) {md_escape(b.title)}" for b in cmp.baselines_only]
    if not cmp.run_only and not cmp.baselines_only:
        lines.append("None: both sides have the same findings.")
    if cmp.skipped:
        lines += ["", "### Skipped", ""] + [f"- {md_escape(e)}" for e in cmp.skipped]
    return "\n".join(lines) + "\n"


def render_compare_markdown(cmp: Comparison, plots_dir: Path | None = None) -> str:
    """The whole report; with `plots_dir`, one PNG per compared metric is written there and linked."""
    images = {}
    if plots_dir is not None:
        from .compare_plots import metric_png

        plots_dir.mkdir(exist_ok=True)
        href = quote(os.fsencode(plots_dir.name))
        for m in cmp.metrics:
            name = f"compare-{slug(m.role)}.png"
            (plots_dir / name).write_bytes(metric_png(cmp, m))
            images[m.role] = f"{href}/{name}"
    head = f"# logdoctor compare: {md_escape(cmp.run.run.name)}\n\nlogdoctor {__version__} · run {md_code(cmp.run.run.path)}\n\n"
    return head + comparison_body(cmp, images)
