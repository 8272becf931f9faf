"""A comparison as JSON: the `logdoctor.compare/v1` contract, described by `schemas/compare.schema.json`.

Runs are described as in the report contract (`json_report.run_dict`: name, path, format,
roles, status, findings), so a CI job reads a compared run as it reads a diagnosed one.
"""
from __future__ import annotations

import json
from typing import Any

from .. import __version__
from ..compare import Comparison, MetricComparison
from ..model import _jsonable
from .json_report import finding_dict, run_dict

SCHEMA = "logdoctor.compare/v1"


def _level(level, steps: bool) -> dict[str, Any]:
    doc = {"run": level.run, "baseline": level.baseline, "change": level.change, "relative": level.relative}
    if steps:
        doc.update(run_step=level.run_step, baseline_step=level.baseline_step)
    else:
        doc["step"] = level.run_step
    return _jsonable(doc)


def metric_dict(m: MetricComparison, gate: bool) -> dict[str, Any]:
    return {
        "role": m.role,
        "metric": m.run_metric,
        "baseline_metrics": list(m.baseline_metrics),
        "higher_is_better": m.higher_is_better,
        "verdict": m.verdict,
        "departs_step": m.departs,
        "steps": list(m.steps),
        "end": _level(m.end, steps=False),
        "best": _level(m.best, steps=True),
        "tolerance": _jsonable(m.tolerance),
        "gate": gate,
    }


def compare_dict(cmp: Comparison, config_source: str | None = None) -> dict[str, Any]:
    gates = {id(m) for m in cmp.gates}
    return {
        "schema": SCHEMA,
        "tool": {"name": "logdoctor", "version": __version__},
        "config": config_source,
        "align": cmp.axis,
        "band": "seeds" if len(cmp.baselines) > 1 else "noise",
        "regression": cmp.regression,
        "run": run_dict(cmp.run),
        "baselines": [run_dict(rd) for rd in cmp.baselines],
        "metrics": [metric_dict(m, id(m) in gates) for m in cmp.metrics],
        "settings": [
            {"key": d.key, "run": _jsonable(d.run), "baselines": [_jsonable(v) for v in d.baselines], "among_baselines": d.among_baselines}
            for d in cmp.settings
        ],
        "findings": {
            "run_only": [finding_dict(f) for f in cmp.run_only],
            "baselines_only": [
                {"code": b.code, "severity": b.severity, "title": b.title, "baselines": list(b.baselines)} for b in cmp.baselines_only
            ],
        },
        "unshared": list(cmp.unshared),
        "no_settings": list(cmp.no_settings),
        "skipped": list(cmp.skipped),
    }


def render_compare_json(cmp: Comparison, config_source: str | None = None) -> str:
    return json.dumps(compare_dict(cmp, config_source), indent=2, allow_nan=False)
