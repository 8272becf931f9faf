"""Rule and probe documentation as Markdown, from their docstrings (for `explain` and docs/).

Replay probes live in modules that import PyTorch (the `replay` extra), but their documentation
must not need it: every probe's page is written once into the package (`logdoctor/probedocs/`,
regenerated with `python -m logdoctor.ruledocs`, kept current by a test) and `explain` reads it
from there in any install.
"""
from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from .rules import all_rules
from .rules.base import SECTIONS, Rule


def rule_markdown(cls: type[Rule]) -> str:
    doc = cls.doc()
    lines = [f"# `{cls.code}` — {cls.summary()}", "", f"Severity: **{cls.severity}**", ""]
    for section in SECTIONS:
        if doc.get(section):
            lines += [f"## {section}", "", doc[section], ""]
    if cls.defaults:
        lines += ["## Thresholds", "", f"Set under `[tool.logdoctor.rules.{cls.code}]`:", ""]
        lines += [f"- `{k}` = `{v!r}`" for k, v in cls.defaults.items()]
        lines.append("")
    if cls.outranks:
        lines += [f"Ranked before (explains): {', '.join(f'`{c}`' for c in cls.outranks)}", ""]
    if cls.suppresses:
        lines += [f"Hides when present: {', '.join(f'`{c}`' for c in cls.suppresses)}", ""]
    return "\n".join(lines)


def probe_markdown(code: str) -> str | None:
    """A replay probe's page as packaged (see the module docstring); None for no such probe."""
    from .replay import PROBE_CODES

    if code not in PROBE_CODES:
        return None
    page = resources.files("logdoctor") / "probedocs" / f"{code}.md"
    return page.read_text(encoding="utf-8") if page.is_file() else None


def code_page(code: str) -> tuple[str | None, str] | None:
    """(severity, Markdown page) of a rule or replay probe code in any install, for `explain` and
    the MCP server's explain; None for an unknown code."""
    cls = all_rules().get(code)
    if cls is not None:
        return cls.severity, rule_markdown(cls)
    page = probe_markdown(code)
    if page is None:
        return None
    severity = re.search(r"^Severity: \*\*(\w+)\*\*", page, re.M)  # the line rule_markdown writes
    return (severity.group(1) if severity else None), page


def write_probe_docs(folder: Path) -> list[Path]:
    """Write every replay probe's page into `folder` (needs PyTorch, as the probes do)."""
    from .replay.catalogue import all_probes

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for code, cls in all_probes().items():
        path = folder / f"{code}.md"
        path.write_text(rule_markdown(cls), encoding="utf-8")
        written.append(path)
    return written


def write_docs(folder: Path) -> list[Path]:
    """Write docs/rules/<code>.md and an index; returns the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    index = ["# Rules", "", "| code | severity | what it detects |", "| --- | --- | --- |"]
    for code, cls in all_rules().items():
        path = folder / f"{code}.md"
        path.write_text(rule_markdown(cls), encoding="utf-8")
        written.append(path)
        index.append(f"| [`{code}`]({code}.md) | {cls.severity} | {cls.summary()} |")
    (folder / "README.md").write_text("\n".join(index) + "\n", encoding="utf-8")
    written.append(folder / "README.md")
    return written


if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    for p in write_docs(here.parent / "docs" / "rules") + write_probe_docs(here / "probedocs"):
        print(p)
