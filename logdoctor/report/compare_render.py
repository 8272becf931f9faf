"""A comparison in the format asked for (JSON, Markdown, HTML, GitHub workflow commands) as text.

The terminal report is drawn on a console (`compare_terminal`); every other format is a
string, written by the CLI to stdout or to the -o file. Markdown's plots go beside that
file (`<stem>_plots/`), as the diagnosis report's do.
"""
from __future__ import annotations

from pathlib import Path

from ..compare import Comparison


def render_comparison(cmp: Comparison, fmt: str, config_source: str | None = None, output: Path | None = None, plots: bool = True) -> str:
    if fmt == "json":
        from .compare_json import render_compare_json

        return render_compare_json(cmp, config_source)
    if fmt == "md":
        from .compare_markdown import render_compare_markdown

        plots_dir = output.parent / f"{output.stem}_plots" if output is not None and plots else None
        return render_compare_markdown(cmp, plots_dir)
    if fmt == "html":
        from .compare_html import render_compare_html

        return render_compare_html(cmp, plots)
    if fmt == "github":
        from .github import comparison_commands

        return comparison_commands(cmp)
    raise ValueError(f"no comparison renderer for {fmt}")
