"""`logdoctor inspect`: what was found on disk and how each metric was understood."""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..config import Config
from ..model import Run
from ..view import RunView, step_report


def render_inspect(runs: list[Run], errors: list[str], config: Config, console: Console) -> None:
    for run in runs:
        view = RunView(run, config.roles)
        role_of = {name: role for role, names in view.all_roles.items() for name in names}
        primary = set(view.roles.values())
        console.print(f"[bold]{escape(run.name)}[/]  [{escape(run.format)}]  {escape(run.path)}")
        table = Table("metric", "role", "points", "steps", "notes", box=None, pad_edge=False)
        for name, info in step_report(view).items():
            role = role_of.get(name, "")
            if role and name not in primary:
                role += " (alt)"
            notes = []
            if info["duplicates"]:
                notes.append(f"{info['duplicates']} duplicate steps (last value kept)")
            if info["backwards"]:
                notes.append(f"{info['backwards']} backward step jumps (sorted)")
            table.add_row(
                escape(name), role, f"{info['points']:,}", f"{info['first_step']:,}–{info['last_step']:,}", "; ".join(notes)
            )
        console.print(table)
        if run.config:
            keys = ", ".join(sorted(map(str, run.config))[:12])
            more = "" if len(run.config) <= 12 else f" (+{len(run.config) - 12} more)"
            console.print(f"  config: {escape(keys)}{more}", style="dim")
        for note in run.notes:
            console.print(f"  note: {escape(note)}", style="dim")
        for warning in run.warnings:
            console.print(f"  ! {escape(warning)}", style="yellow")
        console.print()
    for line in errors:
        console.print(f"skipped: {escape(line)}", style="yellow")
    console.print(f"{len(runs)} run(s) found" + (f", {len(errors)} source(s) skipped" if errors else ""))
