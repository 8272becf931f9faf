"""The audit's HTML page: the analyze report's page with the sweep in place of its run index.

`render_page(report)` hands `report.html.render_html` the audit's summary and
links (Markdown sections) and an `index` that draws, in place of the run index:

* **A picker** of the x-axis (and colour) over every swept setting, most
  important first (`AuditReport.key_setting`: by the importance ranking and the
  supported effects and links; a seed last), so the page opens on the knob
  that matters.
* **Outcome vs that setting**: each run's final and best validation loss (train
  loss when no run logs validation), text settings as categories, on a log axis
  when its values span more than 10x; points coloured by status.
* **Loss curves**: every run's loss overlaid, coloured by that setting.
* **Parallel coordinates**: one axis per swept setting and one for the final
  loss, a line per run coloured by its loss, so settings that matter together
  show as bundles.
* **The sweep table**: run, the key setting, status, top finding, every other
  swept setting, final and best train / validation loss, steps; any column
  sorts (run names and text settings in natural order, `version_2` before
  `version_10`). Each run links to its card further down the page: its
  findings with their evidence, its loss chart, its config (what `--details`
  prints).

Workers send back each run's loss thinned to 200 points (`result.thin_curve`)
and the cards draw it, so the overlay reads each run's curves from its card's
chart data (no second copy). What this module decides is presentation: which
setting to plot, its scale, the colour of each value. The page's script
(`assets/report.js`) draws from the JSON put in the page by
`charts.script_json`, and every log string in markup goes through `escape`.
"""
from __future__ import annotations

import math
from html import escape
from typing import Any

from ..naming import natural_key
from ..numbers import fmt_num
from ..report.charts import script_json
from ..report.html import render_html
from .render import STATUS_MARK, sections
from .summary import AuditReport, numeric

#: A numeric setting whose values span more than this ratio goes on a log axis.
LOG_SETTING_SPAN = 10
#: Sequential colours for a numeric setting, low to high (viridis, trimmed of its palest yellow).
RAMP = ["#440154", "#46327e", "#365c8d", "#277f8e", "#1fa187", "#4ac16d", "#a0da39"]
#: Colours for a text setting's values, in natural order (then round again).
CATEGORY_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"]
NO_VALUE = "#9aa0a6"
#: Curves are coloured by status when the sweep varies no setting (the report's status colours).
STATUS_COLORS = {"critical": "#c62828", "warning": "#e08a00", "healthy": "#2e7d32"}
#: Legend entries for the setting's colours at most (evenly picked from its values beyond that).
LEGEND_VALUES = 10
STAT_COLUMNS = (
    ("train_loss_final", "train final"),
    ("train_loss_best", "train best"),
    ("val_loss_final", "val final"),
    ("val_loss_best", "val best"),
    ("steps", "steps"),
)
#: Sort keys the page compares: missing values last, then non-finite ones (ascending).
MISSING, NONFINITE = "1e308", "1e300"


def render_page(report: AuditReport, quiet: bool = False) -> str:
    """The audit as one self-contained HTML page (see the module docstring)."""
    return render_html(
        report.diagnosis(),
        extra_sections=sections(report, quiet, table=False),
        title="logdoctor sweep audit",
        index=lambda anchors: sweep_markup(report, anchors, quiet),
    )


def sweep_markup(report: AuditReport, anchors: dict[str, str], quiet: bool = False) -> str:
    """The charts' data and frames, then the sweep table; `anchors` maps a run name to its card's id."""
    data = sweep_data(report, anchors)
    nojs = '<p class="meta nojs">The charts need JavaScript.</p>'
    outcome = (
        f'<section class="sweep-chart" id="sweep-outcome"><h3>{escape(data["y"])} vs <span class="sweep-key">{escape(data["setting"])}</span></h3>{nojs}</section>'
        if data["setting"] is not None
        else ""
    )
    parallel = (
        f'<section class="sweep-chart" id="sweep-parallel" style="grid-column:1/-1"><h3>settings → final {escape(data["y"])} (parallel coordinates)</h3>{nojs}</section>'
        if data["settings"]
        else ""
    )
    picker = '<p class="sweep-pick" id="sweep-pick"></p>' if len(data["settings"]) > 1 else ""
    charts = (
        f'{picker}<div class="sweep-charts">{outcome}'
        f'<section class="sweep-chart" id="sweep-curves"><h3>loss curves by <span class="sweep-key">{escape(data["setting"] or "status")}</span></h3>{nojs}</section>'
        f'{parallel}</div>'
        f'<script type="application/json" id="sweep-data">{script_json(data)}</script>'
    )
    return f"<h2>Sweep</h2>{charts}<h2>Runs</h2>{sweep_table(report, anchors, quiet)}"


def _axis(report: AuditReport, key: str) -> dict[str, Any]:
    """How one setting is drawn: numeric or categories, log or linear, and per run its x (a category's index
    for text), its label and its colour (a ramp over numbers, by log value on a log axis)."""
    raw = [r.params.get(key) for r in report.results]
    is_numeric = numeric(raw)
    present = sorted({v for v in raw if v is not None}, key=lambda v: natural_key(fmt_num(v)) if not is_numeric else (v, ""))
    positive = is_numeric and present and min(present) > 0
    log = bool(positive and max(present) / min(present) > LOG_SETTING_SPAN)
    colors = _colors(present, is_numeric, log)
    picked = present if len(present) <= LEGEND_VALUES else [present[round(i * (len(present) - 1) / (LEGEND_VALUES - 1))] for i in range(LEGEND_VALUES)]
    shares = report.importance.shares if report.importance else {}
    return {
        "name": key,
        "numeric": is_numeric,
        "log": log,
        "categories": None if is_numeric else [fmt_num(v) for v in present],
        "importance": shares.get(key),
        "legend": [[fmt_num(v), colors[present.index(v)]] for v in dict.fromkeys(picked)],
        "x": [None if v is None else (float(v) if is_numeric else present.index(v)) for v in raw],
        "label": ["" if v is None else fmt_num(v) for v in raw],
        "color": [NO_VALUE if v is None else colors[present.index(v)] for v in raw],
    }


def sweep_data(report: AuditReport, anchors: dict[str, str]) -> dict[str, Any]:
    """What the page's sweep charts draw: every swept setting's axis (`settings`, most important first: the
    x-axis picker's choices and the parallel coordinates' axes), and per run its card id, name, status, final
    and best loss. The runs also carry x, label and colour of the default setting (`setting`, the report's
    `key_setting`), as the charts first draw them."""
    key = report.key_setting
    axes = [_axis(report, k) for k in report.swept]
    first = axes[0] if axes else None
    role = "val_loss" if any(r.stats.get("val_loss_final") is not None for r in report.results) else "train_loss"
    runs = []
    for i, r in enumerate(report.results):
        final = r.stats.get(f"{role}_final")
        runs.append(
            {
                "id": anchors.get(r.run),
                "name": r.run,
                "status": r.status,
                "x": first["x"][i] if first else None,
                "label": first["label"][i] if first else "",
                "final": _finite(final),
                "nonfinite": final is not None and _finite(final) is None,
                "best": _finite(r.stats.get(f"{role}_best")),
                "color": first["color"][i] if first else STATUS_COLORS.get(r.status, NO_VALUE),
            }
        )
    return {
        "setting": key,
        "numeric": bool(first and first["numeric"]),
        "log": bool(first and first["log"]),
        "categories": first["categories"] if first else None,
        "y": role.replace("_", " "),
        "legend": first["legend"] if first else list(map(list, STATUS_COLORS.items())),
        "settings": axes,
        "importance": None if report.importance is None else report.importance.method,
        "runs": runs,
    }


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _finite(value: Any) -> float | None:
    return float(value) if _number(value) and math.isfinite(value) else None


def _colors(values: list[Any], numeric: bool, log: bool) -> list[str]:
    """A colour per distinct value: a sequential ramp over a numeric setting (by log value on a log axis), else categories."""
    if not numeric:
        return [CATEGORY_COLORS[i % len(CATEGORY_COLORS)] for i in range(len(values))]
    pos = [math.log10(v) if log else float(v) for v in values]
    lo, hi = (min(pos), max(pos)) if pos else (0.0, 0.0)
    return [_ramp((p - lo) / (hi - lo) if hi > lo else 0.5) for p in pos]


def _ramp(t: float) -> str:
    """The colour at `t` in [0, 1] along RAMP, interpolated between its stops."""
    at = t * (len(RAMP) - 1)
    i = min(int(at), len(RAMP) - 2)
    a, b = RAMP[i], RAMP[i + 1]
    mix = [round(int(a[k : k + 2], 16) + (at - i) * (int(b[k : k + 2], 16) - int(a[k : k + 2], 16))) for k in (1, 3, 5)]
    return "#" + "".join(f"{c:02x}" for c in mix)


def _sort_ranks(values: list[Any]) -> dict[str, int]:
    """Rank of each distinct value in a column: numbers by value, then text in natural order."""
    keyed = {repr(v): v for v in values if v is not None}
    order = sorted(keyed, key=lambda k: (0, keyed[k], ()) if _number(keyed[k]) else (1, 0, natural_key(str(keyed[k]))))
    return {k: i for i, k in enumerate(order)}


def _stat_cell(value: Any) -> str:
    if value is None:
        return f'<td class="num" data-sort="{MISSING}"></td>'
    sort = f"{value:.9g}" if math.isfinite(value) else NONFINITE
    return f'<td class="num" data-sort="{sort}">{escape(fmt_num(value))}</td>'


def sweep_table(report: AuditReport, anchors: dict[str, str], quiet: bool = False) -> str:
    """One row per run, worst first, every swept setting a column (a wide table scrolls sideways in its frame,
    the run's name staying in view). The key setting's column comes right after the run's name, so a phone
    shows it without scrolling. Cells carry the sort keys the page compares (`data-sort`)."""
    settings = report.swept
    pairs = [(r, row) for r, row in zip(report.results, report.table()) if not (quiet and r.status == "healthy")]
    rows = [row for _, row in pairs]
    names = {name: i for i, name in enumerate(sorted((r["run"] for r in rows), key=natural_key))}
    ranks = {k: _sort_ranks([r["config"].get(k) for r in rows]) for k in settings}
    body = []
    for rank, (result, row) in enumerate(pairs):
        anchor = anchors.get(row["run"])
        name = escape(row["run"])
        link = f'<a href="#{escape(anchor)}">{name}</a>' if anchor else name
        severity = result.top["severity"] if result.top else "info"
        top = f'<span class="chip bg-{escape(severity)}" title="{escape(row["top_title"] or "")}">{escape(row["top"])}</span>' if row["top"] else ""
        setting_cells = []
        for k in settings:
            v = row["config"].get(k)
            sort = MISSING if v is None else f"{ranks[k][repr(v)]:06d}"
            setting_cells.append(f'<td class="num" data-sort="{sort}">{"" if v is None else escape(fmt_num(v))}</td>')
        cells = [
            f'<td class="run" data-sort="{names[row["run"]]:06d}">{link}</td>',
            *setting_cells[:1],
            f'<td data-sort="{rank:06d}"><span class="status fg-{escape(row["status"])}" title="{escape(row["status"])}">'
            f'{STATUS_MARK.get(row["status"], "?")} <span class="word">{escape(row["status"])}</span></span></td>',
            f'<td data-sort="{escape(row["top"] or "~")}">{top}</td>',
            *setting_cells[1:],
        ]
        cells += [_stat_cell(row[k]) for k, _ in STAT_COLUMNS]
        body.append(f"<tr>{''.join(cells)}</tr>")
    setting_heads = [f'<th class="num">{escape(k)}</th>' for k in settings]
    head = '<th class="run">run</th>' + "".join(setting_heads[:1]) + "<th>status</th><th>top finding</th>" + "".join(
        setting_heads[1:]
    ) + "".join(f'<th class="num">{h}</th>' for _, h in STAT_COLUMNS)
    note = "" if not quiet else '<p class="meta">Healthy runs left out (-q).</p>'
    return (
        '<p class="meta">Click a column to sort by it (again to reverse); a run\'s name opens its findings and loss chart below.</p>'
        f'<div class="scroll sweep-scroll"><table class="sweep"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>{note}'
    )


