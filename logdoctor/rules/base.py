"""The Rule base class: code, severity, thresholds, and documentation in one place.

A rule's docstring *is* its documentation (printed by `logdoctor explain`,
rendered into docs/), and the causes and fixes a finding carries are parsed
from the same text, so they can never drift apart. Docstring layout:

    One-line summary.

    Symptom:
        What the curve shows.
    Root causes:
        - most likely cause
        - next cause
    Fix:
        - the exact knob to turn
    Probe:
        replay probe(s) that confirm it
    Example:
        a short illustration of a run that fires
"""
from __future__ import annotations

import inspect
import re
from typing import Any, ClassVar

from ..model import Finding, Series
from ..view import RunView

SECTIONS = ("Symptom", "Root causes", "Fix", "Probe", "Example")


def parse_doc(doc: str) -> dict[str, str]:
    """Split a rule docstring into its summary and named sections."""
    text = inspect.cleandoc(doc or "")
    lines = text.splitlines()
    out: dict[str, list[str]] = {"Summary": []}
    current = "Summary"
    for line in lines:
        header = re.fullmatch(r"([A-Z][A-Za-z ]+):\s*", line)
        if header and header.group(1) in SECTIONS:
            current = header.group(1)
            out[current] = []
            continue
        out[current].append(line)
    return {k: inspect.cleandoc("\n".join(v)).strip() for k, v in out.items()}


def bullets(section: str) -> list[str]:
    """'- item' lines of a section (continuation lines, indented past the dash, joined), or the
    section as one item. A paragraph after the list (back at the dash's indent) is no item's: it
    used to be glued onto the last one ("...a smaller model When a validation accuracy...")."""
    items: list[str] = []
    dash: int | None = None  # the list's indent
    ended = False  # a paragraph followed the list
    for line in section.splitlines():
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if stripped.startswith("- "):
            items.append(stripped[2:].strip())
            dash, ended = indent, False
        elif not stripped or ended:
            continue
        elif dash is not None and indent <= dash:
            ended = True
        elif items:
            items[-1] += " " + stripped
        else:
            items.append(stripped)
    return items


class Rule:
    """Base class; subclasses set the class attributes and implement `check`."""

    code: ClassVar[str]
    severity: ClassVar[str] = "warning"
    #: Threshold defaults; each can be overridden under [tool.logdoctor.rules.<code>].
    defaults: ClassVar[dict[str, Any]] = {}
    #: Codes this rule's finding explains: it is ranked before them (root cause first).
    outranks: ClassVar[tuple[str, ...]] = ()
    #: True when this rule explains an `outranks` code only if its finding starts no later than
    #: the symptom's (a spike after the validation loss turned cannot have turned it).
    explains_only_earlier: ClassVar[bool] = False
    #: Codes made redundant when this rule fires (a diverged run is not also oscillating).
    suppresses: ClassVar[tuple[str, ...]] = ()

    def __init__(self, overrides: dict[str, Any] | None = None):
        unknown = set(overrides or {}) - set(self.defaults)
        if unknown:
            raise ValueError(f"rule {self.code}: unknown threshold(s) {', '.join(sorted(unknown))}")
        self.params: dict[str, Any] = {**self.defaults, **(overrides or {})}

    @classmethod
    def doc(cls) -> dict[str, str]:
        return parse_doc(cls.__doc__ or "")

    @classmethod
    def summary(cls) -> str:
        return cls.doc().get("Summary", "").splitlines()[0] if cls.doc().get("Summary") else ""

    def check(self, view: RunView) -> list[Finding]:
        raise NotImplementedError

    def finding(
        self,
        series: Series | None,
        *,
        title: str,
        steps: tuple[int, int] | None,
        confidence: float,
        evidence: dict[str, Any],
        severity: str | None = None,
        causes: list[str] | None = None,
        fixes: list[str] | None = None,
    ) -> Finding:
        """A Finding carrying this rule's documented causes, fixes and probe."""
        doc = self.doc()
        probe = doc.get("Probe") or None
        fixes = list(fixes if fixes is not None else bullets(doc.get("Fix", "")))
        if probe:
            fixes.append(f"Confirm with replay: {' '.join(probe.split())}")
        return Finding(
            code=self.code,
            severity=severity or self.severity,
            confidence=max(0.0, min(1.0, float(confidence))),
            title=title,
            metric=series.name if series is not None else None,
            steps=steps,
            evidence=evidence,
            causes=list(causes if causes is not None else bullets(doc.get("Root causes", ""))),
            fixes=fixes,
            probe=probe,
        )
