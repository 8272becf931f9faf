"""HTML report of a comparison: the diagnosis page (`html.render_html`, one offline file) with the
comparison in front: its verdict table, settings and findings (`compare_markdown.comparison_body`)
and one chart per compared metric overlaying the run, its baselines and the band, the departure
marked (`compare_figure`), drawn by the page's own script like a run's charts. Every run's own
card follows, so the findings each side has are there in full."""
from __future__ import annotations

from html import escape

from ..compare import Comparison
from ..model import Diagnosis
from .charts import panels_spec, script_json
from .compare_figure import comparison_panels
from .compare_markdown import comparison_body
from .compare_text import names
from .html import render_html


def _charts(cmp: Comparison) -> str:
    spec = panels_spec(comparison_panels(cmp))
    if spec is None:
        return ""
    return (
        f'<section class="run {"critical" if cmp.regression else "healthy"}" id="comparison-charts" data-run="comparison"><details open><summary>'
        f'<span class="runname">{escape(names(cmp))}</span></summary><div class="body">'
        '<div class="charts"><p class="meta nojs">The charts need JavaScript; the table above lists the levels.</p></div>'
        f'</div></details></section><script type="application/json" id="chart-comparison">{script_json(spec)}</script>'
    )


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
