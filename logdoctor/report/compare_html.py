"""HTML report of a comparison: the diagnosis page (`html.render_html`, one offline file) with the
comparison in front: its verdict table, settings and findings (`compare_markdown.comparison_body`)
and one chart per compared metric overlaying the run, its baselines and the band, the departure
marked (`compare_figure`), drawn by the page's own script like a run's charts. Every run's own
card follows, so the findings each side has are there in full."""
from __future__ import annotations

from html import escape

from ..compare import BEHIND, Comparison
from ..model import Diagnosis
from .charts import panels_spec, script_json
from .compare_figure import comparison_panels
from .compare_markdown import comparison_body
from .compare_text import names, role_label, verdict_phrase
from .html import render_html


def _charts(cmp: Comparison) -> str:
    """One card per compared metric, each drawn on its own step range (a validation loss logged from
    step 19 and a training loss from step 0 are not zoomed together)."""
    cards = []
    for i, (m, panel) in enumerate(zip(cmp.metrics, comparison_panels(cmp)), 1):
        spec = panels_spec([panel])
        status = "critical" if m.verdict == BEHIND and any(g is m for g in cmp.gates) else "warning" if m.verdict == BEHIND else "healthy"
        cards.append(
            f'<section class="run {status}" id="comparison-{i}" data-run="comparison-{i}"><details open><summary>'
            f'<span class="runname">{escape(role_label(m.role))}: {escape(verdict_phrase(m))}</span></summary><div class="body">'
            '<div class="charts"><p class="meta nojs">The charts need JavaScript; the table above lists the levels.</p></div>'
            f'</div></details></section><script type="application/json" id="chart-comparison-{i}">{script_json(spec)}</script>'
        )
    return "".join(cards)


def render_compare_html(cmp: Comparison, plots: bool = True) -> str:
    runs = [cmp.run, *cmp.baselines]
    diagnosis = Diagnosis(root=names(cmp), runs=runs)
    return render_html(
        diagnosis,
        extra_sections=[("Comparison", comparison_body(cmp))],
        plots=plots,
        title="logdoctor compare",
        index=lambda _anchors: (_charts(cmp) if plots else "") + "<h2>Runs</h2>",
    )
