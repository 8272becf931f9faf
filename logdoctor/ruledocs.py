"""Rule documentation as Markdown, from the rule docstrings (for `explain` and docs/)."""
from __future__ import annotations

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
    for p in write_docs(Path(__file__).resolve().parent.parent / "docs" / "rules"):
        print(p)
