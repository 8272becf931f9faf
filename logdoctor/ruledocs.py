"""Rule and probe documentation as Markdown, from their docstrings (for `explain` and docs/).

Replay probes live in modules that import PyTorch (the `replay` extra), but their documentation
must not need it; rules live in modules that import numpy and polars, which `explain` does not
need either (0.3-0.5 s of start-up for a page of text). So every page is written once into the
package (`logdoctor/rulepages/`, `logdoctor/probedocs/`; regenerated with `python -m
logdoctor.ruledocs`, kept current by tests) and `explain` reads it from there in any install.
"""
from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .rules.base import Rule

#: Packaged pages of the rules and of the replay probes.
RULE_PAGES, PROBE_PAGES = "rulepages", "probedocs"
#: What a rule or probe code looks like (a code names a packaged file: nothing else may).
_CODE = re.compile(r"[a-z][a-z0-9_]*")


def rule_markdown(cls: type[Rule]) -> str:
    from .rules.base import SECTIONS

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


def packaged_page(folder: str, code: str) -> str | None:
    """A rule's or probe's page as packaged in `folder` (see the module docstring); None for none."""
    if not _CODE.fullmatch(code):
        return None
    page = resources.files("logdoctor") / folder / f"{code}.md"
    return page.read_text(encoding="utf-8") if page.is_file() else None


def probe_markdown(code: str) -> str | None:
    """A replay probe's page as packaged; None for no such probe."""
    from .replay import PROBE_CODES

    return packaged_page(PROBE_PAGES, code) if code in PROBE_CODES else None


def code_page(code: str) -> tuple[str | None, str] | None:
    """(severity, Markdown page) of a rule or replay probe code in any install, for `explain` and
    the MCP server's explain; None for an unknown code."""
    page = packaged_page(RULE_PAGES, code) or probe_markdown(code)
    if page is None:
        return None
    severity = re.search(r"^Severity: \*\*(\w+)\*\*", page, re.M)  # the line rule_markdown writes
    return (severity.group(1) if severity else None), page


def write_probe_docs(folder: Path) -> list[Path]:
    """Write every replay probe's page into `folder` (needs PyTorch, as the probes do)."""
    from .replay.catalogue import all_probes

    return _write_pages(folder, all_probes())


def write_rule_pages(folder: Path) -> list[Path]:
    """Write every rule's page into `folder` (the package's copy `explain` reads)."""
    from .rules import all_rules

    return _write_pages(folder, all_rules())


def _write_pages(folder: Path, classes: dict[str, type[Rule]]) -> list[Path]:
    """`folder/<code>.md` for each code's class, its `rule_markdown`; the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for code, cls in classes.items():
        path = folder / f"{code}.md"
        path.write_text(rule_markdown(cls), encoding="utf-8")
        written.append(path)
    return written


def write_docs(folder: Path) -> list[Path]:
    """Write docs/rules/<code>.md and an index; returns the files written."""
    from .rules import all_rules

    written = write_rule_pages(folder)
    index = ["# Rules", "", "| code | severity | what it detects |", "| --- | --- | --- |"]
    index += [f"| [`{code}`]({code}.md) | {cls.severity} | {cls.summary()} |" for code, cls in all_rules().items()]
    (folder / "README.md").write_text("\n".join(index) + "\n", encoding="utf-8")
    written.append(folder / "README.md")
    return written


if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    for p in write_docs(here.parent / "docs" / "rules") + write_rule_pages(here / RULE_PAGES) + write_probe_docs(here / PROBE_PAGES):
        print(p)
