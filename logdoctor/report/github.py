"""GitHub Actions workflow commands: `::error file=…,title=…::message`, one per problem.

Printed by a step of a workflow, each line becomes an annotation on the check (and on the
file, where the path is in the repository), as ruff's `--output-format github` does:
a failing `logdoctor analyze --fail-on critical` or `compare --fail-on regression` then
points at the run and says why. Critical findings and regressions are errors, warnings
warnings; a run without a problem and a comparison without a regression say so in one
notice, so the log never reads as if nothing ran.

Escaping follows the Actions toolkit: `%`, CR and LF in every value, `:` and `,` also in
the properties (`file`, `title`), so no log-supplied name can end a command early.
"""
from __future__ import annotations

from ..compare import AHEAD, BEHIND, Comparison
from ..model import Diagnosis
from .compare_text import end_phrase, headline, role_label, verdict_phrase
from .text import by_severity, counts_line, verdict, where

LEVEL = {"critical": "error", "warning": "warning"}


def _data(text: str) -> str:
    return str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def command(level: str, message: str, file: str | None = None, title: str | None = None) -> str:
    """One workflow command line (`level` is error, warning or notice)."""
    props = ",".join(f"{k}={_property(v)}" for k, v in (("file", file), ("title", title)) if v)
    return f"::{level}{' ' + props if props else ''}::{_data(message)}"


def diagnosis_commands(diagnosis: Diagnosis) -> str:
    """A command per warning or critical finding, worst run first, then a notice with the counts."""
    lines = []
    for rd in by_severity(diagnosis.runs):
        for f in rd.findings:
            if f.severity in LEVEL:
                located = where(f)
                lines.append(command(LEVEL[f.severity], f.title + (f" ({located})" if located else ""), rd.run.path, f"logdoctor {f.code}: {rd.run.name}"))
        if verdict(rd) == "not checked":
            lines.append(command("notice", "no rule could judge this run's loss", rd.run.path, f"logdoctor: {rd.run.name} not checked"))
    lines.append(command("notice", counts_line(diagnosis.runs), title="logdoctor"))
    return "\n".join(lines) + "\n"


def comparison_commands(cmp: Comparison) -> str:
    """An error per gate metric behind (a regression), a warning per other metric behind and per finding
    only the run has, a notice per metric ahead, then the answer as a notice."""
    gates = {id(m) for m in cmp.gates}
    path, name = cmp.run.run.path, cmp.run.run.name
    lines = []
    for m in cmp.metrics:
        if m.verdict == BEHIND:
            level = "error" if id(m) in gates else "warning"
        elif m.verdict == AHEAD:
            level = "notice"
        else:
            continue
        lines.append(command(level, f"{role_label(m.role)} {verdict_phrase(m)}: {end_phrase(m)}", path, f"logdoctor compare: {name} {role_label(m.role)} {m.verdict}"))
    for f in cmp.run_only:
        lines.append(command("warning", f"{f.title} (not in the baselines)", path, f"logdoctor {f.code}: {name}"))
    lines.append(command("notice", headline(cmp), title=f"logdoctor compare: {name}"))
    return "\n".join(lines) + "\n"
