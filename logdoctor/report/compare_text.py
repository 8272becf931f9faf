"""Words for a comparison, phrased once for every format (terminal, Markdown, HTML, GitHub annotations).

Nothing is measured here: every number comes from `logdoctor.compare` and is only
formatted (`numbers.fmt_num`, `numbers.percent`).
"""
from __future__ import annotations

import math
from typing import Any

from ..compare import AHEAD, BEHIND, Comparison, MetricComparison
from ..numbers import fmt_num, percent

MARK = {BEHIND: "▼", "level": "=", AHEAD: "▲"}


def role_label(role: str) -> str:
    """`val_loss` -> `val loss`."""
    return role.replace("_", " ")


def names(cmp: Comparison) -> str:
    """'RUN vs BASELINE' or 'RUN vs 3 baselines (a, b, c)'."""
    base = [rd.run.name for rd in cmp.baselines]
    return f"{cmp.run.run.name} vs {base[0]}" if len(base) == 1 else f"{cmp.run.run.name} vs {len(base)} baselines ({', '.join(base)})"


def formats(cmp: Comparison) -> str:
    """'tensorboard' when every side is read from one format, else 'tensorboard vs csv'."""
    theirs = list(dict.fromkeys(rd.run.format for rd in cmp.baselines))
    return cmp.run.run.format if theirs == [cmp.run.run.format] else f"{cmp.run.run.format} vs {', '.join(theirs)}"


def band_phrase(cmp: Comparison) -> str:
    """How the noise band was made."""
    if len(cmp.baselines) > 1:
        return f"band: the spread of {len(cmp.baselines)} baselines and their noise"
    return "band: the two runs' own noise (give several baselines, e.g. seeds, for a seed-to-seed band)"


def axis_phrase(cmp: Comparison) -> str:
    return "aligned on step" if cmp.axis == "step" else f"aligned on {cmp.axis} (at the run's steps)"


def headline(cmp: Comparison) -> str:
    """The answer in one line: the gating metrics' verdicts."""
    gates = cmp.gates
    worse = [m for m in gates if m.verdict == BEHIND]
    if worse:
        return "regression: " + ", ".join(f"{role_label(m.role)} behind from step {fmt_num(m.departs)}" for m in worse)
    return "no regression: " + ", ".join(f"{role_label(m.role)} {m.verdict}" for m in gates)


def verdict_phrase(m: MetricComparison) -> str:
    """'behind from step 19', 'level', 'ahead from step 400'."""
    return m.verdict if m.departs is None else f"{m.verdict} from step {fmt_num(m.departs)}"


def change(level) -> str:
    """'+0.05 (+12%)', the run's level minus the baselines'; 'NaN, not a number' where the run's is none."""
    if not math.isfinite(level.change):
        return f"{fmt_num(level.run)}, not a number"
    rel = f" ({'+' if level.relative > 0 else ''}{percent(level.relative)})" if level.relative is not None else ""
    return f"{'+' if level.change > 0 else ''}{fmt_num(level.change)}{rel}"


def end_phrase(m: MetricComparison) -> str:
    """'at the end (step 299) 1.244 vs 0.0592: +1.185 (+2,000%); level within ±0.0091'."""
    e = m.end
    return f"at the end (step {fmt_num(e.run_step)}) {fmt_num(e.run)} vs {fmt_num(e.baseline)}: {change(e)}; level within ±{fmt_num(m.tolerance)}"


def best_phrase(m: MetricComparison) -> str:
    """'at its best 0.0481 (step 280) vs 0.0475 (step 299): +0.0006 (+1.3%)'."""
    b = m.best
    return f"at its best {fmt_num(b.run)} (step {fmt_num(b.run_step)}) vs {fmt_num(b.baseline)} (step {fmt_num(b.baseline_step)}): {change(b)}"


def metric_names(m: MetricComparison) -> str:
    """The metric as each side names it: 'Loss/val' or 'Loss/val vs val_loss'."""
    theirs = [n for n in m.baseline_metrics if n != m.run_metric]
    return m.run_metric + (f" vs {', '.join(theirs)}" if theirs else "")


def setting_value(value: Any) -> str:
    return "not logged" if value is None else fmt_num(value)


def setting_phrase(d) -> str:
    """'lr 0.0001 vs 0.001' or 'seed 0 vs 1, 2 (the baselines differ too)'."""
    theirs = ", ".join(dict.fromkeys(setting_value(v) for v in d.baselines))
    return f"{d.key} {setting_value(d.run)} vs {theirs}" + (" (the baselines differ too)" if d.among_baselines else "")


def settings_summary(cmp: Comparison) -> str:
    """The settings that differ, or why there are none to show."""
    if cmp.settings:
        return "; ".join(setting_phrase(d) for d in cmp.settings)
    if cmp.no_settings:
        return f"not compared: {', '.join(cmp.no_settings)} logged none"
    return "the same, as far as both sides logged them"


def compared_steps(m: MetricComparison) -> str:
    a, b = m.steps
    return f"steps {fmt_num(a)}–{fmt_num(b)}"
