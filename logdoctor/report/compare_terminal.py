"""Terminal report of a comparison (rich): the answer first, then one block per metric.

    ▼ REGRESSION  lr_tenth vs base_csv  [tensorboard vs csv]
      regression: val loss behind from step 19, val acc behind from step 19 · aligned on step · …
      val loss    ▼ behind from step 19  (Loss/val vs val_loss, steps 19–299)
                  at the end (step 299) 1.244 vs 0.05921: +1.185 (+2,002%); level within ±0.01364
                  at its best 1.244 (step 279) vs 0.05921 (step 299): +1.185 (+2,002%)
      …
      settings    lr 1e-4 vs 0.001
      only in the run: no finding
      only in the baselines: no finding

Every line hangs under its label when it wraps; nothing is measured here (`compare_text`
phrases what `logdoctor.compare` found).
"""
from __future__ import annotations

from rich.console import Console
from rich.text import Text

from ..compare import AHEAD, BEHIND, Comparison
from .compare_text import (
    MARK, axis_phrase, band_phrase, formats, best_phrase, compared_steps, end_phrase, headline, metric_names, names, role_label,
    settings_summary, verdict_phrase,
)
from .terminal import print_hanging

STYLE = {BEHIND: "bold red", "level": "bold green", AHEAD: "bold cyan"}
LABEL = 12


def render_compare_terminal(cmp: Comparison, console: Console) -> None:
    regression = cmp.regression
    head = Text.assemble(
        ("▼ REGRESSION" if regression else "✓ NO REGRESSION", "bold red" if regression else "bold green"),
        "  ",
        (names(cmp), "bold"),
        f"  [{formats(cmp)}]",
    )
    console.print(head, soft_wrap=True)
    print_hanging(console, "  ", f"{headline(cmp)} · {axis_phrase(cmp)} · {band_phrase(cmp)}")
    for m in cmp.metrics:
        label = Text(f"  {role_label(m.role):<{LABEL}}")
        verdict = Text.assemble((f"{MARK[m.verdict]} {verdict_phrase(m)}", STYLE[m.verdict]), f"  ({metric_names(m)}, {compared_steps(m)})")
        print_hanging(console, label, verdict)
        pad = " " * (LABEL + 2)
        print_hanging(console, pad, end_phrase(m))
        print_hanging(console, pad, best_phrase(m))
    for line in cmp.unshared:
        print_hanging(console, f"  {'not compared':<{LABEL}}", line)
    print_hanging(console, f"  {'settings':<{LABEL}}", settings_summary(cmp))
    print_hanging(
        console, "  only in the run: ",
        "; ".join(f"{f.code} ({f.severity}): {f.title}" for f in cmp.run_only) or "no finding",
    )
    print_hanging(
        console, "  only in the baselines: ",
        "; ".join(f"{b.code} ({b.severity}, {', '.join(b.baselines)}): {b.title}" for b in cmp.baselines_only) or "no finding",
    )
