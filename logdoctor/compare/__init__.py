"""Compare a run with its baselines: did my change make training worse?

`compare(run_path, baseline_paths, config, axis)` reads both sides with the usual readers
(any formats, the two sides may differ), aligns them (`align`), reads each shared outcome
metric against the band the baselines span (`band`), calls it behind, level or ahead
(`verdict`) and lines up settings and findings (`differences`). Renderers live in
`logdoctor.report.compare_*`; they draw what is here and compute nothing new.
"""
from .align import AXES, AlignError
from .comparison import OUTCOMES, CompareError, Comparison, compare
from .verdict import AHEAD, BEHIND, LEVEL, MetricComparison

__all__ = ["AXES", "AHEAD", "BEHIND", "LEVEL", "OUTCOMES", "AlignError", "CompareError", "Comparison", "MetricComparison", "compare"]
