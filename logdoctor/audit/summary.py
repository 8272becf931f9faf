"""The audit report: per-run results ordered by severity, counts, the best run, links.

Pure bookkeeping over `RunResult`s; the statistics live in `links`, the
drawing in `render` and the shared report renderers.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..model import SEVERITY_RANK, Diagnosis, _jsonable
from ..naming import natural_key
from .effects import Effect
from .importance import Importance
from .links import Link
from .result import STAT_KEYS, RunResult

STATUS_ORDER = {"critical": 0, "warning": 1, "healthy": 2}


def severity_key(r: RunResult) -> tuple:
    top = r.top
    return (
        STATUS_ORDER.get(r.status, 9),
        SEVERITY_RANK.get(top["severity"], 9) if top else 9,
        -(top["confidence"] if top else 0.0),
        natural_key(r.run),
    )


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def best_run(results: list[RunResult], rank_by: str = "final") -> tuple[RunResult | None, str | None]:
    """The healthy run with the lowest validation loss (train loss when no healthy run logs one)."""
    healthy = [r for r in results if r.status == "healthy"]
    for role in ("val_loss", "train_loss"):
        key = f"{role}_{rank_by}"
        scored = [r for r in healthy if _finite(r.stats.get(key))]
        if scored:
            return min(scored, key=lambda r: (r.stats[key], r.run)), key
    return None, None


def is_seed(key: str) -> bool:
    """`seed`, `random_seed`, `data.seed`, `seed_everything`: which run of a repeat, not a setting."""
    return "seed" in re.split(r"[^a-z0-9]+", key.lower()) or key.lower().endswith("seed")


def numeric(values: list[Any]) -> bool:
    """Every value present is a finite number (not a bool)."""
    present = [v for v in values if v is not None]
    return bool(present) and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in present)


#: With more runs than this, a text setting whose every run has its own value is an identifier
#: (an output folder, a run name, a timestamp), not a setting that was swept.
IDENTIFIER_FROM = 3


def swept_settings(results: list[RunResult], linked: list[str] = ()) -> list[str]:
    """The settings a sweep varied: config keys with at least two values among the runs that set them.

    Linked settings come first (in link order), then the rest in natural order. A text key
    with a different value in every one of more than `IDENTIFIER_FROM` runs names the run
    rather than configures it, and is left out.
    """
    values: dict[str, list[Any]] = {}
    for r in results:
        for key, value in r.params.items():
            values.setdefault(key, []).append(value)
    swept = []
    for key, vs in values.items():
        distinct = {repr(v) for v in vs}
        if len(distinct) < 2:
            continue
        if len(vs) > IDENTIFIER_FROM and len(distinct) == len(vs) and all(isinstance(v, str) for v in vs):
            continue
        swept.append(key)
    first = [k for k in dict.fromkeys(linked) if k in swept]
    return first + sorted((k for k in swept if k not in first), key=natural_key)


@dataclass
class AuditReport:
    root: str
    results: list[RunResult]
    errors: list[str]
    links: list[Link]
    rank_by: str = "final"
    #: How each swept setting moves the outcome (supported ones only), strongest first.
    effects: list[Effect] = field(default_factory=list)
    #: The swept settings ranked together (None with too few runs).
    importance: Importance | None = None
    #: How the audit went: runs, tasks, cached, read, seconds, jobs, scheduler.
    stats: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.results = sorted(self.results, key=severity_key)

    @property
    def by_status(self) -> dict[str, int]:
        counts = Counter(r.status for r in self.results)
        out = {s: counts.get(s, 0) for s in STATUS_ORDER}
        out["error"] = len(self.errors)
        return out

    @property
    def by_code(self) -> dict[str, int]:
        """Runs with each finding code (a run counts once per code), most frequent first."""
        counts = Counter(c for r in self.results for c in {f["code"] for f in r.findings})
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    @cached_property
    def swept(self) -> list[str]:
        """Config keys that differ across runs, `key_setting` first, then settings with a supported effect or
        link (by importance share), the rest by importance share, then in natural order; seeds last."""
        shares = self.importance.shares if self.importance else {}
        supported = [e.param for e in self.effects] + [c.param for link in self.links for c in link.conditions]
        by_share = lambda keys: sorted(dict.fromkeys(keys), key=lambda k: -shares.get(k, 0.0))  # noqa: E731 - stable
        ranked = swept_settings(self.results, by_share(supported) + by_share(k for k, v in shares.items() if v > 0))
        ranked = sorted(ranked, key=is_seed)  # stable: seeds last (one confounded with the cause explains nothing)
        if not supported and not any(shares.values()):  # nothing ranks them: numbers before text
            ranked = sorted(ranked, key=lambda k: not numeric([r.params.get(k) for r in self.results]) or is_seed(k))
        return ranked

    @property
    def key_setting(self) -> str | None:
        """The setting a person opens the sweep page for: the most important one (a seed only when nothing else
        was swept). The page plots against it first and every runs table keeps its column."""
        return self.swept[0] if self.swept else None

    @property
    def best(self) -> tuple[RunResult | None, str | None]:
        return best_run(self.results, self.rank_by)

    def diagnosis(self, curves: bool = True) -> Diagnosis:
        """The runs as a Diagnosis for the shared renderers, ordered by severity; `curves=False` leaves
        out the loss curves (`RunResult.to_run_diagnosis`), for a renderer that draws none."""
        return Diagnosis(root=self.root, runs=[r.to_run_diagnosis(curves) for r in self.results], errors=list(self.errors))

    def table(self) -> list[dict[str, Any]]:
        rows = []
        for r in self.results:
            top = r.top
            rows.append(
                {
                    "run": r.run,
                    "status": r.status,
                    "top": top["code"] if top else None,
                    "top_title": top["title"] if top else None,
                    **{k: r.stats.get(k) for k in STAT_KEYS},
                    "config": dict(r.params),
                }
            )
        return rows

    def to_json(self) -> dict[str, Any]:
        """The `audit` section of the JSON report."""
        best, metric = self.best
        return {
            "root": self.root,
            "run_count": len(self.results),
            "by_status": self.by_status,
            "by_code": self.by_code,
            "best": None if best is None else {"run": best.run, "metric": metric, "value": _jsonable(best.stats[metric])},
            "links": [link.to_json() for link in self.links],
            "effects": [e.to_json() for e in self.effects],
            "importance": None if self.importance is None else self.importance.to_json(),
            "swept": list(self.swept),
            "table": [_jsonable(row) for row in self.table()],
            "errors": list(self.errors),
            "stats": dict(self.stats),
        }
