"""`logdoctor inspect`: what was found on disk and how each metric was understood.

This is how a user debugs discovery and role mapping before trusting a
diagnosis, so it says everything the readers and the view decided silently:
the format each run was read as, each metric's role (primary or alternative),
its points and step range, duplicate steps merged and backward steps sorted,
the config keys found, and every file that could not be read.
"""
from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..config import Config
from ..model import Run
from ..numbers import count
from ..view import RunView, step_report

_CONFIG_KEYS_SHOWN = 12


def _metric_table(view: RunView) -> Table:
    role_of = {name: role for role, names in view.all_roles.items() for name in names}
    primary = set(view.roles.values())
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
    return table


def _metrics(view: RunView) -> list[dict]:
    role_of = {name: role for role, names in view.all_roles.items() for name in names}
    primary = set(view.roles.values())
    return [
        {"name": name, "role": role_of.get(name), "primary": name in primary, **info}
        for name, info in step_report(view).items()
    ]


def inspect_dict(runs: list[Run], errors: list[str], config: Config) -> dict:
    """What `inspect --format json` prints (schema `logdoctor.inspect/v1`, in docs/schema/)."""
    from .. import __version__

    out = []
    for run in runs:
        view = RunView(run, config.roles)
        out.append({
            "run": run.name, "path": run.path, "format": run.format,
            "roles": dict(view.roles), "metrics": _metrics(view),
            "config": sorted(map(str, run.config)), "notes": list(run.notes), "warnings": list(run.warnings),
        })
    return {"schema": "logdoctor.inspect/v1", "tool": {"name": "logdoctor", "version": __version__}, "config": config.source, "runs": out, "errors": list(errors)}


def render_inspect(runs: list[Run], errors: list[str], config: Config, console: Console) -> None:
    for run in runs:
        view = RunView(run, config.roles)
        console.print(f"[bold]{escape(run.name)}[/]  {escape(f'[{run.format}]')}  {escape(run.path)}")
        if run.scalars.is_empty():
            console.print("  (no scalar metrics)", style="dim")
        else:
            console.print(_metric_table(view))
        missing = [r for r in ("train_loss", "val_loss", "lr") if r not in view.roles]
        if missing and not run.scalars.is_empty():
            console.print(f"  no metric found for: {', '.join(missing)}", style="dim")
        if run.config:
            keys = ", ".join(sorted(map(str, run.config))[:_CONFIG_KEYS_SHOWN])
            more = "" if len(run.config) <= _CONFIG_KEYS_SHOWN else f" (+{len(run.config) - _CONFIG_KEYS_SHOWN} more)"
            console.print(f"  config: {escape(keys)}{more}", style="dim")
        for note in run.notes:
            console.print(f"  note: {escape(note)}", style="dim")
        for warning in run.warnings:
            console.print(f"  ! {escape(warning)}", style="yellow")
        console.print()
    for line in errors:
        console.print(f"skipped: {escape(line)}", style="yellow", soft_wrap=True)
    formats = Counter(run.format for run in runs)
    by_format = f" ({', '.join(f'{fmt} {n}' for fmt, n in sorted(formats.items()))})" if formats else ""
    console.print(f"{count(len(runs), 'run')} found{by_format}" + (f", {count(len(errors), 'source')} skipped" if errors else ""))
