"""HTML report: ONE self-contained file that opens offline, with interactive charts per run.

Nothing is fetched: no CDN, no web font, no external image; the file can be
attached to a ticket. The charting library (uPlot, MIT, vendored in
`assets/` with its licence) and the page's own script (`assets/report.js`)
are embedded once per file. Layout: a header with the counts and a
smoothing slider, any extra sections, a compact index of every run (worst
first, the first rows shown, a filter and "show all" for the rest; click a
header to sort), "Compare runs" (one metric of ticked runs overlaid), then
one card per run: its charts, its findings (evidence, causes, fixes), the
config it logged and any read warnings.

What a chart shows is `figure.panels_for`'s description (the same one the
Markdown PNGs draw), packed as JSON by `charts.chart_spec` into a
`<script type="application/json">` beside the card; the browser draws it
when the card is opened and in view, so a 1,000-run report opens fast.
Cards with a problem start open, up to `OPEN_AT_MOST` of them in a big report.

Every string that came from a log (run names, metric names, config keys and
values, warning lines, finding text) is escaped with `html.escape` in markup
and enters the charts as JSON text (`charts.script_json`); extra sections
are Markdown rendered with raw HTML disabled.

Public API (also used by `logdoctor audit`):
`render_html(diagnosis, extra_sections=None, plots=True, progress=None, title="logdoctor report", index=None) -> str`.
`extra_sections` is a list of `(title, markdown body)` shown after the header,
before the index (the same sections the Markdown report takes); `index` replaces
the run index (the audit's page: `audit/page.py`).
"""
from __future__ import annotations

from collections.abc import Callable
from functools import cache
from html import escape
from importlib.resources import files

from .. import __version__
from ..model import Diagnosis, Finding, RunDiagnosis
from ..numbers import count
from .charts import chart_spec, script_json
from .sparkline import svg_sparkline
from .text import TOP_EVIDENCE, by_severity, evidence_items, fmt_num, main_loss, status_counts, step_range, verdict

STATUS_MARK = {"critical": "✖", "warning": "▲", "healthy": "✓", "not checked": "·", "stopped": "■"}
#: With more runs than this, healthy runs start collapsed.
EXPAND_ALL_UP_TO = 12
#: Index rows shown before "show all" (the worst runs); the rest arrive when asked for.
INDEX_ROWS = 20
NO_JS_MANY = f", no closed card and only the first {INDEX_ROWS} index rows"
#: In a bigger report, at most this many cards (the worst runs) start open.
OPEN_AT_MOST = 25
#: With more runs than this, healthy runs get a compact chart (the loss panel alone):
#: they start collapsed, and their full panels made most of a 1,000-run report's size.
COMPACT_FROM = 100
#: Config entries shown per run (the rest are counted).
MAX_CONFIG = 40

CSS = """
:root{--crit:#c62828;--warn:#e08a00;--ok:#2e7d32;--info:#3b78c4;--ink:#1d2330;--mute:#5f6877;--line:#e3e6eb;--bg:#f6f7f9}
*{box-sizing:border-box}[hidden]{display:none!important}
body{margin:0;overflow-wrap:break-word;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg)}
main{max-width:1040px;margin:0 auto;padding:20px 24px 60px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:17px;margin:28px 0 10px}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
.sub{color:var(--mute);margin-bottom:14px}
.counts span{display:inline-block;margin-right:8px;padding:3px 10px;border-radius:12px;font-weight:600;color:#fff}
.bg-critical{background:var(--crit)}.bg-warning{background:var(--warn)}.bg-healthy{background:var(--ok)}.bg-info,.bg-not-checked,.bg-stopped{background:var(--info)}
.fg-critical{color:var(--crit)}.fg-warning{color:var(--warn)}.fg-healthy{color:var(--ok)}.fg-info,.fg-not-checked,.fg-stopped{color:var(--info)}
.scroll{overflow-x:auto;max-width:100%}
table.index{border-collapse:collapse;width:100%;background:#fff;border:1px solid var(--line)}
table.index th,table.index td{padding:5px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:middle}
table.index th{cursor:pointer;user-select:none;background:#eef0f3;font-size:12px;text-transform:uppercase;letter-spacing:.03em}
table.index th:after{content:" ⇅";color:#aab}
table.index td.num{text-align:right;font-variant-numeric:tabular-nums}
table.index a{color:var(--ink);text-decoration:none;overflow-wrap:anywhere}
table.index a:hover{text-decoration:underline}
.chip{display:inline-block;white-space:nowrap;padding:0 6px;margin:1px 2px 1px 0;border-radius:4px;font:600 12px ui-monospace,Menlo,monospace;color:#fff}
.status{font-weight:700;white-space:nowrap}
section.run{background:#fff;border:1px solid var(--line);border-left:6px solid var(--ok);border-radius:6px;margin:14px 0}
section.run.critical{border-left-color:var(--crit)}section.run.warning{border-left-color:var(--warn)}section.run.not-checked,section.run.stopped{border-left-color:var(--info)}
section.run>details>summary{padding:10px 14px;cursor:pointer;font-size:15px;list-style:none}
section.run>details>summary::-webkit-details-marker{display:none}
section.run>details>summary:before{content:"▸ ";color:var(--mute)}
section.run>details[open]>summary:before{content:"▾ "}
.runname{font-weight:700;overflow-wrap:anywhere}
.body{padding:0 16px 14px}
.meta{color:var(--mute);font-size:12.5px;margin-bottom:8px;overflow-wrap:anywhere}
.toolbar{position:sticky;top:0;z-index:5;background:var(--bg);padding:6px 0;display:flex;flex-wrap:wrap;gap:6px 14px;align-items:center;color:var(--mute);font-size:13px}
.toolbar input[type=range]{width:160px;vertical-align:middle}
#index-tools{margin:6px 0;display:flex;flex-wrap:wrap;gap:6px}
#index-tools input{flex:1 1 160px;min-width:0}
button{font:inherit;font-size:12.5px;padding:2px 10px;border:1px solid #c9ced6;border-radius:4px;background:#fff;cursor:pointer}
.charts{margin:6px 0 10px}.panel{margin-bottom:8px;min-width:0}
.chart-head{display:flex;justify-content:space-between;align-items:center;gap:8px;font-size:12px;color:var(--mute)}
.chart{width:100%;min-width:0}
.uplot{font-family:inherit}.u-legend{font-size:12px;text-align:left}.u-legend .u-series>*{padding:1px 4px}
.u-legend th{font-weight:500;overflow-wrap:anywhere}
ul.marks{list-style:none;padding:0;margin:2px 0 4px;display:flex;flex-wrap:wrap;gap:2px 14px;font-size:12px;color:var(--mute)}
ul.marks .sw{display:inline-block;width:14px;height:0;border-top:2px solid;margin-right:5px;vertical-align:middle}
ul.marks .sw.dashed{border-top-style:dashed}ul.marks .sw.band{height:10px;border:0;opacity:.3}
html.js .nojs{display:none}
section.compare{background:#fff;border:1px solid var(--line);border-radius:6px;margin:14px 0}
section.compare>details>summary{padding:10px 14px;cursor:pointer;font-size:15px;font-weight:650}
.compare-body{padding:0 16px 14px}
.compare-controls{display:flex;flex-wrap:wrap;gap:6px 14px;margin-bottom:6px}
.compare-controls select{max-width:100%}
.runlist{max-height:150px;overflow-y:auto;border:1px solid var(--line);border-radius:4px;padding:4px 8px;font-size:13px}
.runlist label{display:block;overflow-wrap:anywhere}
ol.findings{list-style:none;padding:0;margin:0}
li.finding{overflow-wrap:anywhere;border:1px solid var(--line);border-left:4px solid var(--info);border-radius:4px;padding:8px 12px;margin:8px 0;background:#fcfcfd}
li.finding.critical{border-left-color:var(--crit)}li.finding.warning{border-left-color:var(--warn)}
.ftitle{font-weight:650;font-size:15px;margin:2px 0}
.where{color:var(--mute);font-size:12.5px}
.evidence{display:flex;flex-wrap:wrap;gap:4px 6px;margin:6px 0}
.ev{overflow-wrap:anywhere;background:#eef1f5;border-radius:4px;padding:1px 7px;color:var(--mute);font-size:12.5px}
.ev b{color:var(--ink);font:600 12.5px ui-monospace,Menlo,monospace}
.cols{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:16px}
.cols h4{margin:6px 0 2px;font-size:12px;text-transform:uppercase;letter-spacing:.04em;color:var(--mute)}
.cols ol,.cols ul{margin:2px 0;padding-left:20px}
.cols ol li:first-child{font-weight:600}
.fix li:first-child{font-weight:600}
.warnings{color:#8a5a00;background:#fff8e6;border-radius:4px;padding:6px 10px 6px 26px;font-size:13px}
details.config summary,details.more summary{cursor:pointer;color:var(--mute);font-size:12.5px}
details.more{display:contents}details.more[open]>summary{display:none}
details.config table{font-size:12px;border-collapse:collapse}
details.config td{padding:0 12px 0 0;overflow-wrap:anywhere}
.extra{background:#fff;border:1px solid var(--line);border-radius:6px;padding:4px 16px;margin:12px 0;overflow-x:auto}
.extra table{border-collapse:collapse}.extra td,.extra th{border:1px solid var(--line);padding:3px 8px}
svg.spark{vertical-align:middle}
.sweep-charts{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:14px}
.sweep-chart{background:#fff;border:1px solid var(--line);border-radius:6px;padding:6px 12px 8px;min-width:0}
.sweep-chart h3{font-size:14px;margin:4px 0 6px;overflow-wrap:anywhere}
.readout{min-height:2.9em;font-size:12.5px;color:var(--mute);overflow-wrap:anywhere}
ul.marks .sw.dot{width:9px;height:9px;border:0;border-radius:50%}
ul.marks .sw.ring{width:9px;height:9px;border:1.6px solid;border-radius:50%;background:transparent!important}
ul.marks .sw.cross{width:auto;height:auto;border:0;background:transparent!important;font-weight:700}ul.marks .sw.cross:before{content:"×"}
table.sweep{border-collapse:separate;border-spacing:0;background:#fff;border:1px solid var(--line);font-size:13px;min-width:100%}
table.sweep th,table.sweep td{padding:4px 8px;border-bottom:1px solid var(--line);text-align:left;white-space:nowrap}
table.sweep th{cursor:pointer;user-select:none;background:#eef0f3;font-size:12px;letter-spacing:.02em}
table.sweep th:after{content:" ⇅";color:#aab}
table.sweep .num{text-align:right;font-variant-numeric:tabular-nums}
table.sweep .run{position:sticky;left:0;z-index:1;background:#fff;border-right:1px solid var(--line)}
table.sweep th.run{background:#eef0f3}
table.sweep a{color:var(--ink)}
@media (max-width:700px){.cols,.sweep-charts{grid-template-columns:minmax(0,1fr)}table.sweep .run{white-space:normal;overflow-wrap:anywhere;min-width:7em;max-width:10em}table.sweep .status .word{display:none}main{padding:12px 10px 40px}.body{padding:0 10px 12px}
table.index .wide,table.index .status .word{display:none}
table.index,table.index thead,table.index tbody{display:block}
table.index tr{display:flex;flex-wrap:wrap;align-items:baseline;border-bottom:1px solid var(--line)}
table.index th,table.index td{border:0;padding:3px 6px}
table.index td:nth-child(2){flex:1 1 75%;min-width:0}
table.index td:nth-child(5):before{content:"last loss ";color:var(--mute)}table.index td:nth-child(6):before{content:"steps ";color:var(--mute)}}
"""

#: The page may run its own inline script and styles and show data: images; it may fetch nothing.
CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"


@cache
def _asset(name: str) -> str:
    return files("logdoctor.report").joinpath("assets", name).read_text(encoding="utf-8")


def _chips(findings: list[Finding]) -> str:
    return "".join(f'<span class="chip bg-{escape(f.severity)}" title="{escape(f.title)}">{escape(f.code)}</span>' for f in findings)


def _css(verdict_: str) -> str:
    """A verdict as a CSS class name ("not checked" -> "not-checked")."""
    return verdict_.replace(" ", "-")


def _status(status: str) -> str:
    return f'<span class="status fg-{_css(status)}">{STATUS_MARK.get(status, "?")} <span class="word">{status.upper()}</span></span>'


def _index(diagnosis: Diagnosis, ids: dict[int, int]) -> str:
    rows = []
    for rank, rd in enumerate(by_severity(diagnosis.runs)):
        loss = main_loss(rd)
        last = float(loss.values[-1]) if loss is not None else None
        last_key = "" if last is None else (f"{last:.6g}" if last == last and abs(last) != float("inf") else "1e308")
        steps = int(loss.steps[-1]) if loss is not None else None
        rows.append(
            "<tr>"
            f'<td data-sort="{rank:06d}">{_status(verdict(rd))}</td>'
            f'<td><a href="#run-{ids[id(rd)]}">{escape(rd.run.name)}</a></td>'
            f"<td>{_chips(rd.findings)}</td>"
            f'<td class="wide">{svg_sparkline(loss)}</td>'
            f'<td class="num" data-sort="{last_key}">{"" if last is None else escape(fmt_num(last))}</td>'
            f'<td class="num" data-sort="{steps if steps is not None else ""}">{"" if steps is None else f"{steps:,}"}</td>'
            f'<td class="wide">{escape(rd.run.format)}</td>'
            "</tr>"
        )
    head = "".join(
        f'<th{" class=wide" if h in ("loss", "format") else ""}>{h}</th>'
        for h in ("status", "run", "findings", "loss", "last loss", "steps", "format")
    )
    tools = '<div id="index-tools" hidden><input type="search" placeholder="filter runs by name"><button type="button">show all</button></div>'
    rest = _later("".join(rows[INDEX_ROWS:]), "rows") if len(rows) > INDEX_ROWS else ""
    return (
        f'{tools}<div class="scroll"><table class="index"><thead><tr>{head}</tr></thead>'
        f'<tbody data-rows="{len(rows)}">{"".join(rows[:INDEX_ROWS])}</tbody></table>{rest}</div>'
    )


def _evidence(items: list[tuple[str, str]]) -> str:
    """Every evidence item, the first `TOP_EVIDENCE` in view and the long tail folded away
    (rules list their most telling numbers first)."""
    spans = [f'<span class="ev">{escape(k)} <b>{escape(v)}</b></span>' for k, v in items]
    if len(spans) <= TOP_EVIDENCE:
        return "".join(spans)
    rest = len(spans) - TOP_EVIDENCE
    return "".join(spans[:TOP_EVIDENCE]) + f'<details class="more"><summary>+{rest} more</summary>{"".join(spans[TOP_EVIDENCE:])}</details>'


def _finding(f: Finding) -> str:
    loc = " · ".join(p for p in (f"<code>{escape(f.metric)}</code>" if f.metric else "", escape(step_range(f))) if p)
    ev = _evidence(evidence_items(f.evidence))
    causes = "".join(f"<li>{escape(c)}</li>" for c in f.causes)
    fixes = "".join(f"<li>{escape(x)}</li>" for x in f.fixes)
    cols = ""
    if causes or fixes:
        cols = (
            '<div class="cols">'
            + (f"<div><h4>Likely causes</h4><ol>{causes}</ol></div>" if causes else "<div></div>")
            + (f'<div class="fix"><h4>Fix</h4><ul>{fixes}</ul></div>' if fixes else "")
            + "</div>"
        )
    return (
        f'<li class="finding {escape(f.severity)}">'
        f'<span class="chip bg-{escape(f.severity)}">{escape(f.code)}</span> '
        f'<span class="fg-{escape(f.severity)}">{escape(f.severity)}</span> · confidence {f.confidence:.2f}'
        f'<div class="ftitle">{escape(f.title)}</div>'
        + (f'<div class="where">{loc}</div>' if loc else "")
        + (f'<div class="evidence">{ev}</div>' if ev else "")
        + cols
        + "</li>"
    )


def _config(config: dict) -> str:
    if not config:
        return ""
    items = sorted(config.items(), key=lambda kv: str(kv[0]))
    rows = "".join(
        f"<tr><td><code>{escape(str(k))}</code></td><td>{escape(_short(fmt_num(v)))}</td></tr>" for k, v in items[:MAX_CONFIG]
    )
    more = f"<p>… and {len(items) - MAX_CONFIG} more</p>" if len(items) > MAX_CONFIG else ""
    return f'<details class="config"><summary>config ({len(items)} keys)</summary><table>{rows}</table>{more}</details>'


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _spec(rd: RunDiagnosis, compact: bool) -> dict | str | None:
    """The run's chart description, or one line saying why it failed (that card loses its charts, nothing else)."""
    try:
        return chart_spec(rd, compact=compact)
    except Exception as exc:  # noqa: BLE001 - one odd series must not cost the report
        return f"chart failed ({type(exc).__name__}: {exc})"


def _run(i: int, rd: RunDiagnosis, spec: dict | str | None, expanded: bool) -> str:
    """One run's card; `spec` is its chart description (`charts.chart_spec`; None when there is nothing to draw
    or charts are off; a line when it failed), put beside the card as JSON for the page's script."""
    roles = ", ".join(f"{escape(role)} = <code>{escape(name)}</code>" for role, name in rd.roles.items())
    charts, data = "", ""
    if isinstance(spec, str):
        charts = f'<p class="meta">{escape(spec)}</p>'
    elif spec is not None:
        charts = '<div class="charts"><p class="meta nojs">The charts need JavaScript; the evidence below lists the steps and levels.</p></div>'
        data = f'<script type="application/json" id="chart-{i}">{script_json(spec)}</script>'
    findings = f'<ol class="findings">{"".join(_finding(f) for f in rd.findings)}</ol>' if rd.findings else "<p>No problem found.</p>"
    warnings = (
        '<ul class="warnings">' + "".join(f"<li>{escape(w)}</li>" for w in rd.run.warnings) + "</ul>" if rd.run.warnings else ""
    )
    body = (
        f'<div class="body"><div class="meta">{escape(rd.run.format)} · <span class="mono">{escape(rd.run.path)}</span>'
        + (f"<br>roles: {roles}" if roles else "")
        + f"</div>{charts}{findings}{warnings}{_config(rd.run.config)}</div>"
    )
    return (
        f'<section class="run {_css(verdict(rd))}" id="run-{i}"{f" data-run={i}" if isinstance(spec, dict) else ""}><details{" open" if expanded else ""}>'
        f'<summary>{_status(verdict(rd))} <span class="runname">{escape(rd.run.name)}</span> {_chips(rd.findings)}</summary>'
        + (body if expanded else _later(body, "body"))
        + f"</details></section>{data}"
    )


def _later(markup: str, what: str) -> str:
    """Markup the page adds when it is wanted (a closed card opened, the index shown in full): kept as raw
    text, which the browser scans without building elements, so a 1,000-run page opens fast. Log strings
    in it are escaped like everywhere else, so it holds no `</script`; if it ever did, it goes in as it is."""
    if "</script" in markup.lower():
        return markup
    return f'<script type="text/html" class="later" data-what="{what}">{markup}</script>'



def _compare(ordered: list[RunDiagnosis], specs: list[dict | str | None], open_: bool) -> str:
    """"Compare runs" (with two runs or more): the page builds its metric picker and run list from this list of
    runs and their metrics."""
    runs = [
        {"id": i, "name": rd.run.name, "status": verdict(rd), "keys": list(dict.fromkeys(l["key"] for p in spec["panels"] for l in p["lines"]))}
        for i, (rd, spec) in enumerate(zip(ordered, specs), 1)
        if isinstance(spec, dict)
    ]
    if len(runs) < 2:
        return ""
    return (
        f'<section class="compare" id="compare"><details{" open" if open_ else ""}><summary>Compare runs</summary>'
        '<div class="compare-body"><p class="meta nojs">Needs JavaScript.</p></div></details></section>'
        f'<script type="application/json" id="runs-index">{script_json(runs)}</script>'
    )


def _extra(sections: list[tuple[str, str]]) -> str:
    if not sections:
        return ""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    return "".join(f'<h2>{escape(title)}</h2><div class="extra">{md.render(body)}</div>' for title, body in sections)


def render_html(
    diagnosis: Diagnosis,
    extra_sections: list[tuple[str, str]] | None = None,
    plots: bool = True,
    progress: Callable[[int, int], None] | None = None,
    title: str = "logdoctor report",
    index: Callable[[dict[str, str]], str] | None = None,
) -> str:
    """The whole report as one HTML document (runs in severity order, each with its charts unless `plots` is False).

    `index`, when given, draws what stands in place of the run index (the audit's sweep table and charts):
    it is handed each run's card anchor by run name (`{"lr0.1/seed0": "run-3"}`) to link rows to cards."""
    ordered = by_severity(diagnosis.runs)
    ids = {id(rd): i for i, rd in enumerate(ordered, 1)}
    many = len(ordered) > EXPAND_ALL_UP_TO
    specs = []
    for n, rd in enumerate(ordered, 1):
        specs.append(_spec(rd, compact=len(ordered) > COMPACT_FROM and rd.status == "healthy") if plots else None)
        if progress is not None:
            progress(n, len(ordered))
    # in a big report only the worst cards start open (each open card is drawn as it scrolls into view)
    sections = [
        _run(i, rd, spec, expanded=not many or (rd.status != "healthy" and i <= OPEN_AT_MOST))
        for i, (rd, spec) in enumerate(zip(ordered, specs), 1)
    ]
    counts = status_counts(diagnosis.runs)
    badges = "".join(f'<span class="bg-{_css(s)}">{n} {s}</span>' for s, n in counts.items())
    errors = (
        "<h2>Skipped</h2><ul class=\"warnings\">" + "".join(f"<li>{escape(e)}</li>" for e in diagnosis.errors) + "</ul>"
        if diagnosis.errors
        else ""
    )
    body = (
        f"<h1>{escape(title)}</h1>"
        f'<div class="sub"><span class="mono">{escape(diagnosis.root)}</span> · {count(len(diagnosis.runs), "run")} · logdoctor {escape(__version__)}</div>'
        f'<div class="counts">{badges}</div>'
        + (
            '<div class="toolbar"><label>smoothing <input type="range" id="smoothing" min="0" max="0.99" step="0.01" value="0"></label>'
            '<output id="smoothing-value">0.00</output><span>drag: zoom · double-click: reset · shift-drag: pan</span></div>'
            if plots and diagnosis.runs
            else ""
        )
        + _extra(extra_sections or [])
        + (
            (index({rd.run.name: f"run-{i}" for i, rd in enumerate(ordered, 1)}) if index else f"<h2>Runs</h2>{_index(diagnosis, ids)}")
            if diagnosis.runs
            else f"<p>No training runs found under {escape(diagnosis.root)}.</p>"
        )
        + _compare(ordered, specs, open_=not many)
        + "".join(sections)
        + errors
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>{escape(title)} · {escape(diagnosis.root)}</title><style>{_asset('uPlot.min.css')}{CSS}</style></head>"
        f"<body><noscript><p class=warnings>Without JavaScript this report shows no charts{NO_JS_MANY if many else ''}.</p></noscript><main>{body}</main>"
        f"<script>{_asset('uPlot.iife.min.js')}</script><script>{_asset('report.js')}</script></body></html>\n"
    )
