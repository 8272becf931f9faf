"""The JSON report: the `logdoctor.report/v1` contract, described by `schemas/report.schema.json`.

Runs come worst first, as in every other format. Each run carries its JSON
`status` (critical / warning / healthy, from its findings alone) and the
`verdict` people read (`not checked` where no rule could judge its loss); each
finding carries its precise evidence keys (documented in docs/json.md), its
fixes, and the replay `probe` that would confirm it. `summary` has the counts
per verdict and per finding code, so a CI job reads one object.
"""
from __future__ import annotations

import json
from collections import Counter
from typing import Any

from .. import __version__
from ..model import Diagnosis, Finding, RunDiagnosis
from .text import by_severity, plain_fixes, status_counts, verdict

SCHEMA = "logdoctor.report/v1"


def finding_dict(f: Finding) -> dict[str, Any]:
    """A finding as JSON: its fixes without the replay pointer, which is `probe`."""
    doc = f.to_json()
    doc["fixes"] = plain_fixes(f)
    doc["probe"] = " ".join(f.probe.split()) if f.probe else None
    doc["docs"] = f"logdoctor explain {f.code}"
    return doc


def run_dict(rd: RunDiagnosis) -> dict[str, Any]:
    doc = rd.to_json()
    doc["verdict"] = verdict(rd)
    doc["findings"] = [finding_dict(f) for f in rd.findings]
    return doc


def summary(diagnosis: Diagnosis) -> dict[str, Any]:
    """Counts per verdict (every run, whatever `--quiet` hides) and runs per finding code."""
    codes = Counter(code for rd in diagnosis.runs for code in dict.fromkeys(f.code for f in rd.findings))
    return {
        "runs": len(diagnosis.runs),
        "by_verdict": {v.replace(" ", "_"): n for v, n in status_counts(diagnosis.runs).items()},
        "by_code": dict(sorted(codes.items(), key=lambda kv: (-kv[1], kv[0]))),
        "skipped": len(diagnosis.errors),
    }


def report_dict(diagnosis: Diagnosis, quiet: bool = False, config_source: str | None = None) -> dict[str, Any]:
    """The document; `quiet` lists only runs with a problem (or not checked), the summary counts all."""
    runs = [rd for rd in by_severity(diagnosis.runs) if not (quiet and verdict(rd) == "healthy")]
    return {
        "schema": SCHEMA,
        "tool": {"name": "logdoctor", "version": __version__},
        "config": config_source,
        "summary": summary(diagnosis),
        "runs": [run_dict(rd) for rd in runs],
        "skipped": list(diagnosis.errors),
    }


def render_json(diagnosis: Diagnosis, extra: dict[str, Any] | None = None, quiet: bool = False, config_source: str | None = None) -> str:
    """The report as a JSON document; `extra` adds top-level sections (e.g. `audit`)."""
    doc = report_dict(diagnosis, quiet, config_source)
    if extra:
        doc.update(extra)
    return json.dumps(doc, indent=2, allow_nan=False)
