"""The JSON report: exactly the `logdoctor.report/v1` contract of DESIGN.md."""
from __future__ import annotations

import json
from typing import Any

from .. import __version__
from ..model import Diagnosis

SCHEMA = "logdoctor.report/v1"


def report_dict(diagnosis: Diagnosis) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "tool": {"name": "logdoctor", "version": __version__},
        "runs": [rd.to_json() for rd in diagnosis.runs],
    }


def render_json(diagnosis: Diagnosis, extra: dict[str, Any] | None = None) -> str:
    """The report as a JSON document; `extra` adds top-level sections (e.g. `audit`)."""
    doc = report_dict(diagnosis)
    if extra:
        doc.update(extra)
    return json.dumps(doc, indent=2, allow_nan=False)
